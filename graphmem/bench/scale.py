"""Scale benchmark: a store of N realistic memories, timed through the product's own paths.

Reports remember p50, bulk import rate against the model's own batch throughput,
warm recall p50/p95 (query embedding included), first recall from a cold process
(a new ``graphmem recall`` process), resident memory and the store's size on disk.

With ``hash_vectors`` the imported memories get vectors from the deterministic hash
embedder (named as the real model, so the store takes them): a million texts cannot be
embedded by the model on a 2-core machine in a benchmark's time. Queries, remembers and
everything after the import still use the real model; the import rate is then not
compared with the model's.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphmem.adapters.embedders import HashEmbedder
from graphmem.core.keys import memory_id
from graphmem.core.ports import Embedder
from graphmem.errors import InvalidInputError
from graphmem.settings import STORE_URL_VARIABLE, Settings

if TYPE_CHECKING:
    from graphmem.service.memory import MemoryService

COMPONENTS = [
    "payments",
    "auth",
    "search",
    "billing",
    "notifications",
    "checkout",
    "inventory",
    "reports",
    "scheduler",
    "importer",
    "exporter",
    "gateway",
    "cache",
    "queue",
    "webhooks",
    "admin panel",
    "mobile app",
    "CLI",
    "graph store",
    "embedding worker",
    "rate limiter",
    "audit log",
    "sync job",
]
TECH = [
    "PostgreSQL",
    "Redis",
    "Kùzu",
    "SQLite",
    "Kafka",
    "RabbitMQ",
    "gRPC",
    "GraphQL",
    "FastAPI",
    "Django",
    "React",
    "TypeScript",
    "Go",
    "Rust",
    "Celery",
    "S3",
    "Terraform",
    "Docker",
    "nginx",
    "OpenTelemetry",
    "pytest",
    "Playwright",
    "pnpm",
    "uv",
    "ruff",
    "mypy",
    "tree-sitter",
]
REASONS = [
    "because it keeps latency under 50 ms",
    "since the old approach leaked connections",
    "to avoid vendor lock-in",
    "because the team already knows it",
    "after the outage last week",
    "to cut the CI time in half",
    "because it is simpler to operate",
    "to keep data on the machine",
    "since retries were piling up",
    "because the license allows redistribution",
]
FILES = [
    "src/{c}/service.py",
    "src/{c}/models.py",
    "src/{c}/api.ts",
    "cmd/{c}/main.go",
    "lib/{c}/client.rs",
    "tests/test_{c}.py",
    "docs/{c}.md",
    "config/{c}.yaml",
]
TEMPLATES = [
    ("decision", "We chose {t} for the {c} {r}."),
    ("decision", "The {c} service now talks to {t} directly instead of through the {c2}, {r}."),
    ("blocker", "The {c} tests fail on CI with a timeout against {t}; see #{n}."),
    ("blocker", "Deploying {c} is blocked until !{n} is merged: {t} migration pending."),
    ("procedure", "To rebuild the {c} index run `make {c2}-reindex` then restart {t}."),
    ("procedure", "Release {c}: tag the commit, wait for the pipeline, then bump {f}."),
    ("fact", "{f} holds the retry policy of the {c}; it uses exponential backoff with {t}."),
    ("fact", "The {c} stores its state in {t}; the schema lives in {f}."),
    ("preference", "Prefer {t} over hand-written code in the {c}."),
    ("directive", "Never call {t} from the {c} request path; enqueue a job instead."),
    ("event", "Incident: {c} went down for {m} minutes after a {t} upgrade (!{n})."),
    ("plan", "Next sprint: move the {c} from {t} to {t2}, tracked in &{e}."),
    ("idea", "Maybe cache {c} lookups in {t} to save a round trip."),
]
# Words for identifiers and details, so the vocabulary grows with the store the way
# real notes do (a few common words, a long tail of rare ones).
DEV_WORDS = """account address adapter alert archive audit backoff balance batch bucket buffer build
bundle cache callback cancel cart channel charge checksum chunk claim client cluster column commit
config consumer context cookie coupon credit cursor customer dashboard deadline debounce decoder
delivery digest discount dispatch document domain draft encoder endpoint entity event export
feature fetch filter flag flush folder form gateway grant handler hash header health hook image
index invoice job journal kernel key label lease ledger limit listener loader lock log mailer
manifest mapper merchant message metric migration mutex node notice offset order owner packet page
parser partition payload payout permission pipeline plan policy pool price profile prompt provider
proxy publisher quota receipt record refund region registry release replica report request
resolver retry role route rule runner schema scope secret segment sender session shard signal
snapshot socket source span stream subscriber summary table task tenant thread ticket timer token
topic trace tracker transfer trigger upload user validator vault vendor version voucher webhook
widget worker workspace""".split()  # noqa: SIM905

QUERIES = [
    "why did we pick {t} for the {c}",
    "how do I release the {c}",
    "what is blocking {c} deploys",
    "where is the retry policy of the {c}",
    "{c} outage",
    "should the {c} call {t} directly",
    "{t} migration plan",
]


def _rare_word(rng: random.Random) -> str:
    """A dev word, Zipf-like: a few are common, most are rare."""
    return DEV_WORDS[int(len(DEV_WORDS) * rng.random() ** 2)]


def _identifier(rng: random.Random) -> str:
    return "_".join(_rare_word(rng) for _ in range(rng.randint(2, 3)))


def synthetic_memories(n: int, seed: int = 7) -> list[dict[str, Any]]:
    """``n`` distinct, realistic-looking developer memories as export records."""
    return list(iter_synthetic_memories(n, seed))


def iter_synthetic_memories(n: int, seed: int = 7) -> Iterator[dict[str, Any]]:
    """``synthetic_memories`` one at a time: a million of them held at once took 600 MB of the
    benchmark's peak."""
    rng = random.Random(seed)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    for i in range(n):
        category, template = rng.choice(TEMPLATES)
        c, c2 = rng.sample(COMPONENTS, 2)
        t, t2 = rng.sample(TECH, 2)
        text = template.format(
            c=c,
            c2=c2,
            t=t,
            t2=t2,
            r=rng.choice(REASONS),
            f=rng.choice(FILES).format(c=c.replace(" ", "_")),
            n=rng.randint(1, 5000),
            e=rng.randint(1, 300),
            m=rng.randint(2, 90),
        )
        created = start + timedelta(minutes=7 * i)
        detail = f"Touches `{_identifier(rng)}` and the {_rare_word(rng)} {_rare_word(rng)}"
        yield {
            "type": "memory",
            "id": memory_id(seed=f"bench-{i}"),  # shaped as remember's ids: the indexes key on them
            "text": f"{text} {detail} [{i}].",
            "category": category,
            "scope": "global",
            "created_at": created.isoformat(),
        }


