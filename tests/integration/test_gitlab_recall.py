"""Recall follows the GitLab graph: naming !12 finds memories about what it changed and closed.

The real client against the fixture server, a real Kùzu store, the hash embedder: each memory
below shares no word with its query, so only the GitLab edges stored by enrichment can find it.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from support.fake_gitlab import TOKEN, FakeGitLab, shop_checkout

from graphmem.adapters.embedders import HashEmbedder
from graphmem.adapters.gitlab_api import PythonGitLabClient
from graphmem.app import open_memory
from graphmem.core.models import Entity, EntityKind
from graphmem.core.timeparse import utc_now
from graphmem.core.views import why
from graphmem.service.enrichment import Enricher, EnrichmentConfig
from graphmem.service.entity_reach import RECALL_NEIGHBOUR_LIMIT, gitlab_neighbours
from graphmem.service.memory import MemoryService
from graphmem.settings import load_settings

pytestmark = pytest.mark.integration

MR = "MergeRequest:acme/shop/backend!12"


@pytest.fixture
def shop(tmp_path: Path) -> str:
    """The sample repository as a git checkout whose origin is acme/shop/backend."""
    return shop_checkout(tmp_path)


@pytest.fixture
def gitlab() -> Iterator[FakeGitLab]:
    with FakeGitLab() as server:
        yield server


@pytest.fixture
def memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gitlab: FakeGitLab) -> Iterator[MemoryService]:
    monkeypatch.delenv("GITLAB_TOKEN", raising=False)
    monkeypatch.setenv("GRAPHMEM_GITLAB_TOKEN", TOKEN)
    monkeypatch.setenv("GRAPHMEM_GITLAB__URL", gitlab.url)
    monkeypatch.setenv("GRAPHMEM_GITLAB__TIMEOUT_SECONDS", "1")
    service = open_memory(load_settings(data_dir=tmp_path / "data"), embedder=HashEmbedder(64))
    yield service
    service.close()


def recalled(memory: MemoryService, query: str, project: str) -> set[str]:
    return {hit.memory.id for hit in memory.recall(query, project=project).hits}


def test_naming_an_mr_recalls_memories_about_the_files_it_changed(memory: MemoryService, shop: str) -> None:
    about_file = memory.remember("Fees are computed with Decimal in src/shop/refund.py", project=shop).memory
    memory.enrich(["!12"], project=shop)
    hits = memory.recall("what did !12 do", project=shop).hits
    assert about_file.id in {hit.memory.id for hit in hits}
    assert any(rank.channel == "entity" for hit in hits for rank in hit.channels)


def test_without_enrichment_naming_an_mr_does_not_recall_its_files(memory: MemoryService, shop: str) -> None:
    about_file = memory.remember("Fees are computed with Decimal in src/shop/refund.py", project=shop).memory
    assert about_file.id not in recalled(memory, "what did !12 do", shop)


def test_naming_an_mr_recalls_its_changed_symbols_closed_issue_and_epic(
    memory: MemoryService, shop: str
) -> None:
    memory.bootstrap(shop, history=0)
    about_symbol = memory.remember("RefundService.fee must stay idempotent", project=shop).memory
    about_issue = memory.remember("Finance reported the cent error in #34", project=shop).memory
    about_epic = memory.remember("Planning for acme/shop&5 slipped a quarter", project=shop).memory
    unrelated = memory.remember("Checkout speaks three currencies since #35", project=shop).memory
    memory.enrich(["!12", "#34"], project=shop)  # the issue's epic is known once #34 is enriched
    found = recalled(memory, "what did !12 do", shop)
    assert {about_symbol.id, about_issue.id, about_epic.id} <= found  # the epic two edges away
    assert unrelated.id not in found  # #35 is in the same epic, three edges away


def test_naming_an_epic_recalls_the_mr_that_closes_one_of_its_issues(
    memory: MemoryService, shop: str
) -> None:
    about_mr = memory.remember("Alice merged !12 after a long review", project=shop).memory
    memory.enrich(["&5", "#34", "!12"], project=shop)
    hits = memory.recall("what happened in &5", project=shop).hits
    hit = next(hit for hit in hits if hit.memory.id == about_mr.id)
    assert "mentions !12, which closes #34, which is part of &5" in why(hit)


def test_naming_an_issue_recalls_the_mr_that_closes_it_and_its_epic(memory: MemoryService, shop: str) -> None:
    about_mr = memory.remember("Alice merged !12 after a long review", project=shop).memory
    about_epic = memory.remember("Planning for acme/shop&5 slipped a quarter", project=shop).memory
    before = recalled(memory, "status of #34", shop)
    memory.enrich(["#34", "!12"], project=shop)
    after = recalled(memory, "status of #34", shop)
    assert about_mr.id not in before and about_epic.id not in before
    assert {about_mr.id, about_epic.id} <= after


def test_naming_a_file_recalls_the_mrs_that_changed_it(memory: MemoryService, shop: str) -> None:
    about_mr = memory.remember("Alice merged !12 after a long review", project=shop).memory
    memory.enrich(["!12"], project=shop)
    assert about_mr.id in recalled(memory, "who touched src/shop/refund.py", shop)


def test_closing_issues_come_before_changed_files_in_the_neighbours(memory: MemoryService, shop: str) -> None:
    memory.enrich(["!12", "#34"], project=shop)
    assert memory.enricher is not None
    first = memory.enricher.graph.related_edges([MR], 1)
    assert [(s.relation, s.end) for s in first] == [("CLOSES", "Issue:acme/shop/backend#34")]
    related = [s.end for s in memory.enricher.graph.related_edges([MR], 50)]
    assert related[0] == "Issue:acme/shop/backend#34"
    assert f"File:{shop}::src/shop/refund.py" in related and MR not in related


def test_a_huge_mr_adds_at_most_the_limit_of_neighbours(
    memory: MemoryService, shop: str, gitlab: FakeGitLab
) -> None:
    gitlab.add_huge_merge_request(99, 600)
    memory.enrich(["!99"], project=shop)
    huge = Entity("MergeRequest:acme/shop/backend!99", EntityKind.MERGE_REQUEST, "!99", project=shop)
    neighbours = gitlab_neighbours(memory.enricher.graph, [huge])
    assert len(neighbours) == RECALL_NEIGHBOUR_LIMIT
    assert all(step.end.startswith(f"File:{shop}::src/gen/module_") for step in neighbours)


def test_an_mr_enriched_before_the_scan_links_its_symbols_at_its_next_fetch(
    memory: MemoryService, shop: str, gitlab: FakeGitLab
) -> None:
    memory.enrich(["!12"], project=shop)  # no code graph yet: no symbols to link
    memory.bootstrap(shop, history=0)
    about_symbol = memory.remember("RefundService.fee must stay idempotent", project=shop).memory
    assert memory.enricher is not None and memory.code is not None
    assert memory.enricher.graph.changed_symbols(MR) == []
    assert about_symbol.id not in recalled(memory, "what did !12 do", shop)
    # a day later the queue fetches !12 again; GitLab did not change it, the code graph did
    tomorrow = Enricher(
        memory.enricher.graph,
        PythonGitLabClient(gitlab.url, TOKEN),
        EnrichmentConfig(url=gitlab.url, token_set=True),
        namespace=lambda root: "acme/shop/backend",
        clock=lambda: utc_now() + timedelta(days=2),
        code=memory.code,
    )
    assert tomorrow.enrich([MR]).counts == {"fetched": 1}
    assert any(key.endswith("::RefundService.fee") for key in memory.enricher.graph.changed_symbols(MR))
    assert about_symbol.id in recalled(memory, "what did !12 do", shop)
