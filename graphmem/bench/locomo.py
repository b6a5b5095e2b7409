"""LoCoMo retrieval benchmark through graphmem's real remember and recall path.

Protocol (``docs/benchmarks.md``): each conversation goes into a fresh temporary
store, every turn remembered as ``"<speaker>: <text>"`` with its session's date
and session id; each question of categories 1–4 with evidence recalls the top 10
from that store. Recall@k is the share of evidence turns in the top k, All@k
whether all of them are, NDCG@10 with binary relevance. Category 5 (adversarial)
is reported separately.
"""

from __future__ import annotations

import json
import math
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from graphmem.core.fusion import Plan, get_plan
from graphmem.core.ports import Embedder
from graphmem.errors import InvalidInputError

CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
MAIN_CATEGORIES = (1, 2, 3, 4)
TOP_K = 10


@dataclass
class Scores:
    """Sums of per-question metrics, by category."""

    n: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    sums: dict[int, dict[str, float]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(float)))

    def add(self, category: int, metrics: dict[str, float]) -> None:
        self.n[category] += 1
        for name, value in metrics.items():
            self.sums[category][name] += value

    def mean(self, categories: tuple[int, ...]) -> dict[str, float]:
        total = sum(self.n[c] for c in categories)
        if not total:
            return {}
        names = {name for c in categories for name in self.sums[c]}
        return {
            name: round(sum(self.sums[c][name] for c in categories) / total, 4) for name in sorted(names)
        } | {"questions": total}


def parse_session_date(value: str) -> datetime:
    """LoCoMo dates look like ``"1:56 pm on 8 May, 2023"``."""
    return datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def load(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidInputError(f"Cannot read LoCoMo data from {path}: {exc}") from exc
    if not isinstance(data, list) or not all(isinstance(c, dict) and "conversation" in c for c in data):
        raise InvalidInputError(f"{path} is not a LoCoMo file (a list of conversations with 'qa').")
    return data


def turns(conversation: dict[str, Any]) -> Iterator[tuple[str, str, str, datetime]]:
    """(dia_id, session id, text, time) of every turn, in order."""
    conv = conversation["conversation"]
    sessions = sorted(
        (int(key.split("_")[1]) for key in conv if key.startswith("session_") and key.count("_") == 1),
    )
    for number in sessions:
        when = parse_session_date(conv[f"session_{number}_date_time"])
        session_id = f"{conversation.get('sample_id', 'conv')}:session_{number}"
        for turn in conv[f"session_{number}"]:
            yield turn["dia_id"], session_id, f"{turn['speaker']}: {turn['text']}", when


def _metrics(ranked: list[set[str]], evidence: set[str]) -> dict[str, float]:
    def found(k: int) -> set[str]:
        return set().union(*ranked[:k]) & evidence if ranked else set()

    dcg = 0.0
    credited: set[str] = set()
    for i, dia_ids in enumerate(ranked[:TOP_K]):
        gain = len((dia_ids & evidence) - credited)
        credited |= dia_ids & evidence
        dcg += gain / math.log2(i + 2)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(evidence), TOP_K)))
    return {
        "R@5": len(found(5)) / len(evidence),
        "R@10": len(found(10)) / len(evidence),
        "All@10": float(found(10) == evidence),
        "NDCG@10": dcg / ideal if ideal else 0.0,
    }


def run(
    data_path: Path,
    embedder: Embedder,
    *,
    plans: Sequence[str | Plan] = ("hybrid",),
    conversations: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """Run the benchmark for each plan on the same stores; one report per plan."""
    from graphmem.app import open_memory
    from graphmem.settings import load_settings

    chosen = [p if isinstance(p, Plan) else get_plan(p) for p in plans]
    data = load(data_path)[:conversations]
    scores = {p.name: Scores() for p in chosen}
    latencies: dict[str, list[float]] = {p.name: [] for p in chosen}
    for conversation in data:
        with tempfile.TemporaryDirectory(prefix="graphmem-locomo-") as tmp:
            memory = open_memory(load_settings(data_dir=Path(tmp)), embedder=embedder)
            try:
                memory_of: dict[str, str] = {}
                for dia_id, session, text, when in turns(conversation):
                    result = memory.remember(
                        text, category="conversation", scope="global", session=session, occurred_at=when
                    )
                    memory_of[dia_id] = result.memory.id
                dia_of: dict[str, set[str]] = defaultdict(set)
                for dia_id, memory_id in memory_of.items():
                    dia_of[memory_id].add(dia_id)
                memory.embed_pending()
                for qa in conversation["qa"]:
                    evidence = {e for e in qa.get("evidence", []) if e in memory_of}
                    if not evidence:
                        continue
                    for plan in chosen:
                        if memory.semantic is not None:
                            memory.semantic.forget_queries()  # each plan pays for its own query vector
                        started = time.perf_counter()
                        hits = memory.recall(str(qa["question"]), limit=TOP_K, plan=plan).hits
                        latencies[plan.name].append((time.perf_counter() - started) * 1000)
                        ranked = [dia_of[h.memory.id] for h in hits]
                        scores[plan.name].add(int(qa["category"]), _metrics(ranked, evidence))
            finally:
                memory.close()
        if progress is not None:
            progress(str(conversation.get("sample_id", "?")))
    return [_report(plan.name, len(data), scores[plan.name], latencies[plan.name]) for plan in chosen]


def _report(plan: str, conversations: int, scores: Scores, latencies: list[float]) -> dict[str, Any]:
    return {
        "plan": plan,
        "conversations": conversations,
        "categories_1_4": scores.mean(MAIN_CATEGORIES),
        "by_category": {
            f"{c} {CATEGORY_NAMES[c]}": scores.mean((c,)) for c in sorted(scores.n) if scores.n[c]
        },
        "query_ms": {
            "p50": round(statistics.median(latencies), 2) if latencies else None,
            "p95": round(statistics.quantiles(latencies, n=20)[18], 2) if len(latencies) > 20 else None,
        },
    }


def format_report(report: dict[str, Any]) -> str:
    lines = [f"LoCoMo retrieval, plan {report['plan']}, {report['conversations']} conversations"]
    header = f"{'category':<16} {'n':>5} {'R@5':>7} {'R@10':>7} {'All@10':>7} {'NDCG@10':>8}"
    lines.append(header)
    rows = [("1-4 (all)", report["categories_1_4"]), *report["by_category"].items()]
    for name, m in rows:
        if not m:
            continue
        lines.append(
            f"{name:<16} {m['questions']:>5} {m['R@5']:>7.3f} {m['R@10']:>7.3f} "
            f"{m['All@10']:>7.3f} {m['NDCG@10']:>8.3f}"
        )
    q = report["query_ms"]
    lines.append(f"query latency: p50 {q['p50']} ms, p95 {q['p95']} ms")
    return "\n".join(lines)
