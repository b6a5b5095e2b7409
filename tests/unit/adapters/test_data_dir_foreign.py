"""graphmem changes the modes of its own files only: a folder that is not graphmem's is refused as
the data dir before anything is written into it, and in a store nothing is followed out of it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from graphmem.adapters import data_dir
from graphmem.adapters.kuzu_store import KuzuGraphStore
from graphmem.cli.main import cli
from graphmem.errors import StoreError


def modes(folder: Path) -> dict[str, int]:
    """Every path under ``folder`` (``folder`` itself as "."), with its mode; links not followed."""
    found = {".": stat.S_IMODE(folder.lstat().st_mode)}
    for root, folders, files in os.walk(folder):
        for name in [*folders, *files]:
            path = Path(root, name)
            found[str(path.relative_to(folder))] = stat.S_IMODE(path.lstat().st_mode)
    return found


def shared_folder(tmp_path: Path) -> Path:
    """A project folder others may read: ``docs/readme.txt`` and ``notes.txt``, 0755 and 0644."""
    shared = tmp_path / "shared"
    (shared / "docs").mkdir(parents=True)
    (shared / "docs" / "readme.txt").write_text("hi\n", "utf-8")
    (shared / "notes.txt").write_text("mine\n", "utf-8")
    for folder in (shared, shared / "docs"):
        os.chmod(folder, 0o755)
    for file in (shared / "docs" / "readme.txt", shared / "notes.txt"):
        os.chmod(file, 0o644)
    return shared


def loose_store(tmp_path: Path) -> Path:
    """A data dir an older graphmem left readable by others: 0755 folders, 0644 files."""
    store = tmp_path / "data"
    (store / "vectors").mkdir(parents=True)
    for name in ("graph.kuzu", "graph.kuzu.wal", "graph.vectors", "vectors/journal"):
        (store / name).write_text("memories", "utf-8")
        os.chmod(store / name, 0o644)
    os.chmod(store / "vectors", 0o755)
    os.chmod(store, 0o755)
    return store


def test_a_folder_of_the_users_files_is_refused_and_nothing_in_it_changes(tmp_path: Path) -> None:
    shared = shared_folder(tmp_path)
    before = modes(shared)

    with pytest.raises(StoreError) as refused:
        data_dir.make_private(shared)

    assert modes(shared) == before  # no mode changed, nothing made
    message = str(refused.value)
    assert str(shared) in message and "'docs', 'notes.txt'" in message
    assert "did not make" in message and "private" in message
    assert "new or empty folder" in message and "--data-dir" in message


def test_opening_a_store_in_a_folder_of_the_users_files_writes_nothing_into_it(tmp_path: Path) -> None:
    shared = shared_folder(tmp_path)
    before = modes(shared)

    with pytest.raises(StoreError, match="did not make"):
        KuzuGraphStore(shared, dimension=8)

    assert modes(shared) == before


def test_the_cli_on_a_folder_of_the_users_files_says_why_in_one_line(tmp_path: Path) -> None:
    """``graphmem --data-dir shared stats``: the store error's exit code, and the folder as it was."""
    shared = shared_folder(tmp_path)
    before = modes(shared)

    result = CliRunner().invoke(cli, ["--data-dir", str(shared), "stats"])

    assert result.exit_code == StoreError.exit_code, result.output
    assert "did not make" in result.output and "Traceback" not in result.output
    assert modes(shared) == before


def test_the_daemon_refuses_a_folder_of_the_users_files_before_writing_its_log(tmp_path: Path) -> None:
    from graphmem.cli.server import _start_log

    shared = shared_folder(tmp_path)
    before = modes(shared)

    with pytest.raises(StoreError, match="did not make"):
        _start_log(shared, 1_000_000, to_file=True)

    assert modes(shared) == before  # no daemon.log among the user's files


