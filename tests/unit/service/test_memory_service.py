"""The Memory service with a fresh Kùzu store and the hash embedder."""

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
    memory = open_memory(load_settings(data_dir=tmp_path / "other"), embedder=HashEmbedder(256))
    yield memory
    memory.close()


# -- remember -------------------------------------------------------------------------


def test_remember_returns_the_new_memory(fake_memory: MemoryService) -> None:
    result = fake_memory.remember("We deploy with make release", category="procedure")
    assert result.created
    assert result.memory.id.startswith("mem_")
    assert fake_memory.show(result.memory.id).memory.text == "We deploy with make release"


def test_remember_strips_the_text(fake_memory: MemoryService) -> None:
    assert (
        fake_memory.remember("  We deploy with make release \n").memory.text == "We deploy with make release"
    )


def test_an_exact_duplicate_in_other_case_and_spacing_reinforces(fake_memory: MemoryService) -> None:
    first = fake_memory.remember("We deploy with make release", category="procedure")
    again = fake_memory.remember("  we DEPLOY with   make RELEASE ", category="procedure")
    assert not again.created
    assert again.duplicate_of == first.memory.id
    assert again.memory.reinforced == 1
    assert fake_memory.show(first.memory.id).memory.reinforced == 1
    assert fake_memory.stats().total == 1


def test_a_near_duplicate_wording_reinforces(fake_memory: MemoryService) -> None:
    first = fake_memory.remember("We deploy with make release", category="procedure")
    again = fake_memory.remember("We deploy with `make release`.", category="procedure")
    assert (again.created, again.duplicate_of) == (False, first.memory.id)
    assert fake_memory.stats().total == 1


def test_a_near_duplicate_of_another_category_is_a_new_memory(fake_memory: MemoryService) -> None:
    fake_memory.remember("We deploy with make release", category="procedure")
    assert fake_memory.remember("We deploy with make release.", category="fact").created


def test_a_decision_naming_another_tool_supersedes_the_old_one(fake_memory: MemoryService) -> None:
    old = fake_memory.remember("We use SQLite for the memory store", category="decision")
    new = fake_memory.remember("We use DuckDB for the memory store", category="decision")
    assert new.created
    assert new.superseded == (old.memory.id,)
    replaced = fake_memory.show(old.memory.id)
    assert replaced.memory.status is Status.SUPERSEDED
    assert replaced.memory.valid_to == new.memory.valid_from
    assert [(link.source, link.target, link.kind) for link in replaced.links] == [
        (new.memory.id, old.memory.id, LinkKind.SUPERSEDES)
    ]


def test_a_decision_with_a_changed_version_supersedes_instead_of_reinforcing(
    fake_memory: MemoryService,
) -> None:
    # A changed version number makes a different statement (core/dedup.py docstring).
    old = fake_memory.remember(
        "We run the nightly test suite with python2 on the legacy CI runners before every release",
        category="decision",
    )
    new = fake_memory.remember(
        "We run the nightly test suite with python3 on the legacy CI runners before every release",
        category="decision",
    )
    assert new.created
    assert new.superseded == (old.memory.id,)


def test_a_fact_on_the_same_subject_does_not_supersede(fake_memory: MemoryService) -> None:
    old = fake_memory.remember("The memory store holds SQLite files", category="fact")
    new = fake_memory.remember("The memory store holds DuckDB files", category="fact")
    assert new.created and new.superseded == ()
    assert fake_memory.show(old.memory.id).memory.status is Status.ACTIVE


def test_explicit_supersedes_replaces_the_named_memory(fake_memory: MemoryService) -> None:
    old = fake_memory.remember("Release every second Tuesday", category="plan")
    new = fake_memory.remember("Ship continuously from main", category="plan", supersedes=old.memory.id)
    assert new.superseded == (old.memory.id,)
    assert fake_memory.show(old.memory.id).memory.status is Status.SUPERSEDED


def test_explicit_supersedes_of_an_unknown_id_is_not_found(fake_memory: MemoryService) -> None:
    with pytest.raises(NotFoundError):
        fake_memory.remember("Ship continuously from main", supersedes="mem_nope")
    assert fake_memory.stats().total == 0


def test_default_recall_shows_only_the_current_decision(fake_memory: MemoryService) -> None:
    fake_memory.remember("We use SQLite for the memory store", category="decision")
    new = fake_memory.remember("We use DuckDB for the memory store", category="decision")
    assert ids(fake_memory.recall("memory store")) == [new.memory.id]


