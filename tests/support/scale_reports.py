"""A report of ``graphmem.bench.scale.run`` for the tests of its text: every figure it always has,
then the fields a test gives."""

from __future__ import annotations

from typing import Any


def scale_report(**fields: Any) -> dict[str, Any]:
    """A global store's report of 1,000 memories, with ``fields`` over it."""
    return {
        "memories": 1000,
        "projects": 0,
        "recall_project": None,
        "remember_ms": {"p50": 1.5, "p95": 3.0},
        "import": {"memories_per_s": 900.0, "model_texts_per_s": 1000.0, "share_of_model": None},
        "index": {"vectors_loaded_s": 0.1, "graph_built_s": 0.2},
        "recall_ms": {"p50": 12.25, "p95": 20.0},
        "first_recall_cold_s": 1.2,
        "rss_mb": {"serving_process": 300.0, "cold_recall_peak": 400.0},
        "store_mb": 50.0,
        **fields,
    }
