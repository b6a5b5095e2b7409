"""``graphmem bench code-memory`` and ``graphmem bench people-first``: recall measured on a real
repository's history, bootstrapped into a temporary store (figures in docs/benchmarks.md)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from graphmem.cli import present
from graphmem.cli.options import report_json_option, whole_number_option
from graphmem.cli.state import configured_embedder


@click.command(name="code-memory")
@click.option(
    "--repo",
    "repos",
    required=True,
    multiple=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="A git repository with its full history (not a shallow clone); repeat for several.",
)
@whole_number_option(
    "--eval-commits",
    20,
    10_000,
    default=200,
    help="Newest commits that change existing source lines to evaluate.",
)
@click.option(
    "--cross-validate",
    is_flag=True,
    help="Leave one repository out: choose among variations of the default plan on the others, "
    "score the choice on it (two --repo or more).",
)
@report_json_option
def code_memory_bench(
    repos: tuple[Path, ...], eval_commits: int, cross_validate: bool, as_json: bool
) -> None:
    """Blame recall: does memory bring back the past commits that wrote the lines a
    change touches, given only the task's subject, its files and its symbols?

    Bootstraps the repository as it was before its newest --eval-commits changes
    (code and older commits as memories) into a temporary store, then recalls the
    top 10 for each change; compares with two baselines on the same commits
    (recency: newest commits to the files; bm25: the subject over commit messages).
    Your repository and store are not touched. Protocol in docs/benchmarks.md.

    \b
    Example:
        $ git clone click.bundle /tmp/click
        $ graphmem bench code-memory --repo /tmp/click
        code-memory benchmark (blame recall): /tmp/click
        evaluated 119 of 200 commits; 1,703 memories (commits before 2023-07-04)
        method       R@10    MRR   p50 ms   p95 ms
        graphmem    ...
        recency     0.271  0.155    105.5    505.0
        bm25        0.110  0.108     12.7     54.7
        $ graphmem bench code-memory --repo /tmp/click --repo /tmp/express --cross-validate
    """
    from graphmem.bench import code_memory
    from graphmem.errors import InvalidInputError

    if cross_validate and len(repos) < 2:
        raise InvalidInputError("--cross-validate leaves one repository out: give --repo twice or more.")
    embedder = configured_embedder()
    if cross_validate:
        result = code_memory.cross_validate(repos, embedder, eval_commits=eval_commits, progress=present.note)
        present.report(result, code_memory.format_cross_validation_report, as_json=as_json)
        return
    reports = [
        code_memory.run(repo, embedder, eval_commits=eval_commits, progress=present.note) for repo in repos
    ]
    if as_json:
        click.echo(json.dumps(reports[0] if len(reports) == 1 else reports, indent=2))
    else:
        click.echo("\n\n".join(code_memory.format_report(report) for report in reports))


@click.command(name="people-first")
@click.option(
    "--repo",
    required=True,
    type=click.Path(exists=True, path_type=Path),
    help="A git repository (or a .bundle) with its history: cloned, then bootstrapped.",
)
@click.option(
    "--memories",
    "memories_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help='A JSON-lines file: {"category": ..., "text": ..., "query": ...} a line.',
)
@whole_number_option(
    "--history", 0, 100_000, default=500, help="Commits to bootstrap (graphmem bootstrap's default)."
)
@report_json_option
def people_first_bench(repo: Path, memories_path: Path, history: int, as_json: bool) -> None:
    """People first: does what a person said come first for the question it answers, when the
    store also holds the repository's code, docs facts and commits?

    Clones --repo, remembers every line of --memories in its project, on a store without
    and with a bootstrap of the clone, and recalls each line's question (top 10). Prints
    MRR, R@1 and R@3 of the line's memory on both stores and the questions whose memory
    is not first. Your repository and store are not touched. Protocol in
    docs/benchmarks.md.

    \b
    Example:
        $ graphmem bench people-first --repo /tmp/click --memories dev.jsonl
        people-first benchmark: 24 memories of dev.jsonl
        store             MRR    R@1    R@3  missed   p50 ms
        clean           ...
        bootstrapped    ...
    """
    from graphmem.bench.people_first import format_report, run

    report = run(repo, memories_path, configured_embedder(), history=history, progress=present.note)
    present.report(report, format_report, as_json=as_json)


REPOSITORY_BENCHES = (code_memory_bench, people_first_bench)
