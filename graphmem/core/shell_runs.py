"""What a session's shell runs teach: commands that worked after failing, and error → fix pairs.

Pure functions over session parts; no I/O. A bash tool part is a run that failed
(status ``error``, or its output shows a compiler/test/shell error) or succeeded.
Two lessons are read from the runs in order:

- ``procedure.retry``: a command failed, then a *similar* one (same program and
  sub-command, most arguments shared: ``pytest tests`` → ``uv run pytest tests``)
  succeeded. The text names the working command and the error it got past.
- ``procedure.error-fix``: a command failed, files were changed (or another command
  was run, ``apt-get install ...``), then the command succeeded. The text names the
  command, its error, and what changed in between.

Both are ``procedure`` memories: what to do when that error shows up again. A command
that merely succeeded on a second try with nothing in between teaches nothing.
Read-only commands (``cat``, ``ls``, ``git status``, ...) are never lessons.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass

from graphmem.core.models import Category, Trust
from graphmem.core.redaction import redact
from graphmem.core.refs import find_path_candidates
from graphmem.core.sessions import Learned, SessionMessage
from graphmem.core.text import clip, well_formed
from graphmem.core.trust import looks_like_injection


def _word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


MAX_RUNS = 400  # tool parts considered per session (the first ones)
MAX_OUTPUT_CHARS = 20_000  # output scanned per run for errors; megabyte dumps cost the same
MAX_COMMAND_CHARS = 300  # a longer "command" is a script; it is not a procedure to repeat
MAX_ERROR_CHARS = 160  # the error line quoted in a procedure
MAX_LOOKAHEAD_RUNS = 8  # how far after a failure the run that fixed it may be
MIN_SIMILAR_ARGS = 0.5  # Jaccard of two commands' words for "the same command, adjusted"

SHELL_TOOLS = frozenset({"bash", "shell", "sh", "terminal", "run_command", "exec"})
EDIT_TOOLS = frozenset({"edit", "write", "patch", "multiedit", "apply_patch", "str_replace"})

_FAILED_OUTPUT_RE = re.compile(
    r"^\s*(?:E\s+)?[\w.]*(?:Error|Exception):|^\s*error(?:\[\w+\])?:|^\s*fatal:|\bFAILED\b|npm ERR!"
    r"|command not found|Traceback \(most recent call last\)|exit (?:code|status) [1-9]|^\s*ERROR\b"
    r"|:\d+:(?:\d+:)? error:|\b\d+ failed\b|[Pp]ermission denied|\bundefined:",
    re.MULTILINE,
)
# The reader's marker for a cut output ("… [truncated: 12,345 more characters]").
_TRUNCATED_RE = re.compile(r"\[truncated\b[^\]]*\]\s*$")
_TRUNCATED_TAIL_CHARS = 200
_EXCEPTION_LINE_RE = re.compile(r"^\s*(?:E\s+)?[\w.]*(?:Error|Exception):\s+\S")
_ERROR_LINE_RE = re.compile(
    r"error|ERROR|FAILED|denied|not found|No such file|unauthorized|fatal|refused|undefined|cannot|can't",
)
_SEGMENT_SPLIT_RE = re.compile(r"\s*(?:&&|\|\||;|\|)\s*")
_ASSIGNMENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_WRAPPERS = frozenset({"sudo", "env", "time", "nice", "command", "exec", "npx", "bunx", "nohup"})
_RUNNERS = frozenset({"uv", "poetry", "pipenv", "pdm", "hatch", "pnpm", "bundle", "rye"})
_READ_ONLY = _word_set(
    "cat less more head tail ls ll find grep rg ag fd echo printf pwd cd which whoami env "
    "printenv tree wc file stat du df ps top history man sed awk jq diff sort uniq true false "
    "sleep clear"
)
# Programs whose failures depend on the repository's or the shell's state, not on a lesson
# worth keeping: `git push` rejected, then `git pull --rebase`, is how git works everywhere.
_STATEFUL = frozenset({"git", "cd", "export", "source", "."})
_READ_ONLY_SUB = {
    "git": frozenset({"status", "log", "show", "diff", "branch", "blame", "remote", "fetch", "grep"}),
    "glab": frozenset({"view", "list", "status"}),
    "gh": frozenset({"view", "list", "status"}),
    "kubectl": frozenset({"get", "describe", "logs"}),
    "docker": frozenset({"ps", "logs", "images", "inspect"}),
}


@dataclass(frozen=True, slots=True)
class Run:
    """One step of a session's work: a shell command that failed or worked, or a file edit."""

    message_id: str
    command: str = ""  # shell runs; empty for edits
    failed: bool = False
    error: str = ""  # the telling line of a failed run's output
    files: tuple[str, ...] = ()  # edits: the files changed


def command_runs(message: SessionMessage) -> list[Run]:
    """The shell runs and file edits of one assistant message, in order."""
    runs = []
    for part in message.parts:
        if part.type == "patch" or (part.type == "tool" and part.tool in EDIT_TOOLS):
            runs.append(Run(message.id, files=part.files or tuple(_input_paths(part.tool_input))))
        elif part.type == "tool" and part.tool in SHELL_TOOLS and part.status in ("completed", "error"):
            command = redact(command_of(part.tool_input)).text
            if not command or len(command) > MAX_COMMAND_CHARS or "\n" in command:
                continue
            output = redact(part.tool_output[:MAX_OUTPUT_CHARS]).text
            failed = part.status == "error" or bool(_FAILED_OUTPUT_RE.search(output))
            if not failed and _TRUNCATED_RE.search(part.tool_output[-_TRUNCATED_TAIL_CHARS:]):
                continue  # its end, where a failure shows, was cut: neither failed nor worked
            runs.append(Run(message.id, command, failed, _error_line(output) if failed else ""))
    return runs


