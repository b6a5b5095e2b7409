"""What every client's hook command shares besides reaching the daemon (``hook_client``), reading
its input (``hook_input``) and running as a process (``hook_command``): its calls to the daemon's
``/plugin/*`` routes (their bodies, deadlines and what an answer means), its answer and its
journal of prompts.

- ``deadline``: a call's deadline, or the one ``GRAPHMEM_PLUGIN_TIMEOUT_MS`` (50-10000) in the
  client's environment sets.
- ``additional_context``: the answer that adds a text to the conversation as ``additionalContext``
  (Claude Code and Codex read the same shape); ``context``: that answer carrying memory blocks.
- ``ask_boot``, ``ask_turn``: the daemon's boot block and a prompt's block, asked as every client
  asks them (what was shown named, the answer journaled); ``ask_prompt``: a prompt's answer (the
  boot block first while the session lacks it), its text hashed by ``prompt_digest``.
- ``ask_compaction``: what compaction must keep; ``ask_ingest``: a session named to the daemon to
  learn from its file, checked first as the daemon's route checks it. How a client prints what
  compaction keeps, and how it checks its session's file, stay in its hook.
- ``HookSession``: one session of a client as its hooks ask the daemon about it: the calls above
  with the bodies naming the session and its directory, and its journal.
- ``Journal``: the prompts of one session the daemon was told of (their ids and text hashes),
  the memories each block showed (the boot block's too, as the daemon's ``shown`` named them), and
  whether the boot block reached the session (until it has, a prompt asks for it first), in
  a file per client and session (``hook-journal/<client>/<session>.json``, 0600 in a 0700 folder,
  written to a temporary file and renamed; at most 200 prompts a file and the 200 most recently
  written sessions a client): each hook is a process of its own, and the daemon
  leaves out of a turn what an earlier block already showed only when it hears of it; a daemon
  that restarted since knows it only from here.

Standard library and graphmem's stdlib-only modules (``graphmem.core.keys``, where the memory keys
it keeps are defined as the daemon checks them): a hook starts on every user turn.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphmem.core.keys import MAX_SHOWN_KEYS, SHOWN_KEY
from graphmem.errors import SessionStoreError
from graphmem.integrations.hook_input import HookInputError

log = logging.getLogger("graphmem.integrations.hook_journal")

JOURNAL_FOLDER = "hook-journal"
# Prompts of a session whose id and hash are kept (the daemon hears of the newest ones).
MAX_JOURNAL_MESSAGES = 200
# Memories one block may show as the journal keeps them (a turn's shows a few, the boot block's dozens).
MAX_SHOWN_PER_BLOCK = 50
# What a turn names as shown at most (the daemon's route takes no more): the boot block's, then the newest.
MAX_SHOWN = MAX_SHOWN_KEYS
# Sessions whose journal a client's folder keeps: a new session's file deletes the least recently
# written beyond these (a session that comes back after that has its memories shown once more).
MAX_JOURNAL_SESSIONS = 200
# A temporary file a hook left (killed mid-write) is deleted once it is this old.
STALE_PARTIAL_S = 60.0
# What compaction must keep is asked for every client alike (GRAPHMEM_PLUGIN_TIMEOUT_MS does not set it).
COMPACTION_DEADLINE_S = 2.0
BLOCK_OPEN = '<memory source="graphmem">'


def deadline(default_s: float) -> float:
    """``default_s``, or what ``GRAPHMEM_PLUGIN_TIMEOUT_MS`` (50-10000 ms) asks for."""
    asked = os.environ.get("GRAPHMEM_PLUGIN_TIMEOUT_MS", "")
    try:
        value = int(asked)
    except ValueError:
        return default_s
    return value / 1000 if 50 <= value <= 10_000 else default_s


def context(event: str, *blocks: Any) -> str:
    """The hook's answer carrying ``blocks`` as additional context, one after the other: those that
    are graphmem's blocks ("" when none is)."""
    kept = [block for block in blocks if isinstance(block, str) and block.startswith(BLOCK_OPEN)]
    return additional_context(event, "\n".join(kept)) if kept else ""


def additional_context(event: str, text: str) -> str:
    """The answer to the hook ``event`` that adds ``text`` to the conversation."""
    return json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}})


# ``HookClient.call``: a route, its body and a deadline; the daemon's answer, {} on any failure.
Call = Callable[[str, dict[str, Any], float], dict[str, Any]]


def ask_boot(call: Call, journal: Journal, body: dict[str, Any], deadline_s: float) -> Any:
    """The session's boot block (``/plugin/boot`` with ``body``), journaled as delivered with what
    it shows (for a daemon that restarts before the next turn); None when the daemon did not answer."""
    answer = call("/plugin/boot", body, deadline_s)
    if "shown" in answer:
        journal.booted(answer["shown"])
    return answer.get("block")


