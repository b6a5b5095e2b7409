"""Concurrent clients of ``bench scale --clients``: each a daemon's client, as ``graphmem serve``
serves an agent (threads through one daemon on the embedded store)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from support.memory_service import DIMENSION, in_memory_service

from graphmem.adapters.embedders import HashEmbedder
from graphmem.app import open_memory
from graphmem.bench import clients, scale
from graphmem.core.models import Status
from graphmem.core.ports import Vector, Visibility
from graphmem.core.timeparse import utc_now
from graphmem.errors import StoreError
from graphmem.server.runtime import Runtime
from graphmem.service.coordination import Coordinator
from graphmem.service.memory import MemoryService
from graphmem.service.semantic import QUERY_CACHE_SIZE
from graphmem.settings import load_settings


class _Recording(HashEmbedder):
    """The hash embedder, keeping the texts it embeds to be stored (not the queries)."""

    def __init__(self) -> None:
        super().__init__(DIMENSION)
        self.stored: list[str] = []

    def embed(self, texts: Sequence[str]) -> Vector:
        self.stored += texts
        return super().embed(texts)

    def embed_query(self, text: str) -> Vector:
        vector: Vector = super().embed([text])[0]
        return vector


def test_a_client_is_a_daemon_whose_remember_embeds_its_memory_and_whose_recall_never_embeds(
    tmp_path: Path,
) -> None:
    embedder = _Recording()
    with clients.daemon(tmp_path / "data", embedder) as runtime:
        memory = runtime.memory
        assert memory.serves_agents and memory.semantic is not None
        # The daemon's worker loaded the model (only it makes the index ready) and reads never embed.
        assert (memory.semantic.ready, memory.semantic.embed_on_read) == (True, False)

        clients.remember(runtime, "Client 0 note 4: the billing queue is owned by team 7")
        assert embedder.stored == ["Client 0 note 4: the billing queue is owned by team 7"]
        assert memory.store.pending_embeddings(10) == []  # its vector is stored before it answers

        clients.recall(runtime, "who owns the billing queue")
        assert len(embedder.stored) == 1  # the recall right after it embedded nothing
        assert not memory.ingest_options.background  # no agent session of this machine is learned


def test_a_client_makes_one_whole_round_of_the_mix_however_slow_the_machine_is(tmp_path: Path) -> None:
    """A window that ends before the first call (a machine too busy for 0.3 s to hold one round)
    still gives each kind of call and a recall after a remember."""
    with clients.daemon(tmp_path / "data", HashEmbedder(DIMENSION)) as runtime:
        calls = clients.client_calls(clients.Calls.served(runtime), 0, seconds=0.0)

    assert [kind for kind, *_ in calls] == ["recall"] * clients.RECALLS_PER_REMEMBER + ["remember", "recall"]
    assert [after for *_, after in calls][-1] is True
    assert all(error is None for _, _, error, _ in calls)


def test_a_client_never_asks_a_text_twice_so_each_recall_embeds_its_query() -> None:
    """More texts than a daemon keeps query vectors for, and than one seed's batch gives: none
    repeats, so no recall is timed with its query's vector taken from the daemon's cache."""
    texts = list(itertools.islice(clients.client_texts(3), 3 * QUERY_CACHE_SIZE))

    assert len(set(texts)) == len(texts) > clients.TEXTS_PER_SEED


def test_clients_in_threads_report_both_kinds_of_call_and_store_every_memory_with_its_vector(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"

    # A tenth of a second of calls: each client's first round of the mix (a remember and the
    # recalls before and after it) with the others' beside it, as three tenths gave.
    reports = clients.run([1, 3], data_dir, store_url=None, embedder=HashEmbedder(DIMENSION), seconds=0.1)

    assert [(r["clients"], r["mode"], r["errors"]) for r in reports] == [(1, "threads", 0), (3, "threads", 0)]
    for report in reports:
        assert report["recall_ms"]["calls"] > 0 and report["remember_ms"]["calls"] > 0
        assert report["calls"] == report["recall_ms"]["calls"] + report["remember_ms"]["calls"]
        assert report["calls_per_s"] > 0 and report["recall_ms"]["p95"] >= report["recall_ms"]["p50"]
        recall = report["recall_ms"]
        assert recall["after_recall_p50"] is not None and recall["after_remember_p50"] is not None
    memory = open_memory(load_settings(data_dir=data_dir), embedder=HashEmbedder(DIMENSION))
    try:
        stored = memory.store.list_memories(Visibility(None, frozenset(Status)), limit=1000)
        assert memory.store.pending_embeddings(10) == []
    finally:
        memory.close()
    # Each client of the run has a number of its own, the second count's too: no client repeats
    # another's notes (which would reinforce a memory rather than write one) or questions.
    assert {record.text.split(" note ")[0] for record in stored} == {f"Client {n}" for n in range(4)}


def test_every_calls_mean_and_p50_are_given_beside_each_kinds() -> None:
    """What a client waits on the mean whichever kind of call a daemon serves first: the
    recalls' p50 alone can be low while the ``remember``s wait."""
    calls: list[clients.Call] = [
        ("recall", 4.0, None, False),
        ("recall", 6.0, None, False),
        ("remember", 50.0, None, False),
        ("recall", 8.0, "refused", False),  # a failed call has no time
    ]

    report = clients.summarise(3, calls, 1.0, 0.0, "http")

    assert report["recall_ms"]["p50"] == 6.0
    assert report["call_ms"] == {"mean": 20.0, "p50": 6.0}
    assert "every call mean 20.0 / p50 6.0 ms" in clients.format_lines([report])[0]


