"""A small project beside the large ones (``graphmem bench scale --small-project N``): what a new
repository's recall gets on a store of large projects.

After the measure phase's timed recalls, N memories are remembered into a project of their own,
named by a path beside the large projects' (``<root>/small-<i>``). On a team's store the name is
one whose part of the vector index is the first large project's (``PostgresEmbeddings.parts_of``):
a search for a project that is a small share of its part is the one an index filtered after its
walk gets wrong (``postgres_embeddings.READ_WHOLE_MAX``). The embedded store keeps a graph per
project (``adapters/vector_graphs.py``): any name will do.

Then each of the timed recalls' queries is asked twice for the small project: ``recall``, timed
as the measure phase's are; and the search the recall's semantic channel makes (its ``depth``
nearest), against the exact nearest of the project's memories, computed here from their stored
vectors (a store spread over projects holds no global memory, so they are all the search may
return): ``share_of_exact`` is the mean share of the exact top ``k`` the search returned, ``short``
how many searches returned fewer than ``k`` (``k``: the depth, or the project's size if smaller).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from graphmem.bench.harness import latency_ms
from graphmem.bench.synthetic import iter_synthetic_memories
from graphmem.core.fusion import Plan
from graphmem.core.models import Status
from graphmem.core.ports import VectorQuery
from graphmem.errors import InvalidInputError

if TYPE_CHECKING:
    from graphmem.service.memory import MemoryService

# Names tried for the small project on a team's store: each is in one of 16 parts, so one of 256
# shares the large project's part but for a chance of (15/16)^256, below one in ten million.
CANDIDATE_NAMES = 256
SEED = 17  # the small project's texts: other than the large ones' (seed 7)
DEPTH = Plan("hybrid", {}).depth  # what a recall's semantic channel asks the index for


def check_small_project(small: int, projects: int) -> None:
    """Refuse a small project of a negative size or on a store of no projects, saying how to
    call it instead."""
    if small < 0:
        raise InvalidInputError(
            f"--small-project {small} is negative: give the number of memories of the small project, "
            "or 0 (the default) for none."
        )
    if small and not projects:
        raise InvalidInputError(
            f"--small-project {small} needs large projects beside it: give --projects too "
            "(--projects 20 spreads the store over 20 projects)."
        )


def small_project_name(memory: MemoryService, root: Path, beside: str) -> str:
    """The small project's name: on a team's store, the first ``<root>/small-<i>`` in the part of
    the vector index ``beside`` is in; else ``<root>/small-0``."""
    names = [str(root / f"small-{i}") for i in range(CANDIDATE_NAMES)]
    parts_of = getattr(getattr(memory.store, "vectors", None), "parts_of", None)
    if parts_of is None:
        return names[0]
    parts = parts_of([beside, *names])
    return next((name for name in names if parts[name] == parts[beside]), names[0])


def measure_small_project(
    memory: MemoryService,
    count: int,
    name: str,
    beside: str,
    queries: Sequence[str],
    answered: Callable[[], None],
) -> dict[str, Any]:
    """Remember ``count`` memories into ``name``, embed them, then time a recall of each of
    ``queries`` for it and compare its vector search with the exact one (the module doc)."""
    ids = []
    for record in iter_synthetic_memories(count, seed=SEED):
        kept = memory.remember(record["text"], category=record["category"], scope="project", project=name)
        ids.append(kept.memory.id)
        answered()
    memory.embed_pending()
    semantic = memory.semantic
    while semantic is not None and semantic.tidy():
        pass
    recall_ms = []
    for text in queries:
        if semantic is not None:
            semantic.forget_queries()  # each recall embeds its query, as the measure phase's did
        started = time.perf_counter()
        memory.recall(text, limit=10, project=name)
        recall_ms.append((time.perf_counter() - started) * 1000)
        answered()
    report: dict[str, Any] = {
        "memories": count,
        "project": name,
        "beside": beside,
        "recall_ms": latency_ms(recall_ms),
    }
    if semantic is not None:
        report["vector_search"] = vector_search(memory, ids, name, queries)
    return report


def vector_search(
    memory: MemoryService, ids: list[str], name: str, queries: Sequence[str], depth: int = DEPTH
) -> dict[str, Any]:
    """How the search of ``name``'s nearest ``depth`` (or all ``ids`` if fewer) for each of
    ``queries`` compares with the exact nearest of ``ids`` by their stored vectors."""
    semantic = memory.semantic
    assert semantic is not None
    stored = {i: semantic.vector(i) for i in ids}
    kept = [i for i, vector in stored.items() if vector is not None]
    matrix = np.stack([np.asarray(stored[i], dtype=np.float32) for i in kept])
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    k = min(depth, len(kept))
    active = frozenset({Status.ACTIVE.value})
    shares, short = [], 0
    for text in queries:
        vector = semantic.embed_query(text)
        found = {i for i, _ in semantic.search(VectorQuery(vector, k, name, active))}
        cosines = matrix @ (np.asarray(vector, dtype=np.float32) / np.linalg.norm(vector))
        exact = {kept[row] for row in np.argsort(-cosines, kind="stable")[:k]}
        shares.append(len(found & exact) / k)
        short += len(found) < k
    share = round(float(np.mean(shares)), 3)
    return {"k": k, "searches": len(queries), "share_of_exact": share, "short": short}
