"""The Memory service on the in-memory store (``memory_service``) and the hash embedder; what
only a real store shows (reopening, another model, reindex) on a fresh Kùzu store in ``tmp_path``."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from support.memory_service import in_memory_service

from graphmem.adapters.embedders import HashEmbedder
from graphmem.app import open_memory
from graphmem.core.fusion import CHANNELS, ENTITY
from graphmem.core.models import Category, EntityKind, LinkKind, Scope, Status
from graphmem.core.text import MAX_TEXT_CHARS
from graphmem.errors import (
    ConflictError,
    ImportFileError,
    InvalidInputError,
    NotFoundError,
    StoreMismatchError,
)
from graphmem.service.memory import MemoryService
from graphmem.service.results import RecallResult
from graphmem.settings import load_settings

NAMESPACE = "group/sub/proj"  # the GitLab path of the git_project fixture's origin


def ids(result: RecallResult) -> list[str]:
    """The memory ids of a recall result, best first."""
    return [hit.memory.id for hit in result.hits]


def entity_keys(memory: MemoryService, memory_id: str) -> set[str]:
    return {entity.key for entity in memory.show(memory_id).entities}


@pytest.fixture
def other_memory(tmp_path: Path) -> Iterator[MemoryService]:
    """A second, empty store (the target of exports)."""
    memory = in_memory_service(tmp_path / "other")
    yield memory
    memory.close()


# -- remember -------------------------------------------------------------------------


def test_remember_returns_the_new_memory(memory_service: MemoryService) -> None:
    result = memory_service.remember("We deploy with make release", category="procedure")
    assert result.created
    assert result.memory.id.startswith("mem_")
    assert memory_service.show(result.memory.id).memory.text == "We deploy with make release"


def test_remember_strips_the_text(memory_service: MemoryService) -> None:
    assert (
        memory_service.remember("  We deploy with make release \n").memory.text
        == "We deploy with make release"
    )


def test_an_exact_duplicate_in_other_case_and_spacing_reinforces(memory_service: MemoryService) -> None:
    first = memory_service.remember("We deploy with make release", category="procedure")
    again = memory_service.remember("  we DEPLOY with   make RELEASE ", category="procedure")
    assert not again.created
    assert again.duplicate_of == first.memory.id
    assert again.memory.reinforced == 1
    assert memory_service.show(first.memory.id).memory.reinforced == 1
    assert memory_service.stats().total == 1


def test_a_near_duplicate_wording_reinforces(memory_service: MemoryService) -> None:
    first = memory_service.remember("We deploy with make release", category="procedure")
    again = memory_service.remember("We deploy with `make release`.", category="procedure")
    assert (again.created, again.duplicate_of) == (False, first.memory.id)
    assert memory_service.stats().total == 1


def test_a_near_duplicate_of_another_category_is_a_new_memory(memory_service: MemoryService) -> None:
    memory_service.remember("We deploy with make release", category="procedure")
    assert memory_service.remember("We deploy with make release.", category="fact").created


def test_a_decision_naming_another_tool_supersedes_the_old_one(memory_service: MemoryService) -> None:
    old = memory_service.remember("We use SQLite for the memory store", category="decision")
    new = memory_service.remember("We use DuckDB for the memory store", category="decision")
    assert new.created
    assert new.superseded == (old.memory.id,)
    replaced = memory_service.show(old.memory.id)
    assert replaced.memory.status is Status.SUPERSEDED
    assert replaced.memory.valid_to == new.memory.valid_from
    assert [(link.source, link.target, link.kind) for link in replaced.links] == [
        (new.memory.id, old.memory.id, LinkKind.SUPERSEDES)
    ]


def test_a_decision_with_a_changed_version_supersedes_instead_of_reinforcing(
    memory_service: MemoryService,
) -> None:
    # A changed version number makes a different statement (core/dedup.py docstring).
    old = memory_service.remember(
        "We run the nightly test suite with python2 on the legacy CI runners before every release",
        category="decision",
    )
    new = memory_service.remember(
        "We run the nightly test suite with python3 on the legacy CI runners before every release",
        category="decision",
    )
    assert new.created
    assert new.superseded == (old.memory.id,)


def test_a_fact_on_the_same_subject_does_not_supersede(memory_service: MemoryService) -> None:
    old = memory_service.remember("The memory store holds SQLite files", category="fact")
    new = memory_service.remember("The memory store holds DuckDB files", category="fact")
    assert new.created and new.superseded == ()
    assert memory_service.show(old.memory.id).memory.status is Status.ACTIVE


def test_explicit_supersedes_replaces_the_named_memory(memory_service: MemoryService) -> None:
    old = memory_service.remember("Release every second Tuesday", category="plan")
    new = memory_service.remember("Ship continuously from main", category="plan", supersedes=old.memory.id)
    assert new.superseded == (old.memory.id,)
    assert memory_service.show(old.memory.id).memory.status is Status.SUPERSEDED


def test_explicit_supersedes_of_an_unknown_id_is_not_found(memory_service: MemoryService) -> None:
    with pytest.raises(NotFoundError):
        memory_service.remember("Ship continuously from main", supersedes="mem_nope")
    assert memory_service.stats().total == 0


def test_default_recall_shows_only_the_current_decision(memory_service: MemoryService) -> None:
    memory_service.remember("We use SQLite for the memory store", category="decision")
    new = memory_service.remember("We use DuckDB for the memory store", category="decision")
    assert ids(memory_service.recall("memory store")) == [new.memory.id]


def test_history_recall_shows_both_decisions(memory_service: MemoryService) -> None:
    old = memory_service.remember("We use SQLite for the memory store", category="decision")
    new = memory_service.remember("We use DuckDB for the memory store", category="decision")
    assert set(ids(memory_service.recall("memory store", history=True))) == {old.memory.id, new.memory.id}


def test_restore_undoes_a_supersession(memory_service: MemoryService) -> None:
    old = memory_service.remember("We use SQLite for the memory store", category="decision")
    memory_service.remember("We use DuckDB for the memory store", category="decision")
    restored = memory_service.restore(old.memory.id)
    assert restored.status is Status.ACTIVE and restored.valid_to is None
    assert memory_service.show(old.memory.id).links == ()
    assert old.memory.id in ids(memory_service.recall("memory store"))


def test_unlinking_supersedes_restores_the_older_memory(memory_service: MemoryService) -> None:
    old = memory_service.remember("We use SQLite for the memory store", category="decision")
    new = memory_service.remember("We use DuckDB for the memory store", category="decision")
    memory_service.unlink(new.memory.id, old.memory.id, "supersedes")
    assert memory_service.show(old.memory.id).memory.status is Status.ACTIVE
    assert memory_service.store.links() == []


# -- scopes ---------------------------------------------------------------------------


def test_a_project_memory_is_invisible_from_another_project(memory_service: MemoryService) -> None:
    memory_service.remember("The payments service retries webhooks", project="/src/payments")
    assert ids(memory_service.recall("payments webhooks", project="/src/shop")) == []
    assert memory_service.list(project="/src/shop") == []


def test_a_project_memory_is_invisible_outside_any_project(memory_service: MemoryService) -> None:
    memory_service.remember("The payments service retries webhooks", project="/src/payments")
    assert ids(memory_service.recall("payments webhooks")) == []
    assert memory_service.list() == []


def test_a_project_memory_is_visible_in_its_project(memory_service: MemoryService) -> None:
    made = memory_service.remember("The payments service retries webhooks", project="/src/payments")
    assert made.memory.scope is Scope.PROJECT and made.memory.project == "/src/payments"
    assert ids(memory_service.recall("payments webhooks", project="/src/payments")) == [made.memory.id]


def test_a_global_memory_is_visible_everywhere(memory_service: MemoryService) -> None:
    made = memory_service.remember(
        "Prefer small merge requests", category="directive", scope="global", project="/src/payments"
    )
    assert made.memory.project is None
    for project in (None, "/src/payments", "/src/shop"):
        assert ids(memory_service.recall("small merge requests", project=project)) == [made.memory.id]


def test_preferences_default_to_global_scope(memory_service: MemoryService) -> None:
    made = memory_service.remember("I like terse commit messages", category="preference", project="/src/a")
    assert made.memory.scope is Scope.GLOBAL


def test_scope_project_without_a_project_is_invalid(memory_service: MemoryService) -> None:
    with pytest.raises(InvalidInputError, match="project"):
        memory_service.remember("The payments service retries webhooks", scope="project")


# -- invalid input ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "changes", "message"),
    [
        ("", {}, "empty"),
        (" \n\t ", {}, "empty"),
        ("a\x00b", {}, "NUL"),
        ("x" * (MAX_TEXT_CHARS + 1), {}, f"{MAX_TEXT_CHARS:,}"),
        ("fine text", {"category": "rumour"}, "Unknown category"),
        ("fine text", {"scope": "team"}, "Unknown scope"),
    ],
)
def test_invalid_memories_are_refused(
    memory_service: MemoryService, text: str, changes: dict[str, str], message: str
) -> None:
    with pytest.raises(InvalidInputError, match=message):
        memory_service.remember(text, **changes)  # type: ignore[arg-type]
    assert memory_service.stats().total == 0


def test_categories_and_scopes_are_case_insensitive(memory_service: MemoryService) -> None:
    made = memory_service.remember("We chose Kùzu", category=" Decision ", scope="GLOBAL")
    assert (made.memory.category, made.memory.scope) == (Category.DECISION, Scope.GLOBAL)


# -- entities ----------------------------------------------------------------------------


def test_refs_and_existing_files_in_text_become_entities(
    memory_service: MemoryService, git_project: str
) -> None:
    text = (
        "Review !123 and #456 for &789, compare group/sub/project!12 and "
        "https://gitlab.example.com/group/sub/proj/-/merge_requests/77 before touching src/app.py"
    )
    made = memory_service.remember(text, project=git_project)
    assert entity_keys(memory_service, made.memory.id) == {
        f"MergeRequest:{NAMESPACE}!123",
        f"Issue:{NAMESPACE}#456",
        "Epic:group/sub&789",  # an epic belongs to the project's group
        "MergeRequest:group/sub/project!12",
        f"MergeRequest:{NAMESPACE}!77",
        f"File:{git_project}::src/app.py",
    }
    assert {e.key for e in made.entities} == entity_keys(memory_service, made.memory.id)


def test_a_missing_file_path_is_not_an_entity(memory_service: MemoryService, git_project: str) -> None:
    made = memory_service.remember("Split src/missing.py out of README.md", project=git_project)
    assert entity_keys(memory_service, made.memory.id) == {f"File:{git_project}::README.md"}


def test_refs_outside_a_project_have_no_namespace(memory_service: MemoryService) -> None:
    made = memory_service.remember("The flaky test is tracked in #456")
    [entity] = memory_service.show(made.memory.id).entities
    assert (entity.key, entity.kind, entity.name) == ("Issue:#456", EntityKind.ISSUE, "#456")


def test_a_reinforced_memory_reports_its_entities(memory_service: MemoryService) -> None:
    memory_service.remember("The flaky test is tracked in #456")
    again = memory_service.remember("the flaky test is tracked in #456")
    assert not again.created and [e.key for e in again.entities] == ["Issue:#456"]


def test_editing_text_updates_recall_and_entities(memory_service: MemoryService) -> None:
    made = memory_service.remember("We deploy with make release")
    edited = memory_service.edit(made.memory.id, text="We deploy with helm, see #456")
    assert edited.text == "We deploy with helm, see #456"
    assert ids(memory_service.recall("helm")) == [made.memory.id]
    assert ids(memory_service.recall("make release")) == []
    assert "Issue:#456" in entity_keys(memory_service, made.memory.id)


def test_editing_text_drops_entities_the_text_no_longer_names(memory_service: MemoryService) -> None:
    made = memory_service.remember("The flaky test is tracked in #456")
    memory_service.edit(made.memory.id, text="The flaky test is tracked in #789")
    assert entity_keys(memory_service, made.memory.id) == {"Issue:#789"}
    assert memory_service.get_context("#456").groups == {}


# -- lifecycle ----------------------------------------------------------------------------


def test_resolve_and_unresolve_a_blocker(memory_service: MemoryService) -> None:
    blocker = memory_service.remember("CI is red on main because of the flaky e2e test", category="blocker")
    assert memory_service.resolve(blocker.memory.id).status is Status.RESOLVED
    assert memory_service.unresolve(blocker.memory.id).status is Status.ACTIVE


def test_a_resolved_blocker_is_still_recalled(memory_service: MemoryService) -> None:
    blocker = memory_service.remember("CI is red on main because of the flaky e2e test", category="blocker")
    memory_service.resolve(blocker.memory.id)
    assert ids(memory_service.recall("flaky e2e test")) == [blocker.memory.id]


def test_resolving_a_non_blocker_is_a_conflict(memory_service: MemoryService) -> None:
    fact = memory_service.remember("CI runs on shared runners", category="fact")
    with pytest.raises(ConflictError, match="not a blocker"):
        memory_service.resolve(fact.memory.id)


def test_unresolving_an_active_blocker_changes_nothing(memory_service: MemoryService) -> None:
    blocker = memory_service.remember("CI is red on main", category="blocker")
    assert memory_service.unresolve(blocker.memory.id).status is Status.ACTIVE


def test_resolving_an_archived_blocker_is_a_conflict(memory_service: MemoryService) -> None:
    blocker = memory_service.remember("CI is red on main", category="blocker")
    memory_service.archive(blocker.memory.id)
    with pytest.raises(ConflictError, match="archived"):
        memory_service.resolve(blocker.memory.id)


def test_archive_hides_from_recall_and_list(memory_service: MemoryService) -> None:
    made = memory_service.remember("We deploy with make release")
    assert memory_service.archive(made.memory.id).status is Status.ARCHIVED
    assert ids(memory_service.recall("deploy release")) == []
    assert memory_service.list() == []


def test_restore_brings_an_archived_memory_back(memory_service: MemoryService) -> None:
    made = memory_service.remember("We deploy with make release")
    memory_service.archive(made.memory.id)
    memory_service.restore(made.memory.id)
    assert ids(memory_service.recall("deploy release")) == [made.memory.id]
    assert [r.id for r in memory_service.list()] == [made.memory.id]


def test_restoring_an_active_memory_changes_nothing(memory_service: MemoryService) -> None:
    made = memory_service.remember("We deploy with make release")
    assert memory_service.restore(made.memory.id).status is Status.ACTIVE


def test_delete_removes_the_memory(memory_service: MemoryService) -> None:
    made = memory_service.remember("We deploy with make release, see #456")
    memory_service.recall("deploy")  # load the vector index, so deletion must update it too
    memory_service.delete(made.memory.id)
    with pytest.raises(NotFoundError):
        memory_service.show(made.memory.id)
    assert ids(memory_service.recall("deploy release")) == []
    assert memory_service.store.memories_about(["Issue:#456"]) == {}


@pytest.mark.parametrize("kind", [LinkKind.CONTRADICTS, LinkKind.EXTENDS, LinkKind.RELATED])
def test_link_relates_two_memories(memory_service: MemoryService, kind: LinkKind) -> None:
    a = memory_service.remember("Deploys happen on Fridays")
    b = memory_service.remember("Never deploy on a Friday afternoon")
    link = memory_service.link(a.memory.id, b.memory.id, kind.value)
    assert (link.source, link.target, link.kind) == (a.memory.id, b.memory.id, kind)
    assert [(x.source, x.target, x.kind) for x in memory_service.show(b.memory.id).links] == [
        (a.memory.id, b.memory.id, kind)
    ]
    assert memory_service.show(b.memory.id).memory.status is Status.ACTIVE


def test_a_supersedes_link_retires_the_target(memory_service: MemoryService) -> None:
    a = memory_service.remember("Deploy with helm", category="procedure")
    b = memory_service.remember("Deploy with make release", category="procedure")
    memory_service.link(a.memory.id, b.memory.id, "supersedes")
    assert memory_service.show(b.memory.id).memory.status is Status.SUPERSEDED


def test_unlink_removes_a_link(memory_service: MemoryService) -> None:
    a = memory_service.remember("Deploys happen on Fridays")
    b = memory_service.remember("Never deploy on a Friday afternoon")
    memory_service.link(a.memory.id, b.memory.id, "contradicts")
    memory_service.unlink(a.memory.id, b.memory.id, "contradicts")
    assert memory_service.show(a.memory.id).links == ()
    with pytest.raises(NotFoundError):
        memory_service.unlink(a.memory.id, b.memory.id, "contradicts")


def test_unlinking_a_supersedes_link_that_does_not_exist_is_not_found(memory_service: MemoryService) -> None:
    old = memory_service.remember("We use SQLite for the memory store", category="decision")
    new = memory_service.remember("We use DuckDB for the memory store", category="decision")
    bystander = memory_service.remember("Lunch is at noon")
    with pytest.raises(NotFoundError):
        memory_service.unlink(bystander.memory.id, old.memory.id, "supersedes")
    assert memory_service.show(old.memory.id).memory.status is Status.SUPERSEDED
    assert [(x.source, x.target) for x in memory_service.store.links()] == [(new.memory.id, old.memory.id)]


def test_a_memory_cannot_link_to_itself(memory_service: MemoryService) -> None:
    a = memory_service.remember("Deploys happen on Fridays")
    with pytest.raises(InvalidInputError, match="itself"):
        memory_service.link(a.memory.id, a.memory.id, "related")


def test_an_unknown_link_kind_is_invalid(memory_service: MemoryService) -> None:
    a = memory_service.remember("Deploys happen on Fridays")
    b = memory_service.remember("Never deploy on a Friday afternoon")
    with pytest.raises(InvalidInputError, match="link kind"):
        memory_service.link(a.memory.id, b.memory.id, "likes")


@pytest.mark.parametrize(
    "operation",
    [
        lambda m, i: m.show(i),
        lambda m, i: m.archive(i),
        lambda m, i: m.restore(i),
        lambda m, i: m.resolve(i),
        lambda m, i: m.delete(i),
        lambda m, i: m.edit(i, text="new words"),
        lambda m, i: m.link(i, m.list()[0].id, "related"),
        lambda m, i: m.link(m.list()[0].id, i, "related"),
    ],
)
def test_an_unknown_id_is_not_found(
    memory_service: MemoryService, operation: Callable[[MemoryService, str], object]
) -> None:
    memory_service.remember("Deploys happen on Fridays")
    with pytest.raises(NotFoundError, match="mem_nope"):
        operation(memory_service, "mem_nope")


def test_an_empty_id_is_invalid(memory_service: MemoryService) -> None:
    with pytest.raises(InvalidInputError):
        memory_service.show("  ")


# -- list and stats -------------------------------------------------------------------------


def test_list_filters_by_category(memory_service: MemoryService) -> None:
    decision = memory_service.remember("We chose Kùzu", category="decision")
    memory_service.remember("Kùzu stores the graph", category="fact")
    assert [r.id for r in memory_service.list(categories=["decision"])] == [decision.memory.id]


def test_list_filters_by_since(memory_service: MemoryService) -> None:
    old = datetime(2020, 1, 1, tzinfo=UTC)
    memory_service.remember("We used Postgres back then", occurred_at=old)
    recent = memory_service.remember("We use Kùzu now")
    assert [r.id for r in memory_service.list(since=datetime.now(UTC) - timedelta(days=1))] == [
        recent.memory.id
    ]
    assert len(memory_service.list(since=old)) == 2


def test_list_is_newest_first_and_pages(memory_service: MemoryService) -> None:
    made = [
        memory_service.remember(
            f"note number {i}", occurred_at=datetime(2024, 1, i + 1, tzinfo=UTC)
        ).memory.id
        for i in range(3)
    ]
    assert [r.id for r in memory_service.list()] == made[::-1]
    assert [r.id for r in memory_service.list(limit=1, offset=1)] == [made[1]]


def test_list_refuses_a_bad_limit(memory_service: MemoryService) -> None:
    with pytest.raises(InvalidInputError):
        memory_service.list(limit=0)


@pytest.mark.parametrize("offset", [-1, 10**9 + 1, 2**63])
def test_list_refuses_an_offset_no_store_can_take_and_says_the_bounds(
    memory_service: MemoryService, offset: int
) -> None:
    with pytest.raises(InvalidInputError, match=r"offset 0\.\.1,000,000,000"):
        memory_service.list(offset=offset)


def test_stats_count_memories_and_entities(memory_service: MemoryService) -> None:
    memory_service.remember("We chose Kùzu, see #456", category="decision")
    memory_service.remember("CI is red on main", category="blocker")
    archived = memory_service.remember("Old note about lunch", category="fact")
    memory_service.archive(archived.memory.id)
    stats = memory_service.stats()
    assert stats.total == 3
    assert stats.by_category == {"decision": 1, "blocker": 1, "fact": 1}
    assert stats.by_status == {"active": 2, "archived": 1}
    assert stats.by_scope == {"global": 3}
    assert stats.entities == {"Issue": 1}
    assert stats.model == "hash-256"
    gauges = memory_service.gauges()  # what /metrics reads, without the entities and staleness
    assert gauges.by_category == stats.by_category
    assert gauges.pending_embeddings == stats.pending_embeddings


def test_a_session_chains_its_memories(memory_service: MemoryService) -> None:
    made = [
        memory_service.remember(f"turn {word}", session="s1").memory.id for word in ("one", "two", "three")
    ]
    memory_service.remember("another session", session="s2")
    assert sorted(memory_service.store.next_pairs()) == sorted([(made[0], made[1]), (made[1], made[2])])


def test_a_session_continues_after_reopening(tmp_path: Path) -> None:
    settings = load_settings(data_dir=tmp_path / "data")
    first = open_memory(settings, embedder=HashEmbedder(256))
    a = first.remember("turn one", session="s1").memory.id
    first.close()
    second = open_memory(settings, embedder=HashEmbedder(256))
    try:
        b = second.remember("turn two", session="s1").memory.id
        assert second.store.next_pairs() == [(a, b)]
    finally:
        second.close()


# -- recall -----------------------------------------------------------------------------------


def test_recall_finds_the_memory_about_a_ref(memory_service: MemoryService) -> None:
    about = memory_service.remember("The flaky login test is tracked in #456", category="blocker")
    memory_service.remember("We deploy with make release")
    result = memory_service.recall("#456")
    assert ids(result)[0] == about.memory.id
    assert ENTITY in {c.channel for c in result.hits[0].channels}


def test_recall_of_a_ref_uses_the_project_namespace(memory_service: MemoryService, git_project: str) -> None:
    about = memory_service.remember("The flaky login test is tracked in #456", project=git_project)
    hit = memory_service.recall("what about #456?", project=git_project).hits[0]
    assert hit.memory.id == about.memory.id
    assert [e.key for e in hit.entities] == [f"Issue:{NAMESPACE}#456"]


def test_recall_of_something_unrelated_returns_nothing(memory_service: MemoryService) -> None:
    memory_service.remember("We deploy with make release")
    memory_service.remember("The flaky login test is tracked in #456")
    assert memory_service.recall("banana bread recipe").hits == []


def test_recall_filters_by_category(memory_service: MemoryService) -> None:
    decision = memory_service.remember("We chose Kùzu for the graph", category="decision")
    memory_service.remember("Kùzu stores the graph on disk", category="fact")
    assert ids(memory_service.recall("kuzu graph", categories=["decision"])) == [decision.memory.id]


def test_recall_filters_by_since(memory_service: MemoryService) -> None:
    memory_service.remember("We deployed with capistrano", occurred_at=datetime(2020, 1, 1, tzinfo=UTC))
    recent = memory_service.remember("We deploy with make release")
    since = datetime.now(UTC) - timedelta(days=1)
    assert ids(memory_service.recall("we deploy", since=since)) == [recent.memory.id]


def test_recall_takes_a_naive_since_as_utc(memory_service: MemoryService) -> None:
    # remember(occurred_at=...) and list(since=...) take naive datetimes as UTC; recall should too.
    made = memory_service.remember("We deploy with make release")
    assert ids(memory_service.recall("we deploy", since=datetime(2020, 1, 1))) == [made.memory.id]


def test_recall_explains_each_hit(memory_service: MemoryService) -> None:
    memory_service.remember("We deploy with make release")
    result = memory_service.recall("deploy with make")
    [hit] = result.hits
    assert hit.channels
    assert all(c.channel in CHANNELS and c.rank >= 1 for c in hit.channels)
    assert {"lexical", "semantic"} <= {c.channel for c in hit.channels}
    assert result.plan == "hybrid"


def test_recall_finds_cypher_like_text_literally(memory_service: MemoryService) -> None:
    text = "MATCH (n) DETACH DELETE n; // ' \" \\ `"
    made = memory_service.remember(text)
    memory_service.remember("We deploy with make release")
    assert ids(memory_service.recall(text)) == [made.memory.id]
    assert memory_service.show(made.memory.id).memory.text == text
    assert memory_service.stats().total == 2


@pytest.mark.parametrize(
    ("query", "options"),
    [
        ("", {}),
        ("   ", {}),
        ("x" * (MAX_TEXT_CHARS + 1), {}),
        ("deploy", {"limit": 0}),
        ("deploy", {"plan": "x"}),
    ],
)
def test_invalid_recalls_are_refused(
    memory_service: MemoryService, query: str, options: dict[str, object]
) -> None:
    with pytest.raises(InvalidInputError):
        memory_service.recall(query, **options)  # type: ignore[arg-type]


def test_a_single_channel_plan_reports_only_that_channel(memory_service: MemoryService) -> None:
    memory_service.remember("We deploy with make release")
    result = memory_service.recall("deploy release", plan="lexical")
    assert list(result.channels) == ["lexical"]
    assert {c.channel for h in result.hits for c in h.channels} == {"lexical"}


# -- get_context ------------------------------------------------------------------------------


def test_context_of_a_ref_groups_its_memories_and_lists_related_entities(
    memory_service: MemoryService, git_project: str
) -> None:
    decision = memory_service.remember(
        "In !123 we chose Kùzu over SQLite", category="decision", project=git_project
    )
    blocker = memory_service.remember("!123 is blocked by #456", category="blocker", project=git_project)
    memory_service.remember("Lunch is at noon", project=git_project)
    bundle = memory_service.get_context("!123", project=git_project)
    assert bundle.entity is not None and bundle.entity.key == f"MergeRequest:{NAMESPACE}!123"
    assert [i.hit.memory.id for i in bundle.groups[Category.DECISION]] == [decision.memory.id]
    assert [i.hit.memory.id for i in bundle.groups[Category.BLOCKER]] == [blocker.memory.id]
    assert list(bundle.groups) == [Category.DECISION, Category.BLOCKER]
    assert [(e.key, n) for e, n in bundle.related] == [(f"Issue:{NAMESPACE}#456", 1)]


def test_context_of_a_file_finds_memories_about_it(memory_service: MemoryService, git_project: str) -> None:
    about = memory_service.remember(
        "src/app.py must stay import-free", category="directive", project=git_project
    )
    bundle = memory_service.get_context("src/app.py", project=git_project)
    assert bundle.entity is not None and bundle.entity.kind is EntityKind.FILE
    assert [i.hit.memory.id for i in bundle.groups[Category.DIRECTIVE]] == [about.memory.id]


def test_context_of_free_text_recalls_memories(memory_service: MemoryService) -> None:
    made = memory_service.remember("We deploy with make release", category="procedure")
    bundle = memory_service.get_context("how do we deploy")
    assert bundle.entity is None
    assert [i.hit.memory.id for i in bundle.groups[Category.PROCEDURE]] == [made.memory.id]


def test_context_of_an_unknown_ref_says_so(memory_service: MemoryService) -> None:
    bundle = memory_service.get_context("!999")
    assert bundle.groups == {}
    assert bundle.found is False
    assert bundle.notes[0].startswith("!999 is not in the graph: nothing is linked to it")


def test_context_respects_max_tokens(memory_service: MemoryService) -> None:
    for i in range(30):
        memory_service.remember(
            f"Deploy note {i}: " + "the release train leaves on time " * 5, category="fact"
        )
    bundle = memory_service.get_context("release train", max_tokens=200)
    assert 0 < bundle.tokens <= 200
    assert bundle.omitted > 0


@pytest.mark.parametrize(
    ("target", "max_tokens"), [("", 500), ("  ", 500), ("deploy", 10), ("deploy", 40_000)]
)
def test_invalid_context_requests_are_refused(
    memory_service: MemoryService, target: str, max_tokens: int
) -> None:
    with pytest.raises(InvalidInputError):
        memory_service.get_context(target, max_tokens=max_tokens)


def test_context_markdown_has_headings(memory_service: MemoryService, git_project: str) -> None:
    memory_service.remember("In !123 we chose Kùzu", category="decision", project=git_project)
    memory_service.remember("!123 needs a rebase", category="blocker", project=git_project)
    lines = memory_service.get_context("!123", project=git_project).markdown.splitlines()
    assert lines[0] == "## Memory: !123"
    assert "### Decisions" in lines and "### Blockers" in lines


# -- export and import ---------------------------------------------------------------------------


def build_history(memory: MemoryService, project: str) -> None:
    """Memories in every state: superseded, resolved, archived, linked, in a session, with entities."""
    memory.remember("We use SQLite for the memory store", category="decision", project=project)
    memory.remember("We use Kùzu for the memory store, see !123", category="decision", project=project)
    blocker = memory.remember("CI is red because of #456", category="blocker", project=project, session="s")
    memory.resolve(blocker.memory.id)
    a = memory.remember("Deploys happen on Fridays", session="s", project=project)
    b = memory.remember("Never deploy on Friday afternoons, touches src/app.py", session="s", project=project)
    memory.link(a.memory.id, b.memory.id, "contradicts")
    gone = memory.remember("Old note about lunch", occurred_at=datetime(2021, 3, 4, 5, 6, 7, tzinfo=UTC))
    memory.archive(gone.memory.id)
    memory.remember("  we use kùzu for the memory store, see !123 ", category="decision", project=project)


def export_text(memory: MemoryService, **options: object) -> str:
    out = io.StringIO()
    memory.export(out, **options)  # type: ignore[arg-type]
    return out.getvalue()


def snapshot(memory: MemoryService, *, provenance: bool = True) -> dict[str, object]:
    """What a store holds; without ``provenance``, leaving out what an import sets itself (who
    wrote each memory and how often it was repeated: never taken from a file)."""
    store = memory.store
    return {
        "memories": sorted(
            (
                m.id,
                m.text,
                m.category,
                m.scope,
                m.project,
                m.created_at,
                m.updated_at,
                m.valid_from,
                m.valid_to,
                m.status,
                m.content_hash,
                m.source if provenance else None,
                m.session,
                m.reinforced if provenance else None,
            )
            for m in store.all_memories()
        ),
        "links": sorted((x.source, x.target, x.kind, x.created_at) for x in store.links()),
        "entities": sorted((e.key, e.kind, e.name, e.project, e.title) for e in store.all_entities()),
        "about": sorted(
            (k, sorted(v)) for k, v in store.memories_about([e.key for e in store.all_entities()]).items()
        ),
        "next": sorted(store.next_pairs()),
    }


def test_export_then_import_is_lossless(
    memory_service: MemoryService, other_memory: MemoryService, git_project: str, tmp_path: Path
) -> None:
    build_history(memory_service, git_project)
    path = tmp_path / "export.jsonl"
    path.write_text(export_text(memory_service), "utf-8")
    summary = other_memory.import_file(path)
    assert summary.memories_added == memory_service.stats().total
    assert snapshot(other_memory, provenance=False) == snapshot(memory_service, provenance=False)
    imported = other_memory.store.all_memories()
    assert {m.source for m in imported} == {f"import:{path}"}
    assert {m.reinforced for m in imported} == {0}


def test_a_readopted_decision_survives_export_and_import(
    memory_service: MemoryService, other_memory: MemoryService, tmp_path: Path
) -> None:
    # SQLite -> DuckDB -> SQLite again: the third memory has the same text as the first.
    memory_service.remember("We store memories in SQLite", category="decision")
    memory_service.remember("We store memories in DuckDB", category="decision")
    memory_service.remember("We store memories in SQLite", category="decision")
    path = tmp_path / "export.jsonl"
    path.write_text(export_text(memory_service), "utf-8")
    other_memory.import_file(path)
    assert snapshot(other_memory, provenance=False) == snapshot(memory_service, provenance=False)


def test_unusual_text_survives_export_and_import(
    memory_service: MemoryService, other_memory: MemoryService, tmp_path: Path
) -> None:
    texts = [
        "line\nbreak and \u2028 separator",
        "NEL \x85 and\ttab",
        "emoji 🚀 and Kùzu",
        "MATCH (n) DETACH DELETE n; //'\"\\",
    ]
    for text in texts:
        memory_service.remember(text)
    path = tmp_path / "export.jsonl"
    path.write_text(export_text(memory_service), "utf-8")
    other_memory.import_file(path)
    assert sorted(m.text for m in other_memory.store.all_memories()) == sorted(texts)


def test_importing_the_same_file_twice_adds_nothing(
    memory_service: MemoryService, other_memory: MemoryService, git_project: str, tmp_path: Path
) -> None:
    build_history(memory_service, git_project)
    path = tmp_path / "export.jsonl"
    path.write_text(export_text(memory_service), "utf-8")
    other_memory.import_file(path)
    before = snapshot(other_memory)
    again = other_memory.import_file(path)
    assert again.memories_added == 0
    assert again.memories_skipped == memory_service.stats().total
    assert snapshot(other_memory) == before
    assert (again.entities, again.links) == (0, 0)  # counts say what was added: nothing


def test_an_import_counts_the_entities_and_links_it_adds(
    memory_service: MemoryService, other_memory: MemoryService, git_project: str, tmp_path: Path
) -> None:
    build_history(memory_service, git_project)
    path = tmp_path / "export.jsonl"
    path.write_text(export_text(memory_service), "utf-8")

    checked = other_memory.import_file(path, dry_run=True)
    first = other_memory.import_file(path)

    assert first.entities == len(other_memory.store.all_entities()) > 0
    assert first.links == len(other_memory.store.links()) > 0
    assert (checked.entities, checked.links) == (first.entities, first.links)


def test_a_dry_run_imports_nothing(
    memory_service: MemoryService, other_memory: MemoryService, git_project: str, tmp_path: Path
) -> None:
    build_history(memory_service, git_project)
    path = tmp_path / "export.jsonl"
    path.write_text(export_text(memory_service), "utf-8")
    summary = other_memory.import_file(path, dry_run=True)
    assert summary.dry_run and summary.memories_added == memory_service.stats().total
    assert other_memory.stats().total == 0
    assert other_memory.store.all_entities() == []


def test_imported_memories_are_recalled(
    memory_service: MemoryService, other_memory: MemoryService, tmp_path: Path
) -> None:
    made = memory_service.remember("We deploy with make release, see #456")
    path = tmp_path / "export.jsonl"
    path.write_text(export_text(memory_service), "utf-8")
    other_memory.recall("anything")  # the index is loaded before the import
    other_memory.import_file(path)
    assert ids(other_memory.recall("deploy release")) == [made.memory.id]
    assert ids(other_memory.recall("#456")) == [made.memory.id]


def test_export_of_a_project_holds_its_memories_and_global_ones(memory_service: MemoryService) -> None:
    mine = memory_service.remember("Mine", project="/src/a").memory.id
    memory_service.remember("Theirs", project="/src/b")
    shared = memory_service.remember("Shared", scope="global").memory.id
    lines = [json.loads(line) for line in export_text(memory_service, project="/src/a").splitlines()]
    assert {line["id"] for line in lines if line["type"] == "memory"} == {mine, shared}


def test_markdown_export_groups_memories_by_category(memory_service: MemoryService) -> None:
    memory_service.remember("Kùzu stores the graph", category="fact")
    memory_service.remember("We chose Kùzu", category="decision")
    text = export_text(memory_service, fmt="markdown")
    lines = text.splitlines()
    assert lines[0] == "# Memories"
    decisions, facts = lines.index("## Decisions"), lines.index("## Facts")
    assert decisions < facts
    assert lines[decisions + 2].startswith("- We chose Kùzu")
    assert lines[facts + 2].startswith("- Kùzu stores the graph")


def test_an_unknown_export_format_is_invalid(memory_service: MemoryService) -> None:
    with pytest.raises(InvalidInputError, match="jsonl"):
        export_text(memory_service, fmt="yaml")


def _memory_line(memory_id: str, **changes: object) -> str:
    line: dict[str, object] = {
        "type": "memory",
        "id": memory_id,
        "text": f"imported note {memory_id}",
        "category": "fact",
        "scope": "global",
        "created_at": "2024-05-01T12:00:00+00:00",
    }
    line.update(changes)
    return json.dumps(line)


@pytest.mark.parametrize(
    ("bad_line", "complaint"),
    [
        (b"{not json", "not valid JSON"),
        (_memory_line("m_bad", category="rumour").encode(), "category"),
        (_memory_line("m_bad", entities=["Issue:#999"]).encode(), "unknown entities"),
        (
            json.dumps({"type": "link", "source": "m1", "target": "mem_unknown", "kind": "related"}).encode(),
            "link endpoint is not a memory",
        ),
        (b'{"type": "memory", "text": "caf\xe9"}', "UTF-8"),
    ],
)
def test_an_invalid_import_file_imports_nothing_and_names_the_line(
    memory_service: MemoryService, tmp_path: Path, bad_line: bytes, complaint: str
) -> None:
    memory_service.remember("Already here")
    before = snapshot(memory_service)
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"\n".join([_memory_line("m1").encode(), _memory_line("m2").encode(), bad_line, b""]))
    with pytest.raises(ImportFileError) as raised:
        memory_service.import_file(path)
    assert [number for number, _ in raised.value.problems] == [3]
    assert complaint in raised.value.problems[0][1]
    assert "nothing was imported" in str(raised.value)
    assert snapshot(memory_service) == before


def test_an_import_file_lists_every_invalid_line(memory_service: MemoryService, tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(["oops", _memory_line("m1"), _memory_line("m2", scope="team"), "[]"]), "utf-8")
    with pytest.raises(ImportFileError) as raised:
        memory_service.import_file(path)
    assert [number for number, _ in raised.value.problems] == [1, 3, 4]
    assert memory_service.stats().total == 0


def test_an_import_of_a_missing_file_is_invalid(memory_service: MemoryService, tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="No such file"):
        memory_service.import_file(tmp_path / "nope.jsonl")


def test_an_import_may_link_to_memories_already_in_the_store(
    memory_service: MemoryService, tmp_path: Path
) -> None:
    here = memory_service.remember("Already here").memory.id
    path = tmp_path / "more.jsonl"
    path.write_text(
        "\n".join(
            [
                _memory_line("m1"),
                json.dumps({"type": "link", "source": "m1", "target": here, "kind": "extends"}),
            ]
        ),
        "utf-8",
    )
    memory_service.import_file(path)
    assert [(x.source, x.target, x.kind) for x in memory_service.show(here).links] == [
        ("m1", here, LinkKind.EXTENDS)
    ]


# -- embedding model ---------------------------------------------------------------------------


def test_opening_with_another_model_asks_for_reindex(tmp_path: Path) -> None:
    settings = load_settings(data_dir=tmp_path / "data")
    open_memory(settings, embedder=HashEmbedder(256)).close()
    with pytest.raises(StoreMismatchError, match="graphmem reindex"):
        open_memory(settings, embedder=HashEmbedder(128))


_REINDEX_SCRIPT = """
import sys
from pathlib import Path
from graphmem.adapters.embedders import HashEmbedder
from graphmem.app import open_memory
from graphmem.settings import load_settings