def test_history_recall_shows_both_decisions(fake_memory: MemoryService) -> None:
    old = fake_memory.remember("We use SQLite for the memory store", category="decision")
    new = fake_memory.remember("We use DuckDB for the memory store", category="decision")
    assert set(ids(fake_memory.recall("memory store", history=True))) == {old.memory.id, new.memory.id}


def test_restore_undoes_a_supersession(fake_memory: MemoryService) -> None:
    old = fake_memory.remember("We use SQLite for the memory store", category="decision")
    fake_memory.remember("We use DuckDB for the memory store", category="decision")
    restored = fake_memory.restore(old.memory.id)
    assert restored.status is Status.ACTIVE and restored.valid_to is None
    assert fake_memory.show(old.memory.id).links == ()
    assert old.memory.id in ids(fake_memory.recall("memory store"))


def test_unlinking_supersedes_restores_the_older_memory(fake_memory: MemoryService) -> None:
    old = fake_memory.remember("We use SQLite for the memory store", category="decision")
    new = fake_memory.remember("We use DuckDB for the memory store", category="decision")
    fake_memory.unlink(new.memory.id, old.memory.id, "supersedes")
    assert fake_memory.show(old.memory.id).memory.status is Status.ACTIVE
    assert fake_memory.store.links() == []


# -- scopes ---------------------------------------------------------------------------


def test_a_project_memory_is_invisible_from_another_project(fake_memory: MemoryService) -> None:
    fake_memory.remember("The payments service retries webhooks", project="/src/payments")
    assert ids(fake_memory.recall("payments webhooks", project="/src/shop")) == []
    assert fake_memory.list(project="/src/shop") == []


def test_a_project_memory_is_invisible_outside_any_project(fake_memory: MemoryService) -> None:
    fake_memory.remember("The payments service retries webhooks", project="/src/payments")
    assert ids(fake_memory.recall("payments webhooks")) == []
    assert fake_memory.list() == []


def test_a_project_memory_is_visible_in_its_project(fake_memory: MemoryService) -> None:
    made = fake_memory.remember("The payments service retries webhooks", project="/src/payments")
    assert made.memory.scope is Scope.PROJECT and made.memory.project == "/src/payments"
    assert ids(fake_memory.recall("payments webhooks", project="/src/payments")) == [made.memory.id]


def test_a_global_memory_is_visible_everywhere(fake_memory: MemoryService) -> None:
    made = fake_memory.remember(
        "Prefer small merge requests", category="directive", scope="global", project="/src/payments"
    )
    assert made.memory.project is None
    for project in (None, "/src/payments", "/src/shop"):
        assert ids(fake_memory.recall("small merge requests", project=project)) == [made.memory.id]


def test_preferences_default_to_global_scope(fake_memory: MemoryService) -> None:
    made = fake_memory.remember("I like terse commit messages", category="preference", project="/src/a")
    assert made.memory.scope is Scope.GLOBAL


def test_scope_project_without_a_project_is_invalid(fake_memory: MemoryService) -> None:
    with pytest.raises(InvalidInputError, match="project"):
        fake_memory.remember("The payments service retries webhooks", scope="project")


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
    fake_memory: MemoryService, text: str, changes: dict[str, str], message: str
) -> None:
    with pytest.raises(InvalidInputError, match=message):
        fake_memory.remember(text, **changes)  # type: ignore[arg-type]
    assert fake_memory.stats().total == 0


def test_categories_and_scopes_are_case_insensitive(fake_memory: MemoryService) -> None:
    made = fake_memory.remember("We chose Kùzu", category=" Decision ", scope="GLOBAL")
    assert (made.memory.category, made.memory.scope) == (Category.DECISION, Scope.GLOBAL)


# -- entities ----------------------------------------------------------------------------


def test_refs_and_existing_files_in_text_become_entities(
    fake_memory: MemoryService, git_project: str
) -> None:
    text = (
        "Review !123 and #456 for &789, compare group/sub/project!12 and "
        "https://gitlab.example.com/group/sub/proj/-/merge_requests/77 before touching src/app.py"
    )
    made = fake_memory.remember(text, project=git_project)
    assert entity_keys(fake_memory, made.memory.id) == {
        f"MergeRequest:{NAMESPACE}!123",
        f"Issue:{NAMESPACE}#456",
        "Epic:group/sub&789",  # an epic belongs to the project's group
        "MergeRequest:group/sub/project!12",
        f"MergeRequest:{NAMESPACE}!77",
        f"File:{git_project}::src/app.py",
    }
    assert {e.key for e in made.entities} == entity_keys(fake_memory, made.memory.id)


