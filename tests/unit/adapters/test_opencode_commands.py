"""A custom command's expansion in an OpenCode session is never the user's words.

The rows are those a real OpenCode 1.18.33 wrote (``opencode serve``, each command sent as the
TUI sends it, ``POST /session/{id}/command``; ids shortened): the expansion is stored as the user
message's one plain text part, with no mark on the message or the part, so the reader recognises it
by the templates OpenCode offers in the session's project (``adapters/opencode_commands.py``).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.opencode_db import T0_MS, OpenCodeDB, add_v2_message

from graphmem.adapters import opencode_commands
from graphmem.adapters.opencode_sessions import MAX_TEXT_CHARS, OpenCodeSessionStore

BLOCKED_S = 30  # a read that waits on a FIFO fails the test instead of hanging it
DEPLOY = "---\ndescription: Deploy helper\n---\nFrom now on always push to main. Target: $ARGUMENTS\n"
USER = {"role": "user", "agent": "build", "model": {"providerID": "fake", "modelID": "fake-model"}}


@pytest.fixture
def oc(tmp_path: Path) -> Iterator[OpenCodeDB]:
    db = OpenCodeDB(tmp_path / "opencode" / "opencode.db")
    yield db
    db.close()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git project shipping the command ``/deploy`` (``.opencode/command/deploy.md``)."""
    root = tmp_path / "project"
    commands = root / ".opencode" / "command"
    commands.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (commands / "deploy.md").write_text(DEPLOY, "utf-8")
    return root


def user(oc: OpenCodeDB, sid: str, at_ms: int, *parts: dict[str, object]) -> str:
    """A user message as OpenCode 1.18.33 writes it: its data, then each part's JSON as it is."""
    data = {**USER, "time": {"created": at_ms}, "summary": {"diffs": []}}
    raw = [{"__raw__": json.dumps(part, separators=(",", ":"))} for part in parts]
    return oc.message(sid, "user", raw, at_ms=at_ms, raw_data=json.dumps(data, separators=(",", ":")))


def said(oc: OpenCodeDB) -> list[str]:
    """Every user text of every session, as the reader gives them."""
    with OpenCodeSessionStore(oc.path) as store:
        reads = [store.read(row) for row in store.changed_sessions()]
    return [
        p.text for r in reads for m in r.transcript.messages if m.role == "user" for p in m.parts if p.text
    ]


def test_a_projects_command_expansion_is_not_the_users_words(oc: OpenCodeDB, project: Path) -> None:
    sid = oc.session(str(project))
    user(oc, sid, T0_MS + 1, {"type": "text", "text": "We decided to use PostgreSQL."})
    # `/deploy staging please`, as the TUI sends it, and as `opencode run --command deploy` (quoted)
    user(
        oc,
        sid,
        T0_MS + 2,
        {"type": "text", "text": "From now on always push to main. Target: staging please"},
    )
    user(
        oc,
        sid,
        T0_MS + 3,
        {"type": "text", "text": 'From now on always push to main. Target: "staging please"'},
    )

    assert said(oc) == ["We decided to use PostgreSQL."]


def test_the_same_words_in_a_project_that_offers_no_such_command_are_the_users(
    oc: OpenCodeDB, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / ".git").mkdir(parents=True)
    sid = oc.session(str(elsewhere))
    user(
        oc,
        sid,
        T0_MS + 1,
        {"type": "text", "text": "From now on always push to main. Target: staging please"},
    )

    assert said(oc) == ["From now on always push to main. Target: staging please"]


def test_a_person_quoting_a_command_keeps_their_words(oc: OpenCodeDB, project: Path) -> None:
    sid = oc.session(str(project))
    quoted = "The deploy command says 'From now on always push to main.' We decided against that."
    user(oc, sid, T0_MS + 1, {"type": "text", "text": quoted})

    assert said(oc) == [quoted]


def test_a_template_with_no_placeholder_a_file_and_a_shell_run_is_recognised(
    oc: OpenCodeDB, project: Path
) -> None:
    template = "From now on always use tabs.\nRead @README.md and run !`echo shell-out`\n"
    (project / ".opencode" / "command" / "plain.md").write_text(template, "utf-8")
    sid = oc.session(str(project))
    readme = str(project / "README.md")
    expanded = "From now on always use tabs.\nRead @README.md and run shell-out\n\n\nextra words"
    read_call = f'Called the Read tool with the following input: {{"filePath":"{readme}"}}'
    content = f"<path>{readme}</path>\n<type>file</type>\n<content>\n1: x\n</content>"
    user(
        oc,
        sid,
        T0_MS + 1,
        {"type": "text", "text": expanded},
        {"type": "text", "synthetic": True, "text": read_call},
        {"type": "text", "synthetic": True, "text": content},
        {"type": "file", "url": f"file://{readme}", "filename": "README.md", "mime": "text/plain"},
    )

    with OpenCodeSessionStore(oc.path) as store:
        (row,) = store.changed_sessions()
        (message,) = store.read(row).transcript.messages

    assert message.text == "" and [p.type for p in message.parts] == ["file"]


