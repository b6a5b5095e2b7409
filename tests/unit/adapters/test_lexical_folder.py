"""The full-text index's folder when graphmem may not write it: refused at open with its fix
(as the graph store's is), and a commit that fails after the open said in one line, with the
memory kept in the store and indexed at the next open that may write the folder.

The permission tests run the store in a child process that permissions bind: as root (CI, this
sandbox) without the capabilities that skip them (``setpriv``), as in test_repo_files_confinement.py;
the folder is then refused exactly as it is to another user (tantivy's own ``ValueError`` at the
commit, ``os.access`` at the open). The other failures are real too, in this process: the
folder moved away from under an open index (tantivy's), a folder where the journal writes its
new file (the journal's).
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from graphmem.adapters import lexical_index
from graphmem.adapters.kuzu_store import KuzuGraphStore
from graphmem.adapters.lexical_index import DIRNAME, JOURNAL, LexicalIndex
from graphmem.core.ports import Visibility
from graphmem.errors import StoreError
from tests.support.lexical import Records, empty_index
from tests.support.records import memory
from tests.support.stores import new_kuzu

GLOBAL = Visibility(None)
REPOSITORY = Path(__file__).resolve().parents[3]
AS_A_USER = (
    ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-dac_override,-dac_read_search"]
    if os.geteuid() == 0
    else []
)
needs_setpriv = pytest.mark.skipif(
    bool(AS_A_USER) and shutil.which("setpriv") is None, reason="needs util-linux's setpriv"
)
# A command's store: opened, the folder made read-only after the open when asked ("then-lock"),
# a memory remembered, closed. What a command does, without its CLI (each prints the StoreError).
REMEMBER = """
import sys
from pathlib import Path
from graphmem.adapters.kuzu_store import KuzuGraphStore
from graphmem.errors import StoreError
from tests.support.records import memory

data = Path(sys.argv[1])
try:
    store = KuzuGraphStore(data, dimension=8)
except StoreError as exc:
    print("refused:", exc)
    raise SystemExit(0)
if sys.argv[2:] == ["then-lock"]:
    (data / "lexical.tantivy").chmod(0o555)
