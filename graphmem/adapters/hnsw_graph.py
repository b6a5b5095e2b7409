"""The usearch HNSW graph the vector index (``vector_index.py``) searches: its parameters and
its two kinds of vectors. Half precision (``FINE``) scores with the graph's own vectors; 8-bit
(``COARSE``) only navigates, its candidates scored again with the store's exact vectors, at
half the size (927 MB half precision at a million vectors). usearch is imported when the
first graph is made: a process that never builds or maps one does not pay for it.
"""

from __future__ import annotations

from typing import Any

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


def graph_dtype(graph: Any) -> str:
    """The kind of vectors ``graph`` keeps, as ``new_graph`` names them."""
    return str(graph.dtype.name).lower()
