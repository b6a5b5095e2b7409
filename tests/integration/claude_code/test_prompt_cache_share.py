"""The prompt cache in the real Claude Code with graphmem on and off: the session every client's
prompt-cache test plays (``support/session_scenario.py``: six turns, a fact relevant on turns 1,
3 and 5, small talk between; a directive of the user's in the store), the first three turns in
one ``claude -p`` process, the last three in a new one that continues the session (``--continue``),
measured on the requests the stand-in recorded (``support.claude_code.play_scenario``; the "on"
session is the package's ``scenario_with_graphmem``, which ``test_memory_in_claude_code.py`` reads
too). Prints the docs/benchmarks.md table (run with ``-s``)::

    .venv/bin/pytest -s -p no:cacheprovider tests/integration/claude_code/test_prompt_cache_share.py

Cacheable share of a request: the characters of its canonical prefix (tools, system, messages;
``cache_control`` marks left out) that the previous request already sent, over its length.
Tokens injected per turn: graphmem's blocks in the turn's new user message, estimated as
graphmem estimates (``core/text.estimate_tokens``).
"""

from __future__ import annotations

import itertools
import re
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support.claude_code import (
    PlayedScenario,
    common_prefix_chars,
    play_scenario,
    prompt_prefix,
    sandbox,
    texts_of,
)
from support.session_scenario import TURNS

from graphmem.core.text import estimate_tokens

pytestmark = pytest.mark.integration

BLOCK = re.compile(r'<memory source="graphmem">.*?</memory>', re.DOTALL)


@dataclass(frozen=True)
class Measured:
    shares: list[float]  # requests 2..5
    kept_whole: int  # requests that start with the whole previous one
    injected: list[int]  # tokens graphmem added on each turn


def measure(requests: list[dict[str, Any]]) -> Measured:
    assert len(requests) == len(TURNS)
    shares, whole = [], 0
    for earlier, later in itertools.pairwise(requests):
        total = len("".join(prompt_prefix(later)))
        same = common_prefix_chars(earlier, later)
        shares.append(same / total)
        whole += same == len("".join(prompt_prefix(earlier)))
    injected = [
        sum(estimate_tokens(b) for t in texts_of(r["messages"][-1]) for b in BLOCK.findall(t))
        for r in requests
    ]
    return Measured(shares, whole, injected)


def test_the_cacheable_share_with_graphmem_on_and_off(
    claude_binary: Path, tmp_path: Path, scenario_with_graphmem: PlayedScenario
) -> None:
    with sandbox(claude_binary, tmp_path / "off") as claude:
        off = measure(play_scenario(claude, graphmem=False).requests)
    on = measure(scenario_with_graphmem.requests)
    rows = []
    for name, m in (("off", off), ("on", on)):
        mean_share = statistics.mean(m.shares) * 100
        injected = f"{statistics.mean(m.injected):.0f} ({max(m.injected)})"
        rows.append(f"| {name} | {mean_share:.1f}% | {m.kept_whole} of {len(m.shares)} | {injected} |")
    print("\n| graphmem | Cacheable share of each request | Requests keeping the whole previous one |"
          " Tokens injected per turn, mean (max) |")  # fmt: skip
    print("| --- | ---: | ---: | ---: |")
    print("\n".join(rows))
    print("per turn (on):", on.injected)
    assert off.kept_whole == on.kept_whole == len(TURNS) - 1
    assert off.injected == [0] * len(TURNS)
    assert on.injected[0] > 0 and on.injected[2] > 0 and on.injected[4] > 0
