"""Scale benchmark: a store of N realistic memories, timed through the product's own paths.

Reports remember p50, bulk import rate against the model's own batch throughput,
warm recall p50/p95 (query embedding included), first recall from a cold process
(a new ``graphmem recall`` process), resident memory and the store's size on disk.

With ``hash_vectors`` the imported memories get vectors from the deterministic hash
embedder (named as the real model, so the store takes them): a million texts cannot be
embedded by the model on a 2-core machine in a benchmark's time. Queries, remembers and
everything after the import still use the real model; the import rate is then not
compared with the model's.

With ``projects`` the memories are spread over that many projects, named by their checkouts'
paths as graphmem names a project; the first is a git checkout in the benchmark's temporary
folder, and every timed call, here and in each child process, asks for it (a store of several
projects is slower to recall from: docs/benchmarks.md). The cold recall processes run the CLI
from inside that checkout, as a user does. The processes it starts and measures:
``graphmem.bench.scale_children``; the report as text: ``graphmem.bench.scale_report``.
"""

from __future__ import annotations

import itertools
import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphmem.adapters.embedders import HashEmbedder
from graphmem.bench.harness import latency_ms
from graphmem.bench.scale_children import cold_recalls, make_checkout, serving_rss_kb
from graphmem.bench.scale_small import check_small_project, measure_small_project, small_project_name
from graphmem.bench.synthetic import iter_synthetic_memories, project_of, synthetic_queries
from graphmem.core.ports import Embedder
from graphmem.errors import InvalidInputError
from graphmem.settings import Settings

if TYPE_CHECKING:
    from graphmem.adapters.postgres_lexical import PostgresLexical
    from graphmem.service.memory import MemoryService


def _model_rate(embedder: Embedder, texts: list[str], runs: int = 3) -> float:
    """The model's own batch throughput on ``texts`` (texts/s), median of ``runs``."""
    rates = []
    for _ in range(runs):
        started = time.perf_counter()
        embedder.embed(texts)
        rates.append(len(texts) / (time.perf_counter() - started))
    return statistics.median(rates)


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


def _load(memory: MemoryService, exports: Sequence[Path], memories: int) -> None:
    """The export files imported as one load of ``memories``: a million are several files (an
    import reads 64 MiB at most), and a database's vector index, put off for all of them, is built
    once at the end rather than dropped and built again after each file (five builds at a million)."""
    semantic = memory.semantic
    with semantic.bulk_load(memories) if semantic is not None else nullcontext():
        for export in exports:
            memory.import_file(export)


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
    http_clients: Sequence[int] = (),
    projects: int = 0,
    small_project: int = 0,
) -> dict[str, Any]:
    """Build the store and measure; returns the report as a dict.

    ``store_url``: a PostgreSQL database to build the store in instead of a temporary Kùzu one
    (docs/team.md). It must hold no graphmem schema: the benchmark applies it, and drops
    graphmem's tables again at the end. ``clients``: then that many concurrent clients on the
    built store, each count in turn (``graphmem.bench.clients``), reported under ``concurrent``;
    ``http_clients``: then that many client processes of one ``graphmem serve`` over HTTP, each
    count in turn, reported there too (``"mode": "http"``).
    ``writes``: then that many writes as the daemon makes them (``daemon_writes``). ``backlog``:
    last, that many remembers left without vectors, and the cold first recall beside them
    (``backlog``). ``projects``: the memories spread over that many projects (``project_of``),
    and every timed call, in this process or a child, asks for or writes to the first, a git
    checkout made in the benchmark's temporary folder (``make_checkout``) that the cold recall
    processes run in; 0: every memory global, the cold recalls run outside any repository.
    Refused (``InvalidInputError``) when negative or more than ``memories``. ``small_project``:
    after the timed recalls, that many memories in a project of their own beside the first, its
    recalls timed and its vector search compared with the exact one (``scale_small``); it needs
    ``projects``."""
    from graphmem.app import migrate_store, store_schema
    from graphmem.settings import load_settings

    check_projects(projects, memories)
    check_small_project(small_project, projects)
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
            http_clients,
            projects,
            small_project,
        )
    finally:
        try:
            if migrated:
                migrate_store(settings(), 0)
        finally:
            # The export files, and the store unless ``data_dir`` was given: even after a failure.
            shutil.rmtree(workdir, ignore_errors=True)


