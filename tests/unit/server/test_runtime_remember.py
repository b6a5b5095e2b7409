"""A served remember embeds its own memory before it answers: the daemon's reads never embed, so
the next recall finds a person's memory by meaning too, while the backlog waits for the worker."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.stores import KuzuTemplates

from graphmem.adapters.embedders import HashEmbedder
from graphmem.app import serve_memory
from graphmem.server.runtime import Runtime
from graphmem.service.memory import MemoryService
from graphmem.settings import load_settings


@pytest.fixture
def memory(tmp_path: Path, kuzu_templates: KuzuTemplates) -> Iterator[MemoryService]:
    kuzu_templates.lay_out(tmp_path / "data", 64)  # an empty store's files, as open_memory makes them
    service = serve_memory(load_settings(data_dir=tmp_path / "data"), embedder=HashEmbedder(64))
    yield service
    service.close()


def served(memory: MemoryService) -> Runtime:
    state = Runtime(
        memory,
        log_hint="stderr",
        resolve_project=lambda p: p,
        version="t",
    )
    semantic = state.memory.semantic
    assert semantic is not None
    state.memory.load_model()  # what the worker does first (not started: nothing else embeds)
    semantic.ready = True
    return state


def pending(memory: MemoryService) -> set[str]:
    return {memory_id for memory_id, _ in memory.store.pending_embeddings(100)}


def test_a_served_remember_is_embedded_before_it_answers_and_the_backlog_waits(memory: MemoryService) -> None:
    scraped = [
        memory.remember(f"Commit {n}: move the parser", source=f"git:{n:040x}").memory.id for n in range(5)
    ]
    state = served(memory)

    mine = state.served(state.memory.remember, "Prefer pnpm over npm in every project").memory.id

    assert mine not in pending(state.memory)
    assert set(scraped) <= pending(state.memory)  # the bootstrap's memories wait for the worker
    [hit] = [h for h in state.memory.recall("pnpm npm project").hits if h.memory.id == mine]
    assert "semantic" in {channel.channel for channel in hit.channels}


def test_before_the_model_has_loaded_the_memory_waits_for_the_worker_first(memory: MemoryService) -> None:
    state = Runtime(
        memory,
        log_hint="stderr",
        resolve_project=lambda p: p,
        version="t",
    )

    mine = state.served(state.memory.remember, "Prefer pnpm over npm in every project").memory.id

    assert mine in pending(state.memory)
    semantic = state.memory.semantic
    assert semantic is not None
    assert semantic.embed_pending(limit=1) == 1 and mine not in pending(state.memory)
