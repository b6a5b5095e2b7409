"""Concurrent clients on one store: throughput and latency of a recall/remember mix.

``graphmem bench scale --clients N`` runs this on the store the scale benchmark built. Each
client is served as an agent is by a daemon: by what ``graphmem serve`` runs but its HTTP server
(``graphmem.app.daemon_runtime``), started as the daemon starts (:func:`daemon`). N clients
start together, then each calls recall and remember for :data:`CLIENT_RUN_S` seconds, one call
after the other: four recalls to one remember (agents look up more than they write), each recall
a question the client has not asked before (:func:`client_texts`), so each embeds its query as
the measure phase's recalls do. Each call is served as the daemon serves one (its worker steps
aside while calls run, and a write wakes it): a remember embeds the memory it wrote before it
answers, and no recall embeds a memory (``service/semantic.py``). The report: calls per second
over all clients, p50/p95 per call kind, errors, and the recalls' p50 apart by the call before
them (a recall right after a remember has nothing more to do).

How a client is made depends on the store, to model what a team runs:

- **PostgreSQL**: each client is its own process with its own daemon (service, worker,
  connection pool and full-text index): N daemons (one per developer) sharing the database.
  Threads in one process would share one GIL and one pool, and measure this benchmark, not the
  store. Each daemon has a data folder of its own holding a copy of the full-text index the
  measure phase built (``team-text/``, copied while closed: :func:`client_folders`), says it is
  ready only once that index is current, and fails the run if the database's search answered
  one of its timed calls (``scale.TextSearch``). On one folder shared, the first daemon alone
  would hold the index and the others would search the database, as no developer's daemon does.
- **Kùzu**: one process may open the store (its file lock), so the clients are N threads
  calling one daemon, as a daemon serves N agents.
"""

from __future__ import annotations

import gc
import itertools
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphmem.bench.scale import TextSearch, _percentile, _size_mb
from graphmem.bench.synthetic import synthetic_queries
from graphmem.settings import STORE_URL_VARIABLE, load_settings

if TYPE_CHECKING:
    from graphmem.core.ports import Embedder
    from graphmem.server.runtime import Runtime

# Long enough for a few hundred calls at 16 clients on 2 cores, short enough to run 4 sizes.
CLIENT_RUN_S = 20.0
# Recalls per remember in each client's mix.
RECALLS_PER_REMEMBER = 4
# A client's texts come from the synthetic queries this many at a time, each batch from a seed of
# its own (more than any count of clients apart, so no two clients share a seed).
TEXTS_PER_SEED = 200
CLIENT_SEEDS = 1000
# A client whose daemon has not loaded its model by then is reported as failed.
CLIENT_START_TIMEOUT_S = 600.0
READY = "graphmem-bench client-ready"

# A client process: start its daemon, say ready, wait for "go" on stdin, run, write its calls
# and its full-text search's report as JSON to the file named.
CLIENT_SCRIPT = """
import sys
from graphmem.bench.clients import serve_child
serve_child(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4])
"""

# kind, milliseconds, error (None: it succeeded), whether the client's call before was a remember
Call = tuple[str, float, str | None, bool]


@contextmanager
def daemon(data_dir: Path, embedder: Embedder | None = None) -> Iterator[Runtime]:
    """A daemon on the store at ``data_dir`` (on PostgreSQL, the one ``GRAPHMEM_STORE_URL`` names)
    as ``graphmem serve`` has it once started: built by ``daemon_runtime``, the collector as
    the daemon's, its worker running and the model loaded by it (nothing else warmed). It
    ingests no agent sessions: this machine's are not the benchmark's mix. At the end the
    worker stops, the store closes, and this process collects at its own pace again."""
    from graphmem.app import daemon_runtime
    from graphmem.server.daemon_process import collect_as_long_running

    settings = load_settings(data_dir=data_dir, ingest={"enabled": False})
    runtime = daemon_runtime(settings, log_hint="the benchmark's stderr", embedder=embedder)
    thresholds = gc.get_threshold()
    try:
        collect_as_long_running()
        runtime.start_worker()
        _model_loaded(runtime, CLIENT_START_TIMEOUT_S)
        yield runtime
    finally:
        try:
            runtime.stop_worker()
            runtime.memory.close()
        finally:
            gc.set_threshold(*thresholds)  # what the start froze stays so: it is alive still


