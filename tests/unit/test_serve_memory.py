"""The daemon's service as ``graphmem.app.serve_memory`` builds it, before any worker runs, and the
plugin's injector as ``graphmem.app.plugin_injector`` builds it on that service."""

from __future__ import annotations

from pathlib import Path

from graphmem.app import plugin_injector, serve_memory
from graphmem.server.runtime import Runtime
from graphmem.settings import PluginSettings, load_settings


def test_the_daemons_service_is_built_served_with_its_model_left_to_the_worker(tmp_path: Path) -> None:
    memory = serve_memory(load_settings(data_dir=tmp_path / "data"))
    try:
        assert memory.serves_agents and memory.coordinator is not None
        assert memory.semantic is not None
        # The worker loads the model and embeds the backlog: recall is lexical and never embeds till then.
        assert (memory.semantic.ready, memory.semantic.embed_on_read) == (False, False)
    finally:
        memory.close()


def test_a_daemons_service_with_no_worker_embeds_as_a_clis_does(tmp_path: Path) -> None:
    memory = serve_memory(load_settings(data_dir=tmp_path / "data"), worker=False)
    try:
        assert memory.serves_agents and memory.coordinator is not None
        assert memory.semantic is not None
        # Nothing else will load the model or embed the backlog: reads do, as open_memory's do.
        assert (memory.semantic.ready, memory.semantic.embed_on_read) == (True, True)
    finally:
        memory.close()


def test_the_plugins_injector_keeps_the_budgets_the_daemon_validated(tmp_path: Path) -> None:
    memory = serve_memory(load_settings(data_dir=tmp_path / "data"))
    try:
        runtime = Runtime(memory, log_hint="stderr", resolve_project=lambda path: path, version="t")
        injector = plugin_injector(runtime, PluginSettings(boot_max_tokens=900, turn_max_tokens=300))
        default = plugin_injector(runtime)

        assert (injector.boot_max_tokens, injector.turn_max_tokens) == (900, 300)
        assert (default.boot_max_tokens, default.turn_max_tokens) == (
            PluginSettings().boot_max_tokens,
            PluginSettings().turn_max_tokens,
        )
        assert injector.project(str(tmp_path)) == str(tmp_path)  # the daemon's own resolution
    finally:
        memory.close()