def command_of(tool_input: str) -> str:
    """The shell command a bash tool part ran (its input is JSON ``{"command": ...}``)."""
    try:
        value = json.loads(tool_input)
    except ValueError:
        return tool_input.strip()
    except RecursionError:
        return ""  # JSON nested deeper than the parser recurses: no command's input
    if isinstance(value, dict):
        value = value.get("command") or value.get("cmd") or ""
    # well_formed: the JSON may escape half of an emoji's pair, which no stored text may hold
    return well_formed(value.strip()) if isinstance(value, str) else ""


def _input_paths(tool_input: str) -> list[str]:
    try:
        value = json.loads(tool_input)
    except (ValueError, RecursionError):  # RecursionError: nested too deep for the parser
        return []
    if not isinstance(value, dict):
        return []
    path = value.get("filePath") or value.get("path") or value.get("file_path")
    return [well_formed(path)] if isinstance(path, str) and path else []


def learn_from_runs(runs: list[Run]) -> list[Learned]:
    """Procedures from a session's runs in order: retries that worked, and error → fix pairs."""
    runs = runs[:MAX_RUNS]
    learned = []
    pending: dict[tuple[str, ...], int] = {}  # command family → index of its latest failure
    for index, run in enumerate(runs):
        if not run.command:
            continue
        families = _families(run.command)
        if not families:
            continue
        if run.failed:
            pending[families[0]] = index
            continue
        for family in families:
            failure = pending.pop(family, None)
            if failure is None or index - failure > MAX_LOOKAHEAD_RUNS:
                continue
            item = _lesson(runs, failure, index)
            if item is not None:
                learned.append(item)
            break
    return learned


def _lesson(runs: list[Run], failure: int, success: int) -> Learned | None:
    failed, worked = runs[failure], runs[success]
    between = runs[failure + 1 : success]
    edited = tuple(dict.fromkeys(f for run in between for f in run.files))
    helpers = [run.command for run in between if run.command and not run.failed and _families(run.command)]
    error = f' with "{clip(failed.error, MAX_ERROR_CHARS).rstrip(".")}"' if failed.error else ""
    same = " ".join(failed.command.split()) == " ".join(worked.command.split())
    if edited:
        then = "it passed" if same else f"`{worked.command}` passed"
        text = f"`{failed.command}` failed{error}; {then} after changing {', '.join(edited)}."
        rule, files = "procedure.error-fix", edited
    elif not same and _similar(failed.command, worked.command):
        text = f"`{worked.command}` works where `{failed.command}` failed{error}."
        rule, files = "procedure.retry", ()
    elif same and helpers:
        text = f"`{failed.command}` failed{error}; it worked after running `{helpers[-1]}`."
        rule, files = "procedure.error-fix", ()
    else:
        return None
    files = files or tuple(find_path_candidates(worked.command))
    trust = Trust.LOW if looks_like_injection(text) else Trust.NORMAL
    return Learned(Category.PROCEDURE, text, worked.message_id, rule, trust, files)


def _error_line(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in lines:
        if _EXCEPTION_LINE_RE.match(line):
            return re.sub(r"^E\s+", "", line)
    for line in lines:
        if _ERROR_LINE_RE.search(line) and not line.startswith(("Traceback", "ERROR: Job failed")):
            return line
    return lines[-1] if lines else ""


def _words(segment: str) -> list[str]:
    try:
        tokens = shlex.split(segment)
    except ValueError:
        tokens = segment.split()
    while tokens and (_ASSIGNMENT_RE.match(tokens[0]) or tokens[0] in _WRAPPERS):
        tokens = tokens[1:]
    if len(tokens) >= 2 and tokens[0] in _RUNNERS and tokens[1] in ("run", "exec"):
        tokens = tokens[2:]
    if len(tokens) >= 3 and re.fullmatch(r"python[\d.]*", tokens[0].rsplit("/", 1)[-1]) and tokens[1] == "-m":
        tokens = tokens[2:]
    if tokens:
        tokens[0] = tokens[0].rsplit("/", 1)[-1]
    return tokens


def _family(tokens: list[str]) -> tuple[str, ...]:
    args = [t for t in tokens[1:] if not t.startswith("-")]
    return (tokens[0], args[0]) if args else (tokens[0],)


def _read_only(tokens: list[str]) -> bool:
    program = tokens[0]
    if program in _READ_ONLY or program in _STATEFUL:
        return True
    subcommands = _READ_ONLY_SUB.get(program)
    return subcommands is not None and any(t in subcommands for t in tokens[1:3])


def _families(command: str) -> list[tuple[str, ...]]:
    """The (program, sub-command) of each segment of ``command`` that changes something."""
    families = []
    for segment in _SEGMENT_SPLIT_RE.split(command):
        tokens = _words(segment)
        if tokens and not _read_only(tokens):
            families.append(_family(tokens))
    return families


def _similar(failed: str, worked: str) -> bool:
    before = set(_words(failed))
    for segment in _SEGMENT_SPLIT_RE.split(worked):
        after = set(_words(segment))
        if before and after and len(before & after) / len(before | after) >= MIN_SIMILAR_ARGS:
            return True
    return False
