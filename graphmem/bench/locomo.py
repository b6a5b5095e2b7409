"""LoCoMo retrieval benchmark through graphmem's real remember and recall path.

Protocol (``docs/benchmarks.md``): each conversation goes into a fresh temporary
store, every turn remembered as ``"<speaker>: <text>"`` with its session's date
and session id; each question of categories 1–4 with evidence recalls the top 10
from that store. Recall@k is the share of evidence turns in the top k, All@k
whether all of them are, NDCG@10 with binary relevance. Category 5 (adversarial)
is reported separately.

With ``distractors`` (a repository), the repository is bootstrapped once (code,
docs facts and history, as ``graphmem bootstrap`` does) into a template store whose
memories are then embedded; each conversation's store starts as a copy of it, and
the questions are asked from inside that project, so every scraped commit and fact
competes with the conversation's turns.
"""

from __future__ import annotations

import json
import math
import shutil
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

from graphmem.bench.cross_validation import Grid, format_cross_validation, leave_one_out, plan_grid
from graphmem.core.fusion import Plan, get_plan
from graphmem.core.ports import Embedder
from graphmem.errors import InvalidInputError

CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
MAIN_CATEGORIES = (1, 2, 3, 4)
TOP_K = 10
DISTRACTOR_HISTORY = 500  # commits bootstrapped as distractors: graphmem bootstrap's default
# What ``bench locomo --cross-validate`` chooses among, around the default plan: how much the
# semantic and graph channels count against the lexical one, how far graph spreading passes a
# score, and the cosine that counts as nothing.
DEFAULT_GRID: Mapping[str, Sequence[float | tuple[float, ...]]] = MappingProxyType(
    {
        "weights.semantic": (0.7, 1.0, 1.5),
        "weights.graph": (0.5, 1.0),
        "hop_weights": ((0.5, 0.3), (0.3, 0.15)),
        "semantic_offset": (0.2, 0.3),
    }
)


@dataclass(frozen=True, slots=True)
class Answer:
    """How one plan answered one question: its metrics and how long the recall took."""

    conversation: str
    category: int
    metrics: dict[str, float]
    ms: float


@dataclass
class Scores:
    """Sums of per-question metrics, by category."""

    n: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    sums: dict[int, dict[str, float]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(float)))

    @classmethod
    def of(cls, answers: Iterable[Answer]) -> Scores:
        scores = cls()
        for answer in answers:
            scores.add(answer.category, answer.metrics)
        return scores

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
    distractors: Path | None = None,
    history: int = DISTRACTOR_HISTORY,
    store_url: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """Run the benchmark for each plan on the same stores; one report per plan.

    ``distractors``: a repository bootstrapped (``history`` commits) into every
    conversation's store before the questions. ``store_url``: each conversation's store is
    this empty PostgreSQL database instead of a temporary Kùzu one (the schema is applied
    for it and dropped after it).
    """
    chosen = [p if isinstance(p, Plan) else get_plan(p) for p in plans]
    data = load(data_path)[:conversations]
    added, answers = _answer(data, chosen, embedder, distractors, history, store_url, progress, timed=True)
    return [_report(plan.name, len(data), answers[plan.name], added) for plan in chosen]


