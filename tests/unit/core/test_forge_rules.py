"""The lifecycle rules' table and cues (``core/forge_rules.py``): each rule's example names its ref
as the rule's cue; look-alike sentences that mention the ref in passing do not."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from graphmem.core.forge_rules import RULES, Cue, applies, names_as, reason, rules_for
from graphmem.core.models import Category, EntityKind, MemoryRecord, Scope, Status
from graphmem.core.refs import find_refs

T0 = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


def named(cue: Cue, text: str, raw: str) -> bool:
    [ref] = [r for r in find_refs(text) if r.raw == raw]
    return names_as(cue, text, ref.start, ref.end)


def memory(text: str, category: Category = Category.BLOCKER, status: Status = Status.ACTIVE) -> MemoryRecord:
    return MemoryRecord("mem_x", text, category, Scope.GLOBAL, None, T0, T0, T0, status=status)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
def test_each_rules_example_names_its_ref_as_the_rules_cue(rule: object) -> None:
    assert hasattr(rule, "example")
    text = rule.example  # type: ignore[attr-defined]
    [ref] = find_refs(text)

    assert names_as(rule.cue, text, ref.start, ref.end)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "text",
    [
        "Releases are blocked by !13.",
        "Blocked on MR !13, the refund fix.",
        "Deploys to production are blocked until #35 is fixed.",
        "Blocker: #35",
        "CI on arm64 depends on the fix in !13.",
        "The release needs !13 merged first.",
        "!13 must land first, then we can deploy.",
        "We can't release: !13 blocks it.",
    ],
)
def test_a_blocker_that_names_its_cause(text: str) -> None:
    raw = "!13" if "!13" in text else "#35"
    assert named(Cue.CAUSE, text, raw)


@pytest.mark.parametrize(
    "text",
    [
        "CI is red on arm64; see !13 for the discussion.",
        "The flaky runner blocks deploys, as discussed in !13.",
        "Blocked by the flaky runner (mentioned in !13).",
        "Deploys are blocked by the runner, unlike !13 which was fine.",
        "Releases are not blocked by !13 any more.",
        "The staging database is read-only; !13 changed the docs.",
        "Blocked by #36, reported in #35.",
    ],
)
def test_a_blocker_that_mentions_a_ref_in_passing_is_no_cause(text: str) -> None:
    raw = "!13" if "!13" in text else "#35"
    assert not named(Cue.CAUSE, text, raw)


@pytest.mark.parametrize(
    "text",
    [
        "Waiting for !13 to merge before the refund cleanup.",
        "In progress: #35, rounding in refunds.",
        "Working on #35 this week.",
        "TODO after !13 merges: drop the legacy refund path.",
        "Drop the legacy refund path once !13 is merged.",
        "!13 is still in review.",
    ],
)
def test_work_that_waits_for_a_ref(text: str) -> None:
    raw = "!13" if "!13" in text else "#35"
    assert named(Cue.WAITING, text, raw)


@pytest.mark.parametrize(
    "text",
    [
        "The refund cleanup was planned in !13's description.",
        "We stopped waiting; see !13 for why.",
        "After the incident in #35 we added alerts.",
        "Refunds round half up (#35 explains why).",
    ],
)
def test_work_that_only_mentions_a_ref_waits_for_nothing(text: str) -> None:
    raw = "!13" if "!13" in text else "#35"
    assert not named(Cue.WAITING, text, raw)


@pytest.mark.parametrize(
    "text",
    [
        "We switch refund retries to tenacity in !13.",
        "Refund retries use tenacity (!13).",
        "!13 switches the refund retries to tenacity.",
        "Decided in !13: refunds are idempotent.",
    ],
)
def test_a_decision_tied_to_its_merge_request(text: str) -> None:
    assert named(Cue.TIED, text, "!13")


@pytest.mark.parametrize(
    "text",
    [
        "We keep hand-written retries; see !13 for the rejected tenacity attempt.",
        "Unlike !13, we keep the old schema.",
        "We chose Kùzu (see !13).",
        "Refunds are idempotent, as discussed in !13.",
        "We use tenacity instead of the approach from !13.",
    ],
)
def test_a_decision_that_cites_a_merge_request_is_not_tied_to_it(text: str) -> None:
    assert not named(Cue.TIED, text, "!13")


def test_only_a_changed_state_fires_rules_of_the_entitys_kind() -> None:
    assert rules_for(EntityKind.MERGE_REQUEST, "merged", "merged") == []
    assert {r.name for r in rules_for(EntityKind.MERGE_REQUEST, "opened", "merged")} == {
        "mr-merged-resolves-blocker",
        "mr-merged-finishes-work",
    }
    assert [r.name for r in rules_for(EntityKind.ISSUE, "closed", "reopened")] == [
        "issue-reopened-reopens-blocker"
    ]
    assert rules_for(EntityKind.ISSUE, None, "opened") == []


def test_a_first_fetch_applies_only_to_memories_older_than_the_change() -> None:
    [rule, *_] = rules_for(EntityKind.MERGE_REQUEST, None, "merged")
    old = memory("Blocked by !13.")

    assert applies(rule, old, T0 + timedelta(days=1), seen=False)
    assert not applies(rule, old, T0 - timedelta(days=1), seen=False)
    assert not applies(rule, old, None, seen=False)
    assert applies(rule, old, None, seen=True)


def test_a_rule_applies_only_to_its_categories_and_statuses() -> None:
    [rule, *_] = rules_for(EntityKind.MERGE_REQUEST, "opened", "merged")

    assert not applies(rule, memory("Blocked by !13.", Category.FACT), None, seen=True)
    assert not applies(rule, memory("Blocked by !13.", status=Status.ARCHIVED), None, seen=True)


def test_the_reason_names_the_ref_as_written_and_the_day() -> None:
    [rule, *_] = rules_for(EntityKind.MERGE_REQUEST, "opened", "merged")

    assert reason(rule, "!123", T0) == "!123 merged on 2026-11-20"
    assert reason(rule, "!123", None) == "!123 merged"
