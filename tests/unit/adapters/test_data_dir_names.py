"""``data_dir.STORE_NAMES`` names every file and folder graphmem writes at the top of a data dir:
each module's own name for it is there, so a new one cannot make graphmem refuse its own store."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from graphmem.adapters import (
    data_dir,
    kuzu_store,
    kuzu_vectors,
    lexical_index,
    parse_store,
    postgres_lexical,
    vector_files,
    vector_log,
)
from graphmem.cli import server as cli_server
from graphmem.integrations import hook_client, hook_command, hook_journal
from graphmem.server import daemon_process
from graphmem.service import file_access

WRITTEN = {
    "graph.kuzu": kuzu_store.DB_DIRNAME,
    "graph.vectors": kuzu_vectors.VECTOR_LOG,
    "parses.sqlite3": parse_store.PARSES_FILE,
    "lexical.tantivy": lexical_index.DIRNAME,
    "vectors": vector_files.DIRNAME,
    "team-text": postgres_lexical.DIRNAME,
    "owner.json": data_dir.OWNER_FILENAME,
    "daemon.json": daemon_process.INFO_FILENAME,
    "daemon.lock": daemon_process.LOCK_FILENAME,
    "daemon-start.lock": daemon_process.START_LOCK_FILENAME,
    "daemon.log": daemon_process.LOG_FILENAME,
    "daemon.token": daemon_process.TOKEN_FILENAME,
    "exports": file_access.EXPORTS_FOLDER,
    "ui-sign-in.html": cli_server.SIGN_IN_PAGE,
    "hooks.log": hook_command.LOG_FILENAME,
    "hook-journal": hook_journal.JOURNAL_FOLDER,
    "hook-backoff": hook_client.BACKOFF_FILENAME,
}


@pytest.mark.parametrize("name", sorted(WRITTEN))
def test_every_name_a_module_writes_into_the_data_dir_is_graphmems(name: str) -> None:
    assert WRITTEN[name] in data_dir.STORE_NAMES
    assert data_dir.is_graphmem_name(WRITTEN[name])


def test_every_name_the_opencode_plugin_writes_into_the_data_dir_is_graphmems() -> None:
    """The plugin (JavaScript, run by OpenCode) writes its journal into graphmem's data dir: each
    name it joins to the data dir is graphmem's, or a daemon would refuse its own data dir."""
    plugin = Path(hook_journal.__file__).parent / "opencode" / "graphmem.js"
    names = set(re.findall(r'join\(dataDir\(\),\s*"([^"]+)"\)', plugin.read_text("utf-8")))

    assert "plugin-journal" in names  # the pattern still finds what the plugin writes
    assert {name for name in names if not data_dir.is_graphmem_name(name)} == set()


@pytest.mark.parametrize(
    "name",
    [
        "graph.kuzu.wal",  # Kùzu's log
        f"graph.vectors{vector_log.SNAPSHOT_SUFFIX}",
        "graph.vectors.ids.tmp",
        "graph.vectors.new",
        "graph.vectors.moving",
        "parses.sqlite3-wal",
        "parses.sqlite3-shm",
        "daemon.log.3",  # rotated
        "hooks.log.1",
        "daemon.tmp",  # daemon.json being written
        ".daemon.token.4242.tmp",
        ".ui-sign-in.html.4242.partial",
        "codex-hook",  # an earlier graphmem's Codex hook
        "codex-hook.log",
    ],
)
def test_the_files_beside_graphmems_and_those_it_is_writing_are_graphmems(name: str) -> None:
    assert data_dir.is_graphmem_name(name)


@pytest.mark.parametrize(
    "name",
    ["notes.txt", "vectors.csv", "exports.zip", "graph", "Documents", ".bashrc", ".ssh", "etc", "daemon"],
)
def test_a_persons_names_are_not_graphmems(name: str) -> None:
    assert not data_dir.is_graphmem_name(name)
