"""The OpenCode session reader against real SQLite databases shaped like OpenCode 1.18's."""

from __future__ import annotations

import base64
import os
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.opencode_db import T0_MS, OpenCodeDB, add_v2_message, text, tool, v2_tool

from graphmem.adapters import opencode_sessions
from graphmem.adapters.client_sessions import from_ms
from graphmem.adapters.opencode_database import find_database
from graphmem.adapters.opencode_sessions import MAX_TEXT_CHARS, MAX_TOOL_OUTPUT_CHARS, OpenCodeSessionStore
from graphmem.errors import SessionStoreError


@pytest.fixture
def oc(tmp_path: Path) -> Iterator[OpenCodeDB]:
    db = OpenCodeDB(tmp_path / "opencode" / "opencode.db")
    yield db
    db.close()


def read_all(path: Path) -> list:
    with OpenCodeSessionStore(path) as store:
        return [store.read(row) for row in store.changed_sessions()]


def test_find_database_prefers_explicit_then_env_then_xdg(tmp_path: Path, oc: OpenCodeDB) -> None:
    other = OpenCodeDB(tmp_path / "other.db")
    other.close()
    env = {"OPENCODE_DB": str(other.path), "XDG_DATA_HOME": str(tmp_path)}
    assert find_database(oc.path, env) == oc.path
    assert find_database(None, env) == other.path
    assert find_database(None, {"XDG_DATA_HOME": str(tmp_path)}) == oc.path