def synthetic_queries(n: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    return [
        rng.choice(QUERIES).format(c=rng.choice(COMPONENTS), t=rng.choice(TECH)) + f" {_rare_word(rng)}"
        for _ in range(n)
    ]


def _model_rate(embedder: Embedder, texts: list[str], runs: int = 3) -> float:
    """The model's own batch throughput on ``texts`` (texts/s), median of ``runs``."""
    rates = []
    for _ in range(runs):
        started = time.perf_counter()
        embedder.embed(texts)
        rates.append(len(texts) / (time.perf_counter() - started))
    return statistics.median(rates)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)


# Children report their own memory: a parent's resource.getrusage(RUSAGE_CHILDREN)
# counts the parent's pages, which a child shares until it execs.
COLD_RECALL_SCRIPT = """
import sys
from graphmem.cli.main import main
sys.argv = ["graphmem", *sys.argv[1:]]
try:
    main()  # as the console script runs, the command's collector policy included
finally:
    peak = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")][0].split()[1]
    print("graphmem-bench peak-rss-kb", peak, file=sys.stderr)
"""
SERVING_SCRIPT = """
import json, sys
from pathlib import Path
from graphmem.app import open_memory
from graphmem.settings import load_settings
memory = open_memory(load_settings(data_dir=Path(sys.argv[1])))
for text in json.loads(sys.argv[2]):
    memory.recall(text)
rss = [l for l in open("/proc/self/status") if l.startswith("VmRSS:")][0].split()[1]
print("graphmem-bench rss-kb", rss, file=sys.stderr)
memory.close()
"""


class _Peaks:
    """This process's peak RSS per phase (``peak_rss_mb``): VmHWM read at each phase's end, then
    set back to the current RSS for the next (``/proc/self/clear_refs``); None without /proc."""

    def __init__(self) -> None:
        self.mb: dict[str, float | None] = {}
        self.end("")

    def end(self, phase: str) -> None:
        try:
            with open("/proc/self/status") as status:
                kb = next(float(line.split()[1]) for line in status if line.startswith("VmHWM:"))
            with open("/proc/self/clear_refs", "w") as out:
                out.write("5")
        except (OSError, StopIteration):
            kb = None
        if phase:
            self.mb[phase] = None if kb is None else round(kb / 1024, 1)


