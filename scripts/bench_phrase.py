"""Recall@10 on half-remembered sentences: graphmem's recall against plain full-text search.

Every turn of the LoCoMo development split goes into a store through ``remember`` (as
``graphmem bench locomo`` does, one store per conversation); every fifth turn of at least
ten words is then looked for by a run of ``SPAN`` consecutive words from its middle, as a
user who half-remembers a sentence would type it. Recall@10 is the share of those turns
found in the top 10 by: recall with the ``hybrid`` plan (the default), recall with the
``lexical`` plan, and plain full-text search (SQLite FTS5, BM25, every word of the query,
Porter stemmer) over the same texts.

    .venv/bin/python scripts/bench_phrase.py --data ../shared/data/locomo/locomo-dev.json
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import tempfile
from pathlib import Path

from graphmem.bench.locomo import load, turns
from graphmem.core.text import fold, words

SPAN = 7
EVERY = 5
TOP_K = 10


def plain_fts(texts: dict[str, str]) -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.execute(
        "CREATE VIRTUAL TABLE fts USING fts5(id UNINDEXED, text, "
        "tokenize='porter unicode61 remove_diacritics 2')"
    )
    db.executemany("INSERT INTO fts(id, text) VALUES (?, ?)", list(texts.items()))
    return db


def plain_search(db: sqlite3.Connection, query: str) -> list[str]:
    expression = " OR ".join(f'"{w}"' for w in dict.fromkeys(words(fold(query))))
    rows = db.execute("SELECT id FROM fts WHERE fts MATCH ? ORDER BY bm25(fts) LIMIT ?", (expression, TOP_K))
    return [row[0] for row in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    args = parser.parse_args()
    from graphmem.adapters.embedders import OnnxEmbedder
    from graphmem.app import open_memory
    from graphmem.settings import load_settings

    embedder = OnnxEmbedder()
    found = {"hybrid": 0, "lexical": 0, "plain-fts": 0}
    asked = 0
    for number, conversation in enumerate(load(args.data)):
        with tempfile.TemporaryDirectory(prefix="graphmem-phrase-") as scratch:
            memory = open_memory(load_settings(data_dir=Path(scratch) / f"c{number}"), embedder=embedder)
            try:
                texts: dict[str, str] = {}
                for _, session, text, when in turns(conversation):
                    result = memory.remember(
                        text, category="conversation", scope="global", session=session, occurred_at=when
                    )
                    texts[result.memory.id] = text
                memory.embed_pending()
                db = plain_fts(texts)
                for index, (memory_id, text) in enumerate(texts.items()):
                    body = text.split(": ", 1)[-1].split()
                    if index % EVERY or len(body) < 10:
                        continue
                    start = (len(body) - SPAN) // 2
                    query = " ".join(body[start : start + SPAN])
                    asked += 1
                    for plan in ("hybrid", "lexical"):
                        hits = memory.recall(query, limit=TOP_K, plan=plan).hits
                        found[plan] += memory_id in {h.memory.id for h in hits}
                    found["plain-fts"] += memory_id in plain_search(db, query)
            finally:
                memory.close()
    print(json.dumps({"queries": asked, **{k: round(v / asked, 4) for k, v in found.items()}}))


if __name__ == "__main__":
    main()