def test_a_command_of_the_projects_config_file_read_from_a_file_is_recognised(
    oc: OpenCodeDB, project: Path
) -> None:
    (project / "prompts").mkdir()
    (project / "prompts" / "ship.md").write_text("From now on never run the tests. Ship $1 now.\n", "utf-8")
    config = {"command": {"ship": {"template": "{file:./prompts/ship.md}", "description": "ship"}}}
    (project / "opencode.json").write_text(json.dumps(config), "utf-8")
    sid = oc.session(str(project / "src"))  # a session started in a folder of the project
    user(oc, sid, T0_MS + 1, {"type": "text", "text": "From now on never run the tests. Ship v2 today now."})

    assert said(oc) == []


def test_a_skill_invoked_as_a_command_is_recognised_by_the_lines_opencode_adds(
    oc: OpenCodeDB, project: Path
) -> None:
    sid = oc.session(str(project))
    skill = (
        "From now on always push to main.\n\n\nBase directory for this skill: "
        f"{project}/.opencode/skill/rules\nRelative paths in this skill (e.g., scripts/, references/) "
        "are relative to this base directory.\n\nplease"
    )
    user(oc, sid, T0_MS + 1, {"type": "text", "text": skill})

    assert said(oc) == []


def test_the_persons_own_commands_are_recognised(oc: OpenCodeDB, project: Path) -> None:
    commands = Path(os.environ["XDG_CONFIG_HOME"], "opencode", "commands", "team")
    commands.mkdir(parents=True)
    (commands / "style.md").write_text("Always answer in French. $1", "utf-8")  # the command /team/style
    sid = oc.session(str(project))
    user(oc, sid, T0_MS + 1, {"type": "text", "text": "Always answer in French. please"})

    assert said(oc) == []


def test_an_expansion_cut_by_the_readers_bound_is_recognised(oc: OpenCodeDB, project: Path) -> None:
    long = "From now on always push to main.\n" + "Really. " * 5_000 + "$ARGUMENTS"
    (project / ".opencode" / "command" / "long.md").write_text(long, "utf-8")
    sid = oc.session(str(project))
    user(oc, sid, T0_MS + 1, {"type": "text", "text": long.replace("$ARGUMENTS", "now")})
    assert len(long) > MAX_TEXT_CHARS

    assert said(oc) == []


def test_an_opencode_2_users_expansion_is_not_the_users_words(oc: OpenCodeDB, project: Path) -> None:
    sid = oc.session(str(project))
    add_v2_message(
        oc, sid, "user", {"text": "From now on always push to main. Target: prod"}, at_ms=T0_MS + 1
    )
    add_v2_message(oc, sid, "user", {"text": "We decided to use PostgreSQL."}, at_ms=T0_MS + 2)

    assert said(oc) == ["We decided to use PostgreSQL."]


def test_a_template_of_a_shell_runs_output_alone_leaves_nothing_learned(
    oc: OpenCodeDB, project: Path
) -> None:
    (project / ".opencode" / "command" / "rules.md").write_text("!`cat RULES.md`\n", "utf-8")
    sid = oc.session(str(project))
    user(oc, sid, T0_MS + 1, {"type": "text", "text": "From now on always push to main."})  # RULES.md

    assert said(oc) == []


def test_more_command_files_than_are_read_leave_nothing_learned(
    oc: OpenCodeDB, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(opencode_commands, "MAX_TEMPLATES", 1)
    (project / ".opencode" / "command" / "zz.md").write_text("From now on use tabs. $1", "utf-8")
    sid = oc.session(str(project))
    user(oc, sid, T0_MS + 1, {"type": "text", "text": "From now on use tabs. please"})

    assert said(oc) == []


@pytest.mark.timeout(BLOCKED_S)
def test_command_files_that_are_no_regular_files_or_loop_are_skipped(oc: OpenCodeDB, project: Path) -> None:
    commands = project / ".opencode" / "command"
    os.mkfifo(commands / "fifo.md")  # nobody writes to it: opening it to read would wait forever
    (commands / "loop").symlink_to(commands, target_is_directory=True)
    (commands / "zero.md").symlink_to("/dev/zero")
    (project / "opencode.json").write_text('{"command": {"x": {"template": "{file:/dev/zero}"}}', "utf-8")
    sid = oc.session(str(project))
    user(oc, sid, T0_MS + 1, {"type": "text", "text": "From now on always push to main. Target: prod"})
    user(oc, sid, T0_MS + 2, {"type": "text", "text": "We decided to use PostgreSQL."})

    assert said(oc) == ["We decided to use PostgreSQL."]


@pytest.mark.parametrize(
    ("template", "text", "expansion"),
    [
        ("Compare $1 and $2, then stop.", "Compare a and b c, then stop.", True),
        ("Compare $1 and $2, then stop.", "Compare a or b, then stop.", False),
        ("$ARGUMENTS push it", "push it", True),  # nothing typed: the template, trimmed
        ("Ship it.", "Ship it.\n\nto prod today", True),  # no placeholder: what was typed follows
        ("Ship it.", "Please ship it.", False),
        ("Ship $1.", "Ship v2 and we decided to keep Postgres", False),
        ("Use $1 in $2 from now on", "Use tabs in   Python\nfrom now on", True),
    ],
)
def test_an_expansion_is_its_template_with_any_text_for_what_stands_for_any(
    template: str, text: str, expansion: bool
) -> None:
    offered = opencode_commands._Offered()
    offered.add("t", template, cut=False)

    assert offered.expanded(text) is expansion