def _model_loaded(runtime: Runtime, timeout: float) -> None:
    """Wait until the daemon's worker has loaded the model, or raise what stopped it."""
    deadline = time.monotonic() + timeout
    while not runtime.model_loaded:
        if runtime.model_error:
            raise RuntimeError(f"a benchmark client's model did not load: {runtime.model_error}")
        if time.monotonic() >= deadline:
            why = f" (store: {runtime.store_error})" if runtime.store_error else ""
            raise RuntimeError(f"a benchmark client's model was not loaded within {timeout:.0f} s{why}")
        time.sleep(0.05)


# Calls of one whole round of the mix: its recalls, a remember and the recall after it.
ROUND = RECALLS_PER_REMEMBER + 2


def recall(runtime: Runtime, text: str) -> None:
    """A recall, served as the daemon serves one."""
    runtime.served(runtime.memory.recall, text, limit=10)


def remember(runtime: Runtime, text: str) -> None:
    """A remember, served as the daemon serves one: then the worker is woken, as after every write."""
    try:
        runtime.served(runtime.memory.remember, text, category="fact")
    finally:
        runtime.written()


def client_texts(client: int) -> Iterator[str]:
    """Client ``client``'s texts, for as long as it runs, none twice: each recall is a question
    it has not asked, so it embeds its query, as the measure phase's recalls (distinct texts) and
    an agent's new questions do. A daemon keeps its last query vectors (``service/semantic.py``):
    a client going round a few texts would time most recalls without their embedding, on a
    question already searched (CHANGELOG.md, dd8f186). Another client may ask the same text
    (their seeds differ, the generator's words repeat), as two developers may."""
    asked: set[str] = set()
    for batch in itertools.count():
        for text in synthetic_queries(TEXTS_PER_SEED, seed=1000 + client + CLIENT_SEEDS * batch):
            if text not in asked:
                asked.add(text)
                yield text


def client_calls(
    runtime: Runtime, client: int, seconds: float, answered: Callable[[], None] = lambda: None
) -> list[Call]:
    """One client's loop: the mix of recalls and remembers for ``seconds``, each timed, and at
    least one whole round of it however slow the machine is (``ROUND``), so every report has
    both kinds of call and a recall after a remember. ``answered``: called after each call,
    untimed, and not counted as its error if it raises (``TextSearch.answered``: it ends the run)."""
    rng = random.Random(client)
    texts = client_texts(client)
    calls: list[Call] = []
    deadline = time.monotonic() + seconds
    i = 0
    while i < ROUND or time.monotonic() < deadline:
        kind = "remember" if i % (RECALLS_PER_REMEMBER + 1) == RECALLS_PER_REMEMBER else "recall"
        text = next(texts)
        started = time.perf_counter()
        error = None
        try:
            if kind == "recall":
                recall(runtime, text)
            else:
                remember(runtime, f"Client {client} note {i}: {text} is owned by team {rng.randint(1, 40)}")
        except Exception as exc:  # a failed call is counted and reported, not fatal
            error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        after_remember = bool(calls) and calls[-1][0] == "remember"
        calls.append((kind, (time.perf_counter() - started) * 1000, error, after_remember))
        answered()
        i += 1
    return calls


def serve_child(data_dir: str, client: int, seconds: float, out: str) -> None:
    """The body of one client process (``CLIENT_SCRIPT``); the store URL comes from the environment.
    Ready once its daemon has loaded the model and its full-text index is current, as the measure
    phase waits for its own (``TextSearch``); a timed call the database's search answered ends it
    with that error."""
    started = time.perf_counter()
    with daemon(Path(data_dir)) as runtime:
        text_search = TextSearch(runtime.memory)
        text_search.wait_current(started, lambda message: None)
        print(READY, flush=True)
        if sys.stdin.readline().strip() != "go":
            return
        calls = client_calls(runtime, client, seconds, text_search.answered)
    Path(out).write_text(json.dumps({"calls": calls, "text_search": text_search.report}), encoding="utf-8")


