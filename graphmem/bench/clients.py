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

So ``--clients`` compares two topologies as much as two stores: at 16 clients PostgreSQL's
figure is 16 daemons, each with its model, on the cores the embedded store's one process has to
itself. ``graphmem bench scale --http-clients N`` is a third way, the same on both stores, the
store the only difference: one real ``graphmem serve`` on the built store (``serving_daemon``; on
PostgreSQL with a copy of the measure phase's full-text index, as above) and N client processes,
light as an agent's hook (no model), each calling it over HTTP through ``RemoteMemory`` (``/rpc``,
as the CLI and the hooks do) with the same loop (``client_calls``, given ``Calls.remote``): as a
developer's agents share their daemon. Its report says ``"mode": "http"``.
"""

from __future__ import annotations

import functools
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
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from graphmem.bench.harness import percentile
from graphmem.bench.scale import TextSearch, _size_mb
from graphmem.bench.synthetic import synthetic_queries
from graphmem.settings import STORE_URL_VARIABLE, load_settings

if TYPE_CHECKING:
    from graphmem.core.ports import Embedder
    from graphmem.server.remote import RemoteMemory
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
# and its full-text search's report as JSON to the file named. Its calls ask for the project
# last named ("": none).
CLIENT_SCRIPT = """
import sys
from graphmem.bench.clients import serve_child
serve_child(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5] or None)
"""

# A client of the one daemon over HTTP: say ready (its modules imported, no model), wait for
# "go", call the daemon serving the folder named, write its calls as JSON to the file named.
# Its calls ask for the project last named ("": none).
HTTP_CLIENT_SCRIPT = """
import sys
from graphmem.bench.clients import http_child
http_child(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5] or None)
"""

# How the text report names each way of making clients (``run``).
MODE_NAMES = {"threads": "threads", "processes": "processes", "http": "http, one daemon"}

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


def recall(runtime: Runtime, text: str, project: str | None = None) -> None:
    """A recall from ``project``'s checkout (None: from none), served as the daemon serves one."""
    runtime.served(runtime.memory.recall, text, limit=10, project=project)


def remember(runtime: Runtime, text: str, project: str | None = None) -> None:
    """A remember from ``project``'s checkout (None: from none), served as the daemon serves one:
    then the worker is woken, as after every write."""
    try:
        runtime.served(runtime.memory.remember, text, category="fact", project=project)
    finally:
        runtime.written()


class Calls(NamedTuple):
    """How a client makes its two kinds of call, each given its text: to a daemon in this
    process (``served``) or to one over HTTP (``remote``), each from the checkout of one project
    (``bench scale --projects``: the one the measure phase asks for) or from none."""

    recall: Callable[[str], object]
    remember: Callable[[str], object]

    @classmethod
    def served(cls, runtime: Runtime, project: str | None = None) -> Calls:
        """Calls served by ``runtime`` as the daemon serves them (``recall``, ``remember``)."""
        return cls(
            functools.partial(recall, runtime, project=project),
            functools.partial(remember, runtime, project=project),
        )

    @classmethod
    def remote(cls, memory: RemoteMemory, project: str | None = None) -> Calls:
        """Calls through ``/rpc`` as the CLI and the hooks make them, naming ``project`` as they
        name their checkout's: the daemon serves each as it serves an agent's (the same recall and
        remember as ``served``)."""
        return cls(
            lambda text: memory.recall(text, limit=10, project=project),
            lambda text: memory.remember(text, category="fact", project=project),
        )


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
    calls_of: Calls, client: int, seconds: float, answered: Callable[[], None] = lambda: None
) -> list[Call]:
    """One client's loop: the mix of recalls and remembers for ``seconds``, each timed, and at
    least one whole round of it however slow the machine is (``ROUND``), so every report has
    both kinds of call and a recall after a remember. ``calls_of``: how each is made (the same
    loop in a thread, in a process with its own daemon, or over HTTP). ``answered``: called
    after each call, untimed, and not counted as its error if it raises (``TextSearch.answered``:
    it ends the run)."""
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
                calls_of.recall(text)
            else:
                calls_of.remember(f"Client {client} note {i}: {text} is owned by team {rng.randint(1, 40)}")
        except Exception as exc:  # a failed call is counted and reported, not fatal
            error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        after_remember = bool(calls) and calls[-1][0] == "remember"
        calls.append((kind, (time.perf_counter() - started) * 1000, error, after_remember))
        answered()
        i += 1
    return calls


