"""The code-memory benchmark ("blame recall"): does memory bring back the past
decisions about exactly the code an agent is about to change?

The protocol (``docs/benchmarks.md``, "Code memory"):

1. evaluation commits: the first E commits of ``git rev-list --no-merges HEAD`` that
   modify or delete an existing line of a source file (``git diff -U0 --no-renames C^ C``);
2. the cut t0 is the oldest evaluation commit's committer time: the memories are the
   non-merge commits older than t0, the code is the first-parent tree before t0;
3. the ground truth of C is the commits ``git blame -w -s -l --root C^`` gives for
   the lines C modifies or deletes, kept when they are memories;
4. the query is C's subject line, the files C changes and the functions, methods and
   classes around the changed lines in C^ (graphmem's own parser);
5. R@10 = |top 10 ∩ truth| / min(|truth|, 10), and MRR of the first hit, averaged.

graphmem answers through its real path: a fresh store, ``bootstrap`` of the code at
the cut with its history (non-merge commits older than t0) as memories, then one
``recall`` per commit with the query as the OpenCode plugin sends it (the message and
the files in play), the symbols named in backticks. Two baselines run on the same
commits: *recency* (the newest memories that touched C's files) and *bm25* (C's
subject over the memories' messages).
"""

from __future__ import annotations

import re
import statistics
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

from graphmem.adapters import git_blame
from graphmem.adapters.code_parser import TreeSitterParser
from graphmem.bench.cross_validation import Grid, format_cross_validation, leave_one_out, plan_grid
from graphmem.core.code import language_for
from graphmem.core.fusion import Plan, get_plan
from graphmem.core.ports import Embedder
from graphmem.errors import InvalidInputError

TOP_K = 10
MIN_EVALUATED = 20
SOURCE_EXTENSIONS = frozenset(
    {
        ".py",
        ".js",
        ".jsx",
        ".ts",
        ".tsx",
        ".go",
        ".rs",
        ".java",
        ".kt",
        ".rb",
        ".php",
        ".c",
        ".h",
        ".cc",
        ".cpp",
    }
    | {".hpp", ".cs"}
)
SYMBOL_KINDS = frozenset({"function", "method", "class"})
MAX_QUERY_FILES = 20
MAX_QUERY_SYMBOLS = 20
METHODS = ("graphmem", "recency", "bm25")
# What ``bench code-memory --cross-validate`` chooses among, around the default plan: how much
# the entity channel (the files and symbols a change names) counts, how much a memory one code
# edge away keeps, whether newer commits gain, and how much graph spreading counts.
DEFAULT_GRID: Mapping[str, Sequence[float | tuple[float, ...]]] = MappingProxyType(
    {
        "weights.entity": (2.0, 1.0, 3.0),
        "neighbour_weight": (0.6, 0.4),
        "entity_recency": (0.0, 0.3),
        "weights.graph": (1.0, 0.5),
    }
)
# Lower-cased word tokens: letters, digits and "_" (``show_default`` stays one token).
_TOKEN_RE = re.compile(r"\w+")

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class Case:
    """One evaluation commit: what an agent knows before editing, and the truth."""

    sha: str
    subject: str
    files: tuple[str, ...]
    symbols: tuple[str, ...]
    truth: frozenset[str]

    def query(self) -> str:
        """The text recall gets: the task, the files in play, the symbols as code."""
        names = " ".join(f"`{name}`" for name in self.symbols[:MAX_QUERY_SYMBOLS])
        return " ".join([self.subject, *self.files[:MAX_QUERY_FILES], names]).strip()


@dataclass(slots=True)
class Protocol:
    """The commits, the cut and the memories of one repository."""

    root: Path
    head: str
    cut: int  # t0, unix seconds
    tree: str
    memories: dict[str, int]  # sha -> committer time
    cases: list[Case]
    candidates: int  # evaluation commits before those with no ground truth were skipped


def is_source(path: str) -> bool:
    return Path(path).suffix.lower() in SOURCE_EXTENSIONS


def tokens(text: str) -> list[str]:
    return _TOKEN_RE.findall(text.lower())


