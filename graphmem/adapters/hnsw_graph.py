"""The usearch HNSW graph the vector index (``vector_index.py``) searches: its parameters and
its two kinds of vectors. Half precision (``FINE``) scores with the graph's own vectors; 8-bit
(``COARSE``) only navigates, its candidates scored again with the store's exact vectors, at
half the size (927 MB half precision at a million vectors). usearch is imported when the
first graph is made: a process that never builds or maps one does not pay for it.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import numpy.typing as npt

# HNSW parameters: usearch's defaults for edges per node and build breadth; the search
# explores twice what is asked, at least 128 (on 20,000 MiniLM vectors of developer notes,
# agreement with the exact scan was 0.990 at 64 and 0.9975 at 128 for the top 10, 0.969
# and 0.989 for the top 50).
CONNECTIVITY = 16
EXPANSION_ADD = 128
MIN_EXPANSION_SEARCH = 128
COARSE, FINE = "i8", "f16"  # the graph's vectors with and without the exact ones at hand


def new_graph(dimension: int, dtype: str = FINE) -> Any:
    """An empty usearch HNSW index of ``dtype`` vectors: half precision scored by inner
    product on unit vectors, or 8-bit (``COARSE``) by cosine, which keeps its scores on the
    cosine's scale (its 8-bit inner products are in units of 127²)."""
    from usearch.index import Index

    return Index(
        ndim=dimension,
        metric="cos" if dtype == COARSE else "ip",
        dtype=dtype,
        connectivity=CONNECTIVITY,
        expansion_add=EXPANSION_ADD,
        expansion_search=MIN_EXPANSION_SEARCH,
    )


def mapped_graph(path: str, *, lookups: bool = True) -> Any:
    """The graph saved at ``path``, mapped rather than read (None: not a usearch file); with
    usearch's table of its keys (to give a row's vector back by its key) only if ``lookups``:
    that table held 48 MB of a serving process at a million rows (2026-12-05), and a graph that
    only navigates needs none. Without it, the graph searches but cannot give a row's vector
    back (``get`` answers garbage) nor take rows (``writable_copy``)."""
    from usearch.index import Index

    graph: Any = Index.restore(path, view=True, enable_key_lookups=lookups)
    if graph is not None:
        graph.mapped_from = (path, _identity(path))
    return graph


def writable_copy(graph: Any) -> Any:
    """``graph`` (a mapped one) copied into memory, with its table of keys: usearch 2.23 adding
    to a graph without one corrupted the process's heap. Read again from the file it maps while
    that file is still the one mapped, else from the graph written to a buffer (held meanwhile:
    the graph's size again, until the copy is made)."""
    from usearch.index import Index

    path, identity = getattr(graph, "mapped_from", (None, None))
    if path is not None and identity == _identity(path):
        return Index.restore(path, view=False)
    return Index.restore(graph.save(), view=False)


def _identity(path: str) -> tuple[int, int, int] | None:
    """What tells a file from another written under the same name (None: no file)."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_ino, found.st_size, found.st_mtime_ns


def graph_dtype(graph: Any) -> str:
    """The kind of vectors ``graph`` keeps, as ``new_graph`` names them."""
    return str(graph.dtype.name).lower()


def graph_vectors(graph: Any, keys: npt.NDArray[np.uint64]) -> npt.NDArray[np.float32]:
    """The vectors of ``keys`` as ``graph`` keeps them (a graph with its table of keys)."""
    found = graph.get(keys, dtype=np.float32)
    return np.stack(found) if isinstance(found, tuple) else np.asarray(found, np.float32)


def graph_scores(graph: Any, keys: npt.NDArray[np.uint64], query: npt.ArrayLike) -> npt.NDArray[np.float32]:
    """``graph``'s own score of ``query`` with each of its rows ``keys``. A half-precision
    graph's: its vectors and the query in half precision, multiplied by the kernel usearch
    searches with (simsimd's, which usearch requires): a CPU with AVX-512 FP16 sums the
    products in half precision, and numpy's single-precision sum of the same vectors then
    differs from the search's scores by up to 5e-4 (3e-8 on other CPUs). The query's rounding
    moves a cosine by at most 5e-5. An 8-bit graph's rows (each scored again from the exact
    vectors by the index): their vectors as the graph gives them back, against the query
    rounded to half precision."""
    half = np.asarray(query, np.float32).astype(np.float16)
    if graph_dtype(graph) == FINE:
        import simsimd

        vectors = graph.get(keys, dtype=np.float16)
        matrix = np.stack(vectors) if isinstance(vectors, tuple) else vectors
        scores = np.asarray(simsimd.cdist(half[None], matrix, metric="dot"), np.float32)
        return scores.reshape(-1)  # one query: one row
    return np.asarray(graph_vectors(graph, keys) @ half.astype(np.float32), np.float32).reshape(-1)