def test_a_missing_file_path_is_not_an_entity(fake_memory: MemoryService, git_project: str) -> None:
    made = fake_memory.remember("Split src/missing.py out of README.md", project=git_project)
    assert entity_keys(fake_memory, made.memory.id) == {f"File:{git_project}::README.md"}


def test_refs_outside_a_project_have_no_namespace(fake_memory: MemoryService) -> None:
    made = fake_memory.remember("The flaky test is tracked in #456")
    [entity] = fake_memory.show(made.memory.id).entities
    assert (entity.key, entity.kind, entity.name) == ("Issue:#456", EntityKind.ISSUE, "#456")


def test_a_reinforced_memory_reports_its_entities(fake_memory: MemoryService) -> None:
    fake_memory.remember("The flaky test is tracked in #456")
    again = fake_memory.remember("the flaky test is tracked in #456")
    assert not again.created and [e.key for e in again.entities] == ["Issue:#456"]


def test_editing_text_updates_recall_and_entities(fake_memory: MemoryService) -> None:
    made = fake_memory.remember("We deploy with make release")
    edited = fake_memory.edit(made.memory.id, text="We deploy with helm, see #456")
    assert edited.text == "We deploy with helm, see #456"
    assert ids(fake_memory.recall("helm")) == [made.memory.id]
    assert ids(fake_memory.recall("make release")) == []
    assert "Issue:#456" in entity_keys(fake_memory, made.memory.id)


def test_editing_text_drops_entities_the_text_no_longer_names(fake_memory: MemoryService) -> None:
    made = fake_memory.remember("The flaky test is tracked in #456")
    fake_memory.edit(made.memory.id, text="The flaky test is tracked in #789")
    assert entity_keys(fake_memory, made.memory.id) == {"Issue:#789"}
    assert fake_memory.get_context("#456").groups == {}


# -- lifecycle ----------------------------------------------------------------------------


def test_resolve_and_unresolve_a_blocker(fake_memory: MemoryService) -> None:
    blocker = fake_memory.remember("CI is red on main because of the flaky e2e test", category="blocker")
    assert fake_memory.resolve(blocker.memory.id).status is Status.RESOLVED
    assert fake_memory.unresolve(blocker.memory.id).status is Status.ACTIVE


def test_a_resolved_blocker_is_still_recalled(fake_memory: MemoryService) -> None:
    blocker = fake_memory.remember("CI is red on main because of the flaky e2e test", category="blocker")
    fake_memory.resolve(blocker.memory.id)
    assert ids(fake_memory.recall("flaky e2e test")) == [blocker.memory.id]


def test_resolving_a_non_blocker_is_a_conflict(fake_memory: MemoryService) -> None:
    fact = fake_memory.remember("CI runs on shared runners", category="fact")
    with pytest.raises(ConflictError, match="not a blocker"):
        fake_memory.resolve(fact.memory.id)


def test_unresolving_an_active_blocker_changes_nothing(fake_memory: MemoryService) -> None:
    blocker = fake_memory.remember("CI is red on main", category="blocker")
    assert fake_memory.unresolve(blocker.memory.id).status is Status.ACTIVE


def test_resolving_an_archived_blocker_is_a_conflict(fake_memory: MemoryService) -> None:
    blocker = fake_memory.remember("CI is red on main", category="blocker")
    fake_memory.archive(blocker.memory.id)
    with pytest.raises(ConflictError, match="archived"):
        fake_memory.resolve(blocker.memory.id)


def test_archive_hides_from_recall_and_list(fake_memory: MemoryService) -> None:
    made = fake_memory.remember("We deploy with make release")
    assert fake_memory.archive(made.memory.id).status is Status.ARCHIVED
    assert ids(fake_memory.recall("deploy release")) == []
    assert fake_memory.list() == []


def test_restore_brings_an_archived_memory_back(fake_memory: MemoryService) -> None:
    made = fake_memory.remember("We deploy with make release")
    fake_memory.archive(made.memory.id)
    fake_memory.restore(made.memory.id)
    assert ids(fake_memory.recall("deploy release")) == [made.memory.id]
    assert [r.id for r in fake_memory.list()] == [made.memory.id]