def prepare(repo: Path, eval_commits: int = 200, progress: Progress | None = None) -> Protocol:
    """Steps 1–4 of the protocol on ``repo``; refuses one with under 20 evaluable commits."""
    root = git_blame.check_repository(repo)
    commits = git_blame.non_merge_commits(root)
    if not commits:
        raise InvalidInputError(f"{root} has only merge commits: there is no history to measure.")
    chosen: list[tuple[git_blame.CommitInfo, list[git_blame.FileChange]]] = []
    for commit in commits:
        if len(chosen) >= eval_commits:
            break
        if not commit.parents:
            continue  # a root commit changes no existing line
        changes = git_blame.diff_changes(root, commit.parents[0], commit.sha)
        if any(is_source(c.path) and c.changed for c in changes):
            chosen.append((commit, changes))
    if not chosen:
        raise InvalidInputError(
            f"{root} has no commit that changes an existing line of a source file: nothing to measure."
        )
    cut = chosen[-1][0].committed_at
    memories = {c.sha: c.committed_at for c in commits if c.committed_at < cut}
    subjects = _subjects(root, {commit.sha for commit, _ in chosen})
    parser = TreeSitterParser()
    cases = []
    for done, (commit, changes) in enumerate(chosen, 1):
        parent = commit.parents[0]
        truth: set[str] = set()
        for change in changes:
            if is_source(change.path) and change.changed:
                truth |= git_blame.blame_commits(root, parent, change.path, change.changed)
        truth &= memories.keys()
        if truth:
            files = tuple(dict.fromkeys(c.path for c in changes if is_source(c.path) and c.changed))
            symbols = _symbols(root, parent, changes, parser)
            cases.append(Case(commit.sha, subjects.get(commit.sha, ""), files, symbols, frozenset(truth)))
        if progress is not None and done % 50 == 0:
            progress(f"{done}/{len(chosen)} commits blamed")
    if len(cases) < MIN_EVALUATED:
        raise InvalidInputError(
            f"{root} has {len(cases)} evaluable commit(s) (a change to lines written before the cut); "
            f"the benchmark needs at least {MIN_EVALUATED}: use a repository with a longer history"
            + (" or a larger --eval-commits." if len(chosen) >= eval_commits else ".")
        )
    tree = git_blame.tree_at(root, cut - 1)
    return Protocol(root, git_blame.head(root), cut, tree, memories, cases, len(chosen))


def _subjects(root: Path, shas: set[str]) -> dict[str, str]:
    return {sha: text.split("\n", 1)[0].strip() for sha, text in git_blame.messages(root, shas).items()}


def _symbols(
    root: Path, parent: str, changes: list[git_blame.FileChange], parser: TreeSitterParser
) -> tuple[str, ...]:
    """Functions, methods and classes around the changed lines in ``parent``, innermost first."""
    names: list[str] = []
    for change in changes:
        language = language_for(change.path)
        if change.added or language is None:
            continue
        lines = change.old_lines | {max(line, 1) for line in change.inserted_after}
        if not lines:
            continue
        source = git_blame.file_at(root, parent, change.path)
        if source is None:
            continue
        definitions = [d for d in parser.parse(source, language).definitions if d.kind in SYMBOL_KINDS]
        around = [d for d in definitions if any(d.start_line <= line <= d.end_line for line in lines)]
        around.sort(key=lambda d: (d.end_line - d.start_line, d.start_line))
        names += [d.qualified_name for d in around]
    return tuple(dict.fromkeys(names))


# -- scoring --------------------------------------------------------------------------


def score(ranked: list[str], truth: frozenset[str]) -> tuple[float, float]:
    """(R@10, reciprocal rank of the first correct memory in the top 10)."""
    top = ranked[:TOP_K]
    recall = len(set(top) & truth) / min(len(truth), TOP_K)
    first = next((rank for rank, sha in enumerate(top, 1) if sha in truth), None)
    return recall, (1.0 / first if first else 0.0)


