"""Hostile input to the CLI beside a running daemon: bad ids and options, huge and NUL
arguments, files that are no files (a FIFO, devices, folders, binary and non-UTF-8 content),
places nothing can be written, sessions and claims that do not exist, lifecycle filters that
are wrong or pick nothing, unknown ids among good ones. Every refusal is a non-zero exit
with its reason on one stderr line (one per id that names no memory) and no traceback;
afterwards the daemon is healthy and the stored memories are unchanged, or changed exactly
as a legitimate success says (the good ids of a mixed list). Most cases run in this process
(click's runner, a deadline so that a hang fails); the ones about a real process's exit and
streams run ``graphmem`` itself, a few at a time.
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
from support.hostile import (
    SECRET,
    Snapshot,
    Stage,
    assert_clear,
    assert_healthy,
    assert_no_internal_failures,
    rpc_call,
    snapshot,
)

from graphmem.cli import main

pytestmark = pytest.mark.integration

MIN_CASES = 191
DEADLINE_S = 60.0
MB = "word " * 200_000
BOGUS = "mem_0000000000000000"

Args = Callable[[Stage], list[str]]
Changes = Callable[[Snapshot], Snapshot]
FRESH: dict[str, str] = {}  # case name -> the memory or session it made before it ran


@dataclass(frozen=True)
class CliCase:
    name: str
    args: Args
    expect: str = "error"  # error | ok | any (a legitimate call with odd content)
    says: str = ""
    stdin: str = ""
    changes: Changes | None = None  # the store after a legitimate success, from the one before
    reasons: int = 1  # error lines: one per id that names no memory


def case(
    name: str,
    args: list[str] | Args,
    expect: str = "error",
    says: str = "",
    stdin: str = "",
    changes: Changes | None = None,
    reasons: int = 1,
) -> CliCase:
    return CliCase(
        name, args if callable(args) else (lambda _s, a=args: list(a)), expect, says, stdin, changes, reasons
    )


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
        case("export-dev-full", ["export", "-o", "/dev/full"], says="regular file"),
        case("export-fifo", lambda s: ["export", "-o", str(s.fifo)], says="regular file"),
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


def fresh(name: str, kind: str = "memory") -> Callable[[Stage], str]:
    """A memory (an event, or a ``kind``) or a session made for case ``name`` before its snapshot."""

    def make(stage: Stage) -> str:
        if kind == "session":
            answer = rpc_call(stage.daemon, "session_start", agent="probe/cli", project=str(stage.project))
            made: str = answer["result"]["id"]
        else:
            made = rpc_call(
                stage.daemon, "remember", text=f"Hostile probe {name}: the nightly job ran",
                category="event" if kind == "memory" else kind, project=str(stage.project),
            )["result"]["memory"]["id"]  # fmt: skip
        FRESH[name] = made
        return made

    return make


def with_fresh(name: str, build: Callable[[str], list[str]], kind: str = "memory") -> Args:
    return lambda s: build(fresh(name, kind)(s))


def live(verb: str, *rest: str) -> Args:
    """``verb`` on a session started for the case, then ``rest``."""
    return lambda s: [verb, fresh(verb, "session")(s), *rest]


def status_of(name: str, status: str) -> Changes:
    def after(before: Snapshot) -> Snapshot:
        memories = dict(before.memories)
        old = memories[FRESH[name]]
        memories[FRESH[name]] = (*old[:4], status, *old[5:])
        return Snapshot(memories, before.links)

    return after


def deleted(name: str) -> Changes:
    return lambda before: before.without(FRESH[name])


def _session_cases() -> list[CliCase]:
    ses = "ses_000000000000"
    return [
        case("boot-max-tokens-neg", ["boot", "--max-tokens", "-5"]),
        case("boot-max-tokens-zero", ["boot", "--max-tokens", "0"]),
        case("boot-max-tokens-huge", ["boot", "--max-tokens", "99999999999999999999"]),
        case("boot-max-tokens-text", ["boot", "--max-tokens", "lots"]),
        case("boot-json-min-budget", ["boot", "--max-tokens", "50", "--json"], "ok"),
        case("session-start-empty-agent", ["session", "start", ""]),
        case("session-start-agent-2000", ["session", "start", "a" * 2000]),
        case("session-start-task-huge", ["session", "start", "probe/cli", "--task", MB]),
        case("session-start-rtl-agent", ["session", "start", "\u202eliam/tnega"], "any"),
        case("session-heartbeat-unknown", ["session", "heartbeat", ses]),
        case("session-heartbeat-spaces", ["session", "heartbeat", "ses 0000 0000"]),
        case("session-end-unknown", ["session", "end", ses, "--summary", "done"]),
        case("session-end-empty", ["session", "end", ""]),
        case("session-end-2000", ["session", "end", "s" * 2000]),
        case("session-bogus-verb", ["session", "pause", ses]),
        case("session-active-extra", ["session", "active", ses]),
        case("claim-unknown-session", ["claim", ses, "!12"]),
        case("claim-ttl-neg", live("claim", "!12", "--ttl", "-5")),
        case("claim-ttl-zero", live("claim", "!12", "--ttl", "0")),
        case("claim-ttl-huge", live("claim", "!12", "--ttl", "9" * 30)),
        case("claim-ttl-text", live("claim", "!12", "--ttl", "forever")),
        case("claim-empty-item", live("claim", "")),
        case("claim-item-2000", live("claim", "x" * 2000)),
        case("claim-item-zero-width", live("claim", "!\u200b12"), "any"),
        case("claim-session-spaces", ["claim", "ses 0000", "!12"]),
        case("release-unknown-session", ["release", ses, "!12"]),
        case("release-unclaimed", live("release", "!99"), says="nothing was released"),
        case("release-item-2000", live("release", "x" * 2000)),
    ]  # fmt: skip


def _bulk_cases() -> list[CliCase]:
    out = []
    for verb in ("archive", "restore", "resolve", "delete"):
        yes = ["--yes"] if verb == "delete" else []
        out += [
            case(f"{verb}-nothing-named", [verb, *yes]),
            case(f"{verb}-category-bogus", [verb, *yes, "--category", "admin"]),
            case(f"{verb}-status-bogus", [verb, *yes, "--status", "deleted"]),
            case(f"{verb}-since-garbage", [verb, *yes, "--since", "yesterday-ish"]),
            case(f"{verb}-older-than-neg", [verb, *yes, "--older-than", "-5d"]),
            case(f"{verb}-older-than-huge", [verb, *yes, "--older-than", "99999999d"]),
            case(f"{verb}-since-future", [verb, *yes, "--since", "2999-01-01"], "ok", says=""),
            case(f"{verb}-dry-run-all", [verb, "--status", "all", "--dry-run"], "ok"),
        ]
    out += [
        case("archive-no-match", ["archive", "--category", "idea", "--older-than", "1y"], "ok"),
        case("delete-filter-unconfirmed", ["delete", "--category", "decision"], says="abort"),
        case("delete-status-all-unconfirmed", ["delete", "--status", "all"], says="abort"),
        case("delete-filter-dry-run", ["delete", "--status", "all", "--dry-run"], "ok"),
        case("archive-ids-dry-run", lambda s: ["archive", "--dry-run", *s.seeded.values()], "ok"),
        case("archive-unknown-ids", ["archive", BOGUS, "mem_1111111111111111"], reasons=2),
        case("delete-spaced-ids", ["delete", "--yes", "mem_0 0", "  "], reasons=2),
        case(
            "archive-good-and-unknown",
            with_fresh("archive-good-and-unknown", lambda i: ["archive", i, BOGUS]),
            changes=status_of("archive-good-and-unknown", "archived"), says=BOGUS,
        ),
        case(
            "delete-good-and-unknown",
            with_fresh("delete-good-and-unknown", lambda i: ["delete", "--yes", BOGUS, i]),
            changes=deleted("delete-good-and-unknown"), says=BOGUS,
        ),
        case(
            "resolve-good-and-not-blocker",
            lambda s: ["resolve", fresh("resolve-good-and-not-blocker", "blocker")(s), s.seeded["decision"]],
            changes=status_of("resolve-good-and-not-blocker", "resolved"), says="not a blocker",
        ),
    ]  # fmt: skip
    return out


CASES = _ids() + _options_and_args() + _targets() + _files() + _session_cases() + _bulk_cases()


def test_the_suite_has_its_191_cli_cases() -> None:
    assert len(CASES) + len(PROCESS_CASES) >= MIN_CASES
    assert len({c.name for c in CASES}) == len(CASES)


def invoke(stage: Stage, args: list[str], stdin: str = "") -> Result:
    """The CLI in this process against the daemon's data dir, or a failed test after the deadline."""
    done: list[Result] = []
    worker = threading.Thread(
        target=lambda: done.append(
            CliRunner().invoke(
                main.cli, ["--data-dir", str(stage.daemon.data_dir), *args], input=stdin, env=stage.store_env
            )
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
        assert_one_line(result.stderr, case.says, case.reasons)
    assert_healthy(stage.daemon)
    assert stage.untouched() == files
    expected = case.changes(before) if case.changes else before
    assert snapshot(stage.daemon) == expected


def assert_one_line(stderr: str, says: str = "", count: int = 1) -> None:
    """The reason on one line: graphmem's ``error: ...``, or click's ``Error: ...`` after its usage."""
    reasons = [
        line for line in stderr.splitlines() if line.lower().startswith("error:") or "Aborted!" in line
    ]
    assert len(reasons) == count, f"not {count} reason on stderr: {stderr[:500]!r}"
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
    env = sandbox_env(stage.daemon.data_dir, **stage.store_env)
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
