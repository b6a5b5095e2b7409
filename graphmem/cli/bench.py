"""``graphmem bench``: the project's own benchmarks."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import click

from graphmem.cli import present
from graphmem.cli.bench_repos import REPOSITORY_BENCHES
from graphmem.cli.options import F, report_json_option, seconds_option, store_url_option, whole_number_option
from graphmem.cli.state import configured_embedder


def locomo_data_option(help: str) -> Callable[[F], F]:
    """``--data``: a LoCoMo JSON file."""
    return click.option(
        "--data",
        "data_path",
        required=True,
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        help=help,
    )


def plans_option(help: str) -> Callable[[F], F]:
    """``--plan`` (repeatable): the recall plans to compare."""
    return click.option("--plan", "plans", multiple=True, help=help)


def conversations_option(func: F) -> F:
    """``--conversations N``: only the first N conversations of the data."""
    return click.option(
        "--conversations", type=click.IntRange(min=1), default=None, help="Only the first N."
    )(func)


def check_plans(plans: tuple[str, ...]) -> None:
    """Refuse a ``--plan`` graphmem does not know, naming the known ones."""
    from graphmem.core.fusion import PLANS
    from graphmem.errors import InvalidInputError

    unknown = [p for p in plans if p not in PLANS]
    if unknown:
        raise InvalidInputError(f"Unknown plan(s) {unknown}; known plans: {', '.join(PLANS)}.")


def note_done(name: str) -> None:
    present.note(f"  done {name}")


@click.group()
def bench() -> None:
    """Measure recall and extraction quality, and the speed of recall, bootstrap,
    ingest, the plugin's injection and the daemon (figures in docs/benchmarks.md).

    \b
    Example:
        graphmem bench locomo --data locomo-dev.json
        graphmem bench phrase --data locomo-dev.json
        graphmem bench scale --memories 100000
        graphmem bench extraction
    """


@bench.command()
@locomo_data_option("A LoCoMo JSON file (a list of conversations with 'qa').")
@plans_option("Recall plan(s) to compare (repeatable; default: hybrid plus each channel alone).")
@conversations_option
@click.option(
    "--distractors",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="A git repository to bootstrap (code, docs, history) into each conversation's store first.",
)
@whole_number_option(
    "--history", 0, 100_000, default=500, help="Commits of the --distractors repository to bootstrap."
)
@store_url_option(
    "Put each conversation in this empty PostgreSQL database (postgresql://...) instead of a "
    "temporary embedded store; graphmem's tables are dropped from it after each."
)
@click.option(
    "--cross-validate",
    is_flag=True,
    help="Leave one conversation out: choose among variations of the (one) --plan on the others, "
    "score the choice on it; prints the shipped, tuned and cross-validated R@10.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the reports as JSON.")
def locomo(
    data_path: Path,
    plans: tuple[str, ...],
    conversations: int | None,
    distractors: Path | None,
    history: int,
    store_url: str | None,
    cross_validate: bool,
    as_json: bool,
) -> None:
    """Retrieval quality on LoCoMo through the real remember/recall path.

    Each conversation goes into a fresh temporary store; each question recalls
    the top 10. Prints R@5, R@10, All@10, NDCG@10 per category and query latency.
    With --distractors REPO, the repository is bootstrapped once and its store
    copied into each conversation's store, and the questions are asked from
    inside that project, so its commits and facts compete with the turns.

    \b
    Example:
        $ graphmem bench locomo --data locomo-dev.json --plan hybrid --plan lexical
        LoCoMo retrieval, plan hybrid, 5 conversations
        category             n     R@5    R@10  All@10  NDCG@10
        1-4 (all)          819   0.626   0.730   0.676    0.536
        ...
        $ git clone click.bundle /tmp/click
        $ graphmem bench locomo --data locomo-dev.json --plan hybrid --distractors /tmp/click
        $ graphmem bench locomo --data locomo-dev.json --store postgresql://bench@db.internal/scratch
        $ graphmem bench locomo --data locomo-dev.json --cross-validate
    """
    from graphmem.bench.locomo import cross_validate as leave_one_out
    from graphmem.bench.locomo import format_cross_validation_report, format_report, run
    from graphmem.errors import InvalidInputError

    check_plans(plans)
    if cross_validate and (len(plans) > 1 or distractors is not None or store_url):
        raise InvalidInputError(
            "--cross-validate varies one plan on embedded stores: give at most one --plan, "
            "and no --distractors or --store."
        )
    embedder = configured_embedder()
    if cross_validate:
        result = leave_one_out(
            data_path,
            embedder,
            base=plans[0] if plans else "hybrid",
            conversations=conversations,
            progress=note_done,
        )
        present.report(result, format_cross_validation_report, as_json=as_json)
        return
    reports = run(
        data_path,
        embedder,
        plans=plans or ("hybrid", "lexical", "semantic"),
        conversations=conversations,
        distractors=distractors,
        history=history,
        store_url=store_url,
        progress=note_done,
    )
    if as_json:
        click.echo(json.dumps(reports, indent=2))
    else:
        click.echo("\n\n".join(format_report(r) for r in reports))


@bench.command(name="phrase")
@locomo_data_option("A LoCoMo JSON file (its turns are the memories; its questions are not used).")
@plans_option("Recall plan(s) to compare with plain full-text search (repeatable; default: hybrid, lexical).")
@conversations_option
@whole_number_option("--span", 3, 12, default=7, help="Words of each query.")
@report_json_option
def phrase_bench(
    data_path: Path, plans: tuple[str, ...], conversations: int | None, span: int, as_json: bool
) -> None:
    """Half-remembered sentences: recall@10 of recall against plain full-text search.

    Every turn of each conversation goes into a fresh temporary store through
    remember; every fifth turn of ten words or more is then looked for by SPAN
    consecutive words from its middle. Prints the share found in the top 10 by
    each plan and by plain full-text search (SQLite FTS5, BM25, any word) over the
    same texts, with the queries each one missed.

    \b
    Example:
        $ graphmem bench phrase --data locomo-dev.json
        half-remembered sentences: 500 queries of 7 consecutive words from 5 conversations
        searched by     R@10  missed   p50 ms
        hybrid         1.000       0     40.1
        lexical        1.000       0      6.2
        plain-fts      1.000       0        -
    """
    from graphmem.bench.phrase import format_report, run

    check_plans(plans)
    report = run(
        data_path,
        configured_embedder(),
        plans=plans or ("hybrid", "lexical"),
        conversations=conversations,
        span=span,
        progress=note_done,
    )
    present.report(report, format_report, as_json=as_json)


@bench.command()
@whole_number_option("--memories", 100, None, default=100_000, help="Size of the store to build.")
@whole_number_option("--queries", 10, None, default=200, help="Warm recalls to time.")
@click.option(
    "--hash-vectors",
    is_flag=True,
    help="Store the imported memories' vectors from the deterministic hash embedder (for 1,000,000 "
    "memories: the model is too slow to embed them); queries and remembers still use the model.",
)
@store_url_option(
    "Build the store in this empty PostgreSQL database (postgresql://...) instead of a temporary "
    "embedded one; graphmem's tables are dropped from it at the end."
)
@click.option(
    "--clients",
    type=click.IntRange(1, 64),
    multiple=True,
    metavar="N",
    help="Then N concurrent clients recalling and remembering on the built store for 20 s "
    "(repeat for several counts: --clients 1 --clients 4 --clients 16). PostgreSQL: N processes, "
    "each a daemon with its own copy of the full-text index; the embedded store: N threads "
    "through one process.",
)
@click.option(
    "--http-clients",
    type=click.IntRange(1, 32),
    multiple=True,
    metavar="N",
    help="Then N client processes sharing one `graphmem serve` on the built store, calling it over "
    "HTTP for 20 s, as a developer's agents share their daemon: the same on both stores (repeatable, "
    "after the --clients counts).",
)
@whole_number_option(
    "--writes",
    0,
    100_000,
    default=0,
    metavar="N",
    help="Then N writes as the daemon makes them: a remember, then its embedding, one at a time.",
)
@whole_number_option(
    "--backlog",
    0,
    1_000_000,
    default=0,
    metavar="N",
    help="Last, N remembers left without their vectors, then the first recall from a cold process "
    "while they wait (it embeds what it can in its budget first, as a recall without a daemon does).",
)
@click.option(
    "--projects",
    type=int,
    default=0,
    show_default=True,
    metavar="N",
    help="Spread the memories over N projects (proj-0, proj-1, ...), and ask every timed recall and "
    "write for proj-0, as from its checkout, in every process the benchmark starts (0: every "
    "memory global, each recall sees them all).",
)
@whole_number_option(
    "--small-project",
    0,
    100_000,
    default=0,
    metavar="N",
    help="With --projects: then N memories in a project of their own beside proj-0 (on PostgreSQL in "
    "proj-0's part of the vector index), its recalls timed and its vector search compared with an "
    "exact one, as a new repository's on a store of large ones.",
)
@report_json_option
def scale(
    memories: int,
    queries: int,
    hash_vectors: bool,
    store_url: str | None,
    clients: tuple[int, ...],
    http_clients: tuple[int, ...],
    writes: int,
    backlog: int,
    projects: int,
    small_project: int,
    as_json: bool,
) -> None:
    """Speed and memory at scale: remember, bulk import, recall, cold start, RSS, disk.

    Builds a temporary store of N synthetic developer memories through import,
    then times the product's own calls. Past 20,000 vectors the vector index's
    graph is built first, as the daemon's idle worker does. The memories are
    global, or with --projects spread over projects, each timed call asking for
    one of them as from its checkout; the report says which.

    \b
    Example:
        $ graphmem bench scale --memories 100000
        scale benchmark, 100,000 memories
        remember      p50 3.1 ms, p95 5.0 ms
        ...
        $ graphmem bench scale --memories 1000000 --hash-vectors --json
        $ graphmem bench scale --memories 100000 --hash-vectors --writes 2000
        $ graphmem bench scale --memories 100000 --hash-vectors --backlog 2000
        $ graphmem bench scale --memories 10000 --store postgresql://bench@db.internal/scratch
        $ graphmem bench scale --memories 100000 --hash-vectors --clients 1 --clients 4 --clients 16 \\
            --store postgresql://bench@db.internal/scratch
        $ graphmem bench scale --memories 100000 --hash-vectors --clients 16 --http-clients 16
        $ graphmem bench scale --memories 100000 --hash-vectors --projects 20
        $ graphmem bench scale --memories 100000 --hash-vectors --projects 20 --small-project 1000
    """
    from graphmem.bench.scale import check_projects, run
    from graphmem.bench.scale_report import format_report
    from graphmem.bench.scale_small import check_small_project

    check_projects(projects, memories)  # before the model is configured
    check_small_project(small_project, projects)
    report = run(
        memories,
        configured_embedder(),
        queries=queries,
        hash_vectors=hash_vectors,
        store_url=store_url,
        clients=clients,
        http_clients=http_clients,
        writes=writes,
        backlog=backlog,
        progress=lambda m: present.note(f"  {m}"),
        projects=projects,
        small_project=small_project,
    )
    present.report(report, format_report, as_json=as_json)


@bench.command()
@whole_number_option("--clients", 1, 32, default=4, help="Concurrent clients.")
@whole_number_option("--calls", 10, None, default=500, help="Mixed calls per client.")
@whole_number_option("--cold-runs", 1, None, default=5, help="Cold starts to time.")
@report_json_option
def serve(clients: int, calls: int, cold_runs: int, as_json: bool) -> None:
    """The daemon and the stdio proxy under MCP clients: cold start, proxy overhead, load.

    Runs on temporary data dirs and ports; a daemon you already run is not touched.

    \b
    Example:
        $ graphmem bench serve
        tools listed after a cold `graphmem mcp`: 0.41 s median (max 0.52 s)
        proxy overhead p50: 0.6 ms (stdio 2.1 ms, direct HTTP 1.5 ms)
        load: 4 clients × 500 calls in 61.2 s (32.7 calls/s), 0 errors, 0 lock failures
        recall under load: p50 95.3 ms, p95 210.4 ms
    """
    from graphmem.bench.serve import format_report, run

    present.report(run(cold_runs=cold_runs, clients=clients, calls=calls), format_report, as_json=as_json)


@bench.command(name="cli")
@whole_number_option("--repeats", 1, 50, default=3, help="Runs of each scenario.")
@report_json_option
def cli_bench(repeats: int, as_json: bool) -> None:
    """The CLI's cold paths, each a fresh `graphmem` process: recall through a running
    daemon, one-shot recall with no daemon, and the first recall right after a daemon
    starts (does it find "Use ruff for linting" for "which linter" before the model is
    ready?). Medians of --repeats runs, with the load average.

    Runs on a temporary data dir and port; a daemon you already run is not touched.

    \b
    Example:
        $ graphmem bench cli
        scenario                                  median s  cpu s  runs (s)                 load
        -------------------------------------------------------------------------------------
        one-shot recall, no daemon                    4.60   2.35  5.16, 4.61, 3.61         4.08
        first recall right after daemon start         1.12   0.32  1.01, 1.53, 1.12         4.47
          found: [True, True, True], semantic_ready: [False, False, False]
        recall through a running daemon               0.45   0.27  0.54, 0.33, 0.45         5.00
        status through a running daemon               0.49   0.28  0.50, 0.49, 0.38         5.00
    """
    from graphmem.bench.cold_paths import format_report, run

    report = run(repeats=repeats)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
    else:
        click.echo(format_report(report))


@bench.command(name="ingest")
@whole_number_option("--sessions", 1, 100_000, default=100, help="Sessions generated.")
@report_json_option
def ingest_bench(sessions: int, as_json: bool) -> None:
    """Ingest time per OpenCode session, on a generated OpenCode database of realistic sessions.

    Runs on a temporary store and database; yours are not touched.

    \b
    Example:
        $ graphmem bench ingest --sessions 100
        ingest benchmark: 100 sessions of 10 messages
        per session   median 180.2 ms, p95 240.7 ms (18.9 s in all)
        ...
    """
    from graphmem.bench.ingest import format_report, run

    present.report(run(sessions=sessions), format_report, as_json=as_json)


@bench.command(name="bootstrap")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@whole_number_option("--history", 0, 100_000, default=0, help="Commits to learn from too.")
@whole_number_option("--rescans", 1, 20, default=3, help="No-change re-scans.")
@whole_number_option(
    "--changed-rescans", 0, 20, default=0, help="Re-scans of a copy of PATH after every file in it changed."
)
@click.option(
    "--then-ask",
    is_flag=True,
    help="Instead: bootstrap through a fresh daemon, then time context and recall calls while it embeds.",
)
@seconds_option("--ask-seconds", 1, 3600, default=60.0, help="With --then-ask: how long to ask for.")
@report_json_option
def bootstrap_bench(
    path: Path,
    history: int,
    rescans: int,
    changed_rescans: int,
    then_ask: bool,
    ask_seconds: float,
    as_json: bool,
) -> None:
    """Bootstrap speed on a repository: files/s and symbols/s end to end, and re-scans.

    With --then-ask: how soon the repository answers. A fresh daemon bootstraps it
    (--history commits, 500 unless given), a person's memory is remembered, and for
    --ask-seconds `graphmem context FILE` and `graphmem recall QUESTION` run one after the
    other, each a CLI process timed end to end, while the daemon embeds the backlog.

    Runs on a temporary store; your own store and daemon are not touched.

    \b
    Example:
        $ graphmem bench bootstrap ~/src/flask
        bootstrap benchmark: /home/me/src/flask
        first scan    83 files, 1,412 symbols in 0.6 s = 138.3 files/s, 2353.3 symbols/s
        ...
        $ graphmem bench bootstrap ~/src/click --then-ask --history 500
        bootstrap then ask: /home/me/src/click (history 500, bootstrap 9.8 s)
        context  40 calls: p50 0.41 s, p95 0.62 s, max 0.7 s
        ...
    """
    if then_ask:
        from graphmem.bench import bootstrap_ask

        source = click.get_current_context().get_parameter_source("history")
        commits = 500 if source is click.core.ParameterSource.DEFAULT else history
        found = bootstrap_ask.run(path.resolve(), seconds=ask_seconds, history=commits)
        present.report(found, bootstrap_ask.format_report, as_json=as_json)
        return
    from graphmem.bench.bootstrap import format_report, run

    report = run(path.resolve(), history=history, rescans=rescans, changed_rescans=changed_rescans)
    present.report(report, format_report, as_json=as_json)


@bench.command(name="inject")
@whole_number_option("--memories", 1, 1_000_000, default=3000, help="Store size.")
@whole_number_option("--calls", 10, 100_000, default=300, help="Injections timed.")
@whole_number_option(
    "--per-session",
    1,
    1000,
    default=10,
    help="Messages per session (each session's first call picks its boot context).",
)
@whole_number_option(
    "--cache",
    2,
    1000,
    default=None,
    dest="cache_turns",
    metavar="TURNS",
    help="Measure the prompt cache over a session of TURNS turns instead of latency.",
)
@report_json_option
def inject_bench(memories: int, calls: int, per_session: int, cache_turns: int | None, as_json: bool) -> None:
    """Latency the OpenCode plugin adds per model call, or (--cache) what it costs the prompt cache.

    Runs on a temporary store and daemon with the model loaded; yours are not touched.
    With --cache it plays one session with the plugin off, the old behaviour (a block in
    the system prompt, new every turn) and the new one (boot context once, recall in the
    newest user message), and reports each request's cacheable share: the part that is
    an unchanged prefix of the previous request.

    \b
    Example:
        $ graphmem bench inject --memories 3000
        inject: 300 calls on 3000 memories, a new session every 10 (300 got a block)
        added per model call (HTTP round trip): median 14.2 ms, p95 25.1 ms, max 40.3 ms
        ...
        $ graphmem bench inject --memories 1000 --cache 12
        prompt cache over one 12-turn session on 1000 memories
        ...
        plugin  cacheable  whole kept  injected/turn    max
        off         95.6%       11/11            0.0      0
        ...
    """
    from graphmem.bench.inject import format_cache_report, format_report, run

    report = run(
        memories=memories,
        calls=calls,
        per_session=per_session,
        cache_turns=cache_turns or 0,
        progress=present.note,
    )
    present.report(report, format_cache_report if cache_turns else format_report, as_json=as_json)


@bench.command(name="extraction")
@click.option(
    "--data",
    "data_path",
    type=click.Path(exists=True, path_type=Path),
    default=Path("samples/sessions"),
    show_default=True,
    help="A folder of labelled sessions (*.jsonl), or one such file.",
)
@report_json_option
def extraction_bench(data_path: Path, as_json: bool) -> None:
    """Quality of the session extraction rules: precision, recall, F1 per category.

    Runs the rules on hand-labelled sessions (format in samples/sessions/README.md)
    and lists every false positive and miss. Reads no store.

    \b
    Example:
        $ graphmem bench extraction --data samples/sessions
        extraction, heldout: 15 sessions, 79 messages
        category     learned expected precision  recall     F1
        decision           2        3     1.000   0.667  0.800
        ...
    """
    from graphmem.bench.extraction import format_report, run

    present.report(run(data_path), format_report, as_json=as_json)


for _command in REPOSITORY_BENCHES:  # code-memory, people-first
    bench.add_command(_command)

COMMANDS = (bench,)