def cross_validate(
    data_path: Path,
    embedder: Embedder,
    *,
    base: str = "hybrid",
    grid: Grid = DEFAULT_GRID,
    metric: str = "R@10",
    conversations: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Leave one conversation out: the plan chosen from ``grid`` on the others, scored on it.

    Every candidate of ``plan_grid(base, grid)`` answers every question of categories 1–4;
    ``metric`` of each question is the score. The report holds the shipped plan's figure,
    the tuned one (the best candidate on every conversation), the cross-validated one, each
    fold's choice, and the cross-validated figure by category.
    """
    candidates = plan_grid(get_plan(base), grid)
    data = load(data_path)[:conversations]
    _, answers = _answer(data, candidates, embedder, None, 0, None, progress, timed=False)
    main = {plan: [a for a in said if a.category in MAIN_CATEGORIES] for plan, said in answers.items()}
    folds = list(dict.fromkeys(a.conversation for a in main[candidates[0].name]))
    if metric not in (main[candidates[0].name][0].metrics if main[candidates[0].name] else {}):
        raise InvalidInputError(f"Unknown metric {metric!r}: use R@5, R@10, All@10 or NDCG@10.")
    scores = {
        plan: {fold: [a.metrics[metric] for a in plan_answers if a.conversation == fold] for fold in folds}
        for plan, plan_answers in main.items()
    }
    result = leave_one_out(scores)
    held_out = [a for fold in result.folds for a in main[fold.chosen] if a.conversation == fold.name]
    by_category = Scores.of(held_out)
    return {
        "benchmark": "locomo",
        "metric": metric,
        "conversations": len(data),
        "candidates": len(candidates),
        "grid": {key: list(values) for key, values in grid.items()},
        **result.as_dict(),
        "cross_validated_by_category": {
            f"{c} {CATEGORY_NAMES[c]}": by_category.mean((c,)) for c in sorted(by_category.n)
        },
    }


def _answer(
    data: list[dict[str, Any]],
    chosen: list[Plan],
    embedder: Embedder,
    distractors: Path | None,
    history: int,
    store_url: str | None,
    progress: Callable[[str], None] | None,
    *,
    timed: bool,
) -> tuple[dict[str, Any] | None, dict[str, list[Answer]]]:
    if distractors is not None and not (distractors / ".git").exists():
        raise InvalidInputError(
            f"{distractors} is not a git repository: give the root of a clone "
            "(git clone REPO.bundle /tmp/repo)."
        )
    if store_url and distractors is not None:
        raise InvalidInputError("--distractors copies an embedded store: run it without --store.")
    with tempfile.TemporaryDirectory(prefix="graphmem-locomo-") as scratch:
        template: Path | None = None
        added: dict[str, Any] | None = None
        if distractors is not None:
            template = Path(scratch) / "template"
            added = _bootstrap_template(distractors.resolve(), template, embedder, history)
            if progress is not None:
                progress(f"bootstrap of {distractors} ({added['memories']} memories)")
        answers = _run(
            data, chosen, embedder, Path(scratch), template, added, progress, store_url, timed=timed
        )
    return added, answers


def _bootstrap_template(root: Path, template: Path, embedder: Embedder, history: int) -> dict[str, Any]:
    """Bootstrap ``root`` into a store at ``template`` and embed what it learned."""
    from graphmem.app import open_memory
    from graphmem.settings import load_settings

    started = time.perf_counter()
    memory = open_memory(load_settings(data_dir=template), embedder=embedder)
    try:
        report = memory.bootstrap(root, history=history)
        memory.embed_pending()
        count = sum(1 for _ in memory.store.all_memories(report.project))
    finally:
        memory.close()
    return {
        "repo": str(root),
        "project": report.project,
        "memories": count,
        "commits": report.commits,
        "facts": report.facts_added,
        "bootstrap_s": round(time.perf_counter() - started, 1),
        "history": history,
    }


def _run(
    data: list[dict[str, Any]],
    chosen: list[Plan],
    embedder: Embedder,
    scratch: Path,
    template: Path | None,
    added: dict[str, Any] | None,
    progress: Callable[[str], None] | None,
    store_url: str | None = None,
    *,
    timed: bool = True,
) -> dict[str, list[Answer]]:
    from graphmem.app import migrate_store, open_memory, store_schema
    from graphmem.settings import Settings, load_settings

    def settings(store_dir: Path) -> Settings:
        return load_settings(data_dir=store_dir, store={"url": store_url} if store_url else None)

    if store_url and store_schema(settings(scratch))[1]:
        raise InvalidInputError(
            "The --store database holds a graphmem schema already: point bench locomo at an empty "
            "database (it applies the schema for each conversation and drops it after)."
        )

    project = added["project"] if added is not None else None
    answers: dict[str, list[Answer]] = {p.name: [] for p in chosen}
    for number, conversation in enumerate(data):
        store_dir = scratch / f"conversation-{number}"
        if template is not None:
            shutil.copytree(template, store_dir)  # a closed store copies as files
        if store_url:
            migrate_store(settings(store_dir))
        try:
            memory = open_memory(settings(store_dir), embedder=embedder)
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
                # Reopened, the store's full-text index is committed, as it is for memories
                # written more than 30 s before a question: scores no longer depend on when
                # its background commit happened to run, and every run gives the same figures.
                memory.close()
                memory = open_memory(settings(store_dir), embedder=embedder)
                label = str(conversation.get("sample_id", number))
                for qa in conversation["qa"]:
                    evidence = {e for e in qa.get("evidence", []) if e in memory_of}
                    if not evidence:
                        continue
                    for plan in chosen:
                        if timed and memory.semantic is not None:
                            memory.semantic.forget_queries()  # each plan pays for its own query vector
                        started = time.perf_counter()
                        question = str(qa["question"])
                        hits = memory.recall(question, project=project, limit=TOP_K, plan=plan).hits
                        elapsed_ms = (time.perf_counter() - started) * 1000
                        ranked = [dia_of.get(h.memory.id, set()) for h in hits]
                        answers[plan.name].append(
                            Answer(label, int(qa["category"]), _metrics(ranked, evidence), elapsed_ms)
                        )
            finally:
                memory.close()
        finally:
            shutil.rmtree(store_dir, ignore_errors=True)
            if store_url:
                migrate_store(settings(store_dir), 0)
        if progress is not None:
            progress(str(conversation.get("sample_id", "?")))
    return answers


def _report(
    plan: str,
    conversations: int,
    answers: Sequence[Answer],
    distractors: dict[str, Any] | None = None,
) -> dict[str, Any]:
    scores = Scores.of(answers)
    latencies = [answer.ms for answer in answers]
    return {
        "plan": plan,
        "conversations": conversations,
        "distractors": distractors,
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
    added = report.get("distractors")
    if added:
        lines.append(
            f"distractors: {added['repo']} bootstrapped once ({added['commits']} commits, "
            f"{added['facts']} facts, {added['memories']} memories in {added['bootstrap_s']} s), "
            "copied into each conversation's store"
        )
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


def format_cross_validation_report(report: dict[str, Any]) -> str:
    lines = format_cross_validation(
        f"LoCoMo, {report['metric']} of categories 1-4, leave one of {report['conversations']} "
        f"conversations out, {report['candidates']} candidate plans",
        report,
    )
    lines.append(f"cross-validated {report['metric']} by category:")
    lines += [
        f"  {name:<16} {m['questions']:>5} {m[report['metric']]:>7.3f}"
        for name, m in report["cross_validated_by_category"].items()
    ]
    return "\n".join(lines)