settings = load_settings(data_dir=Path(sys.argv[1]))
memory = open_memory(settings, embedder=HashEmbedder(128), check_model=False)
print("REINDEXED", memory.reindex(), flush=True)
memory.close()
"""

_REOPEN_SCRIPT = """
import sys
from pathlib import Path
from graphmem.adapters.embedders import HashEmbedder
from graphmem.app import open_memory
from graphmem.settings import load_settings

memory = open_memory(load_settings(data_dir=Path(sys.argv[1])), embedder=HashEmbedder(128))
print("MODEL", memory.store.get_meta("embedding_model"), flush=True)
print("SHAPE", memory.store.load_vectors().matrix.shape, flush=True)
print("HITS", [hit.memory.id for hit in memory.recall("deploy release").hits], flush=True)
memory.close()
"""


def run_script(script: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), str(data_dir)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_reindex_lets_the_new_model_open_the_store(tmp_path: Path) -> None:
    settings = load_settings(data_dir=tmp_path / "data")
    before = open_memory(settings, embedder=HashEmbedder(256))
    made = before.remember("We deploy with make release").memory.id
    before.remember("Lunch is at noon")
    before.recall("deploy")  # embeds with the old model
    before.close()
    # Child processes: after a reindex, closing Kùzu crashes the process (see test_kuzu_store.py).
    reindexed = run_script(_REINDEX_SCRIPT, tmp_path / "data")
    assert "REINDEXED 2" in reindexed.stdout, reindexed.stderr[-2000:]
    reopened = run_script(_REOPEN_SCRIPT, tmp_path / "data")
    assert reopened.stdout.splitlines() == ["MODEL hash-128", "SHAPE (2, 128)", f"HITS ['{made}']"], (
        reopened.stderr[-2000:]
    )
    assert reopened.returncode == 0, f"the reopened store crashed the process (exit {reopened.returncode})"


# -- select (the filter of the bulk lifecycle verbs) ----------------------------------


def test_select_picks_by_category_status_and_age(memory_service: MemoryService) -> None:
    now = datetime(2026, 5, 1, tzinfo=UTC)
    memory_service.writer.clock = lambda: now - timedelta(days=120)
    old_event = memory_service.remember("Deployed release 1.2 to staging", category="event").memory.id
    old_fact = memory_service.remember("The staging host is stage-3", category="fact").memory.id
    memory_service.writer.clock = lambda: now - timedelta(days=5)
    new_event = memory_service.remember("Deployed release 1.3 to production", category="event").memory.id
    memory_service.writer.clock = lambda: now

    picked = memory_service.select(categories=["event"], before=now - timedelta(days=90))

    assert [r.id for r in picked] == [old_event]
    assert {r.id for r in memory_service.select(before=now - timedelta(days=90))} == {old_event, old_fact}
    assert [r.id for r in memory_service.select(categories=["event"], since=now - timedelta(days=30))] == [
        new_event
    ]
    memory_service.archive(old_event)
    assert memory_service.select(categories=["event"], before=now - timedelta(days=90)) == []
    assert [r.id for r in memory_service.select(statuses=[Status.ARCHIVED])] == [old_event]


def test_select_refuses_an_unknown_category(memory_service: MemoryService) -> None:
    with pytest.raises(InvalidInputError):
        memory_service.select(categories=["events"])
