"""Half-remembered sentences: recall@10 of graphmem's recall against plain full-text search.

Protocol (``docs/benchmarks.md``): every turn of a LoCoMo file goes into a fresh temporary
store through ``remember``, one store per conversation, as ``graphmem bench locomo`` does;
then every ``every``-th turn whose text has at least ``MIN_WORDS`` words is looked for by a
run of ``span`` consecutive words from its middle, as a user who half-remembers a
sentence would type it. Recall@10 is the share of those turns found in the top 10 by
recall with each plan, and by plain full-text search over the same texts: SQLite FTS5
(the standard library's), BM25, any word of the query, Porter stemmer, accents folded.
"""

from __future__ import annotations

import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from graphmem.bench.locomo import load, turns
from graphmem.core.fusion import Plan, get_plan
from graphmem.core.ports import Embedder
from graphmem.core.text import fold, words
from graphmem.errors import InvalidInputError

TOP_K = 10
SPAN = 7  # words of each query
EVERY = 5  # one turn in EVERY is asked for
MIN_WORDS = 10  # turns shorter than this are not asked for (a span would be most of them)
PLAIN = "plain-fts"  # the baseline's name in the report
MISSES_SHOWN = 10  # missed queries listed per searcher


def plain_index(texts: dict[str, str]) -> sqlite3.Connection:
    """An in-memory SQLite FTS5 table of ``texts`` (id -> text)."""
    try:
        db = sqlite3.connect(":memory:")
        db.execute(
            "CREATE VIRTUAL TABLE fts USING fts5(id UNINDEXED, text, "
            "tokenize='porter unicode61 remove_diacritics 2')"
        )
    except sqlite3.OperationalError as exc:
        raise InvalidInputError(
            f"This Python's SQLite has no FTS5 ({exc}): the plain full-text baseline needs it; "
            "use a Python built with SQLite 3.9 or newer."
        ) from None
    db.executemany("INSERT INTO fts(id, text) VALUES (?, ?)", list(texts.items()))
    return db


def plain_search(db: sqlite3.Connection, query: str, limit: int = TOP_K) -> list[str]:
    """The ids of the ``limit`` texts best matching any word of ``query`` (BM25)."""
    expression = " OR ".join(f'"{w}"' for w in dict.fromkeys(words(fold(query))))
    if not expression:
        return []
    rows = db.execute("SELECT id FROM fts WHERE fts MATCH ? ORDER BY bm25(fts) LIMIT ?", (expression, limit))
    return [row[0] for row in rows]


def span_of(text: str, span: int) -> str | None:
    """``span`` consecutive words from the middle of a turn's text (the speaker left out),
    or None when it has fewer than ``MIN_WORDS`` words."""
    body = text.split(": ", 1)[-1].split()
    if len(body) < max(MIN_WORDS, span):
        return None
    start = (len(body) - span) // 2
    return " ".join(body[start : start + span])


def run(
    data_path: Path,
    embedder: Embedder,
    *,
    plans: Sequence[str | Plan] = ("hybrid", "lexical"),
    conversations: int | None = None,
    span: int = SPAN,
    every: int = EVERY,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Recall@10 of each plan and of plain full-text search on the same queries."""
    from graphmem.app import open_memory
    from graphmem.settings import load_settings

    if not 3 <= span <= 12:
        raise InvalidInputError(f"span must be between 3 and 12 words, not {span}.")
    if every < 1:
        raise InvalidInputError(f"every must be 1 or more, not {every}.")
    chosen = [p if isinstance(p, Plan) else get_plan(p) for p in plans]
    data = load(data_path)[:conversations]
    names = [*(p.name for p in chosen), PLAIN]
    found = dict.fromkeys(names, 0)
    misses: dict[str, list[str]] = {name: [] for name in names}
    latencies: dict[str, list[float]] = {p.name: [] for p in chosen}
    asked = 0
    with tempfile.TemporaryDirectory(prefix="graphmem-phrase-") as scratch:
        for number, conversation in enumerate(data):
            memory = open_memory(load_settings(data_dir=Path(scratch) / f"c{number}"), embedder=embedder)
            try:
                texts: dict[str, str] = {}
                for _, session, text, when in turns(conversation):
                    result = memory.remember(
                        text, category="conversation", scope="global", session=session, occurred_at=when
                    )
                    texts[result.memory.id] = text
                memory.embed_pending()
                db = plain_index(texts)
                for index, (memory_id, text) in enumerate(texts.items()):
                    query = span_of(text, span)
                    if index % every or query is None:
                        continue
                    asked += 1
                    ranked: dict[str, list[str]] = {}
                    for plan in chosen:
                        if memory.semantic is not None:
                            memory.semantic.forget_queries()  # each plan pays for its own query vector
                        started = time.perf_counter()
                        hits = memory.recall(query, limit=TOP_K, plan=plan).hits
                        latencies[plan.name].append((time.perf_counter() - started) * 1000)
                        ranked[plan.name] = [h.memory.id for h in hits]
                    ranked[PLAIN] = plain_search(db, query)
                    for name, ids in ranked.items():
                        if memory_id in ids:
                            found[name] += 1
                        elif len(misses[name]) < MISSES_SHOWN:
                            misses[name].append(query)
                db.close()
            finally:
                memory.close()
            if progress is not None:
                progress(str(conversation.get("sample_id", "?")))
    return {
        "conversations": len(data),
        "queries": asked,
        "span": span,
        "recall_at_10": {name: round(found[name] / asked, 4) if asked else None for name in names},
        "missed": {name: asked - found[name] for name in names},
        "query_ms": {
            name: round(statistics.median(spent), 2) if spent else None for name, spent in latencies.items()
        },
        "misses": misses,
    }


def format_report(report: dict[str, Any]) -> str:
    lines = [
        f"half-remembered sentences: {report['queries']} queries of {report['span']} consecutive words "
        f"from {report['conversations']} conversations",
        f"{'searched by':<12} {'R@10':>7} {'missed':>7} {'p50 ms':>8}",
    ]
    for name, value in report["recall_at_10"].items():
        shown = "-" if value is None else f"{value:.3f}"
        ms = report["query_ms"].get(name)
        lines.append(f"{name:<12} {shown:>7} {report['missed'][name]:>7} {'-' if ms is None else ms:>8}")
    for name, queries in report["misses"].items():
        for query in queries:
            lines.append(f"  missed by {name}: {query!r}")
    return "\n".join(lines)