def test_restoring_an_active_memory_changes_nothing(fake_memory: MemoryService) -> None:
    made = fake_memory.remember("We deploy with make release")
    assert fake_memory.restore(made.memory.id).status is Status.ACTIVE


def test_delete_removes_the_memory(fake_memory: MemoryService) -> None:
    made = fake_memory.remember("We deploy with make release, see #456")
    fake_memory.recall("deploy")  # load the vector index, so deletion must update it too
    fake_memory.delete(made.memory.id)
    with pytest.raises(NotFoundError):
        fake_memory.show(made.memory.id)
    assert ids(fake_memory.recall("deploy release")) == []
    assert fake_memory.store.memories_about(["Issue:#456"]) == {}


@pytest.mark.parametrize("kind", [LinkKind.CONTRADICTS, LinkKind.EXTENDS, LinkKind.RELATED])
def test_link_relates_two_memories(fake_memory: MemoryService, kind: LinkKind) -> None:
    a = fake_memory.remember("Deploys happen on Fridays")
    b = fake_memory.remember("Never deploy on a Friday afternoon")
    link = fake_memory.link(a.memory.id, b.memory.id, kind.value)
    assert (link.source, link.target, link.kind) == (a.memory.id, b.memory.id, kind)
    assert [(x.source, x.target, x.kind) for x in fake_memory.show(b.memory.id).links] == [
        (a.memory.id, b.memory.id, kind)
    ]
    assert fake_memory.show(b.memory.id).memory.status is Status.ACTIVE


def test_a_supersedes_link_retires_the_target(fake_memory: MemoryService) -> None:
    a = fake_memory.remember("Deploy with helm", category="procedure")
    b = fake_memory.remember("Deploy with make release", category="procedure")
    fake_memory.link(a.memory.id, b.memory.id, "supersedes")
    assert fake_memory.show(b.memory.id).memory.status is Status.SUPERSEDED


def test_unlink_removes_a_link(fake_memory: MemoryService) -> None:
    a = fake_memory.remember("Deploys happen on Fridays")
    b = fake_memory.remember("Never deploy on a Friday afternoon")
    fake_memory.link(a.memory.id, b.memory.id, "contradicts")
    fake_memory.unlink(a.memory.id, b.memory.id, "contradicts")
    assert fake_memory.show(a.memory.id).links == ()
    with pytest.raises(NotFoundError):
        fake_memory.unlink(a.memory.id, b.memory.id, "contradicts")


def test_unlinking_a_supersedes_link_that_does_not_exist_is_not_found(fake_memory: MemoryService) -> None:
    old = fake_memory.remember("We use SQLite for the memory store", category="decision")
    new = fake_memory.remember("We use DuckDB for the memory store", category="decision")
    bystander = fake_memory.remember("Lunch is at noon")
    with pytest.raises(NotFoundError):
        fake_memory.unlink(bystander.memory.id, old.memory.id, "supersedes")
    assert fake_memory.show(old.memory.id).memory.status is Status.SUPERSEDED
    assert [(x.source, x.target) for x in fake_memory.store.links()] == [(new.memory.id, old.memory.id)]


def test_a_memory_cannot_link_to_itself(fake_memory: MemoryService) -> None:
    a = fake_memory.remember("Deploys happen on Fridays")
    with pytest.raises(InvalidInputError, match="itself"):
        fake_memory.link(a.memory.id, a.memory.id, "related")


def test_an_unknown_link_kind_is_invalid(fake_memory: MemoryService) -> None:
    a = fake_memory.remember("Deploys happen on Fridays")
    b = fake_memory.remember("Never deploy on a Friday afternoon")
    with pytest.raises(InvalidInputError, match="link kind"):
        fake_memory.link(a.memory.id, b.memory.id, "likes")


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
    fake_memory: MemoryService, operation: Callable[[MemoryService, str], object]
) -> None:
    fake_memory.remember("Deploys happen on Fridays")
    with pytest.raises(NotFoundError, match="mem_nope"):
        operation(fake_memory, "mem_nope")


def test_an_empty_id_is_invalid(fake_memory: MemoryService) -> None:
    with pytest.raises(InvalidInputError):
        fake_memory.show("  ")


# -- list and stats -------------------------------------------------------------------------


