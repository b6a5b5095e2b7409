"""OpenCode's own session store, read-only: its SQLite database (``session``, ``message``, ``part``).

OpenCode (1.18.x) keeps every session in ``$XDG_DATA_HOME/opencode/opencode.db`` (``OPENCODE_DB``
overrides it), in WAL mode, while it runs. OpenCode 2 keeps those tables and writes its own
sessions' messages to ``session_message`` instead (one row per message: ``type`` user, assistant,
...; ``data`` its JSON, an assistant's text, reasoning and tool calls in ``content``), as read in
anomalyco/opencode's ``packages/core/src/session/sql.ts`` and ``message.ts``, not verified against
a real OpenCode 2: a session with no ``message`` rows is read from there when the table exists.
This reader:

- opens it with ``mode=ro`` (never ``immutable=1``: the file changes under us) and a busy
  timeout, never writes and never creates it;
- checks the tables and columns it needs and names the missing ones;
- lists sessions changed after a cursor ``(time_updated, id)``, in order, a batch at a time;
- reads one session inside one read transaction (a consistent snapshot under WAL) into a
  :class:`~graphmem.core.sessions.Transcript`, with every text bounded: tool outputs of
  megabytes are cut in SQL (``substr``) before they reach Python, file and image parts keep
  their name and type (never their bytes);
- skips a part whose JSON is corrupt (and counts it), and reports a session whose messages
  are unreadable or still being written as ``in_progress``, so the caller retries it later;
- reads bytes that are not UTF-8 as U+FFFD, and leaves out (with a log line) a session whose id or
  ``time_updated`` is of a type OpenCode never writes, which the cursor could not page past;
- leaves out a user's text that is the expansion of a custom command or skill (stored with no mark
  of it: ``opencode_commands.py`` recognises it by the templates OpenCode offers there).

``opencode_database.py`` finds the database. Times in OpenCode's tables are epoch milliseconds.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from graphmem.adapters.client_sessions import from_ms, row_transcript
from graphmem.adapters.opencode_commands import OpenCodeCommands
from graphmem.adapters.opencode_database import check_database, find_database
from graphmem.core.sessions import SessionMessage, SessionPart, SessionRead, SessionRow
from graphmem.core.text import escape_undecodable
from graphmem.errors import SessionStoreError

log = logging.getLogger(__name__)

# The OpenCode releases whose schema this reader was checked against (named in schema errors).
KNOWN_VERSIONS = "1.18.x"
# OpenCode 2's own message table (see the module's docstring).
V2_MESSAGES = "session_message"
REQUIRED_COLUMNS: dict[str, tuple[str, ...]] = {
    "session": ("id", "parent_id", "directory", "title", "time_created", "time_updated"),
    "message": ("id", "session_id", "time_created", "time_updated", "data"),
    "part": ("id", "message_id", "session_id", "time_created", "time_updated", "data"),
}
# A session longer than this is a loop or an import; its most recent messages are read.
MAX_MESSAGES_PER_SESSION = 2_000
# Parts read per message: a message with more is a runaway tool loop; the first ones are read.
MAX_PARTS_PER_MESSAGE = 300
# Text and reasoning parts: longer ones are pasted logs or files, not things said.
MAX_TEXT_CHARS = 20_000
# Tool outputs: the rules need the first error lines, not megabytes of build log.
MAX_TOOL_OUTPUT_CHARS = 4_000
# ... and the last lines, where a failing test run or build says so.
TOOL_OUTPUT_TAIL_CHARS = 1_500
# Tool inputs (compact JSON): commands and paths fit; a whole file written by `write` does not.
MAX_TOOL_INPUT_CHARS = 2_000
# Paths kept per part (patch parts can list hundreds).
MAX_FILES_PER_PART = 100
# Sessions listed per query: bounded memory however many sessions the store holds.
SESSION_BATCH = 100
# How long one statement waits for OpenCode's writer before SQLite says "locked".
BUSY_TIMEOUT_MS = 2_000
# Tries per read when the database stays locked (checkpoint, a long write), then a clear error.
LOCK_RETRIES = 3
LOCK_RETRY_PAUSE_S = 0.2
TRUNCATED = "… [truncated: {omitted:,} more characters]"
# The sessions a cursor (time_updated, id) can page through: a time that is no integer or an id that is
# no UTF-8 text (never OpenCode's) would not compare as it reads back, and the listing would not end.
_LISTABLE = "typeof(time_updated) = 'integer' AND typeof(id) = 'text' AND is_utf8(CAST(id AS BLOB))"
# Tool-input keys that hold a path the tool reads or writes.
_PATH_KEYS = ("filePath", "file_path", "path", "filename")
SHOWN_ID_CHARS = 80  # of a session's or a part's id (any text in a hostile database), in a log line


def _bounded(text: str | None, limit: int, full_length: int | None = None) -> str:
    """``text`` cut to ``limit`` characters with a marker saying how much was left out."""
    if not text:
        return ""
    length = len(text) if full_length is None else max(full_length, len(text))
    if length <= limit:
        return text
    return text[:limit] + TRUNCATED.format(omitted=length - limit)


def _head_and_tail(head: str | None, tail: str | None, full_length: int | None) -> str:
    """A tool output cut to its first and last characters, with a marker where it was cut."""
    if not head:
        return ""
    length = max(full_length or 0, len(head))
    if length <= MAX_TOOL_OUTPUT_CHARS or not tail:
        return _bounded(head, MAX_TOOL_OUTPUT_CHARS, full_length)
    kept = MAX_TOOL_OUTPUT_CHARS - len(tail)
    return f"{head[:kept]}\n{TRUNCATED.format(omitted=length - kept - len(tail))}\n{tail}"


class OpenCodeSessionStore:
    """Read-only access to one OpenCode database. Not thread-safe: one per run."""

    def __init__(
        self,
        path: str | Path,
        *,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
        lock_retries: int = LOCK_RETRIES,
        max_messages: int = MAX_MESSAGES_PER_SESSION,
    ) -> None:
        self.path = Path(path)
        self._busy_timeout_ms = busy_timeout_ms
        self._lock_retries = max(1, lock_retries)
        self._max_messages = max_messages
        self._commands = OpenCodeCommands()  # read once per project directory for the run
        check_database(self.path)  # nothing is created, no FIFO waited on
        # realpath, not Path.resolve (a RuntimeError on a symlink loop); the bytes, which quote
        # takes as they are: a name that is no UTF-8 would stop quote's encoding.
        uri = f"file:{quote(os.fsencode(os.path.realpath(self.path)))}?mode=ro"
        try:
            self._db = sqlite3.connect(uri, uri=True, timeout=busy_timeout_ms / 1000, isolation_level=None)
            # Bytes that are no UTF-8 (SQLite's JSON writes half of an emoji's UTF-16 pair as such) are
            # read as U+FFFD: a decoding error would make the whole session, or the list, unreadable.
            self._db.text_factory = _text
            self._db.create_function("is_utf8", 1, _is_utf8, deterministic=True)
            self._db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        except sqlite3.Error as exc:
            raise SessionStoreError(
                f"Cannot open OpenCode's database {self.path} read-only ({exc}). Check that the file and "
                "its folder are readable (SQLite needs the -wal/-shm files beside it in WAL mode)."
            ) from exc
        self.check_schema()
        self._warn_unlisted()

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> OpenCodeSessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- plumbing ---------------------------------------------------------------------------

    def _run(
        self, what: str, statements: Sequence[tuple[str, Sequence[Any] | Mapping[str, Any]]]
    ) -> list[list[tuple[Any, ...]]]:
        """Run ``statements`` in one read transaction (one snapshot); retry while locked."""
        for attempt in range(1, self._lock_retries + 1):
            try:
                self._db.execute("BEGIN")
                try:
                    return [self._db.execute(sql, params).fetchall() for sql, params in statements]
                finally:
                    self._db.execute("COMMIT")
            except sqlite3.OperationalError as exc:
                message = str(exc).lower()
                if ("locked" in message or "busy" in message) and attempt < self._lock_retries:
                    log.info("OpenCode's database is locked (%s); retrying %s", exc, what)
                    time.sleep(LOCK_RETRY_PAUSE_S * attempt)
                    continue
                if "locked" in message or "busy" in message:
                    raise SessionStoreError(
                        f"OpenCode's database {self.path} stayed locked while reading {what} "
                        f"({self._lock_retries} tries). Try again in a moment; nothing was stored from it."
                    ) from exc
                raise SessionStoreError(f"Cannot read {what} from {self.path}: {exc}.") from exc
            except sqlite3.DatabaseError as exc:
                raise SessionStoreError(
                    f"OpenCode's database {self.path} is unreadable ({exc}) while reading {what}. "
                    "Check it with `sqlite3 <file> 'PRAGMA integrity_check'`."
                ) from exc
        raise AssertionError("unreachable")

    def check_schema(self) -> None:
        """Fail clearly when the tables or columns this reader needs are missing.

        Raises:
            SessionStoreError: naming the missing columns and the OpenCode versions known to work.
        """
        statements = [(f"SELECT name FROM pragma_table_info('{table}')", ()) for table in REQUIRED_COLUMNS]
        found = self._run("the schema", statements)
        missing = [
            f"{table}.{column}"
            for (table, columns), rows in zip(REQUIRED_COLUMNS.items(), found, strict=True)
            for column in columns
            if column not in {row[0] for row in rows}
        ]
        if missing:
            raise SessionStoreError(
                f"{self.path} does not have the schema graphmem reads (missing: {', '.join(missing)}). "
                f"It is not an OpenCode database or comes from an OpenCode version graphmem does not "
                f"know; known to work: OpenCode {KNOWN_VERSIONS}. Upgrade graphmem, or report the "
                "OpenCode version."
            )

    def _warn_unlisted(self) -> None:
        """Log the sessions ``changed_sessions`` leaves out (see ``_LISTABLE``), if any."""
        sql = f"SELECT count(*) FROM session WHERE NOT ({_LISTABLE})"
        count = self._run("the session list", [(sql, ())])[0][0][0]
        if count:
            log.warning(
                "OpenCode's database %s holds %d session(s) graphmem does not read: an id that is not "
                "UTF-8 text or a time_updated that is not integer milliseconds (OpenCode writes neither)",
                self.path,
                count,
            )

    # -- sessions ---------------------------------------------------------------------------

    _SESSION_COLUMNS = "id, directory, title, parent_id, time_created, time_updated"

    @staticmethod
    def _session_row(row: tuple[Any, ...]) -> SessionRow:
        return SessionRow(
            id=str(row[0]),
            directory=str(row[1] or ""),
            title=str(row[2] or ""),
            parent_id=str(row[3]) if row[3] else None,
            time_created_ms=_ms(row[4]),
            time_updated_ms=_ms(row[5]),
        )

    def changed_sessions(
        self, after: tuple[int, str] | None = None, *, limit: int = SESSION_BATCH
    ) -> list[SessionRow]:
        """Sessions updated after ``after`` = ``(time_updated_ms, id)``, oldest change first."""
        updated, session_id = after or (-1, "")
        sql = (
            f"SELECT {self._SESSION_COLUMNS} FROM session "
            f"WHERE (time_updated > ? OR (time_updated = ? AND id > ?)) AND {_LISTABLE} "
            "ORDER BY time_updated, id LIMIT ?"
        )
        rows = self._run("the session list", [(sql, (updated, updated, session_id, limit))])[0]
        return [self._session_row(row) for row in rows]

    def session(self, session_id: str) -> SessionRow | None:
        """One session by id, or None."""
        sql = f"SELECT {self._SESSION_COLUMNS} FROM session WHERE id = ?"
        shown = escape_undecodable(session_id, SHOWN_ID_CHARS)  # in an error: the id is the caller's
        rows = self._run(f"session {shown!r}", [(sql, (session_id,))])[0]
        return self._session_row(rows[0]) if rows else None

    # -- one session ------------------------------------------------------------------------

    _MESSAGES_SQL = """
        SELECT id, time_created, json_valid(data),
               CASE WHEN json_valid(data) THEN json_extract(data, '$.role') END,
               CASE WHEN json_valid(data) THEN json_extract(data, '$.agent') END,
               CASE WHEN json_valid(data) THEN json_extract(data, '$.mode') END,
               CASE WHEN json_valid(data) THEN json_extract(data, '$.time.completed') END,
               CASE WHEN json_valid(data) THEN json_type(data, '$.error') END
        FROM message WHERE session_id = ?
        ORDER BY time_created DESC, id DESC LIMIT ?
    """
    _COUNT_SQL = "SELECT count(*) FROM message WHERE session_id = ?"
    # Every text is cut in SQL, so a part of megabytes never reaches Python whole.
    _PARTS_SQL = """
        SELECT p.id, p.message_id, p.ok,
               CASE WHEN ok THEN json_extract(p.data, '$.type') END,
               CASE WHEN ok THEN substr(json_extract(p.data, '$.text'), 1, :text) END,
               CASE WHEN ok THEN length(json_extract(p.data, '$.text')) END,
               CASE WHEN ok THEN json_extract(p.data, '$.synthetic') END,
               CASE WHEN ok THEN json_extract(p.data, '$.ignored') END,
               CASE WHEN ok THEN json_extract(p.data, '$.tool') END,
               CASE WHEN ok THEN json_extract(p.data, '$.state.status') END,
               CASE WHEN ok AND json_type(p.data, '$.state.input') = 'object'
                    THEN substr(json_extract(p.data, '$.state.input'), 1, :input) END,
               CASE WHEN ok AND json_type(p.data, '$.state.input') = 'object'
                    THEN length(json_extract(p.data, '$.state.input')) END,
               CASE WHEN ok THEN substr(coalesce(json_extract(p.data, '$.state.output'),
                                                 json_extract(p.data, '$.state.error')), 1, :output) END,
               CASE WHEN ok THEN length(coalesce(json_extract(p.data, '$.state.output'),
                                                 json_extract(p.data, '$.state.error'))) END,
               CASE WHEN ok THEN substr(coalesce(json_extract(p.data, '$.state.output'),
                                                 json_extract(p.data, '$.state.error')), -:tail) END,
               CASE WHEN ok THEN json_extract(p.data, '$.state.metadata.exit') END,
               CASE WHEN ok THEN json_extract(p.data, '$.mime') END,
               CASE WHEN ok THEN coalesce(json_extract(p.data, '$.filename'),
                                          json_extract(p.data, '$.source.path')) END,
               CASE WHEN ok AND json_type(p.data, '$.files') = 'array'
                    THEN json_extract(p.data, '$.files') END
        FROM (SELECT *, json_valid(data) AS ok FROM part
              WHERE session_id = :session AND message_id IN (
                  SELECT id FROM message WHERE session_id = :session
                  ORDER BY time_created DESC, id DESC LIMIT :messages)) AS p
        ORDER BY p.message_id, p.id
    """

    # OpenCode 2: one row per message; only what people and the model said is read.
    _V2_MESSAGES_SQL = f"""
        SELECT id, type, time_created, json_valid(data),
               CASE WHEN json_valid(data) THEN json_extract(data, '$.agent') END,
               CASE WHEN json_valid(data) THEN json_extract(data, '$.time.completed') END,
               CASE WHEN json_valid(data) THEN json_type(data, '$.error') END,
               CASE WHEN json_valid(data) THEN substr(json_extract(data, '$.text'), 1, :text) END,
               CASE WHEN json_valid(data) THEN length(json_extract(data, '$.text')) END
        FROM {V2_MESSAGES} WHERE session_id = :session AND type IN ('user', 'assistant')
        ORDER BY seq DESC LIMIT :messages
    """
    _V2_COUNT_SQL = (
        f"SELECT count(*) FROM {V2_MESSAGES} WHERE session_id = ? AND type IN ('user', 'assistant')"
    )
    # An assistant message's content items, in the columns of _PARTS_SQL (so _part reads them), every
    # text cut in SQL; a tool's output is the text of its content (or its error's message).
    _V2_CONTENT_SQL = f"""
        SELECT id || ':' || key, id, 1, kind, substr(txt, 1, :text), length(txt), synthetic, ignored,
               name, status, substr(input, 1, :input), length(input), substr(out, 1, :output),
               length(out), substr(out, -:tail), NULL, NULL, NULL, NULL
        FROM (
            SELECT m.id AS id, c.key AS key, json_extract(c.value, '$.type') AS kind,
                   json_extract(c.value, '$.text') AS txt, json_extract(c.value, '$.synthetic') AS synthetic,
                   json_extract(c.value, '$.ignored') AS ignored, json_extract(c.value, '$.name') AS name,
                   json_extract(c.value, '$.state.status') AS status,
                   CASE WHEN json_type(c.value, '$.state.input') = 'object'
                        THEN json_extract(c.value, '$.state.input') END AS input,
                   coalesce((SELECT group_concat(json_extract(o.value, '$.text'), char(10))
                             FROM json_each(c.value, '$.state.content') AS o
                             WHERE CASE WHEN o.type = 'object' THEN json_extract(o.value, '$.type') END
                                   = 'text'),
                            json_extract(c.value, '$.state.error.message')) AS out
            FROM (SELECT id, data FROM {V2_MESSAGES}
                  WHERE session_id = :session AND type = 'assistant' AND json_valid(data)
                  ORDER BY seq DESC LIMIT :messages) AS m,
                 json_each(m.data, '$.content') AS c
            WHERE c.type = 'object'  -- json_extract on another item's text would fail the whole read
        )
        ORDER BY id, key
    """

    def _has_v2_messages(self) -> bool:
        sql = "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?"
        return bool(self._run("the schema", [(sql, (V2_MESSAGES,))])[0][0][0])

    def read(self, row: SessionRow) -> SessionRead:
        """The session's transcript (its last ``MAX_MESSAGES_PER_SESSION`` messages), in order."""
        read = self._read_v1(row)
        if not read.transcript.messages and not read.skipped_messages and self._has_v2_messages():
            read = self._read_v2(row)
        return self._commands.left_out(read)

    def _bounds(self, row: SessionRow) -> dict[str, Any]:
        return {
            "session": row.id,
            "messages": self._max_messages,
            "text": MAX_TEXT_CHARS,
            "input": MAX_TOOL_INPUT_CHARS,
            "output": MAX_TOOL_OUTPUT_CHARS,
            "tail": TOOL_OUTPUT_TAIL_CHARS,
        }

    def _read_v2(self, row: SessionRow) -> SessionRead:
        """An OpenCode 2 session, from ``session_message``: user texts, the assistant's content."""
        bounds = self._bounds(row)
        messages, contents, count = self._run(
            f"session {row.id}",
            [
                (self._V2_MESSAGES_SQL, bounds),
                (self._V2_CONTENT_SQL, bounds),
                (self._V2_COUNT_SQL, (row.id,)),
            ],
        )
        by_message: dict[str, list[SessionPart]] = {}
        for content_row in contents:
            bucket = by_message.setdefault(str(content_row[1]), [])
            part = _part(content_row) if len(bucket) < MAX_PARTS_PER_MESSAGE else None
            if part is not None:
                bucket.append(part)
        in_progress = False
        skipped = 0
        built: list[SessionMessage] = []
        for message_id, kind, created, valid, agent, completed, error, text, text_len in reversed(messages):
            if not valid:
                skipped += 1
                in_progress = True  # possibly mid-write: retried later
                continue
            if kind == "assistant":
                in_progress = in_progress or (completed is None and error is None)
                parts = tuple(by_message.get(str(message_id), ()))
            else:
                said = _bounded(text, MAX_TEXT_CHARS, text_len) if text else ""
                parts = (SessionPart(f"{message_id}:text", "text", text=said),) if said else ()
            built.append(
                SessionMessage(
                    id=str(message_id),
                    role=str(kind),
                    created_at=from_ms(created),
                    parts=parts,
                    agent=str(agent or ""),
                )
            )
        return SessionRead(
            row_transcript(row, built),
            in_progress=in_progress,
            skipped_messages=skipped,
            truncated_messages=max(0, int(count[0][0]) - len(messages)),
        )

    def _read_v1(self, row: SessionRow) -> SessionRead:
        bounds = self._bounds(row)
        messages, parts, count = self._run(
            f"session {row.id}",
            [
                (self._MESSAGES_SQL, (row.id, self._max_messages)),
                (self._PARTS_SQL, bounds),
                (self._COUNT_SQL, (row.id,)),
            ],
        )
        by_message: dict[str, list[SessionPart]] = {}
        skipped_parts = 0
        for part_row in parts:
            if not part_row[2]:
                skipped_parts += 1
                shown = escape_undecodable(str(part_row[0]), SHOWN_ID_CHARS)
                log.warning("skipping part %r of session %s: its JSON is corrupt", shown, row.id)
                continue
            bucket = by_message.setdefault(str(part_row[1]), [])
            if len(bucket) < MAX_PARTS_PER_MESSAGE:
                part = _part(part_row)
                if part is not None:
                    bucket.append(part)
        in_progress = False
        skipped_messages = 0
        built: list[SessionMessage] = []
        for message_id, created, valid, role, agent, mode, completed, error in reversed(messages):
            if not valid:
                # Possibly mid-write: the caller retries the session later, then skips the row.
                skipped_messages += 1
                in_progress = True
                continue
            if role == "assistant" and completed is None and error is None:
                in_progress = True  # still streaming
            built.append(
                SessionMessage(
                    id=str(message_id),
                    role=str(role or ""),
                    created_at=from_ms(created),
                    parts=tuple(by_message.get(str(message_id), ())),
                    agent=str(agent or mode or ""),
                )
            )
        return SessionRead(
            row_transcript(row, built),
            in_progress=in_progress,
            skipped_parts=skipped_parts,
            skipped_messages=skipped_messages,
            truncated_messages=max(0, int(count[0][0]) - len(messages)),
        )