def check_projects(projects: int, memories: int) -> None:
    """Refuse a count of projects the store cannot be spread over, saying how to call it instead."""
    if projects < 0:
        raise InvalidInputError(
            f"--projects {projects} is negative: give the number of projects to spread the memories "
            "over, or 0 (the default) for every memory global."
        )
    if projects > memories:
        raise InvalidInputError(
            f"--projects {projects} is more than --memories {memories}: each project needs a memory; "
            f"give --projects {memories} or fewer, or more --memories."
        )


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
    http_clients: Sequence[int] = (),
    projects: int = 0,
    small_project: int = 0,
) -> dict[str, Any]:
    from graphmem.app import open_memory, store_size_mb

    peaks = _Peaks()
    root = (workdir / "projects").resolve()  # resolved, as graphmem resolves a checkout's path
    project = project_of(0, projects, root)  # what every timed call asks for, as from its checkout
    # Where the cold recall processes run: the project's checkout, or (every memory global) the
    # benchmark's folder, in no repository, where a recall asks for no project.
    recall_from = make_checkout(project) if project else workdir
    exports = _write_exports(iter_synthetic_memories(memories, projects=projects, root=root), workdir)

    sample = [r["text"] for r in itertools.islice(iter_synthetic_memories(memories), 1024)]
    embedder.embed(sample[:64])  # warm the model
    # With hash vectors the import is not compared with the model: a glance at its rate will do.
    model_rate = _model_rate(embedder, sample[:64], runs=1) if hash_vectors else _model_rate(embedder, sample)
    say(f"model throughput {model_rate:.0f} texts/s")

    importer = _NamedHashEmbedder(embedder) if hash_vectors else embedder
    memory = open_memory(settings(), embedder=importer)
    try:
        started = time.perf_counter()
        _load(memory, exports, memories)
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

    opened = time.perf_counter()
    memory = _measured_service(settings(), embedder, store_url)
    text_search = TextSearch(memory)
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
        text_search.wait_current(opened, say)
        peaks.end("index")

        remember_ms = []
        for i, text in enumerate(synthetic_queries(200, seed=3)):
            started = time.perf_counter()
            memory.remember(
                f"Note {i}: {text} is handled by the on-call engineer", category="fact", project=project
            )
            remember_ms.append((time.perf_counter() - started) * 1000)
            text_search.answered()
        memory.embed_pending()
        while semantic is not None and semantic.tidy():
            pass

        recall_ms = []
        texts = synthetic_queries(queries)
        memory.recall(texts[0], project=project)  # loads the index
        for text in texts:
            started = time.perf_counter()
            memory.recall(text, limit=10, project=project)
            recall_ms.append((time.perf_counter() - started) * 1000)
            text_search.answered()
        written = _daemon_writes(memory, writes, text_search.answered, project) if writes else None
        text_search.answered()
        small = None
        if small_project and project is not None:
            name = small_project_name(memory, root, project)
            small = measure_small_project(memory, small_project, name, project, texts, text_search.answered)
    finally:
        memory.close()
    peaks.end("measure")

    concurrent = None
    if clients or http_clients:
        from graphmem.bench import clients as concurrency

        concurrent = concurrency.run(
            list(clients),
            data_dir,
            store_url=store_url,
            progress=say,
            http_counts=list(http_clients),
            project=project,
        )
    cold_s, cold_peak_kb = cold_recalls(data_dir, texts, cold_runs, store_url, recall_from)
    serving_kb = serving_rss_kb(data_dir, texts[:50], store_url, project)
    disk_mb = store_size_mb(settings()) if store_url else _size_mb(data_dir)
    report: dict[str, Any] = {
        "memories": memories,
        "projects": projects,
        "recall_project": project,
        "store": "postgresql" if store_url else "kuzu",
        "stored_vectors": "hash" if hash_vectors else "model",
        "remember_ms": latency_ms(remember_ms),
        "import": {
            "memories_per_s": round(import_rate, 1),
            "model_texts_per_s": round(model_rate, 1),
            "share_of_model": None if hash_vectors else round(import_rate / model_rate, 3),
        },
        "index": {"vectors_loaded_s": round(load_s, 2), "graph_built_s": round(build_s, 2)},
        "store_mb": disk_mb,
        "recall_ms": latency_ms(recall_ms),
        "first_recall_cold_s": round(statistics.median(cold_s), 2),
        "rss_mb": {
            "serving_process": round(serving_kb / 1024, 1),
            "cold_recall_peak": round(max(cold_peak_kb) / 1024, 1),
        },
        "peak_rss_mb": peaks.mb,
    }
    if text_search.report is not None:
        report["text_search"] = text_search.report
    if written is not None:
        report["daemon_writes"] = written
    if small is not None:
        report["small_project"] = small
    if concurrent is not None:
        report["concurrent"] = concurrent
    if backlog:
        memory = open_memory(settings(), embedder=embedder)
        try:
            for i, text in enumerate(synthetic_queries(backlog, seed=13)):  # the newest memories
                memory.remember(
                    f"Waiting {i}: {text} needs a second look from the team", category="fact", project=project
                )
        finally:
            memory.close()
        seconds, _ = cold_recalls(data_dir, texts, cold_runs, store_url, recall_from)
        report["backlog"] = {
            "first_recall_cold_s": round(statistics.median(seconds), 2),
            "runs_s": [round(s, 2) for s in seconds],
            "memories": backlog,
        }
    return report