def client_folders(scratch: Path, index: Path, clients: int) -> list[Path]:
    """Each client's data folder in ``scratch``, holding a copy of the full-text index folder
    ``index`` (the measure phase's ``team-text/``, closed): each daemon keeps its own, as each
    developer's does, and catches its copy up with the change feed rather than build it. No such
    folder (a store the clients alone open): each daemon builds its own."""
    folders = [scratch / f"client-{n}" for n in range(clients)]
    for folder in folders:
        folder.mkdir()
        if index.is_dir():
            shutil.copytree(index, folder / index.name)
    return folders


def _in_processes(
    clients: int, data_dir: Path, store_url: str, seconds: float
) -> tuple[list[Call], float, dict[str, Any]]:
    from graphmem.adapters.postgres_lexical import DIRNAME

    env = {**os.environ, STORE_URL_VARIABLE: store_url}
    index = data_dir / DIRNAME
    copy_mb = _size_mb(index) if index.is_dir() else None  # as given, before a daemon writes to it
    with tempfile.TemporaryDirectory(prefix="graphmem-bench-clients-") as scratch:
        folders = client_folders(Path(scratch), index, clients)
        files = [
            (Path(scratch) / f"client-{n}.json", Path(scratch) / f"client-{n}.err") for n in range(clients)
        ]
        children = []
        for client, (folder, (out, err)) in enumerate(zip(folders, files, strict=True)):
            with err.open("w") as errors:  # the child keeps its own copy of the descriptor
                children.append(
                    subprocess.Popen(
                        [
                            sys.executable,
                            "-c",
                            CLIENT_SCRIPT,
                            str(folder),
                            str(client),
                            str(seconds),
                            str(out),
                        ],
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        stderr=errors,
                        text=True,
                        env=env,
                    )
                )
        try:
            for child, (_, err) in zip(children, files, strict=True):
                if _line_within(child, CLIENT_START_TIMEOUT_S).strip() != READY:
                    raise RuntimeError(f"a benchmark client did not start: {_tail(err)}")
            started = time.perf_counter()
            for child in children:
                assert child.stdin is not None
                child.stdin.write("go\n")
                child.stdin.close()
            for child, (_, err) in zip(children, files, strict=True):
                if child.wait(timeout=seconds + CLIENT_START_TIMEOUT_S) != 0:
                    raise RuntimeError(f"a benchmark client failed: {_tail(err)}")
            wall = time.perf_counter() - started
        finally:
            for child in children:
                if child.poll() is None:
                    child.kill()
                    child.wait()
                for pipe in (child.stdin, child.stdout):
                    if pipe is not None and not pipe.closed:
                        pipe.close()
        results = [json.loads(out.read_text("utf-8")) for out, _ in files]
        calls = [(str(k), float(ms), e, bool(a)) for result in results for k, ms, e, a in result["calls"]]
        text_search = {
            "index_copy_mb": copy_mb,
            "clients": [result["text_search"] for result in results],
        }
    return calls, wall, text_search


def _tail(path: Path) -> str:
    return path.read_text("utf-8", errors="replace").strip()[-500:] or "(it printed nothing)"


def _line_within(child: subprocess.Popen[str], timeout: float) -> str:
    """The child's next line of output, or an error when it says nothing for ``timeout`` seconds."""
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(child.stdout.readline() if child.stdout else ""))
    reader.daemon = True
    reader.start()
    reader.join(timeout)
    if not got:
        raise RuntimeError(f"a benchmark client said nothing within {timeout:.0f} s")
    return got[0]


def _in_threads(clients: int, runtime: Runtime, seconds: float) -> tuple[list[Call], float]:
    results: list[list[Call]] = [[] for _ in range(clients)]
    gate = threading.Barrier(clients + 1)

    def work(client: int) -> None:
        gate.wait()
        results[client] = client_calls(runtime, client, seconds)

    threads = [threading.Thread(target=work, args=(client,)) for client in range(clients)]
    for thread in threads:
        thread.start()
    gate.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    return [call for calls in results for call in calls], time.perf_counter() - started