class OpenCodeSessions:
    """OpenCode's session store as the ingester reads it (the ``SessionSource`` port)."""

    def locate(self, explicit: str | None, session_id: str | None = None) -> Path:
        """The database to read: ``explicit``, else ``OPENCODE_DB``, else the XDG data dir (it holds
        every session: ``session_id`` is not checked here)."""
        return find_database(explicit)

    def open(self, path: Path) -> OpenCodeSessionStore:
        return OpenCodeSessionStore(path)


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _is_utf8(data: bytes | None) -> bool:
    try:
        (data or b"").decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _ms(value: object) -> int:
    """A time column: 0 for what OpenCode never writes there (text, bytes, a real number)."""
    return value if isinstance(value, int) else 0


def _part(row: tuple[Any, ...]) -> SessionPart | None:
    """One ``part`` row (already bounded in SQL) as a SessionPart; None for parts that teach nothing."""
    (part_id, _message, _ok, kind, text, text_len, synthetic, ignored, tool, status,
     tool_input, input_len, output, output_len, output_tail, exit_code, mime, filename,
     files_json) = row  # fmt: skip
    kind = str(kind or "")
    if kind in ("text", "reasoning"):
        if synthetic or ignored or not text:
            return None  # OpenCode's own insertions (file contents it read), not things said
        return SessionPart(str(part_id), kind, text=_bounded(text, MAX_TEXT_CHARS, text_len))
    if kind == "tool":
        arguments = _json_object(tool_input)
        return SessionPart(
            str(part_id),
            kind,
            tool=str(tool or ""),
            tool_input=_bounded(tool_input, MAX_TOOL_INPUT_CHARS, input_len),
            tool_output=_head_and_tail(output, output_tail, output_len),
            # OpenCode's bash tool completes even when the command fails; its exit code says so.
            status="error" if isinstance(exit_code, int) and exit_code != 0 else str(status or ""),
            files=_paths_in(arguments),
        )
    if kind == "file":
        # The bytes live in a data: URL; only the name and type are kept.
        name = str(filename or "")
        return SessionPart(
            str(part_id), kind, text=f"[{mime or 'file'}: {name}]", files=(name,) if name else ()
        )
    if kind == "patch":
        return SessionPart(str(part_id), kind, files=_file_list(files_json))
    return None  # step-start, step-finish, snapshot, agent, retry, compaction: bookkeeping


def _json_object(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested too deep for the parser
        return {}  # cut by the bound: the paths are usually in the first keys, but not this time
    return value if isinstance(value, dict) else {}


def _paths_in(arguments: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(str(arguments[key]) for key in _PATH_KEYS if isinstance(arguments.get(key), str))


def _file_list(files_json: str | None) -> tuple[str, ...]:
    if not files_json:
        return ()
    try:
        files = json.loads(files_json)
    except (ValueError, RecursionError):  # RecursionError: nested too deep for the parser
        return ()
    return tuple(str(f) for f in files if isinstance(f, str))[:MAX_FILES_PER_PART]