def summarise(results: list[tuple[list[str], float]], cases: list[Case]) -> dict[str, Any]:
    """Mean R@10 and MRR, and the query latency p50/p95 in ms."""
    scores = [score(ranked, case.truth) for (ranked, _), case in zip(results, cases, strict=True)]
    latencies = sorted(ms for _, ms in results)
    return {
        "R@10": round(statistics.fmean(s[0] for s in scores), 4),
        "MRR": round(statistics.fmean(s[1] for s in scores), 4),
        "p50_ms": round(_percentile(latencies, 50), 2),
        "p95_ms": round(_percentile(latencies, 95), 2),
    }


def _percentile(values: list[float], pct: int) -> float:
    if not values:
        return 0.0
    index = min(len(values) - 1, max(0, round(pct / 100 * len(values) + 0.5) - 1))
    return values[index]


# -- the baselines ---------------------------------------------------------------------


def recency(protocol: Protocol) -> list[tuple[list[str], float]]:
    """The 10 newest memories that touched any of C's files (``git log --no-merges -- FILES``)."""
    results = []
    for case in protocol.cases:
        started = time.perf_counter()
        touched = git_blame.file_log(protocol.root, list(case.files))
        ranked = [sha for sha in touched if sha in protocol.memories][:TOP_K]
        results.append((ranked, (time.perf_counter() - started) * 1000))
    return results


def bm25(protocol: Protocol) -> list[tuple[list[str], float]]:
    """BM25 (k1 = 1.2, b = 0.75) of C's subject over the memories' messages."""
    from rank_bm25 import BM25Okapi

    texts = git_blame.messages(protocol.root, set(protocol.memories))
    shas = sorted(texts, key=lambda sha: (-protocol.memories[sha], sha))
    index = BM25Okapi([tokens(texts[sha]) for sha in shas], k1=1.2, b=0.75)
    results = []
    for case in protocol.cases:
        started = time.perf_counter()
        scores = index.get_scores(tokens(case.subject))
        order = sorted(range(len(shas)), key=lambda i: -scores[i])[:TOP_K]
        ranked = [shas[i] for i in order if scores[i] > 0]
        results.append((ranked, (time.perf_counter() - started) * 1000))
    return results


# -- graphmem --------------------------------------------------------------------------


def graphmem_run(
    protocol: Protocol, embedder: Embedder, progress: Progress | None = None
) -> tuple[list[tuple[list[str], float]], dict[str, Any]]:
    """Bootstrap the cut into a fresh store, then one recall per commit, as the plugin asks."""
    results, store = _recalls(protocol, embedder, (None,), progress)
    return results[None], store


def _recalls(
    protocol: Protocol, embedder: Embedder, plans: Sequence[Plan | None], progress: Progress | None
) -> tuple[dict[str | None, list[tuple[list[str], float]]], dict[str, Any]]:
    """Each plan's recall of every case from one bootstrapped store (``None``: the configured plan)."""
    from graphmem.app import open_memory
    from graphmem.settings import load_settings

    results: dict[str | None, list[tuple[list[str], float]]] = {}
    with tempfile.TemporaryDirectory(prefix="graphmem-code-memory-") as scratch:
        checkout = Path(scratch) / protocol.root.name
        git_blame.shared_checkout(protocol.root, protocol.tree, checkout)
        memory = open_memory(load_settings(data_dir=Path(scratch) / "data"), embedder=embedder)
        try:
            started = time.perf_counter()
            report = memory.bootstrap(
                checkout,
                history=min(max(len(protocol.memories), 1), 100_000),
                history_before=datetime.fromtimestamp(protocol.cut, UTC),
                history_merges=False,
                history_revision=protocol.head,
            )
            if progress is not None:
                progress(f"bootstrapped {report.files} files, {report.commits} commits")
            memory.embed_pending()
            setup_s = time.perf_counter() - started
            # Reopened, the store's full-text index is committed (as for memories written
            # more than 30 s before a question): scores no longer depend on when its
            # background commit happened to run, and every run gives the same figures.
            memory.close()
            memory = open_memory(load_settings(data_dir=Path(scratch) / "data"), embedder=embedder)
            project = str(checkout.resolve())
            for plan in plans:
                answered = results.setdefault(plan.name if plan else None, [])
                for case in protocol.cases:
                    started = time.perf_counter()
                    found = memory.recall(case.query(), project=project, limit=TOP_K, plan=plan)
                    elapsed = (time.perf_counter() - started) * 1000
                    ranked = [
                        h.memory.source.removeprefix("git:")
                        for h in found.hits
                        if h.memory.source.startswith("git:")
                    ]
                    answered.append((ranked, elapsed))
        finally:
            memory.close()
    return results, {"commits": report.commits, "files": report.files, "setup_s": round(setup_s, 1)}


