"""Hostile input to the CLI beside a running daemon: bad ids and options, huge and NUL
arguments, files that are no files (a FIFO, devices, folders, binary and non-UTF-8 content),
places nothing can be written. Every refusal is a non-zero exit with its reason on one
stderr line and no traceback; afterwards the daemon is healthy and the stored memories are
unchanged. Most cases run in this process (click's runner, a deadline so that a hang fails);
the ones about a real process's exit and streams run ``graphmem`` itself, a few at a time.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest
from click.testing import CliRunner, Result
from support.daemons import sandbox_env
from support.hostile import SECRET, Stage, assert_clear, assert_healthy, assert_no_internal_failures, snapshot

from graphmem.cli import main

pytestmark = pytest.mark.integration

MIN_CASES = 50
DEADLINE_S = 60.0
MB = "word " * 200_000
BOGUS = "mem_0000000000000000"

Args = Callable[[Stage], list[str]]


@dataclass(frozen=True)
class CliCase:
    name: str
    args: Args
    expect: str = "error"  # error | ok | any (a legitimate call with odd content)
    says: str = ""
    stdin: str = ""


def case(
    name: str, args: list[str] | Args, expect: str = "error", says: str = "", stdin: str = ""
) -> CliCase:
    return CliCase(name, args if callable(args) else (lambda _s, a=args: list(a)), expect, says, stdin)


def seeded(verb: str, *more: str, name: str = "decision", mangle: Callable[[str], str] = lambda i: i) -> Args:
    return lambda s: [verb, mangle(s.seeded[name]), *more]


ID_VERBS = [
    ["show"],
    ["edit"],
    ["archive"],
    ["restore"],
    ["resolve"],
    ["unresolve"],
    ["delete", "--yes"],
]


def _ids() -> list[CliCase]:
    hostile = {
        "unknown": BOGUS, "inner-space": "mem_ 0000", "quote": "mem_x' OR 1=1 //", "empty": "",
        "long-2000": "m" * 2000, "nul": "mem_\x00x", "star": "*",
    }  # fmt: skip
    out = []
    for verb in ID_VERBS:
        for label, bad in hostile.items():
            args = ["edit", bad, "new text"] if verb[0] == "edit" else [*verb, bad]
            out.append(case(f"{verb[0]}-{label}", args))
    out += [
        case("archive-zero-width", seeded("archive", mangle=lambda i: i[:6] + "\u200b" + i[6:])),
        case("delete-homoglyph", seeded("delete", "--yes", mangle=lambda i: "m\u0435m_" + i[4:])),
        case("delete-unconfirmed", seeded("delete"), says="abort"),
        case("edit-empty-text", seeded("edit", "")),
        case("edit-huge-text", seeded("edit", MB)),
        case("resolve-not-blocker", seeded("resolve")),
        case("link-unknown", seeded("link", BOGUS)),
        case("link-self", lambda s: ["link", s.seeded["decision"], s.seeded["decision"]]),
        case("link-bad-kind", lambda s: ["link", "--kind", "owns", s.seeded["decision"], s.seeded["global"]]),
        case("unlink-absent", lambda s: ["unlink", s.seeded["decision"], s.seeded["blocker"]]),
    ]
    return out


def _options_and_args() -> list[CliCase]:
    return [
        case("list-limit-neg", ["list", "--limit", "-1"]),
        case("list-limit-zero", ["list", "--limit", "0"]),
        case("list-limit-huge", ["list", "--limit", "1000000000"]),
        case("list-offset-neg", ["list", "--offset", "-5"]),
        case("list-since-garbage", ["list", "--since", "yesterday-ish"]),
        case("list-status-bogus", ["list", "--status", "deleted"]),
        case("recall-limit-zero", ["recall", "-n", "0", "x"]),
        case("recall-empty", ["recall", ""]),
        case("recall-huge", ["recall", MB]),
        case("recall-plan-bogus", ["recall", "--plan", "magic", "x"]),
        case("remember-category-bogus", ["remember", "-c", "admin", "x"]),
        case("remember-scope-bogus", ["remember", "--scope", "everything", "x"]),
        case("remember-empty", ["remember", ""]),
        case("remember-blank", ["remember", "  \t\n "]),
        case("remember-huge", ["remember", MB]),
        case("remember-stdin-huge", ["remember", "-"], stdin=MB),
        case("remember-stdin-empty", ["remember", "-"], stdin=""),
        case("remember-stdin-binary", ["remember", "-"], stdin="\x00\x01\x02\x03"),
        case("remember-supersedes-unknown", ["remember", "--supersedes", BOGUS, "The cache is Redis 7"]),
        case("export-format-csv", ["export", "--format", "csv"]),
        case("context-max-tokens-neg", ["context", "--max-tokens", "-5", "!1"]),
        case("context-huge", ["context", MB]),
        case("enrich-garbage", ["enrich", "!" * 2000]),
        case("enrich-metadata-url", ["enrich", "http://169.254.169.254/latest/meta-data"]),
        case("unknown-command", ["drop-everything"]),
        case("unknown-option", ["list", "--evil"]),
        case("data-dir-is-a-file", lambda s: ["--data-dir", "/dev/null", "list"]),
        case("project-missing", ["--project", "/nonexistent/proj", "list"]),
        case("project-dev-null", ["--project", "/dev/null", "list"], "any"),
    ]


def _targets() -> list[CliCase]:
    targets = {
        "bangs-2000": "!" * 2000, "aaaa-30": "a" * 30, "path-300": "src/" + "a/" * 150, "issue-neg": "#-1",
        "epic-huge": "&99999999999999999999", "etc-passwd": "../../../../etc/passwd", "dev-zero": "/dev/zero",
        "proc-environ": "/proc/self/environ", "rtl": "\u202egnp.exe", "zero-width": "src/\u200brefund.py",
    }  # fmt: skip
    out = [case(f"context-{n}", ["context", t], "any") for n, t in targets.items()]
    out.append(case("context-fifo", lambda s: ["context", str(s.fifo)], "any"))
    return out


def _files() -> list[CliCase]:
    return [
        case("export-missing-folder", ["export", "-o", "/nonexistent/dir/x.jsonl"], says="does not exist"),
        case("export-dev-full", ["export", "-o", "/dev/full"], says="no space"),
        case("export-onto-folder", lambda s: ["export", "-o", str(s.outside)]),
        case("export-long-part", ["export", "-o", "/tmp/" + "a" * 300]),
        case("export-to-file", lambda s: ["export", "--project", "--to", str(s.outside / "secret.json")]),
        case("import-fifo", lambda s: ["import", str(s.fifo)], says="regular file"),
        case("import-dev-zero", ["import", "/dev/zero"]),
        case("import-binary", lambda s: ["import", str(s.project / "binary.jsonl")]),
        case("import-latin1", lambda s: ["import", str(s.project / "latin1.jsonl")]),
        case("import-folder-without-export", lambda s: ["import", str(s.outside)]),
        case("import-missing", ["import", "/nonexistent/x.jsonl"]),
        case("import-etc-passwd", ["import", "--dry-run", "/etc/passwd"]),
        case("import-secret", lambda s: ["import", "--dry-run", str(s.outside / "secret.json")]),
        case("import-symlink-out", lambda s: ["import", "--dry-run", str(s.project / "secret-link.jsonl")]),
    ]


CASES = _ids() + _options_and_args() + _targets() + _files()


def test_the_suite_has_at_least_50_cli_cases() -> None:
    assert len(CASES) + len(PROCESS_CASES) >= MIN_CASES
    assert len({c.name for c in CASES}) == len(CASES)


def invoke(stage: Stage, args: list[str], stdin: str = "") -> Result:
    """The CLI in this process against the daemon's data dir, or a failed test after the deadline."""
    done: list[Result] = []
    worker = threading.Thread(
        target=lambda: done.append(
            CliRunner().invoke(main.cli, ["--data-dir", str(stage.daemon.data_dir), *args], input=stdin)
        ),
        daemon=True,
    )
    worker.start()
    worker.join(DEADLINE_S)
    assert done, f"graphmem {' '.join(args)[:80]} hung for {DEADLINE_S} s"
    return done[0]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_command(case: CliCase, stage: Stage, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(stage.project)
    args = case.args(stage)
    files, before = stage.untouched(), snapshot(stage.daemon)
    result = invoke(stage, args, case.stdin)
    crashed = result.exception is not None and not isinstance(result.exception, SystemExit)
    assert not crashed, f"{type(result.exception).__name__}: {result.exception}"
    output = result.stdout + result.stderr
    assert "Traceback" not in output and SECRET not in output and "root:x:0:0" not in output
    if case.expect == "error":
        assert result.exit_code != 0, f"accepted: {result.stdout[:300]}"
    elif case.expect == "ok":
        assert result.exit_code == 0, result.stderr
    if result.exit_code != 0:
        assert_one_line(result.stderr, case.says)
    assert_healthy(stage.daemon)
    assert stage.untouched() == files
    assert snapshot(stage.daemon) == before


def assert_one_line(stderr: str, says: str = "") -> None:
    """The reason on one line: graphmem's ``error: ...``, or click's ``Error: ...`` after its usage."""
    reasons = [
        line for line in stderr.splitlines() if line.lower().startswith("error:") or "Aborted!" in line
    ]
    assert len(reasons) == 1, f"not one reason on stderr: {stderr[:500]!r}"
    assert_clear(stderr)
    assert says.lower() in stderr.lower(), stderr


# -- the real process, a few at once ---------------------------------------------------------

PROCESS_CASES: list[tuple[str, Args]] = [
    ("export-dev-full", lambda s: ["export", "-o", "/dev/full"]),
    ("export-missing-folder", lambda s: ["export", "-o", "/nonexistent/dir/x.jsonl"]),
    ("import-fifo", lambda s: ["import", str(s.fifo)]),
    ("import-dev-zero", lambda s: ["import", "/dev/zero"]),
    ("context-bangs-2000", lambda s: ["context", "!" * 2000]),
    ("context-path-300", lambda s: ["context", "src/" + "a/" * 150]),
    ("show-padded-unknown", lambda s: ["show", f"  {BOGUS} "]),
    ("delete-quote", lambda s: ["delete", "--yes", "mem_x' OR 1=1 //"]),
]
ProcessResult = tuple[int | None, str, str]


@pytest.fixture(scope="module")
def process_results(stage: Stage) -> Iterator[dict[str, ProcessResult]]:
    """Every process case run as ``graphmem ...`` (two at a time), the store compared around the batch."""
    env = sandbox_env(stage.daemon.data_dir)
    files, before = stage.untouched(), snapshot(stage.daemon)

    def run(args: list[str]) -> ProcessResult:
        try:
            done = subprocess.run(
                [sys.executable, "-m", "graphmem", *args],
                env=env, cwd=stage.project, capture_output=True, text=True, timeout=DEADLINE_S,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            return None, "", "hung"
        return done.returncode, done.stdout, done.stderr

    with ThreadPoolExecutor(2) as pool:
        results = dict(
            zip(
                [n for n, _ in PROCESS_CASES],
                pool.map(run, [a(stage) for _, a in PROCESS_CASES]),
                strict=True,
            )
        )
    assert_healthy(stage.daemon)
    assert stage.untouched() == files
    assert snapshot(stage.daemon) == before
    yield results


@pytest.mark.parametrize("name", [n for n, _ in PROCESS_CASES])
def test_hostile_command_as_a_process(name: str, process_results: dict[str, ProcessResult]) -> None:
    code, stdout, stderr = process_results[name]
    assert code is not None, "the command hung"
    assert "Traceback" not in stdout + stderr
    if name.startswith("context-"):
        assert code == 0, stderr  # nothing known about it: said, not a crash
    else:
        assert code != 0 and len(stderr.strip().splitlines()) == 1, stderr
        assert_clear(stderr)


def test_no_command_ever_failed_inside_the_daemon(stage: Stage) -> None:
    assert_no_internal_failures(stage.daemon)