store.add_memories([memory("m2", "the widgets are painted blue")])
store.close()
print("stored")
"""


def remember(data: Path, *steps: str) -> subprocess.CompletedProcess[str]:
    command = [*AS_A_USER, sys.executable, "-c", REMEMBER, str(data), *steps]
    return subprocess.run(command, capture_output=True, text=True, cwd=REPOSITORY, check=False)


def ids(hits: list[tuple[str, float]]) -> list[str]:
    return [memory_id for memory_id, _ in hits]


def store_with_one_memory(data: Path, request: pytest.FixtureRequest) -> None:
    store = new_kuzu(data, request, 8)
    store.add_memories([memory("m1", "the sprockets are stored in the shed")])
    store.close()


def refused_at_open(data: Path) -> str:
    return (
        f"refused: Cannot open the full-text index at {data / DIRNAME}: permission denied. This user "
        f"may not read or write it: give it back the permissions (`chmod -R u+rwX {data}`, as the "
        "user that owns it), or run graphmem as that user."
    )


@needs_setpriv
def test_an_index_folder_this_user_may_not_write_refuses_the_store_at_open_with_its_fix(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # A copy of a store, or one a `sudo graphmem` left: the folder is there, and not this user's
    # to write. A recall opens the store the same way, and is refused the same.
    data = tmp_path / "data"
    store_with_one_memory(data, request)
    (data / DIRNAME).chmod(0o555)
    try:
        done = remember(data)
    finally:
        (data / DIRNAME).chmod(0o700)

    assert "Traceback" not in done.stderr
    assert (done.returncode, done.stdout.strip()) == (0, refused_at_open(data))
    store = KuzuGraphStore(data, dimension=8)
    try:
        assert store.total_memories() == 1  # refused before it wrote anything
        assert ids(store.search_text("sprockets", GLOBAL, 10)) == ["m1"]
    finally:
        store.close()


@needs_setpriv
def test_a_folder_refused_after_the_open_keeps_the_memory_and_indexes_it_once_it_may_write_again(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    data = tmp_path / "data"
    store_with_one_memory(data, request)
    try:
        done = remember(data, "then-lock")  # the folder's permissions taken while the store is open
        again = remember(data)  # the next command, the folder still read-only
    finally:
        (data / DIRNAME).chmod(0o700)

    assert "Traceback" not in done.stderr + again.stderr
    assert (done.returncode, done.stdout.strip()) == (0, "stored")  # stored: said once, not failed
    assert done.stderr.strip().splitlines()[-1] == (
        f"Cannot write the full-text index at {data / DIRNAME}: permission denied. This user may not "
        f"read or write it: give it back the permissions (`chmod -R u+rwX {data}`, as the user that "
        "owns it), or run graphmem as that user. The store keeps every memory: the index catches up "
        "with it at the next open."
    )
    assert (again.returncode, again.stdout.strip()) == (0, refused_at_open(data))
    assert (data / DIRNAME / JOURNAL).read_text() == "m2\n"  # what the index owes the store
    store = KuzuGraphStore(data, dimension=8)  # the permissions given back
    try:
        assert ids(store.search_text("widgets blue", GLOBAL, 10)) == ["m2"]
        assert (data / DIRNAME / JOURNAL).read_text() == ""
    finally:
        store.close()


def test_a_commit_that_fails_is_a_store_error_and_its_changes_are_committed_by_the_next(
    tmp_path: Path,
) -> None:
    index = empty_index(tmp_path)
    try:
        index.add([memory("m1", "the sprockets are stored in the shed")])
        index.flush()
        (tmp_path / DIRNAME).rename(tmp_path / "away")  # tantivy's commit finds no folder
        index.add([memory("m2", "the widgets are painted blue")])
        with pytest.raises(StoreError, match=r"^Cannot write the full-text index at .*The store keeps"):
            index.flush()
        assert ids(index.search("widgets", GLOBAL, 10)) == ["m2"]  # still searched, from the overlay
        (tmp_path / "away").rename(tmp_path / DIRNAME)
        index.add([memory("m3", "the gears are oiled weekly")])
        index.flush()
        # All of them: a writer whose commit failed said its next one succeeded and kept nothing.
        assert index._index.searcher().num_docs == 3
    finally:
        index.close()
    again = LexicalIndex(tmp_path / DIRNAME, Records())  # type: ignore[arg-type]
    try:
        assert ids(again.search("widgets", GLOBAL, 10)) == ["m2"]
        assert again.journal() == []
    finally:
        again.close()


def test_a_background_commit_that_fails_is_said_in_one_line_without_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(lexical_index, "COMMIT_DELAY", 3600.0)  # its retry waits for the close
    monkeypatch.setattr(lexical_index, "COMMIT_MAX_CHANGES", 1)  # committed at once
    caplog.set_level(logging.WARNING, logger="graphmem.adapters.lexical_index")
    index = empty_index(tmp_path)
    try:
        (tmp_path / DIRNAME).rename(tmp_path / "away")
        index.add([memory("m1", "the widgets are painted blue")])
        deadline = time.monotonic() + 60
        while not caplog.records and time.monotonic() < deadline:
            time.sleep(0.05)  # the commit loop's attempt
        (tmp_path / "away").rename(tmp_path / DIRNAME)
    finally:
        index.close()  # commits it, the folder back

    [said] = caplog.records
    assert said.levelno == logging.WARNING
    assert said.exc_info is None
    assert said.getMessage().startswith(f"Cannot write the full-text index at {tmp_path / DIRNAME}: ")
    again = LexicalIndex(tmp_path / DIRNAME, Records())  # type: ignore[arg-type]
    try:
        assert ids(again.search("widgets", GLOBAL, 10)) == ["m1"]
    finally:
        again.close()


def open_files_under(folder: Path) -> list[str]:
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # closed since it was listed (the listing's own)
        if target.startswith(f"{folder}/"):
            found.append(target)
    return found


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="lists open files from /proc")
def test_an_index_that_fails_to_catch_up_at_open_is_a_store_error_and_the_store_is_left_closed(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # The journal names a memory a killed process stored; the index commits it at open, and
    # then cannot write the journal (a folder where it writes the new one). A daemon that says
    # the error lives on: neither the graph's files nor the index's lock may stay held.
    data = tmp_path / "data"
    store_with_one_memory(data, request)
    (data / DIRNAME / JOURNAL).write_text("m1\n")
    (data / DIRNAME / f"{JOURNAL}.new").mkdir()

    with pytest.raises(
        StoreError, match=r"^Cannot write the full-text index at .*The store keeps"
    ) as refused:
        KuzuGraphStore(data, dimension=8)

    assert refused.value is not None  # the error, and the frames it holds, still alive
    assert open_files_under(data) == []
    (data / DIRNAME / f"{JOURNAL}.new").rmdir()
    store = KuzuGraphStore(data, dimension=8)  # in the same process: nothing of the first is held
    try:
        assert ids(store.search_text("sprockets", GLOBAL, 10)) == ["m1"]
    finally:
        store.close()