def _measured_service(settings: Settings, embedder: Embedder, store_url: str | None) -> MemoryService:
    """The service whose calls the measure phase times. The embedded store: ``open_memory``'s (a
    CLI's full-text index is the daemon's there). A team's store: opened as the daemon opens it
    (``serve_memory``), for its full-text index beside it (``adapters/postgres_lexical.py``),
    which a one-shot CLI's open has not; ``serve_memory`` starts no thread but that index's
    build. With no worker (``worker=False``), its vectors are handled as the embedded store's
    are here (the model loaded by ``load_model``, what is written embedded by ``embed_pending``,
    not by the write that is timed), so that the two stores' figures time the same calls and
    differ by their stores."""
    from graphmem.app import open_memory, serve_memory

    if not store_url:
        return open_memory(settings, embedder=embedder)
    return serve_memory(settings, embedder=embedder, worker=False)


class TextSearch:
    """Which full-text search answers a daemon's timed calls on a team's store (the measure
    phase's, each concurrent client's): the index beside the daemon (``postgres_lexical.py``)
    once it is current, else the database's. The benchmark waits for the index before timing,
    checks after each timed call that it still answers, and fails if it did not: a figure says
    what it measured. The embedded store has one search: nothing to wait for, and nothing
    reported (``report`` None)."""

    def __init__(self, memory: MemoryService) -> None:
        self._lexical: PostgresLexical | None = getattr(memory.store, "lexical", None)
        self.report: dict[str, Any] | None = None

    def wait_current(self, opened: float, say: Callable[[str], None]) -> None:
        """Wait for the index's build (begun when the store opened, at ``opened``) to end."""
        if self._lexical is None:
            return
        self._lexical.settle()
        current_s = time.perf_counter() - opened
        self.report = {"answering": self._lexical.answering, "current_s": round(current_s, 2)}
        say(f"full-text index current {current_s:.1f}s after the store opened")
        self.answered()

    def answered(self) -> None:
        """After a timed call: the index still answers (a large catch-up would hand the searches to
        the database until it is applied), else the benchmark fails."""
        if self._lexical is None:
            return
        if self._lexical.answering != "index":
            raise RuntimeError(
                "The full-text index beside the daemon did not answer a timed call, the database's "
                "search did (its build failed, or a catch-up was too large: see the log): the "
                "figures would not be the daemon's."
            )


def _daemon_writes(
    memory: MemoryService,
    count: int,
    answered: Callable[[], None] = lambda: None,
    project: str | None = None,
) -> dict[str, Any]:
    """``count`` writes as the daemon makes them: a ``remember``, then the background worker
    embeds it, one memory at a time. The store must take them all: with the vectors in a
    Kùzu column (schema 8) about 800 filled Kùzu's buffer pool, and every write failed after.
    ``answered``: called after each write (``TextSearch.answered``); ``project``: the writes'."""
    remember_ms, embed_ms = [], []
    for i, text in enumerate(synthetic_queries(count, seed=5)):
        started = time.perf_counter()
        memory.remember(
            f"Write {i}: {text} was reviewed by the platform team", category="fact", project=project
        )
        stored = time.perf_counter()
        memory.embed_pending()
        remember_ms.append((stored - started) * 1000)
        embed_ms.append((time.perf_counter() - stored) * 1000)
        answered()
    return {
        "count": count,
        "remember_ms": latency_ms(remember_ms),
        "embed_ms": latency_ms(embed_ms),
    }