def test_list_filters_by_category(fake_memory: MemoryService) -> None:
    decision = fake_memory.remember("We chose Kùzu", category="decision")
    fake_memory.remember("Kùzu stores the graph", category="fact")
    assert [r.id for r in fake_memory.list(categories=["decision"])] == [decision.memory.id]


def test_list_filters_by_since(fake_memory: MemoryService) -> None:
    old = datetime(2020, 1, 1, tzinfo=UTC)
    fake_memory.remember("We used Postgres back then", occurred_at=old)
    recent = fake_memory.remember("We use Kùzu now")
    assert [r.id for r in fake_memory.list(since=datetime.now(UTC) - timedelta(days=1))] == [recent.memory.id]
    assert len(fake_memory.list(since=old)) == 2


def test_list_is_newest_first_and_pages(fake_memory: MemoryService) -> None:
    made = [
        fake_memory.remember(f"note number {i}", occurred_at=datetime(2024, 1, i + 1, tzinfo=UTC)).memory.id
        for i in range(3)
    ]
    assert [r.id for r in fake_memory.list()] == made[::-1]
    assert [r.id for r in fake_memory.list(limit=1, offset=1)] == [made[1]]


def test_list_refuses_a_bad_limit(fake_memory: MemoryService) -> None:
    with pytest.raises(InvalidInputError):
        fake_memory.list(limit=0)


def test_stats_count_memories_and_entities(fake_memory: MemoryService) -> None:
    fake_memory.remember("We chose Kùzu, see #456", category="decision")
    fake_memory.remember("CI is red on main", category="blocker")
    archived = fake_memory.remember("Old note about lunch", category="fact")
    fake_memory.archive(archived.memory.id)
    stats = fake_memory.stats()
    assert stats.total == 3
    assert stats.by_category == {"decision": 1, "blocker": 1, "fact": 1}
    assert stats.by_status == {"active": 2, "archived": 1}
    assert stats.by_scope == {"global": 3}
    assert stats.entities == {"Issue": 1}
    assert stats.model == "hash-256"


def test_a_session_chains_its_memories(fake_memory: MemoryService) -> None:
    made = [fake_memory.remember(f"turn {word}", session="s1").memory.id for word in ("one", "two", "three")]
    fake_memory.remember("another session", session="s2")
    assert sorted(fake_memory.store.next_pairs()) == sorted([(made[0], made[1]), (made[1], made[2])])


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


def test_recall_finds_the_memory_about_a_ref(fake_memory: MemoryService) -> None:
    about = fake_memory.remember("The flaky login test is tracked in #456", category="blocker")
    fake_memory.remember("We deploy with make release")
    result = fake_memory.recall("#456")
    assert ids(result)[0] == about.memory.id
    assert ENTITY in {c.channel for c in result.hits[0].channels}


def test_recall_of_a_ref_uses_the_project_namespace(fake_memory: MemoryService, git_project: str) -> None:
    about = fake_memory.remember("The flaky login test is tracked in #456", project=git_project)
    hit = fake_memory.recall("what about #456?", project=git_project).hits[0]
    assert hit.memory.id == about.memory.id
    assert [e.key for e in hit.entities] == [f"Issue:{NAMESPACE}#456"]


def test_recall_of_something_unrelated_returns_nothing(fake_memory: MemoryService) -> None:
    fake_memory.remember("We deploy with make release")
    fake_memory.remember("The flaky login test is tracked in #456")
    assert fake_memory.recall("banana bread recipe").hits == []


def test_recall_filters_by_category(fake_memory: MemoryService) -> None:
    decision = fake_memory.remember("We chose Kùzu for the graph", category="decision")
    fake_memory.remember("Kùzu stores the graph on disk", category="fact")
    assert ids(fake_memory.recall("kuzu graph", categories=["decision"])) == [decision.memory.id]


def test_recall_filters_by_since(fake_memory: MemoryService) -> None:
    fake_memory.remember("We deployed with capistrano", occurred_at=datetime(2020, 1, 1, tzinfo=UTC))
    recent = fake_memory.remember("We deploy with make release")
    since = datetime.now(UTC) - timedelta(days=1)
    assert ids(fake_memory.recall("we deploy", since=since)) == [recent.memory.id]


def test_recall_takes_a_naive_since_as_utc(fake_memory: MemoryService) -> None:
    # remember(occurred_at=...) and list(since=...) take naive datetimes as UTC; recall should too.
    made = fake_memory.remember("We deploy with make release")
    assert ids(fake_memory.recall("we deploy", since=datetime(2020, 1, 1))) == [made.memory.id]


