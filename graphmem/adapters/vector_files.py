"""The vector index kept between runs, in ``<data_dir>/vectors/``.

Reading 100,000 vectors back from Kùzu took 5–20 s on the shared 2-core machine (and
kept ~95 MB of its pages resident); reading this save takes a fraction of a second, and
the HNSW graph is mapped from its file rather than rebuilt (without usearch's table of its
keys when the index never asks the graph for a vector: ``HnswVectorIndex.graph_lookups``).
The store stays the record: the save is derived from it, tied to it by a token, and rebuilt
from it when it is missing, unreadable, of another store or model, or disagrees with it.

- ``index.json`` names the files of the last complete save: ``rows-N.json`` (the code
  tables), ``rows-N.npz`` (per-row ids and codes, the live ids' rows sorted by id, and the
  exact tail's vectors: read back as they are, where a million ids in JSON took a second
  to parse and more to index) and
  ``graph-M-P.usearch`` (the graph of one project, ``vector_graphs.py``; each written again
  only when it changed; usearch's file names its kind of vectors: 8-bit since format 3, half
  precision before; one graph of every project before format 4). New files are
  written under new names and synced to the disk, then ``index.json`` is replaced
  atomically, then the old files are removed: a crash leaves the previous complete save.
- ``journal`` names, one a line, the memories whose vector, status or project the store
  is about to change: written before the store's write (``will_change``), so that a change the
  store acknowledged but the save does not hold is read again from the store at open. A
  save keeps in the journal what was marked after it began or not yet applied.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import zipfile
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from graphmem.adapters.hnsw_graph import mapped_graph
from graphmem.adapters.id_journal import IdJournal
from graphmem.adapters.id_map import IdMap, encoded
from graphmem.adapters.vector_graphs import MIXED
from graphmem.adapters.vector_index import HnswVectorIndex
from graphmem.core.ports import VectorIndex

log = logging.getLogger(__name__)

DIRNAME = "vectors"
INDEX_FILE = "index.json"
JOURNAL = "journal"
# Bump when the files change shape: an older save is rebuilt, but for ``READ_VERSIONS``, read
# and saved again in the new shape. 3: the graph may be 8-bit (``hnsw_graph.COARSE``): a
# version that scores with the graph's own vectors must not read it; a version 2 graph (half
# precision) is searched as it is and built again 8-bit by the next ``tidy``. 4: a graph per
# project; an older save's one graph is searched as it is until the next ``tidy`` builds them.
FORMAT_VERSION = 4
READ_VERSIONS = (1, 2, 3, FORMAT_VERSION)
UNREADABLE = "The saved vector index in %s is unreadable (%s): rebuilding it."


class VectorIndexFiles:
    """Saves and restores an :class:`HnswVectorIndex`; keeps the journal of changes."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._lock = threading.Lock()
        self._save_lock = threading.Lock()
        self._since_save: list[str] = []  # marked since the last save began
        self._inflight: Counter[str] = Counter()  # marked, not applied to the index yet
        self._saved_graphs: dict[int, tuple[int, str]] = {}  # per project: (version, file) last saved
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._journal = IdJournal(directory / JOURNAL)

    # -- the journal ------------------------------------------------------------------

    def will_change(self, ids: Iterable[str]) -> None:
        """The store is about to change the vector, status or project of ``ids``."""
        ids = list(ids)
        if not ids:
            return
        with self._lock:
            self._journal.append(ids)
            self._since_save += ids
            self._inflight.update(ids)

    def applied(self, ids: Iterable[str]) -> None:
        """The index now holds what the store wrote for ``ids``."""
        with self._lock:
            self._inflight.subtract(ids)
            self._inflight = +self._inflight

    @property
    def unsaved(self) -> int:
        """Changes marked since the last save."""
        return len(self._since_save)

    def journal(self) -> list[str]:
        return self._journal.read()

    # -- saving -------------------------------------------------------------------------

    def save(self, index: VectorIndex, key: str) -> None:
        """Write ``index`` as the save of the store and model ``key``."""
        index = _hnsw(index)
        with self._save_lock:
            with self._lock:
                cut = len(self._since_save)
                pending = set(self._inflight)
            with index.graph_frozen():
                state = index.state()
                number = self._next_number()
                files: dict[str, Any] = {
                    "rows": f"rows-{number}.json",
                    "arrays": f"rows-{number}.npz",
                    "graphs": self._save_graphs(state, number),
                }
            self._write_rows(state, files)
            meta = {
                "version": FORMAT_VERSION,
                "key": key,
                "files": files,
                "graph_sizes": {str(code): size for code, size in state["graph_sizes"].items()},
                "graph_dead": state["graph_dead"],
            }
            _write_atomically(self.directory / INDEX_FILE, json.dumps(meta).encode("utf-8"))
            self._remove_other_files(files)
            with self._lock:
                later = self._since_save[cut:]
                self._since_save = later
                self._journal.keep([*pending, *self._inflight, *later])

    def _save_graphs(self, state: dict[str, Any], number: int) -> dict[str, str]:
        """The file of each graph of ``state``: the last one saved when it has not changed
        since, else a new one, on the disk before the save names it."""
        saved: dict[int, tuple[int, str]] = {}
        for code, graph in state["graphs"].items():
            version = state["graph_versions"][code]
            if code in self._saved_graphs and self._saved_graphs[code][0] == version:
                saved[code] = self._saved_graphs[code]
                continue
            name = f"graph-{number}-{code + 2}.usearch"  # codes are -2 (``MIXED``) and up
            graph.save(str(self.directory / name))
            _fsync(self.directory / name)
            saved[code] = (version, name)
        self._saved_graphs = saved
        return {str(code): name for code, (_, name) in saved.items()}

    def _next_number(self) -> int:
        numbers = [
            int(path.stem.split("-", 1)[1])
            for path in self.directory.glob("rows-*.json")
            if path.stem.split("-", 1)[1].isdigit()
        ]
        return max(numbers, default=0) + 1

    def _write_rows(self, state: dict[str, Any], files: dict[str, Any]) -> None:
        rows = {"projects": state["projects"], "statuses": state["statuses"]}
        _write_atomically(self.directory / str(files["rows"]), json.dumps(rows).encode("utf-8"))
        arrays = self.directory / str(files["arrays"])
        with open(arrays.with_suffix(".tmp"), "wb") as out:
            np.savez(
                out,
                ids=state["ids"],
                row_keys=state["row_keys"],
                row_numbers=state["row_numbers"],
                project_codes=state["project_codes"],
                status_codes=state["status_codes"],
                in_graph=state["in_graph"],
                tail=state["tail"],
                tail_rows=state["tail_rows"],
            )
            out.flush()
            os.fsync(out.fileno())
        os.replace(arrays.with_suffix(".tmp"), arrays)

    def _remove_other_files(self, files: dict[str, Any]) -> None:
        keep = {files.get("rows"), files.get("arrays"), *files.get("graphs", {}).values()}
        for path in self.directory.iterdir():
            if path.name not in keep and path.name not in (INDEX_FILE, JOURNAL):
                path.unlink(missing_ok=True)

    def discard(self) -> None:
        """Forget the save (the vectors were cleared: ``reindex``)."""
        with self._save_lock:
            (self.directory / INDEX_FILE).unlink(missing_ok=True)
            self._saved_graphs = {}
            self._remove_other_files({})

    # -- restoring ----------------------------------------------------------------------

    def restore(self, index: VectorIndex, key: str) -> list[str] | None:
        """Load the save of ``key`` into ``index``; the journaled ids to read again from the
        store, or None when there is no usable save (the index is then left empty)."""
        index = _hnsw(index)
        try:
            meta = json.loads((self.directory / INDEX_FILE).read_text("utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            log.warning(UNREADABLE, self.directory, exc)
            return None
        if not isinstance(meta, dict) or meta.get("version") not in READ_VERSIONS or meta.get("key") != key:
            return None
        try:
            state = self._read_state(meta, lookups=index.graph_lookups)
        except (OSError, ValueError, KeyError, TypeError, RuntimeError, zipfile.BadZipFile) as exc:
            log.warning(UNREADABLE, self.directory, exc)
            return None
        index.restore(state, graph_is_view=True)
        if meta["version"] != FORMAT_VERSION:
            index.changed = True  # saved again in the new shape at close
        version = index.graph_version
        self._saved_graphs = {code: (version, name) for code, name in state["graph_files"].items()}
        return self.journal()

    def _read_state(self, meta: dict[str, Any], *, lookups: bool) -> dict[str, Any]:
        files = meta["files"]
        rows = json.loads((self.directory / files["rows"]).read_text("utf-8"))
        with (
            open(self.directory / files["arrays"], "rb") as handle,
            np.load(handle, allow_pickle=False) as arrays,
        ):
            state: dict[str, Any] = {name: arrays[name] for name in arrays.files}
        if "ids" not in state:  # version 1: the ids in the JSON file
            state.update(_rows_of_ids(rows["ids"], rows["live"]))
        state.update(projects=rows["projects"], statuses=rows["statuses"], graph_dead=meta["graph_dead"])
        if len(state["status_codes"]) != len(state["ids"]):
            raise ValueError("the rows and their codes disagree")
        if meta["version"] < 4:  # one graph of every project (``vector_graphs.MIXED``)
            names = {MIXED: files["graph"]} if files.get("graph") else {}
            sizes = {MIXED: int(meta["graph_rows"])}
        elif isinstance(files["graphs"], dict) and isinstance(meta["graph_sizes"], dict):
            names = {int(code): name for code, name in files["graphs"].items()}
            sizes = {int(code): int(size) for code, size in meta["graph_sizes"].items()}
        else:
            raise ValueError("the graphs or their sizes are not a table")
        if not set(names) <= set(sizes) or not all(isinstance(name, str) for name in names.values()):
            raise ValueError("the graphs and their sizes disagree")
        state.update(graph_files=names, graph_sizes={code: sizes[code] for code in names}, graphs={})
        for code, name in names.items():
            state["graphs"][code] = mapped_graph(str(self.directory / Path(name).name), lookups=lookups)
            if state["graphs"][code] is None:
                raise ValueError(f"the graph file {name} is not a usearch index")
        return state

    def close(self) -> None:
        with self._lock:
            self._journal.close()


def _rows_of_ids(ids: list[str], live: list[int]) -> dict[str, Any]:
    """The ids arrays of a version 1 save's JSON lists."""
    keys = encoded(ids)
    row_keys, row_numbers = IdMap.from_arrays(keys[live], np.asarray(live, np.int64)).arrays()
    return {"ids": keys, "row_keys": row_keys, "row_numbers": row_numbers}


def _hnsw(index: VectorIndex) -> HnswVectorIndex:
    if not isinstance(index, HnswVectorIndex):
        raise TypeError(f"vector_files saves an HnswVectorIndex, not {type(index).__name__}")
    return index


def _fsync(path: Path) -> None:
    """``path``'s data on the disk now, by this thread (the save's: the idle worker's), before
    ``index.json`` names it. Left to the kernel's writeback, a new graph's pages (186 MB at
    200,000 memories, 927 MB at a million) were written while the next writes ran, and each
    ``remember``'s commit waited behind them."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_atomically(path: Path, data: bytes) -> None:
    fresh = path.with_suffix(path.suffix + ".tmp")
    with open(fresh, "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    os.replace(fresh, path)