def cross_validate(
    repos: Sequence[Path],
    embedder: Embedder,
    *,
    base: str = "hybrid",
    grid: Grid = DEFAULT_GRID,
    eval_commits: int = 200,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Leave one repository out: the plan chosen from ``grid`` on the others, scored on it (R@10)."""
    if len(repos) < 2:
        raise InvalidInputError("Cross-validation needs two repositories or more: give --repo twice.")
    candidates = plan_grid(get_plan(base), grid)
    scores: dict[str, dict[str, list[float]]] = {plan.name: {} for plan in candidates}
    names = [repo.name for repo in repos]
    if len(set(names)) < len(names):  # two clones of one name: tell the folds apart by path
        names = [str(repo) for repo in repos]
    for repo, name in zip(repos, names, strict=True):
        protocol = prepare(repo, eval_commits, progress)
        results, _ = _recalls(protocol, embedder, candidates, progress)
        for plan in candidates:
            scores[plan.name][name] = [
                score(ranked, case.truth)[0]
                for (ranked, _), case in zip(results[plan.name], protocol.cases, strict=True)
            ]
    return {
        "benchmark": "code-memory",
        "metric": "R@10",
        "repositories": [str(repo) for repo in repos],
        "candidates": len(candidates),
        "grid": {key: list(values) for key, values in grid.items()},
        **leave_one_out(scores).as_dict(),
    }


def format_cross_validation_report(report: dict[str, Any]) -> str:
    return "\n".join(
        format_cross_validation(
            f"code-memory (blame recall), R@10, leave one of {len(report['repositories'])} repositories "
            f"out, {report['candidates']} candidate plans",
            report,
        )
    )


def run(
    repo: Path,
    embedder: Embedder,
    *,
    eval_commits: int = 200,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """The whole benchmark on ``repo``: the protocol, graphmem and both baselines."""
    protocol = prepare(repo, eval_commits, progress)
    if progress is not None:
        progress(f"{len(protocol.cases)} commits to evaluate, {len(protocol.memories)} memories")
    ours, store = graphmem_run(protocol, embedder, progress)
    methods = {
        "graphmem": summarise(ours, protocol.cases),
        "recency": summarise(recency(protocol), protocol.cases),
        "bm25": summarise(bm25(protocol), protocol.cases),
    }
    return {
        "repository": str(protocol.root),
        "head": protocol.head,
        "cut": datetime.fromtimestamp(protocol.cut, UTC).isoformat(),
        "eval_commits": protocol.candidates,
        "evaluated": len(protocol.cases),
        "memories": len(protocol.memories),
        "store": store,
        "methods": methods,
    }


def format_report(report: dict[str, Any]) -> str:
    lines = [
        f"code-memory benchmark (blame recall): {report['repository']}",
        f"evaluated {report['evaluated']} of {report['eval_commits']} commits; "
        f"{report['memories']:,} memories (commits before {report['cut'][:10]})",
        f"{'method':<10} {'R@10':>6} {'MRR':>6} {'p50 ms':>8} {'p95 ms':>8}",
    ]
    for name in METHODS:
        m = report["methods"][name]
        lines.append(f"{name:<10} {m['R@10']:>6.3f} {m['MRR']:>6.3f} {m['p50_ms']:>8.1f} {m['p95_ms']:>8.1f}")
    return "\n".join(lines)
