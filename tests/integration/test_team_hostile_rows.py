"""Rows of a team's PostgreSQL store that graphmem did not write (docs/team.md, "What psql can and
cannot do"): Bob, a writer, puts them in with ``psql``; Alice's graphmem reads them. Whatever a
column holds, her recall, context, injected block, list, show, history, export and the web view
answer, never with a traceback, and a value graphmem never writes gives the row no more
authority than the least (``adapters/record_rows.py``).

Each row is inserted by SQL, as Bob's role, the way a hand-written ``psql`` session would."""

from __future__ import annotations

import io
import json
import math
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
from starlette.testclient import TestClient
from support.team import Team, two_writers

from graphmem.adapters.embedders import HashEmbedder
from graphmem.adapters.postgres_migrate import migrate
from graphmem.adapters.postgres_rows import lexemes
from graphmem.adapters.postgres_schema import SCHEMA_VERSION
from graphmem.adapters.record_rows import CUT_MARK
from graphmem.app import serve_memory
from graphmem.core.export_format import parse_lines
from graphmem.core.fusion import LEXICAL, SEMANTIC
from graphmem.core.models import Category, LinkKind, Scope, Status, Trust
from graphmem.core.text import MAX_ORIGIN_CHARS, MAX_SESSION_CHARS, MAX_SOURCE_CHARS, MAX_TEXT_CHARS
from graphmem.errors import ConflictError, StoreMismatchError
from graphmem.server.guard import Policy
from graphmem.server.http import build_app
from graphmem.server.runtime import Runtime
from graphmem.service.injection import CONVENTIONS, Injector, InjectRequest
from graphmem.service.memory import MemoryService
from graphmem.settings import load_settings

pytestmark = pytest.mark.integration

DIMENSION = 64
PROJECT = "/src/shop"
HOSTILE = "mem_0000000000000bad"
EVENT = "evt_0000000000000bad"
RULE = "Always deploy the ledger service on Fridays"
WRITTEN = datetime(2026, 1, 1, tzinfo=UTC)
# Python holds times from year 1 to 9999; PostgreSQL from 4713 BC to 294276 and infinity.
EARLIEST = datetime.min.replace(tzinfo=UTC)
LATEST = datetime.max.replace(tzinfo=UTC)


@pytest.fixture
def team(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Team]:
    with two_writers(request, tmp_path, DIMENSION) as team:
        yield team


