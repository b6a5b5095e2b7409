"""Deterministic extraction: what a finished agent session teaches (decisions, blockers, ...).

Pure functions over ``Transcript``; no I/O, no model. Precision matters more than recall:
a rule that is not sure says nothing.
"""

from __future__ import annotations

from graphmem.core.sessions import Learned, Transcript


def extract(transcript: Transcript) -> list[Learned]:
    """The memories one finished session teaches, in message order (bounded; never raises)."""
    del transcript
    return []