def ask_turn(
    call: Call, journal: Journal, body: dict[str, Any], ident: str, digest: str, deadline_s: float
) -> Any:
    """The block of the prompt ``ident`` (its text's ``digest``; ``body`` holds the session, the
    directory and the text): the daemon hears of the session's earlier prompts and of what their
    blocks and the boot block showed, and the answer is journaled. None when there is none."""
    earlier = [m for m in journal.messages() if m["id"] != ident]
    asked = {**body, "messages": [*earlier, {"id": ident, "hash": digest}], "shown": journal.shown()}
    answer = call("/plugin/turn", asked, deadline_s)
    journal.add(ident, digest, bare="blocks" not in answer, shown=answer.get("shown"))
    blocks = answer.get("blocks")
    return blocks.get(ident) if isinstance(blocks, dict) else None


def prompt_digest(prompt: str) -> str:
    """The hash of a prompt's text that the journal keeps and the daemon is told of."""
    return hashlib.sha256(prompt.encode("utf-8", errors="replace")).hexdigest()[:32]


def ask_prompt(
    call: Call,
    journal: Journal,
    boot: dict[str, Any],
    body: dict[str, Any],
    ident: str,
    digest: str,
    *,
    boot_deadline_s: float,
    turn_deadline_s: float,
) -> str:
    """The ``UserPromptSubmit`` answer to the prompt ``ident`` (``body`` and ``digest`` as
    ``ask_turn`` takes them). A session whose start never got its boot block (no daemon yet, a
    slow one) gets it here (``boot``: its body), before the prompt's own: the conventions reach
    the model on its first answered prompt."""
    late = None if journal.has_booted() else ask_boot(call, journal, boot, boot_deadline_s)
    block = ask_turn(call, journal, body, ident, digest, turn_deadline_s)
    return context("UserPromptSubmit", late, block)


def ask_compaction(call: Call, session: str, directory: str | None) -> str:
    """What compaction must keep of the session (``/plugin/compaction``: the project's conventions,
    decisions and open blockers), its texts one paragraph each; "" when there is none or the daemon
    did not answer. The client cuts it to what it keeps."""
    answer = call(
        "/plugin/compaction", {"session_id": session, "directory": directory}, COMPACTION_DEADLINE_S
    )
    found = answer.get("context")
    return "\n\n".join(t for t in found if isinstance(t, str) and t) if isinstance(found, list) else ""


def ask_ingest(
    call: Call,
    client: str,
    session: str,
    directory: str | None,
    transcript: str,
    *,
    check: Callable[[str, str], object],
    deadline_s: float,
) -> None:
    """Name the session's file ``transcript`` to the daemon to learn ``client``'s session from it
    (``/plugin/ingest``: queued, answered at once; nothing in the answer is the hook's to use, and
    a failure is ``call``'s log line). ``check(transcript, session)`` is the client's own check of
    its session's file, the one the daemon's route makes: a file it refuses (``SessionStoreError``)
    is bad input, refused here with its reason, and nothing is sent."""
    try:
        check(transcript, session)
    except SessionStoreError as exc:
        raise HookInputError(str(exc)) from None
    body = {"client": client, "session_id": session, "directory": directory, "transcript_path": transcript}
    call("/plugin/ingest", body, deadline_s)


@dataclass(frozen=True, slots=True)
class HookSession:
    """The session ``session`` of ``client``, in ``directory``, as its hooks ask the daemon about
    it through ``call``: every body names the session and its directory (a boot body adds
    ``boot_fields``), and a prompt's answer is journaled in ``data_dir``."""

    call: Call
    client: str
    data_dir: Path
    session: str
    directory: str | None
    boot_fields: Mapping[str, Any] = field(default_factory=dict)

    @property
    def journal(self) -> Journal:
        return Journal(self.data_dir, self.client, self.session)

    def body(self, **fields: Any) -> dict[str, Any]:
        """A route's body for this session: its id, its directory, then ``fields``."""
        return {"session_id": self.session, "directory": self.directory, **fields}

    def boot(self, deadline_s: float) -> Any:
        """The session's boot block (``ask_boot``); None when the daemon did not answer."""
        return ask_boot(self.call, self.journal, self.body(**self.boot_fields), deadline_s)

    def prompt(self, text: str, ident: str, *, boot_deadline_s: float, turn_deadline_s: float) -> str:
        """The ``UserPromptSubmit`` answer to the prompt ``ident`` whose text is ``text`` (``ask_prompt``)."""
        return ask_prompt(
            self.call,
            self.journal,
            self.body(**self.boot_fields),
            self.body(text=text),
            ident,
            prompt_digest(text),
            boot_deadline_s=boot_deadline_s,
            turn_deadline_s=turn_deadline_s,
        )

    def compaction(self) -> str:
        """What compaction must keep of the session (``ask_compaction``)."""
        return ask_compaction(self.call, self.session, self.directory)

    def ingest(self, transcript: str, *, check: Callable[[str, str], object], deadline_s: float) -> None:
        """Name the session's file ``transcript`` to the daemon to learn from (``ask_ingest``)."""
        ask_ingest(
            self.call,
            self.client,
            self.session,
            self.directory,
            transcript,
            check=check,
            deadline_s=deadline_s,
        )


