"""The pure parts of enrichment: keys, relative epics, refs of other forges, back-off, diff ranges
meeting symbols."""

from __future__ import annotations

from graphmem.core.codegraph import SymbolInfo
from graphmem.core.enrichment import (
    backoff_s,
    foreign_ref,
    parse_key,
    relative_namespace,
    symbols_touched,
)
from graphmem.core.models import EntityKind
from graphmem.core.projects import foreign_remote


def test_keys_of_gitlab_projects_parse_and_local_ones_do_not() -> None:
    target = parse_key("MergeRequest:acme/shop/backend!12")
    assert target is not None and (target.kind, target.namespace, target.iid) == (
        EntityKind.MERGE_REQUEST,
        "acme/shop/backend",
        12,
    )
    assert target.key == "MergeRequest:acme/shop/backend!12"
    assert parse_key("Epic:acme&2") is not None
    assert parse_key("Issue:#4") is None  # written outside any project
    assert parse_key("MergeRequest:/home/me/shop!3") is None  # a project with no GitLab remote
    assert parse_key("File:/x::a.py") is None


def test_a_relative_epic_belongs_to_the_projects_group() -> None:
    assert relative_namespace(EntityKind.EPIC, "acme/shop/backend") == "acme/shop"
    assert relative_namespace(EntityKind.ISSUE, "acme/shop/backend") == "acme/shop/backend"
    assert relative_namespace(EntityKind.EPIC, "/home/me/shop") == "/home/me/shop"


def test_a_github_repositorys_own_refs_are_foreign_and_other_projects_are_not() -> None:
    shop = foreign_remote("github.com/acme/shop")

    assert foreign_ref("Issue:acme/shop#12", shop)
    assert foreign_ref("MergeRequest:acme/shop!3", shop)
    assert foreign_ref("Epic:acme&7", shop)  # a bare &7 resolves in the group above the repository
    assert foreign_ref("Issue:Acme/Shop#12", shop)  # GitHub ignores case
    assert not foreign_ref("Issue:acme/backend#12", shop)  # another project, named explicitly
    assert not foreign_ref("Issue:acme/shop#12", foreign_remote("gitlab.com/acme/shop"))  # no remote: None
    assert not foreign_ref("Issue:#12", shop)  # written outside any project
    assert not foreign_ref("File:/src/shop::a.py", shop)


def test_backoff_doubles_and_is_capped() -> None:
    assert [backoff_s(n, base_s=2, cap_s=10) for n in range(5)] == [0.0, 2.0, 4.0, 8.0, 10.0]
    assert backoff_s(10_000, base_s=2, cap_s=900) == 900


def symbol(name: str, start: int, end: int) -> SymbolInfo:
    return SymbolInfo(
        f"Symbol:p::a.py::{name}", "a.py", "function", name, name, start, end, "", None, "", None, None
    )


def test_a_symbol_is_touched_when_a_hunk_meets_its_lines() -> None:
    symbols = [symbol("a", 1, 5), symbol("b", 7, 9), symbol("c", 20, 30)]
    touched = symbols_touched([(5, 7), (31, 40)], symbols)
    assert [s.name for s in touched] == ["a", "b"]
    assert symbols_touched([], symbols) == []