def serve_child(data_dir: str, client: int, seconds: float, out: str, project: str | None = None) -> None:
    """The body of one client process (``CLIENT_SCRIPT``); the store URL comes from the environment.
    Ready once its daemon has loaded the model and its full-text index is current, as the measure
    phase waits for its own (``TextSearch``); a timed call the database's search answered ends it
    with that error. Its calls ask for ``project``."""
    started = time.perf_counter()
    with daemon(Path(data_dir)) as runtime:
        text_search = TextSearch(runtime.memory)
        text_search.wait_current(started, lambda message: None)
        print(READY, flush=True)
        if sys.stdin.readline().strip() != "go":
            return
        calls = client_calls(Calls.served(runtime, project), client, seconds, text_search.answered)
    Path(out).write_text(json.dumps({"calls": calls, "text_search": text_search.report}), encoding="utf-8")


def http_child(data_dir: str, client: int, seconds: float, out: str, project: str | None = None) -> None:
    """The body of one client of the daemon over HTTP (``HTTP_CLIENT_SCRIPT``): ``RemoteMemory``
    on the daemon that serves ``data_dir``, as the CLI and the hooks call one; it loads no model.
    Its calls ask for ``project``."""
    from graphmem.server.daemon_process import find_daemon
    from graphmem.server.remote import RemoteMemory

    info = find_daemon(Path(data_dir))
    if info is None:
        raise RuntimeError(f"No daemon serves {data_dir}.")
    remote = RemoteMemory(info)  # type: ignore[abstract]
    print(READY, flush=True)
    if sys.stdin.readline().strip() != "go":
        return
    try:
        calls = client_calls(Calls.remote(remote, project), client, seconds)
    finally:
        remote.close()
    Path(out).write_text(json.dumps({"calls": calls}), encoding="utf-8")


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
    clients: int, data_dir: Path, store_url: str, seconds: float, first: int = 0, project: str | None = None
) -> tuple[list[Call], float, dict[str, Any]]:
    from graphmem.adapters.postgres_lexical import DIRNAME

    env = {**os.environ, STORE_URL_VARIABLE: store_url}
    index = data_dir / DIRNAME
    copy_mb = _size_mb(index) if index.is_dir() else None  # as given, before a daemon writes to it
    with tempfile.TemporaryDirectory(prefix="graphmem-bench-clients-") as scratch:
        folders = client_folders(Path(scratch), index, clients)
        results, wall = _children(CLIENT_SCRIPT, folders, seconds, env, Path(scratch), first, project)
        text_search = {
            "index_copy_mb": copy_mb,
            "clients": [result["text_search"] for result in results],
        }
    return _calls(results), wall, text_search