def test_one_file_of_the_user_in_a_loose_store_refuses_it_and_changes_nothing(tmp_path: Path) -> None:
    store = loose_store(tmp_path)
    (store / "budget.ods").write_text("mine", "utf-8")
    os.chmod(store / "budget.ods", 0o644)
    before = modes(store)

    with pytest.raises(StoreError, match=r"'budget\.ods'"):
        data_dir.make_private(store)

    assert modes(store) == before


def test_an_empty_folder_is_taken_and_made_0700(tmp_path: Path) -> None:
    folder = tmp_path / "empty"
    folder.mkdir()
    os.chmod(folder, 0o755)

    data_dir.make_private(folder)

    assert modes(folder) == {".": 0o700}


def test_a_loose_store_is_tightened_but_a_stray_ds_store_is_neither_refused_nor_changed(
    tmp_path: Path,
) -> None:
    store = loose_store(tmp_path)
    (store / ".DS_Store").write_bytes(b"Finder")
    os.chmod(store / ".DS_Store", 0o644)

    data_dir.make_private(store)

    assert modes(store) == {
        ".": 0o700,
        "vectors": 0o700,
        "graph.kuzu": 0o600,
        "graph.kuzu.wal": 0o600,
        "graph.vectors": 0o600,
        "vectors/journal": 0o600,
        ".DS_Store": 0o644,
    }


def test_links_in_a_store_are_not_followed_out_of_it(tmp_path: Path) -> None:
    """``exports`` a link to a folder of the user's, a link in ``vectors/`` to one of their files:
    the store is tightened, what the links name keeps its modes."""
    outside = shared_folder(tmp_path)
    before = modes(outside)
    store = loose_store(tmp_path)
    (store / "exports").symlink_to(outside, target_is_directory=True)
    (store / "vectors" / "index.json").symlink_to(outside / "notes.txt")
    (store / "vectors" / "parts").symlink_to(outside / "docs", target_is_directory=True)

    data_dir.make_private(store)

    assert modes(outside) == before
    assert {name: mode for name, mode in modes(store).items() if not (store / name).is_symlink()} == {
        ".": 0o700,
        "vectors": 0o700,
        "graph.kuzu": 0o600,
        "graph.kuzu.wal": 0o600,
        "graph.vectors": 0o600,
        "vectors/journal": 0o600,
    }


def test_a_store_graphmem_made_is_graphmems_and_is_tightened_when_reopened(tmp_path: Path) -> None:
    """Every file and folder a new store holds once opened and written to has a name of graphmem's,
    so a store an older graphmem left readable by others is opened and tightened, not refused."""
    from graphmem.adapters.embedders import HashEmbedder
    from graphmem.app import open_memory
    from graphmem.settings import load_settings

    store = tmp_path / "data"
    memory = open_memory(load_settings(data_dir=store), embedder=HashEmbedder(8))
    memory.remember("the build runs with ninja", category="fact")
    memory.close()
    names = sorted(os.listdir(store))
    assert {"graph.kuzu", "graph.vectors", "lexical.tantivy", "owner.json"} <= set(names)
    assert [name for name in names if not data_dir.is_graphmem_name(name)] == []
    for path in [store, *store.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)

    data_dir.make_private(store)

    assert set(modes(store).values()) == {0o700, 0o600}
    memory = open_memory(load_settings(data_dir=store), embedder=HashEmbedder(8))
    assert memory.stats().total == 1
    memory.close()


def test_what_is_on_another_file_system_than_the_data_dir_is_left_as_it_is(tmp_path: Path) -> None:
    """A mount in a store, as no test may mount one: the data dir's device given as another than
    that of its files and folders, as if each were a mount, none of them changes."""
    store = loose_store(tmp_path)
    before = modes(store)
    folder = os.open(store, os.O_RDONLY | os.O_DIRECTORY)
    try:
        elsewhere = os.fstat(folder).st_dev + 1
        changed = [data_dir._tighten(folder, name, elsewhere) for name in sorted(os.listdir(store))]
    finally:
        os.close(folder)

    assert changed == [0, 0, 0, 0]
    assert modes(store) == before
