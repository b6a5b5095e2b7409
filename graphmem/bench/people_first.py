"""The people-first benchmark: does what a person told graphmem come first for the question it
answers, when the store also holds a real repository's code, docs and history?

The protocol (``../shared/data/people-first/README.md``, ``docs/benchmarks.md``):

1. a clone of the repository, a fresh store, ``bootstrap`` of the clone (the default history);
2. ``remember`` of every line of the memories file (category and text), in file order, in the
   clone's project (the CLI's default scope);
3. for every line, ``recall`` of its question, top 10: the rank of that line's memory;
4. MRR, R@1 and R@3; the same on a store without the bootstrap ("clean") is the ceiling.

Everything goes through the product's own calls (``MemoryService.bootstrap``, ``remember``,
``recall``); the store is closed and reopened before the questions, so the full-text index is
committed as it is for memories written more than 30 s before a question.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphmem.core.models import Category
from graphmem.core.ports import Embedder
from graphmem.errors import InvalidInputError

if TYPE_CHECKING:
    from graphmem.core.fusion import Plan
    from graphmem.service.memory import MemoryService

TOP_K = 10
DEFAULT_HISTORY = 500  # graphmem bootstrap's default
# What a line of the memories file may hold at most: a benchmark's file, not a data dump.
MAX_CASES = 10_000
GIT_TIMEOUT_S = 600.0

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class Case:
    """One line of the memories file: what a person said, and the question it answers."""

    category: str
    text: str
    query: str


def load(path: Path) -> list[Case]:
    """The cases of a JSON-lines file of ``{"category", "text", "query"}``; one-line errors."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"Cannot read {path}: {exc}. Give a UTF-8 JSON-lines file.") from None
    cases: list[Case] = []
    known = {c.value for c in Category}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            raise InvalidInputError(
                f'{path}:{number} is not JSON: each line is {{"category": ..., "text": ..., "query": ...}}.'
            ) from None
        if not isinstance(row, dict) or not all(
            isinstance(row.get(key), str) and row[key].strip() for key in ("category", "text", "query")
        ):
            raise InvalidInputError(
                f"{path}:{number} needs the text fields category, text and query, none of them empty."
            )
        if row["category"] not in known:
            raise InvalidInputError(
                f"{path}:{number}: unknown category {row['category']!r}; known: {', '.join(sorted(known))}."
            )
        cases.append(Case(row["category"], row["text"], row["query"]))
    if not cases:
        raise InvalidInputError(f"{path} holds no memories: one JSON object a line.")
    if len(cases) > MAX_CASES:
        raise InvalidInputError(f"{path} holds {len(cases):,} memories: at most {MAX_CASES:,}.")
    return cases


def clone(repo: Path, into: Path) -> Path:
    """A local clone of ``repo`` (a work tree or a bundle) at ``into``; a one-line error if it is no
    git repository."""
    if not repo.exists():
        raise InvalidInputError(f"{repo} does not exist: give a git repository (or a .bundle file).")
    done = subprocess.run(
        ["git", "clone", "--quiet", str(repo.resolve()), str(into)],
        capture_output=True,
        text=True,
        timeout=GIT_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or ["git clone failed"])[-1]
        raise InvalidInputError(f"Cannot clone {repo}: {reason}. Give a git repository with its history.")
    return into.resolve()


def remember_all(memory: MemoryService, cases: Sequence[Case], project: str | None) -> list[str]:
    """Remember every case in order; the ids of the memories (a repeat keeps the first's id)."""
    ids = [memory.remember(c.text, category=c.category, project=project).memory.id for c in cases]
    memory.embed_pending()
    return ids


def ranks(
    memory: MemoryService,
    cases: Sequence[Case],
    ids: Sequence[str],
    project: str | None,
    plan: str | Plan | None = None,
) -> list[dict[str, Any]]:
    """For each case, the 1-based rank of its memory in the top 10 of its question (None when
    absent), what ranked above it, and the time recall took."""
    rows: list[dict[str, Any]] = []
    if cases:  # the symbol index built first, as a daemon's is by its first recall
        memory.code_described(cases[0].query, project=project)
    for case, memory_id in zip(cases, ids, strict=True):
        started = time.perf_counter()
        hits = memory.recall(case.query, project=project, limit=TOP_K, plan=plan).hits
        took = (time.perf_counter() - started) * 1000
        order = [h.memory.id for h in hits]
        rank = order.index(memory_id) + 1 if memory_id in order else None
        above = [h.memory.text[:80] for h in hits[: (rank or TOP_K + 1) - 1][:3]]
        rows.append({"query": case.query, "rank": rank, "above": above, "ms": round(took, 1)})
    return rows