def _child(script: str, *args: str, store_url: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, STORE_URL_VARIABLE: store_url} if store_url else None
    done = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, check=False, env=env
    )
    if done.returncode != 0:
        raise RuntimeError(f"benchmark child failed: {done.stderr[-500:]}")
    return done


def _reported(stderr: str, name: str) -> float:
    for line in stderr.splitlines():
        if line.startswith(f"graphmem-bench {name} "):
            return float(line.split()[-1])
    raise RuntimeError(f"benchmark child did not report {name}: {stderr[-500:]}")


class _NamedHashEmbedder(HashEmbedder):
    """The hash embedder under the real model's name and dimension (``hash_vectors``)."""

    def __init__(self, real: Embedder) -> None:
        super().__init__(real.dimension)
        self.model_name = real.model_name


def _write_exports(records: Iterable[dict[str, Any]], workdir: Path) -> list[Path]:
    """``records`` as export files of whole lines, each half the import's size limit at most
    (a million memories take about 450 MB)."""
    from graphmem.service.file_access import MAX_IMPORT_BYTES

    exports: list[Path] = []
    out = None
    size = 0
    try:
        for record in records:
            line = (json.dumps(record) + "\n").encode("utf-8")
            if out is None or size + len(line) > MAX_IMPORT_BYTES // 2:
                if out is not None:
                    out.close()
                exports.append(workdir / f"memories-{len(exports) + 1}.jsonl")
                out = exports[-1].open("wb")
                size = 0
            out.write(line)
            size += len(line)
    finally:
        if out is not None:
            out.close()
    return exports


def _size_mb(path: Path) -> float:
    return round(sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6, 1)


