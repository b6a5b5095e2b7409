"""Concurrent clients of ``bench scale --http-clients`` (``graphmem.bench.clients``): what their
report says and which counts are refused, and a daemon that does not start. Their calls through a
real ``graphmem serve`` are integration tests (``tests/integration/bench/test_http_clients.py``)."""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.memory_service import in_memory_service

from graphmem.bench import clients
from graphmem.cli import main
from graphmem.core.timeparse import utc_now
from graphmem.server.runtime import Runtime
from graphmem.service.coordination import Coordinator


def test_a_daemon_that_does_not_start_fails_the_run_with_its_logs_tail(tmp_path: Path) -> None:
    no_store = (
        sys.executable,
        "-c",
        "import sys; print('the store is locked by pid 42', file=sys.stderr); sys.exit(3)",
    )

    with pytest.raises(RuntimeError, match="exited with code 3: the store is locked by pid 42"):
        clients.run([], tmp_path / "data", store_url=None, seconds=0.0, http_counts=[1], program=no_store)


def test_the_report_of_one_daemon_on_a_teams_store_says_its_index_answered() -> None:
    report = clients.summarise(
        16,
        [("recall", 5.0, None, False)],
        1.0,
        0.0,
        "http",
        {"index_copy_mb": 41.2, "daemon": {"answering": "index", "current_s": 3.4}},
    )

    assert clients.format_lines([report])[-1] == (
        "   full text answered by the daemon's own index (a copy of 41.2 MB, current 3.4 s after it "
        "was launched)"
    )


@pytest.mark.parametrize("count", ["0", "33"])
def test_a_count_of_http_clients_outside_1_to_32_is_refused(count: str) -> None:
    result = CliRunner().invoke(main.cli, ["bench", "scale", "--http-clients", count])

    assert result.exit_code == 2
    assert "--http-clients" in result.output and "1<=x<=32" in result.output


def test_the_daemon_says_which_word_search_answers_a_teams_store_and_none_on_the_embedded_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the benchmark reads of its daemon before and after the timed calls (``/stats``): what
    its store says (``MemorySearch.full_text_search``; a team's store's in test_postgres_lexical)."""
    served = in_memory_service(tmp_path).serving(Coordinator(utc_now, timedelta(minutes=5)))
    runtime = Runtime(served, log_hint="stderr", resolve_project=lambda path: path, version="t")
    try:
        assert runtime.status()["full_text"] is None
        for answering in ("database", "index"):  # a team's index, catching up, then current
            monkeypatch.setattr(type(served.store.inner), "full_text_search", answering)
            assert runtime.status()["full_text"] == answering
    finally:
        served.close()
