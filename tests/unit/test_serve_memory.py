"""The daemon's service as ``graphmem.app.serve_memory`` builds it, before any worker runs."""

from __future__ import annotations

from pathlib import Path

from graphmem.app import serve_memory
from graphmem.settings import load_settings


def test_the_daemons_service_is_built_served_with_its_model_left_to_the_worker(tmp_path: Path) -> None:
    memory = serve_memory(load_settings(data_dir=tmp_path / "data"))
    try:
        assert memory.serves_agents and memory.coordinator is not None
        assert memory.semantic is not None
        # The worker loads the model and embeds the backlog: recall is lexical and never embeds till then.
        assert (memory.semantic.ready, memory.semantic.embed_on_read) == (False, False)
    finally:
        memory.close()