def run(
    counts: list[int],
    data_dir: Path,
    *,
    store_url: str | None,
    embedder: Embedder | None = None,
    seconds: float = CLIENT_RUN_S,
    progress: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """Each of ``counts`` clients in turn on the store; one report per count (see the module doc).

    Kùzu: one daemon in this process for each count; the store at ``store_url``: a daemon in
    each client process, with a copy of the full-text index in ``data_dir`` (``client_folders``,
    copied again for each count). Each builds ``[embedding]``'s model and loads it as the daemon
    does (``embedder``: the threads' daemon's instead, for tests)."""
    say = progress or (lambda message: None)
    reports = []
    for clients in counts:
        load = os.getloadavg()[0]
        text_search = None
        if store_url:
            calls, wall, text_search = _in_processes(clients, data_dir, store_url, seconds)
        else:
            with daemon(data_dir, embedder) as runtime:
                calls, wall = _in_threads(clients, runtime, seconds)
        report = summarise(clients, calls, wall, load, "processes" if store_url else "threads", text_search)
        say(f"{clients} clients: {report['calls_per_s']} calls/s, {report['errors']} errors")
        reports.append(report)
    return reports


def summarise(
    clients: int,
    calls: list[Call],
    wall: float,
    load: float,
    mode: str,
    text_search: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The report of one run: throughput, p50/p95 per kind (a recall's p50 also apart by the call
    before it), errors (and the first of them); on a team's store, ``text_search``: the size of
    the index each client was given a copy of, and each client's search (``TextSearch.report``)."""
    by_kind: dict[str, dict[str, Any]] = {}
    for kind in ("recall", "remember"):
        ms = [took for k, took, error, _ in calls if k == kind and error is None]
        by_kind[kind] = {
            "calls": sum(1 for k, _, _, _ in calls if k == kind),
            "p50": _percentile(ms, 0.5) if ms else None,
            "p95": _percentile(ms, 0.95) if ms else None,
        }
    for after, name in ((False, "after_recall_p50"), (True, "after_remember_p50")):
        ms = [took for k, took, error, a in calls if k == "recall" and error is None and a is after]
        by_kind["recall"][name] = _percentile(ms, 0.5) if ms else None
    errors = [error for _, _, error, _ in calls if error is not None]
    return {
        "clients": clients,
        "mode": mode,
        "seconds": round(wall, 1),
        "calls": len(calls),
        "calls_per_s": round(len(calls) / wall, 1) if wall > 0 else 0.0,
        "recall_ms": by_kind["recall"],
        "remember_ms": by_kind["remember"],
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
        "load_average": round(load, 2),
        "text_search": text_search,
    }


def format_lines(reports: list[dict[str, Any]]) -> list[str]:
    """The text report's lines, one per client count."""
    lines = []
    for r in reports:
        recall, remember = r["recall_ms"], r["remember_ms"]
        lines.append(
            f"{r['clients']:>2} clients ({r['mode']}) {r['calls_per_s']} calls/s over {r['seconds']} s: "
            f"recall p50 {recall['p50']} / p95 {recall['p95']} ms (p50 after a recall "
            f"{recall['after_recall_p50']}, after a remember {recall['after_remember_p50']}), "
            f"remember p50 {remember['p50']} / p95 {remember['p95']} ms, "
            f"{r['errors']} errors (load {r['load_average']})"
        )
        if r["first_error"]:
            lines.append(f"   first error: {r['first_error']}")
        lines += _text_search_lines(r.get("text_search"))
    return lines


def _text_search_lines(text_search: dict[str, Any] | None) -> list[str]:
    """Which full-text search answered each client's calls, and when it was current."""
    reports = [report for report in text_search["clients"] if report] if text_search else []
    if not text_search or not reports:  # the embedded store's threads
        return []
    answering = "/".join(sorted({report["answering"] for report in reports}))
    current = sorted(report["current_s"] for report in reports)
    copy = text_search["index_copy_mb"]
    given = f"a copy of {copy} MB each" if copy is not None else "each built by its own daemon"
    when = f"{current[0]}" if current[0] == current[-1] else f"{current[0]}–{current[-1]}"
    return [
        f"   full text answered by each client's own {answering} ({given}, current {when} s "
        "after its daemon started)"
    ]
