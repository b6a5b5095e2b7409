"""The daemon's app owns what it starts: its lifespan starts the thread that ingests the sessions
the plugin names and ends it, so an app built, served and shut down (the daemon restarting its
app, an embedding of it) leaves no thread behind, nor anything that keeps its runtime (its store,
its model) alive."""

from __future__ import annotations

import gc
import logging
import threading
import weakref

import pytest
from starlette.testclient import TestClient

from graphmem.server.guard import Policy
from graphmem.server.http import build_app
from graphmem.server.plugin_routes import IngestQueue
from graphmem.server.runtime import Runtime
from graphmem.service.memory import MemoryService

TOKEN = "t" * 43
HEADERS = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
POLICY = Policy.build(token=TOKEN, api_key=None, max_bytes=100_000, rate_limit=0)
BASE = "http://127.0.0.1:9824"
# Long enough for an ingest of nothing on a loaded machine; only a failure waits it out.
INGESTED_WAIT_S = 30.0
# Seconds for the AnyIO worker threads of an app shut down to end (they do at once on a quiet machine).
WORKERS_END_S = 30.0


def runtime_of(memory: MemoryService) -> Runtime:
    return Runtime(memory, log_hint="stderr", resolve_project=lambda p: p, version="t")


def graphmem_threads_since(before: set[threading.Thread]) -> list[str]:
    """The names of graphmem's threads alive now that were not in ``before``."""
    return sorted(t.name for t in set(threading.enumerate()) - before if t.name.startswith("graphmem-"))


def test_the_ingest_thread_runs_while_the_app_serves_and_not_after(memory_service: MemoryService) -> None:
    before = set(threading.enumerate())
    app = build_app(runtime_of(memory_service), POLICY)
    built = graphmem_threads_since(before)

    with TestClient(app, base_url=BASE) as client:
        queued = client.post("/plugin/ingest", headers=HEADERS, json={"session_id": "ses_1"})
        serving = graphmem_threads_since(before)
    shut_down = graphmem_threads_since(before)

    assert queued.status_code == 202
    assert built == []
    assert serving == ["graphmem-plugin-ingest"]
    assert shut_down == []


def test_an_app_shut_down_keeps_its_runtime_alive_no_longer(
    memory_service: MemoryService, caplog: pytest.LogCaptureFixture
) -> None:
    # pytest keeps a test's log records: a failed ingest's holds its exception, whose traceback
    # holds the ingest thread's frames (and so the runtime) until the test ends.
    caplog.set_level(logging.ERROR, logger="graphmem.server.plugin_routes")

    def served_once() -> weakref.ref[Runtime]:
        runtime = runtime_of(memory_service)
        with TestClient(build_app(runtime, POLICY), base_url=BASE) as client:
            client.post("/plugin/ingest", headers=HEADERS, json={"session_id": "ses_1"})
        return weakref.ref(runtime)

    before = set(threading.enumerate())
    gone = served_once()
    # AnyIO's worker threads let go of their last call (the ingest queue's ``stop``, and so the
    # runtime) only after its result reached the loop: on a loaded machine the test got there
    # first. The app's end with its loop; once they have, nothing of the app holds a frame.
    for thread in set(threading.enumerate()) - before:
        if thread.name == "AnyIO worker thread":
            thread.join(WORKERS_END_S)
    gc.collect()

    assert gone() is None


def test_a_session_queued_while_the_queue_is_stopped_is_ingested_at_the_next_start(
    memory_service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = set(threading.enumerate())
    runtime = runtime_of(memory_service)
    ingested = threading.Event()
    monkeypatch.setattr(runtime, "written", ingested.set)  # each ingest ends with it
    ingests = IngestQueue(runtime)
    seen = []
    for session in ("ses_1", "ses_2"):  # before the first start, then between a stop and a start
        ingested.clear()
        ingests.put(session, None)
        ingests.start()
        seen.append(ingested.wait(INGESTED_WAIT_S))
        ingests.stop()

    assert seen == [True, True]
    assert graphmem_threads_since(before) == []