def metrics(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    """MRR, R@1 and R@3 over ``rows`` (``rank`` None: not in the top 10)."""
    found = [r["rank"] for r in rows]
    n = len(found) or 1
    return {
        "MRR": round(sum(1 / r for r in found if r) / n, 3),
        "R@1": round(sum(1 for r in found if r == 1) / n, 3),
        "R@3": round(sum(1 for r in found if r and r <= 3) / n, 3),
        "missed": sum(1 for r in found if r is None),
    }


def _open(store_dir: Path, embedder: Embedder) -> MemoryService:
    from graphmem.app import open_memory
    from graphmem.settings import load_settings

    return open_memory(load_settings(data_dir=store_dir), embedder=embedder)


def _store(
    store_dir: Path,
    embedder: Embedder,
    cases: Sequence[Case],
    root: Path,
    project: str | None,
    history: int | None,
) -> tuple[list[str], dict[str, Any]]:
    """Build one store (bootstrapped when ``history`` is not None) and remember the cases."""
    added: dict[str, Any] = {}
    memory = _open(store_dir, embedder)
    try:
        if history is not None:
            started = time.perf_counter()
            report = memory.bootstrap(root, history=history)
            memory.embed_pending()
            added = {
                "commits": report.commits,
                "facts": report.facts_added,
                "symbols": report.symbols,
                "memories": sum(1 for _ in memory.store.all_memories(report.project)),
                "bootstrap_s": round(time.perf_counter() - started, 1),
            }
        ids = remember_all(memory, cases, project)
    finally:
        memory.close()
    return ids, added


def build(
    repo: Path,
    cases: Sequence[Case],
    embedder: Embedder,
    scratch: Path,
    *,
    history: int = DEFAULT_HISTORY,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Steps 1 and 2 for both stores under ``scratch``: the clone, ``clean`` and ``bootstrapped``."""
    from graphmem.connect import resolve_project

    root = clone(repo, scratch / "repo")
    project = resolve_project(root)
    stores: dict[str, Any] = {"root": root, "project": project}
    for name, depth in (("clean", None), ("bootstrapped", history)):
        ids, added = _store(scratch / name, embedder, cases, root, project, depth)
        stores[name] = {"dir": scratch / name, "ids": ids, "added": added}
        if progress is not None:
            progress(f"{name} store ready" + (f" ({added['memories']} memories)" if added else ""))
    return stores


def measure(
    stores: dict[str, Any], cases: Sequence[Case], embedder: Embedder, plan: str | Plan | None = None
) -> dict[str, Any]:
    """Step 3 and 4 on both stores of ``build``."""
    results: dict[str, Any] = {}
    for name in ("clean", "bootstrapped"):
        memory = _open(stores[name]["dir"], embedder)
        try:
            rows = ranks(memory, cases, stores[name]["ids"], stores["project"], plan)
        finally:
            memory.close()
        latencies = [r["ms"] for r in rows]
        results[name] = {
            **metrics(rows),
            "recall_p50_ms": round(statistics.median(latencies), 1),
            "added": stores[name]["added"],
            "questions": rows,
        }
    return results


def run(
    repo: Path,
    memories: Path,
    embedder: Embedder,
    *,
    history: int = DEFAULT_HISTORY,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """The whole protocol on ``repo`` with the cases of ``memories``; the report."""
    cases = load(memories)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="graphmem-people-first-") as scratch:
        stores = build(repo, cases, embedder, Path(scratch), history=history, progress=progress)
        results = measure(stores, cases, embedder)
    return {
        "repo": str(repo),
        "memories": str(memories),
        "cases": len(cases),
        "history": history,
        "took_s": round(time.perf_counter() - started, 1),
        **results,
    }


def format_report(report: dict[str, Any]) -> str:
    added = report["bootstrapped"]["added"]
    lines = [
        f"people-first benchmark: {report['cases']} memories of {report['memories']}",
        f"repository {report['repo']}: {added.get('commits', 0)} commits, {added.get('facts', 0)} facts "
        f"bootstrapped ({added.get('memories', 0)} memories)",
        f"{'store':<14} {'MRR':>6} {'R@1':>6} {'R@3':>6} {'missed':>7} {'p50 ms':>8}",
    ]
    for name in ("clean", "bootstrapped"):
        m = report[name]
        lines.append(
            f"{name:<14} {m['MRR']:>6.3f} {m['R@1']:>6.3f} {m['R@3']:>6.3f} {m['missed']:>7} "
            f"{m['recall_p50_ms']:>8.1f}"
        )
    below = [q for q in report["bootstrapped"]["questions"] if q["rank"] != 1]
    if below:
        lines.append("after the bootstrap, not first:")
        for q in below:
            where = f"#{q['rank']}" if q["rank"] else "not in the top 10"
            lines.append(f"  {where:<18} {q['query']}")
    return "\n".join(lines)