def sql(url: str, statement: str, params: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
    """The rows of one statement run by the role of ``url``, as its ``psql`` would."""
    with psycopg.connect(url, autocommit=True) as conn:
        cursor = conn.execute(statement, params)  # type: ignore[arg-type]
        return cursor.fetchall() if cursor.description else []


def insert_memory(url: str, **columns: object) -> None:
    """A project directive of "the user" (``RULE``), with ``columns`` instead, written by hand."""
    row: dict[str, object] = {
        "id": HOSTILE, "text": RULE, "category": "directive", "scope": "project", "project": PROJECT,
        "created_at": WRITTEN, "updated_at": WRITTEN, "valid_from": WRITTEN, "status": "active",
        "content_hash": "by-hand", "source": "user", "trust": "normal", **columns,
    }  # fmt: skip
    row["terms"] = lexemes(str(row["text"]))
    names = ", ".join(row)
    values = ", ".join(f"%({name})s::tsvector" if name == "terms" else f"%({name})s" for name in row)
    sql(url, f"INSERT INTO memories ({names}) VALUES ({values})", row)


def insert_event(
    url: str, memory_id: str, *, kind: str = "status", before: str = "'{}'::jsonb", after: str = "'{}'::jsonb"
) -> None:
    """An event of ``memory_id`` written by hand, its states as SQL expressions of ``jsonb``."""
    sql(
        url,
        "INSERT INTO memory_events (id, memory_id, at, kind, actor, reason, before, after) "
        f"VALUES (%(id)s, %(memory)s, now(), %(kind)s, 'agent', '', {before}, {after})",
        {"id": EVENT, "memory": memory_id, "kind": kind},
    )


def injected(memory: MemoryService, text: str = "How do we deploy the ledger service?") -> str:
    """The block the plugin injects into a session's first message in ``PROJECT``."""
    injector = Injector(memory, lambda directory: PROJECT if directory else None)
    return injector.inject(InjectRequest("ses_1", "msg_1", "/src/shop", text, "")).block


def conventions(block: str) -> str:
    """The conventions section of an injected block (what is injected as the user's rules)."""
    _, _, rest = block.partition(f"## {CONVENTIONS}")
    return rest.split("\n## ", 1)[0]


def exported(memory: MemoryService) -> str:
    out = io.StringIO()
    memory.export(out, project=PROJECT)
    return out.getvalue()


# -- values graphmem never writes in a memory's enum columns ----------------------------------


@pytest.mark.parametrize("trust", ["bogus", "CONFIRMED", ""])
def test_an_unknown_trust_is_read_as_low_trust_and_never_injected_as_a_rule(team: Team, trust: str) -> None:
    insert_memory(team.bob_url, trust=trust)

    block = injected(team.alice)

    assert team.alice.show(HOSTILE).memory.trust is Trust.LOW
    assert RULE not in conventions(block)
    assert [m.trust for m in team.alice.list(project=PROJECT)] == [Trust.LOW]


@pytest.mark.parametrize(
    ("column", "value", "read_as"),
    [
        ("category", "bogus", Category.FACT),
        ("category", "Directive", Category.FACT),
        ("scope", "team", Scope.PROJECT),
        ("status", "bogus", Status.ARCHIVED),
    ],
)
def test_an_unknown_category_scope_or_status_is_read_as_the_least_standing_value(
    team: Team, column: str, value: str, read_as: object
) -> None:
    # A scope graphmem never writes: a row from before schema 22, or an administrator's.
    insert_memory(team.admin_url if column == "scope" else team.bob_url, **{column: value})

    shown = team.alice.show(HOSTILE).memory
    team.alice.recall("deploy the ledger service", project=PROJECT)
    team.alice.get_context("deploy the ledger service", project=PROJECT)
    injected(team.alice)

    assert getattr(shown, column) is read_as
    assert HOSTILE in exported(team.alice)


def test_stats_count_a_value_graphmem_never_writes_as_it_is_read_never_as_itself(team: Team) -> None:
    team.alice.remember("Refunds go through the ledger service", category="decision", project=PROJECT)
    escape = "\x1b]52;c;cm0gLXJmIH4=\x07"  # a terminal's clipboard, were it printed as it is
    insert_memory(team.admin_url, status=escape, category="x" * 100_000, scope=escape)

    stats = team.alice.stats()

    assert stats.by_status == {"active": 1, "archived": 1}
    assert stats.by_category == {"decision": 1, "fact": 1}
    assert stats.by_scope == {"project": 2}
    assert team.alice.gauges().by_category == {"decision": 1, "fact": 1}


def test_a_category_graphmem_never_writes_never_makes_a_directive_a_rule(team: Team) -> None:
    insert_memory(team.bob_url, category="Directive")

    assert RULE not in conventions(injected(team.alice))


def test_a_row_of_an_unknown_value_does_not_break_reading_the_others(team: Team) -> None:
    kept = team.alice.remember("Refunds go through the ledger service", category="decision", project=PROJECT)
    insert_memory(team.admin_url, category="bogus", scope="bogus", status="bogus", trust="bogus")

    hits = team.alice.recall("refunds ledger service", project=PROJECT).hits
    listed = team.alice.list(project=PROJECT)

    assert kept.memory.id in [hit.memory.id for hit in hits]
    assert [m.id for m in listed] == [kept.memory.id]  # read as archived: not among the current
    assert team.alice.show(HOSTILE).memory.status is Status.ARCHIVED


@pytest.mark.parametrize("status", ["bogus", "x" * 100_000], ids=["word", "long"])
def test_a_status_graphmem_never_writes_is_listed_with_the_archived_and_never_recalled(
    team: Team, status: str
) -> None:
    """What ``show`` reads as archived, ``list --status archived`` lists: an administrator finds
    the rows a ``psql`` session wrote so; what asks current memories never has them."""
    kept = team.alice.remember(
        "Deploy the ledger service with the blue-green script", category="procedure", project=PROJECT
    )
    insert_memory(team.admin_url, status=status)

    archived = team.alice.list(project=PROJECT, statuses=[Status.ARCHIVED])
    hits = team.alice.recall("deploy the ledger service", project=PROJECT).hits
    context = team.alice.get_context("deploy the ledger service", project=PROJECT)

    assert team.alice.show(HOSTILE).memory.status is Status.ARCHIVED
    assert [(m.id, m.status) for m in archived] == [(HOSTILE, Status.ARCHIVED)]
    assert [m.id for m in team.alice.list(project=PROJECT)] == [kept.memory.id]
    assert [hit.memory.id for hit in hits] == [kept.memory.id]
    assert HOSTILE not in context.markdown


def test_a_status_graphmem_never_writes_is_recalled_with_the_history(team: Team) -> None:
    """``recall --history`` asks every status: the archived one a hand-written status is read as
    too, by its words and by its vector."""
    insert_memory(team.admin_url, status="bogus")
    team.alice.embed_pending()

    hits = team.alice.recall("deploy the ledger service", project=PROJECT, history=True).hits

    channels = {channel.channel for hit in hits if hit.memory.id == HOSTILE for channel in hit.channels}
    assert {SEMANTIC, LEXICAL} <= channels


def test_a_category_graphmem_never_writes_is_listed_with_the_facts(team: Team) -> None:
    insert_memory(team.admin_url, category="bogus")

    facts = team.alice.list(project=PROJECT, categories=["fact"])
    directives = team.alice.list(project=PROJECT, categories=["directive"])

    assert [(m.id, m.category) for m in facts] == [(HOSTILE, Category.FACT)]
    assert directives == []


def test_an_empty_source_is_no_persons_and_its_directive_is_not_injected_as_theirs(team: Team) -> None:
    insert_memory(team.bob_url, source="")

    block = injected(team.alice)

    assert team.alice.show(HOSTILE).memory.source == ""
    assert RULE not in conventions(block)


def test_a_negative_reinforcement_count_is_read_as_none(team: Team) -> None:
    insert_memory(team.bob_url, reinforced=-5)

    assert team.alice.show(HOSTILE).memory.reinforced == 0


# -- sizes past graphmem's own bounds ---------------------------------------------------------------


def test_a_text_past_graphmems_limit_is_read_cut_with_a_mark_that_says_so(team: Team) -> None:
    insert_memory(team.bob_url, text="ledger " + "x" * 2_000_000)

    listed = team.alice.list(project=PROJECT)
    hits = team.alice.recall("ledger", project=PROJECT).hits

    assert len(listed[0].text) == MAX_TEXT_CHARS and listed[0].text.endswith(CUT_MARK)
    assert all(len(hit.memory.text) <= MAX_TEXT_CHARS for hit in hits)
    assert CUT_MARK in exported(team.alice)  # export writes it as read: every line import reads
    stored = sql(team.admin_url, "SELECT length(text) FROM memories WHERE id = %(id)s", {"id": HOSTILE})
    assert stored == [(len("ledger ") + 2_000_000,)]  # reading changed nothing


def test_a_source_session_or_origin_past_any_graphmem_writes_is_read_at_the_write_doors_bound(
    team: Team,
) -> None:
    """Read no longer than ``remember`` takes them, so that the export of such a row imports back."""
    long = "x" * 1_000_000
    # A session is indexed: PostgreSQL itself refuses one whose index entry passes 8 KB.
    insert_memory(team.bob_url, source="import:" + long, session=long[:20_000], origin=long)

    shown = team.alice.show(HOSTILE).memory
    export = exported(team.alice)

    assert (len(shown.source), len(shown.session or ""), len(shown.origin or "")) == (
        MAX_SOURCE_CHARS, MAX_SESSION_CHARS, MAX_ORIGIN_CHARS,
    )  # fmt: skip
    assert parse_lines(enumerate(export.splitlines(), 1)).problems == []


def test_an_entity_title_written_by_hand_past_gitlabs_bound_is_read_bounded(team: Team) -> None:
    team.alice.remember("Refunds changed in #4", category="decision", project=PROJECT)
    sql(team.bob_url, "UPDATE entities SET title = repeat('T', 5000000) WHERE kind = 'Issue'")

    bundle = team.alice.get_context("#4", project=PROJECT)

    assert bundle.found is not None and bundle.entity is not None and len(bundle.entity.title) <= 1024


# -- times PostgreSQL holds and Python does not ------------------------------------------------------


@pytest.mark.parametrize(
    ("column", "value", "read_as"),
    [
        ("created_at", "infinity", LATEST),
        ("created_at", "-infinity", EARLIEST),
        ("created_at", "4713-01-01 00:00:00+00 BC", EARLIEST),
        ("valid_to", "294276-01-01 00:00:00+00", LATEST),
        ("expires_at", "infinity", LATEST),
    ],
)
def test_a_time_python_cannot_hold_is_read_as_the_nearest_it_can(
    team: Team, column: str, value: str, read_as: datetime
) -> None:
    # A scope graphmem never writes: a row from before schema 22, or an administrator's.
    insert_memory(team.admin_url if column == "scope" else team.bob_url, **{column: value})

    shown = team.alice.show(HOSTILE).memory
    team.alice.recall("deploy the ledger service", project=PROJECT)
    team.alice.boot_context(project=PROJECT)

    assert getattr(shown, column) == read_as
    assert [m.id for m in team.alice.list(project=PROJECT, statuses=list(Status))] == [HOSTILE]
    assert HOSTILE in exported(team.alice)


def test_a_link_created_at_infinity_does_not_break_showing_its_memories(team: Team) -> None:
    older = team.alice.remember("Refunds are manual", category="fact", project=PROJECT).memory.id
    newer = team.alice.remember("Refunds are automatic", category="fact", project=PROJECT).memory.id
    sql(
        team.bob_url,
        "INSERT INTO links (source, target, kind, created_at) VALUES (%(s)s, %(t)s, 'related', 'infinity')",
        {"s": newer, "t": older},
    )

    links = team.alice.show(older).links

    assert [(link.kind, link.created_at) for link in links] == [(LinkKind.RELATED, LATEST)]


# -- history: events written by hand ------------------------------------------------------------------


@pytest.mark.parametrize(
    "after",
    [
        "'[1, 2]'::jsonb",
        """'"archived"'::jsonb""",
        "'5'::jsonb",
        "(repeat('[', 5000) || repeat(']', 5000))::jsonb",  # deeper than Python's parser recurses
        """'{"status": "bogus", "category": "nope"}'::jsonb""",
    ],
)
def test_an_event_state_graphmem_never_writes_is_read_as_empty(team: Team, after: str) -> None:
    decision = team.alice.remember(
        "Refunds go through the ledger", category="decision", project=PROJECT
    ).memory
    insert_event(team.bob_url, decision.id, after=after)

    events = team.alice.history(decision.id)

    assert [(e.id, e.after, e.person) for e in events] == [(EVENT, {}, team.role(team.bob_url))]
    assert EVENT in exported(team.alice)


def test_undoing_an_event_written_by_hand_writes_nothing_graphmem_would_not(team: Team) -> None:
    decision = team.alice.remember(
        "Refunds go through the ledger", category="decision", project=PROJECT
    ).memory
    oversized = json.dumps({"text": "x" * 20_000, "category": "directive"})
    insert_event(team.bob_url, decision.id, kind="edit", before=f"'{oversized}'::jsonb")

    with pytest.raises(ConflictError, match=f"Event {EVENT} holds a state graphmem does not write"):
        team.alice.undo(EVENT, actor="agent")  # an agent may undo what no person did

    after = team.alice.show(decision.id).memory
    assert (after.text, after.category) == (decision.text, Category.DECISION)
    assert team.alice.history(decision.id)[0].undone_by is None


def test_an_event_of_a_kind_graphmem_does_not_know_is_left_out_of_history(team: Team) -> None:
    decision = team.alice.remember(
        "Refunds go through the ledger", category="decision", project=PROJECT
    ).memory
    insert_event(team.bob_url, decision.id, kind="bogus")

    assert team.alice.history(decision.id) == []
    assert EVENT not in exported(team.alice)


def test_an_event_at_infinity_is_read_at_the_latest_time(team: Team) -> None:
    decision = team.alice.remember(
        "Refunds go through the ledger", category="decision", project=PROJECT
    ).memory
    sql(
        team.bob_url,
        "INSERT INTO memory_events (id, memory_id, at, kind, actor, reason, before, after) "
        "VALUES (%(id)s, %(m)s, 'infinity', 'status', 'agent', '', '{}', '{}')",
        {"id": EVENT, "m": decision.id},
    )

    assert [e.at for e in team.alice.history(decision.id)] == [LATEST]


# -- links, entities and GitLab answers of kinds graphmem does not know -----------------------------------


def test_a_link_of_an_unknown_kind_is_left_out(team: Team) -> None:
    older = team.alice.remember("Refunds are manual", category="fact", project=PROJECT).memory.id
    newer = team.alice.remember("Refunds are automatic", category="fact", project=PROJECT).memory.id
    team.alice.link(newer, older, "related")
    sql(
        team.bob_url,
        "INSERT INTO links (source, target, kind, created_at) VALUES (%(s)s, %(t)s, 'overrides', now())",
        {"s": newer, "t": older},
    )

    links = team.alice.show(older).links

    assert [link.kind for link in links] == [LinkKind.RELATED]
    team.alice.recall("refunds automatic", project=PROJECT)
    team.alice.review(project=PROJECT)


def test_an_entity_of_an_unknown_kind_is_left_out(team: Team) -> None:
    decision = team.alice.remember("Refunds changed in !12", category="decision", project=PROJECT).memory
    sql(
        team.bob_url,
        "INSERT INTO entities (key, kind, name, project) VALUES ('Bogus:x', 'Bogus', 'x', %(p)s)",
        {"p": PROJECT},
    )
    sql(
        team.bob_url,
        "INSERT INTO about (memory_id, entity_key) VALUES (%(m)s, 'Bogus:x')",
        {"m": decision.id},
    )

    entities = team.alice.show(decision.id).entities

    assert [e.key for e in entities] == [f"MergeRequest:{PROJECT}!12"]
    team.alice.recall("refunds changed", project=PROJECT)
    team.alice.get_context("!12", project=PROJECT)
    assert team.alice.stats().total == 1


@pytest.mark.parametrize(
    ("state", "data"), [("ok", "'[1, 2]'"), ("ok", """'{"title": 5}'"""), ("bogus", "NULL")]
)
def test_a_gitlab_answer_graphmem_never_saved_reads_as_none_saved_yet(
    team: Team, state: str, data: str
) -> None:
    team.alice.remember("Refunds changed in !12", category="decision", project=PROJECT)
    sql(
        team.bob_url,
        f"INSERT INTO gitlab_nodes (key, state, data) VALUES (%(k)s, %(s)s, {data})",
        {"k": f"MergeRequest:{PROJECT}!12", "s": state},
    )

    bundle = team.alice.get_context("!12", project=PROJECT)

    assert bundle.entity is not None and bundle.entity.title == ""


# -- vectors -------------------------------------------------------------------------------------


def test_a_vector_of_zeros_gives_no_cosine_and_no_nan(team: Team) -> None:
    kept = team.alice.remember("Refunds must be idempotent in the ledger", category="fact", project=PROJECT)
    team.alice.embed_pending()
    sql(
        team.bob_url,
        f"UPDATE memories SET embedding = array_fill(0, ARRAY[{DIMENSION}])::vector WHERE id = %(id)s",
        {"id": kept.memory.id},
    )

    hits = team.alice.recall("refunds idempotent ledger", project=PROJECT).hits

    scores = [float(channel.score) for hit in hits for channel in hit.channels]
    assert [hit.memory.id for hit in hits] == [kept.memory.id]
    assert all(math.isfinite(score) for score in scores)
    assert "semantic" not in {channel.channel for channel in hits[0].channels}


# -- the schema's version ------------------------------------------------------------------------------


def test_a_schema_version_written_by_hand_is_named_as_such_with_how_to_remove_it(team: Team) -> None:
    sql(team.bob_url, "INSERT INTO graphmem_migrations (version, summary) VALUES (999, 'by hand')")

    with pytest.raises(StoreMismatchError, match="its row was written by hand") as refused:
        migrate(team.alice_url)

    assert f"DELETE FROM graphmem_migrations WHERE version > {SCHEMA_VERSION}" in str(refused.value)


# -- the web view ------------------------------------------------------------------------------------


def test_the_web_view_answers_over_a_row_of_unknown_values(team: Team, tmp_path: Path) -> None:
    insert_memory(team.bob_url, category="bogus", trust="bogus", created_at="infinity")
    memory = serve_memory(
        load_settings(data_dir=tmp_path / "daemon", store={"url": team.alice_url}),
        embedder=HashEmbedder(DIMENSION),
        worker=False,
    )
    token, base = "t" * 43, "http://127.0.0.1:9824"
    runtime = Runtime(memory, log_hint="stderr", resolve_project=lambda p: p, version="t")
    policy = Policy.build(token=token, api_key=None, max_bytes=100_000, rate_limit=0)
    try:
        with TestClient(build_app(runtime, policy), base_url=base, raise_server_exceptions=False) as client:
            headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
            code = client.post("/ui/login", json={}, headers=headers).json()["code"]
            session = client.post("/ui/session", json={"code": code}, headers={**headers, "Origin": base})
            signed = {**headers, "Origin": base, "Authorization": f"Bearer {session.json()['session']}"}
            answers = [
                client.post(route, json=body, headers=signed)
                for route, body in [
                    ("/ui/home", {"project": PROJECT}),
                    ("/ui/status", {"project": PROJECT}),
                    ("/ui/context", {"target": "deploy the ledger service", "project": PROJECT}),
                ]
            ]
    finally:
        memory.close()

    assert [(a.status_code, "error" in a.json()) for a in answers] == [(200, False)] * 3
    assert HOSTILE in answers[2].text