def test_recall_explains_each_hit(fake_memory: MemoryService) -> None:
    fake_memory.remember("We deploy with make release")
    result = fake_memory.recall("deploy with make")
    [hit] = result.hits
    assert hit.channels
    assert all(c.channel in CHANNELS and c.rank >= 1 for c in hit.channels)
    assert {"lexical", "semantic"} <= {c.channel for c in hit.channels}
    assert result.plan == "hybrid"


def test_recall_finds_cypher_like_text_literally(fake_memory: MemoryService) -> None:
    text = "MATCH (n) DETACH DELETE n; // ' \" \\ `"
    made = fake_memory.remember(text)
    fake_memory.remember("We deploy with make release")
    assert ids(fake_memory.recall(text)) == [made.memory.id]
    assert fake_memory.show(made.memory.id).memory.text == text
    assert fake_memory.stats().total == 2


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
    fake_memory: MemoryService, query: str, options: dict[str, object]
) -> None:
    with pytest.raises(InvalidInputError):
        fake_memory.recall(query, **options)  # type: ignore[arg-type]


def test_a_single_channel_plan_reports_only_that_channel(fake_memory: MemoryService) -> None:
    fake_memory.remember("We deploy with make release")
    result = fake_memory.recall("deploy release", plan="lexical")
    assert list(result.channels) == ["lexical"]
    assert {c.channel for h in result.hits for c in h.channels} == {"lexical"}


# -- get_context ------------------------------------------------------------------------------


def test_context_of_a_ref_groups_its_memories_and_lists_related_entities(
    fake_memory: MemoryService, git_project: str
) -> None:
    decision = fake_memory.remember(
        "In !123 we chose Kùzu over SQLite", category="decision", project=git_project
    )
    blocker = fake_memory.remember("!123 is blocked by #456", category="blocker", project=git_project)
    fake_memory.remember("Lunch is at noon", project=git_project)
    bundle = fake_memory.get_context("!123", project=git_project)
    assert bundle.entity is not None and bundle.entity.key == f"MergeRequest:{NAMESPACE}!123"
    assert [i.hit.memory.id for i in bundle.groups[Category.DECISION]] == [decision.memory.id]
    assert [i.hit.memory.id for i in bundle.groups[Category.BLOCKER]] == [blocker.memory.id]
    assert list(bundle.groups) == [Category.DECISION, Category.BLOCKER]
    assert [(e.key, n) for e, n in bundle.related] == [(f"Issue:{NAMESPACE}#456", 1)]


def test_context_of_a_file_finds_memories_about_it(fake_memory: MemoryService, git_project: str) -> None:
    about = fake_memory.remember(
        "src/app.py must stay import-free", category="directive", project=git_project
    )
    bundle = fake_memory.get_context("src/app.py", project=git_project)
    assert bundle.entity is not None and bundle.entity.kind is EntityKind.FILE
    assert [i.hit.memory.id for i in bundle.groups[Category.DIRECTIVE]] == [about.memory.id]


def test_context_of_free_text_recalls_memories(fake_memory: MemoryService) -> None:
    made = fake_memory.remember("We deploy with make release", category="procedure")
    bundle = fake_memory.get_context("how do we deploy")
    assert bundle.entity is None
    assert [i.hit.memory.id for i in bundle.groups[Category.PROCEDURE]] == [made.memory.id]


def test_context_of_an_unknown_ref_says_so(fake_memory: MemoryService) -> None:
    bundle = fake_memory.get_context("!999")
    assert bundle.groups == {}
    assert bundle.found is False
    assert bundle.notes[0].startswith("!999 is not in the graph: nothing is linked to it")


def test_context_respects_max_tokens(fake_memory: MemoryService) -> None:
    for i in range(30):
        fake_memory.remember(f"Deploy note {i}: " + "the release train leaves on time " * 5, category="fact")
    bundle = fake_memory.get_context("release train", max_tokens=200)
    assert 0 < bundle.tokens <= 200
    assert bundle.omitted > 0


@pytest.mark.parametrize(
    ("target", "max_tokens"), [("", 500), ("  ", 500), ("deploy", 10), ("deploy", 40_000)]
)
def test_invalid_context_requests_are_refused(
    fake_memory: MemoryService, target: str, max_tokens: int
) -> None:
    with pytest.raises(InvalidInputError):
        fake_memory.get_context(target, max_tokens=max_tokens)