def test_missing_database_is_a_clear_error_and_nothing_is_created(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "opencode.db"
    with pytest.raises(SessionStoreError, match=r"No OpenCode database at .*--db PATH"):
        find_database(None, {"XDG_DATA_HOME": str(tmp_path / "nowhere")})
    with pytest.raises(SessionStoreError, match="No OpenCode database"):
        OpenCodeSessionStore(missing)
    assert not missing.exists() and not missing.parent.exists()


def hostile_path(tmp_path: Path, kind: str) -> Path:
    """A path to something that is no OpenCode database, made in ``tmp_path``."""
    if kind == "folder":
        (tmp_path / "folder.db").mkdir()
        return tmp_path / "folder.db"
    if kind == "fifo":
        os.mkfifo(tmp_path / "fifo.db")  # an open to read would wait for a writer forever
        return tmp_path / "fifo.db"
    if kind == "loop":
        (tmp_path / "loop.db").symlink_to(tmp_path / "loop2.db")
        (tmp_path / "loop2.db").symlink_to(tmp_path / "loop.db")
        return tmp_path / "loop.db"
    if kind == "long part":
        return tmp_path / ("a" * 300)  # over NAME_MAX: stat raises ENAMETOOLONG
    if kind == "nul":
        return tmp_path / "a\x00b.db"  # stat raises ValueError
    return Path("/dev/zero")


@pytest.mark.parametrize(
    ("kind", "says"),
    [
        ("folder", "is a directory, not a regular file: OpenCode's database is one"),
        ("fifo", "is a named pipe, not a regular file"),
        ("device", "/dev/zero (the path given) is a character device, not a regular file"),
        ("loop", "Cannot look up OpenCode's database"),
        ("long part", "File name too long"),
        ("nul", "embedded null byte"),
    ],
)
def test_a_path_that_is_no_regular_file_says_so_and_never_raises_oserror(
    tmp_path: Path, kind: str, says: str
) -> None:
    path = hostile_path(tmp_path, kind)

    with pytest.raises(SessionStoreError, match=re.escape(says)):
        find_database(path, {})
    with pytest.raises(SessionStoreError, match=re.escape(says)):
        OpenCodeSessionStore(path)


def test_a_database_whose_name_is_no_utf8_is_read(tmp_path: Path) -> None:
    db = OpenCodeDB(tmp_path / os.fsdecode(b"open\xffcode.db"))  # as os.listdir names it
    db.session(str(tmp_path), title="Bytes")
    db.close()

    assert [read.transcript.title for read in read_all(db.path)] == ["Bytes"]


def test_reads_turns_tools_and_patches_in_order(oc: OpenCodeDB, tmp_path: Path) -> None:
    sid = oc.session(str(tmp_path), title="Billing")
    oc.message(sid, "user", [text("We decided to use Postgres 16 for billing.")], at_ms=T0_MS + 100)
    oc.message(
        sid,
        "assistant",
        [
            {"type": "step-start", "snapshot": "abc"},
            tool("edit", {"filePath": str(tmp_path / "src/db.py"), "oldString": "a"}, "Edit applied."),
            {
                "type": "patch",
                "hash": "abc",
                "files": [str(tmp_path / "src/db.py"), str(tmp_path / "README.md")],
            },
            {"type": "reasoning", "text": "thinking about it"},
            text("Done."),
            {"type": "step-finish", "reason": "stop"},
        ],
        at_ms=T0_MS + 200,
    )
    (read,) = read_all(oc.path)
    assert not read.in_progress
    transcript = read.transcript
    assert (
        transcript.session_id == sid
        and transcript.title == "Billing"
        and transcript.directory == str(tmp_path)
    )
    user, assistant = transcript.messages
    assert user.role == "user" and user.text == "We decided to use Postgres 16 for billing."
    kinds = [p.type for p in assistant.parts]
    assert kinds == ["tool", "patch", "reasoning", "text"]  # step bookkeeping left out
    edit = assistant.parts[0]
    assert edit.tool == "edit" and edit.status == "completed" and edit.tool_output == "Edit applied."
    assert edit.files == (str(tmp_path / "src/db.py"),)
    assert '"filePath"' in edit.tool_input
    assert assistant.parts[1].files == (str(tmp_path / "src/db.py"), str(tmp_path / "README.md"))
    assert assistant.text == "Done."


def test_changed_sessions_follow_the_cursor_in_order(oc: OpenCodeDB, tmp_path: Path) -> None:
    first = oc.session(str(tmp_path), at_ms=T0_MS)
    second = oc.session(str(tmp_path), at_ms=T0_MS + 5)
    third = oc.session(str(tmp_path), at_ms=T0_MS + 5)
    with OpenCodeSessionStore(oc.path) as store:
        rows = store.changed_sessions()
        assert [r.id for r in rows] == [first, second, third]
        assert [r.id for r in store.changed_sessions((T0_MS + 5, second))] == [third]
        assert [r.id for r in store.changed_sessions(None, limit=2)] == [first, second]
    oc.touch(first, T0_MS + 50)
    with OpenCodeSessionStore(oc.path) as store:
        assert [r.id for r in store.changed_sessions((T0_MS + 5, third))] == [first]


def test_megabyte_tool_output_is_cut_with_a_marker(oc: OpenCodeDB, tmp_path: Path) -> None:
    sid = oc.session(str(tmp_path))
    log = "x" * 3_000_000
    oc.message(sid, "assistant", [tool("bash", {"command": "make"}, log)], at_ms=T0_MS + 1)
    (read,) = read_all(oc.path)
    output = read.transcript.messages[0].parts[0].tool_output
    assert len(output) < MAX_TOOL_OUTPUT_CHARS + 100
    assert output.startswith("xxx") and "truncated: 2,996,000 more characters" in output


def test_a_cut_output_keeps_its_end_where_failures_show(oc: OpenCodeDB, tmp_path: Path) -> None:
    sid = oc.session(str(tmp_path))
    log = "collected 900 items\n" + "." * 100_000 + "\nFAILED tests/test_refund.py::test_rounding"
    oc.message(sid, "assistant", [tool("bash", {"command": "pytest"}, log)], at_ms=T0_MS + 1)
    (read,) = read_all(oc.path)
    output = read.transcript.messages[0].parts[0].tool_output
    assert len(output) < MAX_TOOL_OUTPUT_CHARS + 100
    assert output.startswith("collected 900 items") and "truncated:" in output
    assert output.endswith("FAILED tests/test_refund.py::test_rounding")


def test_a_completed_shell_run_with_a_nonzero_exit_code_failed(oc: OpenCodeDB, tmp_path: Path) -> None:
    sid = oc.session(str(tmp_path))
    failing = tool("bash", {"command": "make lint"}, "lint: 3 problems")
    failing["state"]["metadata"] = {"exit": 2, "output": "lint: 3 problems"}
    working = tool("bash", {"command": "make lint"}, "ok")
    working["state"]["metadata"] = {"exit": 0, "output": "ok"}
    oc.message(sid, "assistant", [failing, working], at_ms=T0_MS + 1)
    (read,) = read_all(oc.path)
    assert [p.status for p in read.transcript.messages[0].parts] == ["error", "completed"]


def test_huge_text_part_is_bounded(oc: OpenCodeDB, tmp_path: Path) -> None:
    sid = oc.session(str(tmp_path))
    oc.message(sid, "user", [text("é" * (MAX_TEXT_CHARS * 3))], at_ms=T0_MS + 1)
    (read,) = read_all(oc.path)
    assert len(read.transcript.messages[0].text) < MAX_TEXT_CHARS + 100


def test_image_and_binary_parts_keep_their_name_never_their_bytes(oc: OpenCodeDB, tmp_path: Path) -> None:
    sid = oc.session(str(tmp_path))
    payload = base64.b64encode(b"\x89PNG\r\n" + bytes(range(256)) * 400).decode()
    oc.message(
        sid,
        "user",
        [
            text("Here is the screenshot"),
            {
                "type": "file",
                "mime": "image/png",
                "filename": "shot.png",
                "url": f"data:image/png;base64,{payload}",
            },
        ],
        at_ms=T0_MS + 1,
    )
    (read,) = read_all(oc.path)
    parts = read.transcript.messages[0].parts
    image = parts[1]
    assert image.type == "file" and image.text == "[image/png: shot.png]" and image.files == ("shot.png",)
    assert all(payload[:40] not in (p.text + p.tool_output + p.tool_input) for p in parts)


def test_synthetic_text_is_left_out(oc: OpenCodeDB, tmp_path: Path) -> None:
    sid = oc.session(str(tmp_path))
    oc.message(sid, "user", [text("Read this"), text("<file contents>", synthetic=True)], at_ms=T0_MS + 1)
    (read,) = read_all(oc.path)
    assert read.transcript.messages[0].text == "Read this"


def test_non_english_text_round_trips(oc: OpenCodeDB, tmp_path: Path) -> None:
    sid = oc.session(str(tmp_path), title="Kùzu 数据库")
    oc.message(sid, "user", [text("Wir haben entschieden: 使用 Kùzu。 🚀")], at_ms=T0_MS + 1)
    (read,) = read_all(oc.path)
    assert read.transcript.title == "Kùzu 数据库"
    assert read.transcript.messages[0].text == "Wir haben entschieden: 使用 Kùzu。 🚀"


def test_a_corrupt_part_is_skipped_not_the_session(oc: OpenCodeDB, tmp_path: Path) -> None:
    sid = oc.session(str(tmp_path))
    oc.message(sid, "user", [text("kept"), {"__raw__": '{"type": "text", "text": "cut off'}], at_ms=T0_MS + 1)
    (read,) = read_all(oc.path)
    assert read.skipped_parts == 1 and not read.in_progress
    assert read.transcript.messages[0].text == "kept"


def test_a_corrupt_parts_hostile_id_is_logged_bounded_and_escaped(
    oc: OpenCodeDB, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sid = oc.session(str(tmp_path))
    oc.message(sid, "user", [text("kept"), {"__raw__": '{"type": "text", "text": "cut off'}], at_ms=T0_MS + 1)
    oc.db.execute("UPDATE part SET id = ? WHERE data LIKE '%cut off%'", ("prt_\x1b[2J" + "p" * 5000,))
    with caplog.at_level("WARNING", logger="graphmem"):
        (read,) = read_all(oc.path)
    (line,) = [r.getMessage() for r in caplog.records if "JSON is corrupt" in r.getMessage()]
    assert read.skipped_parts == 1 and len(line) < 300 and "\x1b" not in line  # no 5,000 characters, no ESC


def test_a_message_mid_write_marks_the_session_in_progress(oc: OpenCodeDB, tmp_path: Path) -> None:
    sid = oc.session(str(tmp_path))
    oc.message(sid, "user", [text("hello")], at_ms=T0_MS + 1)
    oc.message(sid, "assistant", [text("partial")], at_ms=T0_MS + 2, raw_data='{"role": "assistant", "ti')
    (read,) = read_all(oc.path)
    assert read.in_progress and read.skipped_messages == 1
    assert [m.text for m in read.transcript.messages] == ["hello"]


def test_a_streaming_assistant_message_marks_the_session_in_progress(oc: OpenCodeDB, tmp_path: Path) -> None:
    sid = oc.session(str(tmp_path))
    oc.message(sid, "assistant", [text("still typing")], at_ms=T0_MS + 1, completed=False)
    (read,) = read_all(oc.path)
    assert read.in_progress


def test_huge_session_reads_its_most_recent_messages(oc: OpenCodeDB, tmp_path: Path) -> None:
    sid = oc.session(str(tmp_path))
    for i in range(30):
        oc.message(sid, "user", [text(f"message {i}")], at_ms=T0_MS + i * 10)
    with OpenCodeSessionStore(oc.path, max_messages=10) as store:
        read = store.read(store.changed_sessions()[0])
    assert [m.text for m in read.transcript.messages] == [f"message {i}" for i in range(20, 30)]
    assert read.truncated_messages == 20


def test_another_schema_names_the_missing_columns(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE session (id text, directory text, title text, time_created integer);"
        "CREATE TABLE message (id text, session_id text, data text);"
    )
    db.close()
    with pytest.raises(SessionStoreError) as caught:
        OpenCodeSessionStore(path)
    message = str(caught.value)
    assert "session.time_updated" in message and "message.time_created" in message and "part.id" in message
    assert "1.18" in message


def test_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "opencode.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(SessionStoreError, match=r"unreadable|Cannot"):
        OpenCodeSessionStore(path)


def test_a_locked_database_is_retried_then_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(opencode_sessions, "LOCK_RETRY_PAUSE_S", 0.01)  # the pause between the tries
    oc = OpenCodeDB(tmp_path / "opencode.db", wal=False)  # rollback journal: a writer locks readers out
    sid = oc.session(str(tmp_path))
    oc.message(sid, "user", [text("hi")], at_ms=T0_MS + 1)
    with OpenCodeSessionStore(oc.path, busy_timeout_ms=50, lock_retries=2) as store:
        row = store.changed_sessions()[0]
        oc.db.execute("BEGIN EXCLUSIVE")
        try:
            with pytest.raises(SessionStoreError, match=r"stayed locked .*\(2 tries\)"):
                store.read(row)
        finally:
            oc.db.execute("ROLLBACK")
        assert store.read(row).transcript.messages[0].text == "hi"  # readable again once released
    oc.close()


def test_the_reader_never_writes(oc: OpenCodeDB, tmp_path: Path) -> None:
    sid = oc.session(str(tmp_path))
    oc.message(sid, "user", [text("hi")], at_ms=T0_MS + 1)
    with OpenCodeSessionStore(oc.path) as store, pytest.raises(sqlite3.OperationalError, match="readonly"):
        store._db.execute("DELETE FROM session")


def test_an_opencode_2_session_is_read_from_session_message(oc: OpenCodeDB, tmp_path: Path) -> None:
    sid = oc.session(str(tmp_path), title="Billing")
    add_v2_message(oc, sid, "user", {"text": "We decided to use Postgres 16 for billing."}, at_ms=T0_MS + 100)
    add_v2_message(oc, sid, "agent-switched", {"agent": "plan"}, at_ms=T0_MS + 150)
    content = [
        {"type": "reasoning", "id": "r1", "text": "thinking about it"},
        v2_tool("edit", {"filePath": str(tmp_path / "src/db.py")}, "Edit applied."),
        v2_tool("bash", {"command": "pytest"}, "2 failed", error=True),
        {"type": "text", "id": "t1", "text": "[memory]", "synthetic": True},
        {"type": "text", "id": "t2", "text": "Done."},
    ]
    add_v2_message(
        oc,
        sid,
        "assistant",
        {"agent": "build", "content": content, "time": {"created": T0_MS + 200, "completed": T0_MS + 300}},
        at_ms=T0_MS + 200,
    )

    (read,) = read_all(oc.path)

    assert not read.in_progress and read.truncated_messages == 0
    user, assistant = read.transcript.messages
    assert (user.role, user.text) == ("user", "We decided to use Postgres 16 for billing.")
    assert (assistant.role, assistant.agent, assistant.text) == ("assistant", "build", "Done.")
    reasoning, edit, bash, done = assistant.parts
    assert (reasoning.type, reasoning.text) == ("reasoning", "thinking about it")
    assert (edit.tool, edit.status, edit.tool_output, edit.files) == (
        "edit",
        "completed",
        "Edit applied.",
        (str(tmp_path / "src/db.py"),),
    )
    assert (bash.tool, bash.status, bash.tool_output) == ("bash", "error", "2 failed")
    assert done.text == "Done."


def test_an_opencode_2_answer_still_streaming_marks_the_session_in_progress(
    oc: OpenCodeDB, tmp_path: Path
) -> None:
    sid = oc.session(str(tmp_path))
    add_v2_message(oc, sid, "user", {"text": "Hello"}, at_ms=T0_MS + 100)
    add_v2_message(
        oc,
        sid,
        "assistant",
        {"agent": "build", "content": [{"type": "text", "id": "t", "text": "Hel"}]},
        at_ms=T0_MS + 200,
    )

    (read,) = read_all(oc.path)

    assert read.in_progress


def test_an_opencode_2_text_of_a_megabyte_is_bounded(oc: OpenCodeDB, tmp_path: Path) -> None:
    sid = oc.session(str(tmp_path))
    add_v2_message(oc, sid, "user", {"text": "x" * 1_000_000}, at_ms=T0_MS + 100)

    (read,) = read_all(oc.path)

    [user] = read.transcript.messages
    assert len(user.text) < MAX_TEXT_CHARS + 100 and "more characters" in user.text


def test_a_session_with_opencode_1_messages_is_read_from_them_alone(oc: OpenCodeDB, tmp_path: Path) -> None:
    sid = oc.session(str(tmp_path))
    oc.turn(sid, "From OpenCode 1.", "Noted.", at_ms=T0_MS + 100)
    add_v2_message(oc, sid, "user", {"text": "Never read."}, at_ms=T0_MS + 500)

    (read,) = read_all(oc.path)

    assert [m.text for m in read.transcript.messages] == ["From OpenCode 1.", "Noted."]


def listed(store: OpenCodeSessionStore) -> list[str]:
    """Every session id, a batch of one at a time as the ingester pages through them (at most 20)."""
    ids: list[str] = []
    after = None
    while rows := store.changed_sessions(after, limit=1):
        ids.append(rows[-1].id)
        after = (rows[-1].time_updated_ms, rows[-1].id)
        assert len(ids) < 20, f"the listing does not end: {ids}"
    return ids


@pytest.mark.parametrize(
    "time", [T0_MS + 0.5, "yesterday", b"\x01", 1e300], ids=["real", "text", "blob", "huge"]
)
def test_a_session_whose_time_is_no_integer_is_left_out_of_the_listing_which_ends(
    oc: OpenCodeDB, tmp_path: Path, time: object
) -> None:
    good = oc.session(str(tmp_path))
    bad = oc.session(str(tmp_path), at_ms=T0_MS + 1)
    oc.db.execute("UPDATE session SET time_updated = ? WHERE id = ?", (time, bad))

    with OpenCodeSessionStore(oc.path) as store:
        assert listed(store) == [good]


def test_a_session_named_by_id_whose_times_are_no_integers_reads_as_of_the_epoch(
    oc: OpenCodeDB, tmp_path: Path
) -> None:
    sid = oc.session(str(tmp_path))
    oc.db.execute("UPDATE session SET time_created = 'yesterday', time_updated = X'01' WHERE id = ?", (sid,))

    with OpenCodeSessionStore(oc.path) as store:
        row = store.session(sid)

    assert row is not None and (row.time_created_ms, row.time_updated_ms) == (0, 0)


@pytest.mark.parametrize("sql_id", ["X'0102'", "CAST(X'61FF' AS TEXT)"], ids=["blob", "not-utf8"])
def test_a_session_whose_id_is_no_utf8_text_is_left_out_of_the_listing_which_ends(
    oc: OpenCodeDB, tmp_path: Path, sql_id: str, caplog: pytest.LogCaptureFixture
) -> None:
    good = oc.session(str(tmp_path))
    oc.db.execute(
        "INSERT INTO session (id, project_id, slug, directory, title, version, time_created, time_updated) "
        f"VALUES ({sql_id}, 'global', 'slug', '/p', 't', '1.18.33', ?, ?)",
        (T0_MS + 1, T0_MS + 1),
    )

    with OpenCodeSessionStore(oc.path) as store:
        assert listed(store) == [good]
    assert "holds 1 session(s) graphmem does not read" in caplog.text


def test_a_message_time_that_is_no_number_reads_as_the_epoch(oc: OpenCodeDB, tmp_path: Path) -> None:
    sid = oc.session(str(tmp_path))
    oc.message(sid, "user", [text("hi")], at_ms=T0_MS + 1)
    oc.db.execute("UPDATE message SET time_created = 'yesterday'")

    (read,) = read_all(oc.path)

    [message] = read.transcript.messages
    assert (message.text, message.created_at) == ("hi", from_ms(0))


def test_text_that_is_no_utf8_reads_with_replacement_characters(oc: OpenCodeDB, tmp_path: Path) -> None:
    sid = oc.session(str(tmp_path))
    oc.db.execute("UPDATE session SET title = CAST(? AS TEXT)", (b"Cart \xff",))
    # Half of an emoji's UTF-16 pair, as Node's JSON.stringify writes it for a string cut mid-emoji.
    cut_emoji = '{"type": "text", "text": "We decided to use Redis \\ud83d for the cart."}'
    oc.message(sid, "user", [{"__raw__": cut_emoji}], at_ms=T0_MS + 1)
    noted = oc.message(sid, "assistant", [text("Noted.")], at_ms=T0_MS + 2)
    not_utf8 = b'{"type": "text", "text": "O\xffk"}'
    oc.db.execute("UPDATE part SET data = CAST(? AS TEXT) WHERE message_id = ?", (not_utf8, noted))

    with OpenCodeSessionStore(oc.path) as store:
        [row] = store.changed_sessions()
        read = store.read(row)

    assert row.title == "Cart \ufffd"
    cut, said = (m.text for m in read.transcript.messages)
    assert re.fullmatch("We decided to use Redis \ufffd+ for the cart.", cut)  # one per byte SQLite wrote
    assert said == "O\ufffdk"


def test_an_opencode_2_content_item_that_is_no_object_is_skipped_not_the_session(
    oc: OpenCodeDB, tmp_path: Path
) -> None:
    sid = oc.session(str(tmp_path))
    add_v2_message(oc, sid, "user", {"text": "Hello"}, at_ms=T0_MS + 100)
    content = [
        "a string",
        {"type": "tool", "name": "bash", "state": {"status": "completed", "content": ["out", 5]}},
        {"type": "text", "id": "t", "text": "Done."},
    ]
    done = {"created": T0_MS + 200, "completed": T0_MS + 300}
    add_v2_message(oc, sid, "assistant", {"content": content, "time": done}, at_ms=T0_MS + 200)

    (read,) = read_all(oc.path)

    user, assistant = read.transcript.messages
    assert (user.text, assistant.text) == ("Hello", "Done.")
    assert [p.tool for p in assistant.parts if p.type == "tool"] == ["bash"]