def run(
    memories: int,
    embedder: Embedder,
    *,
    queries: int = 200,
    cold_runs: int = 3,
    data_dir: Path | None = None,
    hash_vectors: bool = False,
    store_url: str | None = None,
    clients: Sequence[int] = (),
    writes: int = 0,
    backlog: int = 0,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Build the store and measure; returns the report as a dict.

    ``store_url``: a PostgreSQL database to build the store in instead of a temporary Kùzu one
    (docs/team.md). It must hold no graphmem schema: the benchmark applies it, and drops
    graphmem's tables again at the end. ``clients``: then that many concurrent clients on the
    built store, each count in turn (``graphmem.bench.clients``), reported under ``concurrent``.
    ``writes``: then that many writes as the daemon makes them (``daemon_writes``). ``backlog``:
    last, that many remembers left without vectors, and the cold first recall beside them
    (``backlog``)."""
    from graphmem.app import migrate_store, store_schema
    from graphmem.settings import load_settings

    say = progress or (lambda message: None)
    workdir = Path(tempfile.mkdtemp(prefix="graphmem-scale-"))
    data_dir = data_dir or workdir / "data"

    def settings() -> Settings:
        return load_settings(data_dir=data_dir, store={"url": store_url} if store_url else None)

    migrated = False  # the schema is this run's: dropped at the end
    try:
        if store_url:
            where, version, _ = store_schema(settings())
            if version:
                raise InvalidInputError(
                    f"{where} holds a graphmem schema already: point bench scale at an empty database "
                    "(it applies the schema, and drops graphmem's tables at the end)."
                )
            migrate_store(settings())
            migrated = True
        return _measure(
            memories,
            embedder,
            queries,
            cold_runs,
            data_dir,
            workdir,
            hash_vectors,
            store_url,
            settings,
            say,
            clients,
            writes,
            backlog,
        )
    finally:
        try:
            if migrated:
                migrate_store(settings(), 0)
        finally:
            # The export files, and the store unless ``data_dir`` was given: even after a failure.
            shutil.rmtree(workdir, ignore_errors=True)


def _measure(
    memories: int,
    embedder: Embedder,
    queries: int,
    cold_runs: int,
    data_dir: Path,
    workdir: Path,
    hash_vectors: bool,
    store_url: str | None,
    settings: Callable[[], Settings],
    say: Callable[[str], None],
    clients: Sequence[int] = (),
    writes: int = 0,
    backlog: int = 0,
) -> dict[str, Any]:
    from graphmem.app import open_memory, store_size_mb

    peaks = _Peaks()
    exports = _write_exports(iter_synthetic_memories(memories), workdir)

    sample = [r["text"] for r in itertools.islice(iter_synthetic_memories(memories), 1024)]
    embedder.embed(sample[:64])  # warm the model
    # With hash vectors the import is not compared with the model: a glance at its rate will do.
    model_rate = _model_rate(embedder, sample[:64], runs=1) if hash_vectors else _model_rate(embedder, sample)
    say(f"model throughput {model_rate:.0f} texts/s")

    importer = _NamedHashEmbedder(embedder) if hash_vectors else embedder
    memory = open_memory(settings(), embedder=importer)
    try:
        started = time.perf_counter()
        for export in exports:  # a million memories are several files: an import reads 64 MiB at most
            memory.import_file(export)
        import_s = time.perf_counter() - started
        import_rate = memories / import_s
        say(f"imported {memories} memories in {import_s:.1f}s")
        if not hash_vectors:
            # Measured again after the import: the machine is shared, and the ratio should
            # compare the import with the model at its best, not at a slow moment.
            model_rate = max(model_rate, _model_rate(embedder, sample))
    finally:
        memory.close()
    peaks.end("import")

    memory = open_memory(settings(), embedder=embedder)
    try:
        started = time.perf_counter()
        memory.load_model()
        load_s = time.perf_counter() - started
        # What the daemon's idle worker does: the vector index's graph (past 20,000 vectors).
        started = time.perf_counter()
        semantic = memory.semantic
        while semantic is not None and semantic.tidy():
            pass
        build_s = time.perf_counter() - started
        say(f"vectors loaded in {load_s:.1f}s, index built in {build_s:.1f}s")
        peaks.end("index")

        remember_ms = []
        for i, text in enumerate(synthetic_queries(200, seed=3)):
            started = time.perf_counter()
            memory.remember(f"Note {i}: {text} is handled by the on-call engineer", category="fact")
            remember_ms.append((time.perf_counter() - started) * 1000)
        memory.embed_pending()
        while semantic is not None and semantic.tidy():
            pass

        recall_ms = []
        texts = synthetic_queries(queries)
        memory.recall(texts[0])  # loads the index
        for text in texts:
            started = time.perf_counter()
            memory.recall(text, limit=10)
            recall_ms.append((time.perf_counter() - started) * 1000)
        written = _daemon_writes(memory, writes) if writes else None
    finally:
        memory.close()
    peaks.end("measure")

    concurrent = None
    if clients:
        from graphmem.bench import clients as concurrency

        concurrent = concurrency.run(
            list(clients),
            data_dir,
            store_url=store_url,
            open_memory=lambda: open_memory(settings(), embedder=embedder),
            progress=say,
        )
    cold_s = []
    cold_peak_kb = []
    for i in range(cold_runs):
        started = time.perf_counter()
        done = _child(
            COLD_RECALL_SCRIPT,
            "--data-dir",
            str(data_dir),
            "recall",
            "--json",
            texts[i % len(texts)],
            store_url=store_url,
        )
        cold_s.append(time.perf_counter() - started)
        cold_peak_kb.append(_reported(done.stderr, "peak-rss-kb"))
    serving = _child(SERVING_SCRIPT, str(data_dir), json.dumps(texts[:50]), store_url=store_url)
    disk_mb = store_size_mb(settings()) if store_url else _size_mb(data_dir)
    report: dict[str, Any] = {
        "memories": memories,
        "store": "postgresql" if store_url else "kuzu",
        "stored_vectors": "hash" if hash_vectors else "model",
        "remember_ms": {"p50": _percentile(remember_ms, 0.5), "p95": _percentile(remember_ms, 0.95)},
        "import": {
            "memories_per_s": round(import_rate, 1),
            "model_texts_per_s": round(model_rate, 1),
            "share_of_model": None if hash_vectors else round(import_rate / model_rate, 3),
        },
        "index": {"vectors_loaded_s": round(load_s, 2), "graph_built_s": round(build_s, 2)},
        "store_mb": disk_mb,
        "recall_ms": {"p50": _percentile(recall_ms, 0.5), "p95": _percentile(recall_ms, 0.95)},
        "first_recall_cold_s": round(statistics.median(cold_s), 2),
        "rss_mb": {
            "serving_process": round(_reported(serving.stderr, "rss-kb") / 1024, 1),
            "cold_recall_peak": round(max(cold_peak_kb) / 1024, 1),
        },
        "peak_rss_mb": peaks.mb,
    }
    if written is not None:
        report["daemon_writes"] = written
    if concurrent is not None:
        report["concurrent"] = concurrent
    if backlog:
        memory = open_memory(settings(), embedder=embedder)
        try:
            for i, text in enumerate(synthetic_queries(backlog, seed=13)):  # the newest memories
                memory.remember(f"Waiting {i}: {text} needs a second look from the team", category="fact")
        finally:
            memory.close()
        report["backlog"] = _cold_recalls(data_dir, texts, cold_runs, store_url) | {"memories": backlog}
    return report


def _cold_recalls(data_dir: Path, texts: Sequence[str], runs: int, store_url: str | None) -> dict[str, Any]:
    """``runs`` first recalls, each from a new ``graphmem recall`` process: the median and each."""
    seconds = []
    for i in range(runs):
        started = time.perf_counter()
        _child(
            COLD_RECALL_SCRIPT,
            "--data-dir",
            str(data_dir),
            "recall",
            "--json",
            texts[i % len(texts)],
            store_url=store_url,
        )
        seconds.append(time.perf_counter() - started)
    return {
        "first_recall_cold_s": round(statistics.median(seconds), 2),
        "runs_s": [round(s, 2) for s in seconds],
    }


def _daemon_writes(memory: MemoryService, count: int) -> dict[str, Any]:
    """``count`` writes as the daemon makes them: a ``remember``, then the background worker
    embeds it, one memory at a time. The store must take them all: with the vectors in a
    Kùzu column (schema 8) about 800 filled Kùzu's buffer pool, and every write failed after."""
    remember_ms, embed_ms = [], []
    for i, text in enumerate(synthetic_queries(count, seed=5)):
        started = time.perf_counter()
        memory.remember(f"Write {i}: {text} was reviewed by the platform team", category="fact")
        stored = time.perf_counter()
        memory.embed_pending()
        remember_ms.append((stored - started) * 1000)
        embed_ms.append((time.perf_counter() - stored) * 1000)
    return {
        "count": count,
        "remember_ms": {"p50": _percentile(remember_ms, 0.5), "p95": _percentile(remember_ms, 0.95)},
        "embed_ms": {"p50": _percentile(embed_ms, 0.5), "p95": _percentile(embed_ms, 0.95)},
    }


def format_report(report: dict[str, Any]) -> str:
    imp = report["import"]
    share = (
        f"= {imp['share_of_model']:.0%} of the model's {imp['model_texts_per_s']:,} texts/s"
        if imp["share_of_model"] is not None
        else "(vectors from the hash embedder)"
    )
    index = report["index"]
    return "\n".join(
        [
            f"scale benchmark, {report['memories']:,} memories"
            + (" on PostgreSQL" if report.get("store") == "postgresql" else ""),
            f"remember      p50 {report['remember_ms']['p50']} ms, p95 {report['remember_ms']['p95']} ms",
            f"bulk import   {imp['memories_per_s']:,} memories/s {share}",
            f"vector index  loaded in {index['vectors_loaded_s']} s, "
            f"graph built in {index['graph_built_s']} s",
            f"recall (warm) p50 {report['recall_ms']['p50']} ms, p95 {report['recall_ms']['p95']} ms",
            f"first recall from a cold process: {report['first_recall_cold_s']} s",
            f"RSS           {report['rss_mb']['serving_process']} MB (a process serving recalls), "
            f"{report['rss_mb']['cold_recall_peak']} MB peak (cold recall process)",
            f"store on disk {report['store_mb']} MB",
            *_peak_lines(report.get("peak_rss_mb")),
            *_writes_lines(report.get("daemon_writes")),
            *_backlog_lines(report.get("backlog")),
            *_concurrent_lines(report.get("concurrent")),
        ]
    )


def _peak_lines(peaks: dict[str, float | None] | None) -> list[str]:
    if not peaks or None in peaks.values():
        return []
    return [
        f"peak RSS      {peaks['import']:,} MB importing, {peaks['index']:,} MB loading and building "
        f"the vector index, {peaks['measure']:,} MB measuring (this process)"
    ]


def _writes_lines(written: dict[str, Any] | None) -> list[str]:
    if not written:
        return []
    remember, embed = written["remember_ms"], written["embed_ms"]
    return [
        f"daemon writes {written['count']:,}: remember p50 {remember['p50']} ms, p95 {remember['p95']} ms; "
        f"then its embedding p50 {embed['p50']} ms, p95 {embed['p95']} ms"
    ]


def _backlog_lines(backlog: dict[str, Any] | None) -> list[str]:
    if not backlog:
        return []
    return [
        f"with {backlog['memories']:,} memories waiting for vectors: first recall from a cold process "
        f"{backlog['first_recall_cold_s']} s"
    ]


def _concurrent_lines(reports: list[dict[str, Any]] | None) -> list[str]:
    from graphmem.bench.clients import format_lines

    return ["concurrent clients, recall and remember 4:1:", *format_lines(reports)] if reports else []