def _in_http(
    clients: int,
    data_dir: Path,
    store_url: str | None,
    seconds: float,
    program: Sequence[str],
    first: int = 0,
    project: str | None = None,
) -> tuple[list[Call], float, dict[str, Any] | None, dict[str, Any]]:
    """``clients`` processes calling one daemon over HTTP (``serving_daemon``): on the embedded
    store the daemon serves ``data_dir`` itself; on a team's, a folder of its own holding a copy
    of the index in ``data_dir``, as each process's daemon of ``_in_processes`` has."""
    from graphmem.adapters.postgres_lexical import DIRNAME
    from graphmem.bench.serving_daemon import check_full_text, serving

    index = data_dir / DIRNAME
    copy_mb = _size_mb(index) if store_url and index.is_dir() else None
    with tempfile.TemporaryDirectory(prefix="graphmem-bench-http-") as scratch:
        folder = client_folders(Path(scratch), index, 1)[0] if store_url else data_dir
        with serving(folder, store_url, Path(scratch) / "daemon.log", program) as daemon_:
            folders = [folder] * clients
            results, wall = _children(
                HTTP_CLIENT_SCRIPT, folders, seconds, dict(os.environ), Path(scratch), first, project
            )
            check_full_text(daemon_.info)
        text_search = None
        if daemon_.full_text is not None:
            text_search = {
                "index_copy_mb": copy_mb,
                "daemon": {"answering": daemon_.full_text, "current_s": daemon_.ready_s},
            }
        serving_report = {"pid": daemon_.info.pid, "url": daemon_.info.url, "ready_s": daemon_.ready_s}
    return _calls(results), wall, text_search, serving_report