def test_a_recalls_p50_is_also_given_apart_by_the_call_before_it() -> None:
    calls: list[clients.Call] = [
        ("recall", 5.0, None, False),
        ("recall", 6.0, None, False),
        ("remember", 3.0, None, False),
        ("recall", 20.0, None, True),
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
    served = in_memory_service(tmp_path).serving(Coordinator(utc_now, timedelta(minutes=5)))
    runtime = Runtime(
        _FailingRemember(served),  # type: ignore[arg-type]
        log_hint="stderr",
        resolve_project=lambda path: path,
        version="t",
    )
    try:
        # A window over before the first call: one whole round of the mix, its remember failing.
        report = clients.summarise(
            2, clients.client_calls(clients.Calls.served(runtime), 0, 0.0), 0.3, 0.0, "threads"
        )
    finally:
        served.close()

    assert report["errors"] == report["remember_ms"]["calls"] > 0
    assert report["remember_ms"]["p50"] is None and report["recall_ms"]["p50"] is not None
    assert report["first_error"] == "StoreError: Lost the connection to the PostgreSQL store: try again."
    assert "first error: StoreError" in "\n".join(clients.format_lines([report]))


def test_each_client_gets_a_copy_of_the_closed_index_of_its_own(tmp_path: Path) -> None:
    index = tmp_path / "data" / "team-text"
    (index / "bench-0123" / "v3").mkdir(parents=True)
    (index / "bench-0123" / "v3" / "meta.json").write_text("{}", "utf-8")
    (index / "bench-0123" / "v3" / "feed-position.json").write_text("token\n1", "utf-8")
    scratch = tmp_path / "scratch"
    scratch.mkdir()

    folders = clients.client_folders(scratch, index, 2)

    assert len(set(folders)) == 2 and all(folder.parent == scratch for folder in folders)
    for folder in folders:
        copied = folder / "team-text" / "bench-0123" / "v3"
        assert sorted(path.name for path in copied.iterdir()) == ["feed-position.json", "meta.json"]
    # A daemon removes its copy's saved position when it opens it: the others' and the source's stay.
    (folders[0] / "team-text" / "bench-0123" / "v3" / "feed-position.json").unlink()
    assert (folders[1] / "team-text" / "bench-0123" / "v3" / "feed-position.json").exists()
    assert (index / "bench-0123" / "v3" / "feed-position.json").exists()


def test_without_an_index_to_copy_each_client_builds_its_own(tmp_path: Path) -> None:
    folders = clients.client_folders(tmp_path, tmp_path / "data" / "team-text", 3)

    assert [list(folder.iterdir()) for folder in folders] == [[], [], []]


# A client process's stand-in: what its data folder holds when it starts, and a report as
# ``serve_child`` writes it.
STUB_CLIENT = """
import json, sys
from pathlib import Path
folder = Path(sys.argv[1])
held = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
print("graphmem-bench client-ready", flush=True)
assert sys.stdin.readline().strip() == "go"
calls = [["recall", 2.0, None, False], ["remember", 3.0, None, False], ["recall", 4.0, None, True]]
report = {"answering": "index", "current_s": 0.5 + int(sys.argv[2]), "folder": str(folder), "held": held}
Path(sys.argv[4]).write_text(json.dumps({"calls": calls, "text_search": report}), encoding="utf-8")
"""


def test_client_processes_start_each_on_its_own_folder_and_report_their_full_text_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(clients, "CLIENT_SCRIPT", STUB_CLIENT)
    data_dir = tmp_path / "data"
    (data_dir / "team-text" / "bench-0123").mkdir(parents=True)
    (data_dir / "team-text" / "bench-0123" / "segment").write_bytes(b"\0" * 300_000)

    [report] = clients.run([2], data_dir, store_url="postgresql://bench@127.0.0.1:1/bench", seconds=0.0)

    assert (report["clients"], report["mode"], report["calls"], report["errors"]) == (2, "processes", 6, 0)
    text_search = report["text_search"]
    assert text_search["index_copy_mb"] == 0.3
    seen = text_search["clients"]
    assert seen[0]["folder"] != seen[1]["folder"] and str(data_dir) not in (
        seen[0]["folder"],
        seen[1]["folder"],
    )
    assert [client["held"] for client in seen] == [["team-text/bench-0123/segment"]] * 2
    assert clients.format_lines([report])[-1] == (
        "   full text answered by each client's own index (a copy of 0.3 MB each, "
        "current 0.5–1.5 s after its daemon started)"
    )


def test_the_embedded_stores_threads_report_no_full_text_search(tmp_path: Path) -> None:
    report = clients.summarise(1, [("recall", 5.0, None, False)], 1.0, 0.0, "threads")

    assert report["text_search"] is None
    assert len(clients.format_lines([report])) == 1


class _Lexical:
    """What a client reads of its daemon's full-text index (``PostgresLexical``)."""

    answering = "index"


def test_a_timed_call_the_database_answered_ends_the_client_rather_than_count_as_its_figure() -> None:
    lexical = _Lexical()
    recalls: list[str] = []

    def recall(text: str, **_: Any) -> None:
        recalls.append(text)
        if len(recalls) == 3:  # a catch-up too large to apply in a search, say
            lexical.answering = "database"

    memory = SimpleNamespace(recall=recall, store=SimpleNamespace(lexical=lexical))
    runtime = SimpleNamespace(
        memory=memory,
        served=lambda function, *args, **kwargs: function(*args, **kwargs),
        written=lambda: None,
    )
    text_search = scale.TextSearch(memory)  # type: ignore[arg-type]

    with pytest.raises(RuntimeError, match="did not answer a timed call"):
        clients.client_calls(clients.Calls.served(runtime), 0, 0.0, text_search.answered)  # type: ignore[arg-type]

    assert len(recalls) == 3  # it ended at the call after which the index no longer answered