def test_context_markdown_has_headings(fake_memory: MemoryService, git_project: str) -> None:
    fake_memory.remember("In !123 we chose Kùzu", category="decision", project=git_project)
    fake_memory.remember("!123 needs a rebase", category="blocker", project=git_project)
    lines = fake_memory.get_context("!123", project=git_project).markdown.splitlines()
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


def snapshot(memory: MemoryService) -> dict[str, object]:
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
                m.source,
                m.session,
                m.reinforced,
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
    fake_memory: MemoryService, other_memory: MemoryService, git_project: str, tmp_path: Path
) -> None:
    build_history(fake_memory, git_project)
    path = tmp_path / "export.jsonl"
    path.write_text(export_text(fake_memory), "utf-8")
    summary = other_memory.import_file(path)
    assert summary.memories_added == fake_memory.stats().total
    assert snapshot(other_memory) == snapshot(fake_memory)


def test_a_readopted_decision_survives_export_and_import(
    fake_memory: MemoryService, other_memory: MemoryService, tmp_path: Path
) -> None:
    # SQLite -> DuckDB -> SQLite again: the third memory has the same text as the first.
    fake_memory.remember("We store memories in SQLite", category="decision")
    fake_memory.remember("We store memories in DuckDB", category="decision")
    fake_memory.remember("We store memories in SQLite", category="decision")
    path = tmp_path / "export.jsonl"
    path.write_text(export_text(fake_memory), "utf-8")
    other_memory.import_file(path)
    assert snapshot(other_memory) == snapshot(fake_memory)


def test_unusual_text_survives_export_and_import(
    fake_memory: MemoryService, other_memory: MemoryService, tmp_path: Path
) -> None:
    texts = [
        "line\nbreak and \u2028 separator",
        "NEL \x85 and\ttab",
        "emoji 🚀 and Kùzu",
        "MATCH (n) DETACH DELETE n; //'\"\\",
    ]
    for text in texts:
        fake_memory.remember(text)
    path = tmp_path / "export.jsonl"
    path.write_text(export_text(fake_memory), "utf-8")
    other_memory.import_file(path)
    assert sorted(m.text for m in other_memory.store.all_memories()) == sorted(texts)


def test_importing_the_same_file_twice_adds_nothing(
    fake_memory: MemoryService, other_memory: MemoryService, git_project: str, tmp_path: Path
) -> None:
    build_history(fake_memory, git_project)
    path = tmp_path / "export.jsonl"
    path.write_text(export_text(fake_memory), "utf-8")
    other_memory.import_file(path)
    before = snapshot(other_memory)
    again = other_memory.import_file(path)
    assert again.memories_added == 0
    assert again.memories_skipped == fake_memory.stats().total
    assert snapshot(other_memory) == before
    assert (again.entities, again.links) == (0, 0)  # counts say what was added: nothing


def test_an_import_counts_the_entities_and_links_it_adds(
    fake_memory: MemoryService, other_memory: MemoryService, git_project: str, tmp_path: Path
) -> None:
    build_history(fake_memory, git_project)
    path = tmp_path / "export.jsonl"
    path.write_text(export_text(fake_memory), "utf-8")

    checked = other_memory.import_file(path, dry_run=True)
    first = other_memory.import_file(path)

    assert first.entities == len(other_memory.store.all_entities()) > 0
    assert first.links == len(other_memory.store.links()) > 0
    assert (checked.entities, checked.links) == (first.entities, first.links)


def test_a_dry_run_imports_nothing(
    fake_memory: MemoryService, other_memory: MemoryService, git_project: str, tmp_path: Path
) -> None:
    build_history(fake_memory, git_project)
    path = tmp_path / "export.jsonl"
    path.write_text(export_text(fake_memory), "utf-8")
    summary = other_memory.import_file(path, dry_run=True)
    assert summary.dry_run and summary.memories_added == fake_memory.stats().total
    assert other_memory.stats().total == 0
    assert other_memory.store.all_entities() == []


def test_imported_memories_are_recalled(
    fake_memory: MemoryService, other_memory: MemoryService, tmp_path: Path
) -> None:
    made = fake_memory.remember("We deploy with make release, see #456")
    path = tmp_path / "export.jsonl"
    path.write_text(export_text(fake_memory), "utf-8")
    other_memory.recall("anything")  # the index is loaded before the import
    other_memory.import_file(path)
    assert ids(other_memory.recall("deploy release")) == [made.memory.id]
    assert ids(other_memory.recall("#456")) == [made.memory.id]