def _children(
    script: str,
    folders: Sequence[Path],
    seconds: float,
    env: dict[str, str],
    scratch: Path,
    first: int = 0,
    project: str | None = None,
) -> tuple[list[dict[str, Any]], float]:
    """One process of ``script`` per folder in ``folders``, the n-th as client ``first`` + n, its calls
    asking for ``project``: each says it is ready, all are told "go" at once, and each writes its
    JSON report; the reports and the seconds from "go" until the last ended."""
    files = [(scratch / f"client-{n}.json", scratch / f"client-{n}.err") for n in range(len(folders))]
    children = []
    for client, (folder, (out, err)) in enumerate(zip(folders, files, strict=True)):
        args = [str(folder), str(first + client), str(seconds), str(out), project or ""]
        with err.open("w") as errors:  # the child keeps its own copy of the descriptor
            children.append(
                subprocess.Popen(
                    [sys.executable, "-c", script, *args],
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
    return [json.loads(out.read_text("utf-8")) for out, _ in files], wall


def _calls(results: list[dict[str, Any]]) -> list[Call]:
    """The calls of the clients' reports, as ``client_calls`` gave them."""
    return [(str(k), float(ms), e, bool(a)) for result in results for k, ms, e, a in result["calls"]]


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


def _in_threads(
    clients: int, runtime: Runtime, seconds: float, first: int = 0, project: str | None = None
) -> tuple[list[Call], float]:
    results: list[list[Call]] = [[] for _ in range(clients)]
    gate = threading.Barrier(clients + 1)

    def work(client: int) -> None:
        gate.wait()
        results[client] = client_calls(Calls.served(runtime, project), first + client, seconds)

    threads = [threading.Thread(target=work, args=(client,)) for client in range(clients)]
    for thread in threads:
        thread.start()
    gate.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    return [call for calls in results for call in calls], time.perf_counter() - started


def run(
    counts: Sequence[int],
    data_dir: Path,
    *,
    store_url: str | None,
    embedder: Embedder | None = None,
    seconds: float = CLIENT_RUN_S,
    progress: Callable[[str], None] | None = None,
    http_counts: Sequence[int] = (),
    program: Sequence[str] | None = None,
    project: str | None = None,
) -> list[dict[str, Any]]:
    """Each of ``counts`` clients in turn on the store, then each of ``http_counts`` clients of
    one daemon over HTTP; one report per count (see the module doc).

    ``counts``, Kùzu: one daemon in this process for each count; the store at ``store_url``: a
    daemon in each client process, with a copy of the full-text index in ``data_dir``
    (``client_folders``, copied again for each count). Each builds ``[embedding]``'s model and
    loads it as the daemon does (``embedder``: the threads' daemon's instead, for tests).
    ``http_counts``: ``graphmem serve`` for each count (``serving_daemon``; ``program``: the
    command it is run with, a test's), its clients light processes. ``project``: every client's
    calls ask for it, as from its checkout (``bench scale --projects``); None: for none."""
    from graphmem.bench.serving_daemon import PROGRAM

    say = progress or (lambda message: None)
    reports = []
    first = 0  # each client of the run a number of its own: its texts are no other client's
    for mode, clients in [("local", n) for n in counts] + [("http", n) for n in http_counts]:
        load = os.getloadavg()[0]
        text_search = None
        serving_report = None
        if mode == "http":
            calls, wall, text_search, serving_report = _in_http(
                clients, data_dir, store_url, seconds, program or PROGRAM, first, project
            )
        elif store_url:
            calls, wall, text_search = _in_processes(clients, data_dir, store_url, seconds, first, project)
        else:
            with daemon(data_dir, embedder) as runtime:
                calls, wall = _in_threads(clients, runtime, seconds, first, project)
        first += clients
        if mode == "local":
            mode = "processes" if store_url else "threads"
        report = summarise(clients, calls, wall, load, mode, text_search)
        if serving_report is not None:
            report["daemon"] = serving_report
        served = MODE_NAMES[mode]
        say(f"{clients} clients ({served}): {report['calls_per_s']} calls/s, {report['errors']} errors")
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
    before it), the mean and p50 of every call, errors (and the first of them); on a team's
    store, ``text_search``: the size of the index each client was given a copy of, and each
    client's search (``TextSearch.report``)."""
    by_kind: dict[str, dict[str, Any]] = {}
    for kind in ("recall", "remember"):
        ms = [took for k, took, error, _ in calls if k == kind and error is None]
        by_kind[kind] = {
            "calls": sum(1 for k, _, _, _ in calls if k == kind),
            "p50": percentile(ms, 0.5) if ms else None,
            "p95": percentile(ms, 0.95) if ms else None,
        }
    for after, name in ((False, "after_recall_p50"), (True, "after_remember_p50")):
        ms = [took for k, took, error, a in calls if k == "recall" and error is None and a is after]
        by_kind["recall"][name] = percentile(ms, 0.5) if ms else None
    every = [took for _, took, error, _ in calls if error is None]
    errors = [error for _, _, error, _ in calls if error is not None]
    return {
        "clients": clients,
        "mode": mode,
        "seconds": round(wall, 1),
        "calls": len(calls),
        "calls_per_s": round(len(calls) / wall, 1) if wall > 0 else 0.0,
        "recall_ms": by_kind["recall"],
        "remember_ms": by_kind["remember"],
        # Every call, both kinds: how long a client waits on the mean, whichever kind a daemon
        # serves first (at 16 clients the recall p50 alone says mostly that).
        "call_ms": {
            "mean": round(sum(every) / len(every), 2) if every else None,
            "p50": percentile(every, 0.5) if every else None,
        },
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
            f"{r['clients']:>2} clients ({MODE_NAMES[r['mode']]}) {r['calls_per_s']} calls/s "
            f"over {r['seconds']} s: "
            f"recall p50 {recall['p50']} / p95 {recall['p95']} ms (p50 after a recall "
            f"{recall['after_recall_p50']}, after a remember {recall['after_remember_p50']}), "
            f"remember p50 {remember['p50']} / p95 {remember['p95']} ms, "
            f"every call mean {r['call_ms']['mean']} / p50 {r['call_ms']['p50']} ms, "
            f"{r['errors']} errors (load {r['load_average']})"
        )
        if r["first_error"]:
            lines.append(f"   first error: {r['first_error']}")
        lines += _text_search_lines(r.get("text_search"))
    return lines


def _text_search_lines(text_search: dict[str, Any] | None) -> list[str]:
    """Which full-text search answered each client's calls, and when it was current."""
    if text_search and text_search.get("daemon"):  # the clients of one daemon over HTTP
        daemon_ = text_search["daemon"]
        copy = text_search["index_copy_mb"]
        given = f"a copy of {copy} MB" if copy is not None else "built by it"
        return [
            f"   full text answered by the daemon's own {daemon_['answering']} ({given}, current "
            f"{daemon_['current_s']} s after it was launched)"
        ]
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