def _keys(value: Any) -> list[str]:
    """The memory keys in ``value`` (a daemon's answer, a journal's row), the others dropped:
    what the daemon's route refuses (``SHOWN_KEY``) is never sent."""
    if not isinstance(value, list):
        return []
    return [k for k in value if isinstance(k, str) and SHOWN_KEY.fullmatch(k)][:MAX_SHOWN_PER_BLOCK]


class Journal:
    """The prompts of one session of ``client`` the daemon was told of, and what their blocks and
    the boot block showed (see the module's docstring)."""

    def __init__(self, data_dir: Path, client: str, session: str) -> None:
        self._folder = data_dir / JOURNAL_FOLDER / client
        self._file = self._folder / f"{session}.json"

    @property
    def path(self) -> Path:
        return self._file

    def _read(self) -> tuple[list[list[Any]], list[str], bool]:
        """The journal's rows (``[id, hash, bare, shown]``), its boot block's memories, and whether
        the boot block reached the client (a journal of version 2 says so by naming memories)."""
        try:
            saved = json.loads(self._file.read_text("utf-8"))
        except (OSError, ValueError, RecursionError):
            return [], [], False
        if not isinstance(saved, dict):
            return [], [], False
        rows = saved.get("messages")
        kept = [
            [r[0], r[1], bool(r[2]), _keys(r[3] if len(r) > 3 else None)]
            for r in (rows if isinstance(rows, list) else [])
            if isinstance(r, list) and len(r) in (3, 4) and all(isinstance(x, str) for x in r[:2])
        ]
        boot = _keys(saved.get("boot"))
        return kept[-MAX_JOURNAL_MESSAGES:], boot, saved.get("booted") is True or bool(boot)

    def messages(self) -> list[dict[str, Any]]:
        """The prompts the daemon was told of, oldest first: ``id``, ``hash`` and ``bare``."""
        return [{"id": r[0], "hash": r[1], "bare": r[2]} for r in self._read()[0]]

    def shown(self) -> list[str]:
        """What the session's boot block and the journaled prompts' blocks showed (``id:text-hash``)."""
        rows, boot, _ = self._read()
        turns = list(dict.fromkeys(k for r in rows for k in r[3]))
        return list(dict.fromkeys([*boot, *turns[len(boot) - MAX_SHOWN :]]))[:MAX_SHOWN]

    def add(self, ident: str, digest: str, *, bare: bool, shown: Any = None) -> None:
        """Journal the prompt ``ident`` (its text's ``digest``), sent ``bare`` or with a block that
        showed ``shown`` (the daemon's answer's list)."""
        rows, boot, booted = self._read()
        rows = [*(r for r in rows if r[0] != ident), [ident, digest, bare, _keys(shown)]]
        self._write(rows[-MAX_JOURNAL_MESSAGES:], boot, booted)

    def has_booted(self) -> bool:
        """Whether the session's boot block reached the client (the daemon answered its boot call,
        with a block or with nothing to show): until it has, each prompt asks for it first."""
        return self._read()[2]

    def booted(self, shown: Any) -> None:
        """Journal that the session's (new) boot block reached the client, and what it showed (the
        daemon's answer's list)."""
        rows, _, _ = self._read()
        self._write(rows, _keys(shown), True)

    def _write(self, rows: list[list[Any]], boot: list[str], booted: bool) -> None:
        try:
            self._folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            new = not self._file.exists()
            partial = self._folder / f".{self._file.stem}.{os.getpid()}.tmp"
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                # dumps, not dump: json.dump encodes in Python, chunk by chunk (3.3× slower here)
                out.write(json.dumps({"v": 3, "boot": boot, "booted": booted, "messages": rows}))
            os.replace(partial, self._file)
        except OSError as exc:
            log.warning("could not keep the prompt journal %s: %s", self._file, exc.strerror or exc)
            return
        if new:  # one more session: the folder keeps the newest MAX_JOURNAL_SESSIONS
            self._prune()

    def _prune(self) -> None:
        """Delete the journals of the least recently written sessions beyond ``MAX_JOURNAL_SESSIONS``,
        and temporary files a killed hook left."""
        written: list[tuple[float, Path]] = []
        with contextlib.suppress(OSError):
            for entry in os.scandir(self._folder):
                with contextlib.suppress(OSError):
                    when = entry.stat(follow_symlinks=False).st_mtime
                    if entry.name.endswith(".json") and entry.is_file(follow_symlinks=False):
                        written.append((when, Path(entry.path)))
                    elif entry.name.endswith(".tmp") and time.time() - when > STALE_PARTIAL_S:
                        os.unlink(entry.path)
        written.sort(key=lambda found: found[0])
        for _, old in written[: max(len(written) - MAX_JOURNAL_SESSIONS, 0)]:
            if old != self._file:
                with contextlib.suppress(OSError):
                    old.unlink()
