"""The daemon's embedding worker never dies: a refusal of the system is a log line and a retry;
a store that cannot be reached is waited for quietly (the store says it once)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.stores import KuzuTemplates

from graphmem.adapters.embedders import HashEmbedder
from graphmem.app import serve_memory
from graphmem.errors import StoreMismatchError, StoreUnavailableError
from graphmem.server import runtime as runtime_module
from graphmem.server.runtime import Runtime
from graphmem.service.memory import MemoryService
from graphmem.settings import load_settings

WAIT_S = 30.0  # a bound for a loaded machine, not a timing assert


@pytest.fixture
def memory(tmp_path: Path, kuzu_templates: KuzuTemplates) -> Iterator[MemoryService]:
    kuzu_templates.lay_out(tmp_path / "data", 64)  # an empty store's files, as open_memory makes them
    service = serve_memory(load_settings(data_dir=tmp_path / "data"), embedder=HashEmbedder(64))
    yield service
    service.close()


def served(memory: MemoryService) -> Runtime:
    return Runtime(
        memory,
        log_hint="stderr",
        resolve_project=lambda p: p,
        version="t",
    )


def until(condition: Any) -> bool:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


def test_no_file_descriptor_left_while_the_model_loads_is_retried_not_a_dead_worker(
    memory: MemoryService, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    original = MemoryService.load_model
    refusals = [OSError(24, "Too many open files")]

    def load_model(self: MemoryService, *args: Any, **kwargs: Any) -> Any:
        if refusals:
            raise refusals.pop()
        return original(self, *args, **kwargs)

    monkeypatch.setattr(MemoryService, "load_model", load_model)
    monkeypatch.setattr(runtime_module, "MODEL_RETRY_S", 0.05)
    state = served(memory)
    state.start_worker()
    try:
        assert until(lambda: state.memory.semantic is not None and state.memory.semantic.ready)
        assert state.model_error is None
        assert state._worker is not None and state._worker.is_alive()
    finally:
        state.stop_worker()
    assert "could not be loaded yet ([Errno 24] Too many open files); trying again" in caplog.text
    assert "Traceback" not in caplog.text


def test_a_refusal_while_embedding_is_the_stores_error_and_the_worker_goes_on(
    memory: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory.remember("We ship on Fridays.")
    state = served(memory)
    semantic = state.memory.semantic
    assert semantic is not None
    original = type(semantic).embed_pending
    refusals = [OSError(24, "Too many open files")]

    def embed_pending(self: Any, *args: Any, **kwargs: Any) -> Any:
        if refusals:
            raise refusals.pop()
        return original(self, *args, **kwargs)

    monkeypatch.setattr(type(semantic), "embed_pending", embed_pending)
    monkeypatch.setattr(runtime_module, "IDLE_POLL_S", 0.05)  # the wait before it tries again
    state.start_worker()
    try:
        assert until(lambda: not refusals and state.store_error is None and semantic.complete)
        assert state._worker is not None and state._worker.is_alive()
    finally:
        state.stop_worker()


class _Waits(threading.Event):
    """An event that records how long each wait on it was for."""

    def __init__(self) -> None:
        super().__init__()
        self.timeouts: list[float | None] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.timeouts.append(timeout)
        return super().wait(timeout)


def test_a_store_that_cannot_be_reached_is_tried_again_now_and_then_without_a_word(
    memory: MemoryService, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    memory.remember("We ship on Fridays.")
    state = served(memory)
    semantic = state.memory.semantic
    assert semantic is not None
    original = type(semantic).embed_pending
    outage = [StoreUnavailableError("The PostgreSQL store at db:5432 cannot be reached")] * 3

    def embed_pending(self: Any, *args: Any, **kwargs: Any) -> Any:
        if outage:
            raise outage.pop()
        return original(self, *args, **kwargs)

    monkeypatch.setattr(type(semantic), "embed_pending", embed_pending)
    monkeypatch.setattr(runtime_module, "STORE_RETRY_S", 0.01)
    monkeypatch.setattr(runtime_module, "IDLE_POLL_S", 0.05)
    state._wake = waits = _Waits()
    caplog.set_level(logging.INFO, logger="graphmem")
    state.start_worker()
    try:
        assert until(lambda: not outage and state.store_error is None and semantic.complete)
    finally:
        state.stop_worker()
    # One try each STORE_RETRY_S while the store is gone (not each IDLE_POLL_S), none logged.
    assert waits.timeouts[:3] == [0.01, 0.01, 0.01]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text


def test_a_store_error_that_lasts_is_logged_once_not_at_each_try(
    memory: MemoryService, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # A daemon that waited for its team's server finds the schema to migrate once it answers.
    memory.remember("We ship on Fridays.")
    state = served(memory)
    semantic = state.memory.semantic
    assert semantic is not None
    original = type(semantic).embed_pending
    refusals = [StoreMismatchError("The store at db:5432 has schema version 14; run `graphmem migrate`")] * 5

    def embed_pending(self: Any, *args: Any, **kwargs: Any) -> Any:
        if refusals:
            raise refusals.pop()
        return original(self, *args, **kwargs)

    monkeypatch.setattr(type(semantic), "embed_pending", embed_pending)
    monkeypatch.setattr(runtime_module, "IDLE_POLL_S", 0.01)
    caplog.set_level(logging.INFO, logger="graphmem")
    state.start_worker()
    try:
        assert until(lambda: not refusals and state.store_error is None and semantic.complete)
    finally:
        state.stop_worker()
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(said) == 1 and "graphmem migrate" in said[0], said