def test_export_of_a_project_holds_its_memories_and_global_ones(fake_memory: MemoryService) -> None:
    mine = fake_memory.remember("Mine", project="/src/a").memory.id
    fake_memory.remember("Theirs", project="/src/b")
    shared = fake_memory.remember("Shared", scope="global").memory.id
    lines = [json.loads(line) for line in export_text(fake_memory, project="/src/a").splitlines()]
    assert {line["id"] for line in lines if line["type"] == "memory"} == {mine, shared}


def test_markdown_export_groups_memories_by_category(fake_memory: MemoryService) -> None:
    fake_memory.remember("Kùzu stores the graph", category="fact")
    fake_memory.remember("We chose Kùzu", category="decision")
    text = export_text(fake_memory, fmt="markdown")
    lines = text.splitlines()
    assert lines[0] == "# Memories"
    decisions, facts = lines.index("## Decisions"), lines.index("## Facts")
    assert decisions < facts
    assert lines[decisions + 2].startswith("- We chose Kùzu")
    assert lines[facts + 2].startswith("- Kùzu stores the graph")


def test_an_unknown_export_format_is_invalid(fake_memory: MemoryService) -> None:
    with pytest.raises(InvalidInputError, match="jsonl"):
        export_text(fake_memory, fmt="yaml")


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
    fake_memory: MemoryService, tmp_path: Path, bad_line: bytes, complaint: str
) -> None:
    fake_memory.remember("Already here")
    before = snapshot(fake_memory)
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"\n".join([_memory_line("m1").encode(), _memory_line("m2").encode(), bad_line, b""]))
    with pytest.raises(ImportFileError) as raised:
        fake_memory.import_file(path)
    assert [number for number, _ in raised.value.problems] == [3]
    assert complaint in raised.value.problems[0][1]
    assert "nothing was imported" in str(raised.value)
    assert snapshot(fake_memory) == before


def test_an_import_file_lists_every_invalid_line(fake_memory: MemoryService, tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(["oops", _memory_line("m1"), _memory_line("m2", scope="team"), "[]"]), "utf-8")
    with pytest.raises(ImportFileError) as raised:
        fake_memory.import_file(path)
    assert [number for number, _ in raised.value.problems] == [1, 3, 4]
    assert fake_memory.stats().total == 0


def test_an_import_of_a_missing_file_is_invalid(fake_memory: MemoryService, tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="No such file"):
        fake_memory.import_file(tmp_path / "nope.jsonl")


def test_an_import_may_link_to_memories_already_in_the_store(
    fake_memory: MemoryService, tmp_path: Path
) -> None:
    here = fake_memory.remember("Already here").memory.id
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
    fake_memory.import_file(path)
    assert [(x.source, x.target, x.kind) for x in fake_memory.show(here).links] == [
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


def test_select_picks_by_category_status_and_age(fake_memory: MemoryService) -> None:
    now = datetime(2026, 5, 1, tzinfo=UTC)
    fake_memory.writer.clock = lambda: now - timedelta(days=120)
    old_event = fake_memory.remember("Deployed release 1.2 to staging", category="event").memory.id
    old_fact = fake_memory.remember("The staging host is stage-3", category="fact").memory.id
    fake_memory.writer.clock = lambda: now - timedelta(days=5)
    new_event = fake_memory.remember("Deployed release 1.3 to production", category="event").memory.id
    fake_memory.writer.clock = lambda: now

    picked = fake_memory.select(categories=["event"], before=now - timedelta(days=90))

    assert [r.id for r in picked] == [old_event]
    assert {r.id for r in fake_memory.select(before=now - timedelta(days=90))} == {old_event, old_fact}
    assert [r.id for r in fake_memory.select(categories=["event"], since=now - timedelta(days=30))] == [
        new_event
    ]
    fake_memory.archive(old_event)
    assert fake_memory.select(categories=["event"], before=now - timedelta(days=90)) == []
    assert [r.id for r in fake_memory.select(statuses=[Status.ARCHIVED])] == [old_event]


def test_select_refuses_an_unknown_category(fake_memory: MemoryService) -> None:
    with pytest.raises(InvalidInputError):
        fake_memory.select(categories=["events"])
