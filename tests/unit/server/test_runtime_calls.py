"""The daemon's background worker steps aside while clients' calls are served
(``server/runtime.py``: ``CallsInFlight``)."""

from __future__ import annotations

from graphmem.server.runtime import CallsInFlight


def test_the_worker_finds_the_daemon_busy_while_a_call_is_served() -> None:
    calls = CallsInFlight()

    with calls.serving():
        busy = calls.wait_idle(0.0)
    idle = calls.wait_idle(0.0)

    assert (busy, idle) == (False, True)


def test_a_call_that_fails_still_ends() -> None:
    calls = CallsInFlight()

    try:
        with calls.serving():
            raise ValueError("the verb failed")
    except ValueError:
        pass

    assert calls.wait_idle(0.0) is True
