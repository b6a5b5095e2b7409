"""Concurrent clients of ``bench scale --clients``: threads through one service (the embedded store)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from support.memory_service import DIMENSION, in_memory_service

from graphmem.adapters.fake_store import FakeGraphStore
from graphmem.bench import clients
from graphmem.errors import StoreError
from graphmem.service.memory import MemoryService


def test_clients_in_threads_report_both_kinds_of_call_and_no_error(tmp_path: Path) -> None:
    stores: list[FakeGraphStore] = []

    def open_memory() -> MemoryService:
        stores.append(FakeGraphStore(dimension=DIMENSION))
        return in_memory_service(tmp_path, store=stores[-1])

    reports = clients.run([1, 3], tmp_path, store_url=None, open_memory=open_memory, seconds=0.3)

    assert [(r["clients"], r["mode"], r["errors"]) for r in reports] == [(1, "threads", 0), (3, "threads", 0)]
    for report in reports:
        assert report["recall_ms"]["calls"] > 0 and report["remember_ms"]["calls"] > 0
        assert report["calls"] == report["recall_ms"]["calls"] + report["remember_ms"]["calls"]
        assert report["calls_per_s"] > 0 and report["recall_ms"]["p95"] >= report["recall_ms"]["p50"]
        recall = report["recall_ms"]
        assert recall["after_recall_p50"] is not None and recall["after_remember_p50"] is not None
    remembered = [row.record.text for row in stores[1]._rows.values()]  # closed with its service
    assert {text.split(" note ")[0] for text in remembered} == {"Client 0", "Client 1", "Client 2"}


def test_a_recalls_p50_is_also_given_apart_by_the_call_before_it() -> None:
    calls: list[clients.Call] = [
        ("recall", 5.0, None, False),
        ("recall", 6.0, None, False),
        ("remember", 3.0, None, False),
        ("recall", 20.0, None, True),  # right after the remember: embeds what it wrote
        ("recall", 7.0, None, False),
    ]

    report = clients.summarise(1, calls, 1.0, 0.0, "threads")

    recall = report["recall_ms"]
    assert (recall["p50"], recall["after_recall_p50"], recall["after_remember_p50"]) == (7.0, 6.0, 20.0)
    assert "(p50 after a recall 6.0, after a remember 20.0)" in clients.format_lines([report])[0]


class _FailingRemember:
    """A service whose every remember fails as a store that lost its connection does."""

    def __init__(self, memory: MemoryService) -> None:
        self._memory = memory

    def remember(self, text: str, **_: Any) -> None:
        raise StoreError("Lost the connection to the PostgreSQL store: try again.")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._memory, name)


def test_a_failed_call_is_counted_with_its_message_not_raised(tmp_path: Path) -> None:
    [report] = clients.run(
        [2],
        tmp_path,
        store_url=None,
        open_memory=lambda: _FailingRemember(in_memory_service(tmp_path)),
        seconds=0.3,
    )

    assert report["errors"] == report["remember_ms"]["calls"] > 0
    assert report["remember_ms"]["p50"] is None and report["recall_ms"]["p50"] is not None
    assert report["first_error"] == "StoreError: Lost the connection to the PostgreSQL store: try again."
    assert "first error: StoreError" in "\n".join(clients.format_lines([report]))
