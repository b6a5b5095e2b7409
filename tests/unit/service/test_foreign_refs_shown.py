"""What an older graphmem fetched from GitLab for a GitHub checkout's ref (a GitLab project of the
same path's MR) stays stored, but is never shown: not in get_context's heading, not among its
related entities, not as a file's "Changed by", not in the graph view, not among the entities of a
recall's hits, of remember's answer or of a memory's detail (show). A GitLab checkout's ref shows
its title as before. On the Kùzu and the PostgreSQL stores, each with its own GitLab graph."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from support.git_repo import git, new_repo
from support.stores import new_kuzu, postgres_url

from graphmem.adapters.embedders import HashEmbedder
from graphmem.adapters.git import gitlab_path, origin_name
from graphmem.adapters.kuzu_code import KuzuCodeGraph
from graphmem.adapters.kuzu_gitlab import KuzuGitLabGraph
from graphmem.adapters.postgres_code import PostgresCodeGraph
from graphmem.adapters.postgres_gitlab import PostgresGitLabGraph
from graphmem.adapters.postgres_store import PostgresGraphStore
from graphmem.adapters.postgres_vectors import PgVectorIndex
from graphmem.adapters.vector_index import HnswVectorIndex
from graphmem.app import build_memory
from graphmem.core.gitlab import MergeRequestData
from graphmem.core.gitlab_edits import GitLabAnswer, edit_for
from graphmem.core.gitlab_ports import GitLabGraph
from graphmem.core.keys import file_key
from graphmem.core.models import Entity, EntityKind
from graphmem.core.ports import CodeGraph, GraphStore, VectorIndex
from graphmem.core.projects import ForeignRemote, foreign_remote
from graphmem.core.timeparse import utc_now
from graphmem.service.enrichment import Enricher, EnrichmentConfig
from graphmem.service.memory import MemoryService
from graphmem.service.semantic import SemanticIndex
from graphmem.settings import load_settings

DIMENSION = 64
AT = datetime(2026, 5, 1, tzinfo=UTC)
REFUND = "src/refund.py"
Opened = tuple[GraphStore, CodeGraph, GitLabGraph, Callable[[int], VectorIndex]]


def _kuzu(tmp_path: Path, request: pytest.FixtureRequest) -> Opened:
    store = new_kuzu(tmp_path / "kuzu", request, DIMENSION)
    return store, KuzuCodeGraph(store), KuzuGitLabGraph(store), HnswVectorIndex


def _postgres(tmp_path: Path, request: pytest.FixtureRequest) -> Opened:
    store = PostgresGraphStore(postgres_url(request, DIMENSION), dimension=DIMENSION)
    return store, PostgresCodeGraph(store), PostgresGitLabGraph(store), lambda d: PgVectorIndex(store, d)


@pytest.fixture(params=[_kuzu, _postgres], ids=["kuzu", "postgres"])
def memory(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[MemoryService]:
    store, code, gitlab, index = request.param(tmp_path, request)
    embedder = HashEmbedder(DIMENSION)

    def namespace(project: str) -> str | None:
        return gitlab_path(Path(project))

    def foreign(project: str) -> ForeignRemote | None:
        return foreign_remote(origin_name(Path(project)))

    enricher = Enricher(
        gitlab, None, EnrichmentConfig(), namespace=namespace, clock=utc_now, code=code, foreign=foreign
    )
    service = build_memory(
        store,
        SemanticIndex(store, embedder, index),
        load_settings(data_dir=tmp_path / "data"),
        data_dir=tmp_path / "data",
        namespace=namespace,
        code=code,
        enricher=enricher,
    )
    yield service
    service.close()


def checkout(path: Path, origin: str) -> str:
    repo = new_repo(path)
    git(repo, "remote", "add", "origin", origin)
    (repo / "src").mkdir()
    (repo / REFUND).write_text("def refund():\n    pass\n", "utf-8")
    return str(repo)


def fetched_before(memory: MemoryService, project: str, namespace: str) -> None:
    """What a graphmem that did not tell forges apart stored of ``namespace!12``: GitLab's title,
    and the checkout's refund.py among the MR's changed files."""
    mr = MergeRequestData(
        project=namespace, iid=12, title=f"Rounding fix of {namespace}", state="merged", draft=False,
        author=None, assignees=(), reviewers=(), labels=(), milestone=None, source_branch="x",
        target_branch="main", merged_at=AT, created_at=AT, updated_at=AT, description="",
        web_url=f"https://gitlab.com/{namespace}", changed_files=(), changed_files_total=1, closes=(),
    )  # fmt: skip
    key = f"MergeRequest:{namespace}!12"
    answer = GitLabAnswer(
        key, mr, 0, AT, AT + timedelta(days=1), local=(namespace, project),
        file_keys=[(file_key(project, REFUND), REFUND)],
    )  # fmt: skip
    assert memory.enricher is not None
    memory.enricher.graph.apply(edit_for(answer))


def test_a_github_checkouts_ref_is_headed_without_the_title_gitlab_gave_another_project(
    memory: MemoryService, tmp_path: Path
) -> None:
    shop = checkout(tmp_path / "shop", "git@github.com:acme/shop.git")
    memory.remember("Retries land in !12", category="fact", project=shop)
    fetched_before(memory, shop, "acme/shop")

    bundle = memory.get_context("!12", project=shop)

    assert bundle.entity is not None and bundle.entity.title == ""
    assert bundle.markdown.startswith("## Memory: !12\n")
    assert "Rounding fix" not in bundle.markdown


def test_a_github_checkouts_ref_is_related_without_the_title_gitlab_gave_another_project(
    memory: MemoryService, tmp_path: Path
) -> None:
    shop = checkout(tmp_path / "shop", "git@github.com:acme/shop.git")
    memory.remember("Retries of #14 land in !12", category="fact", project=shop)
    fetched_before(memory, shop, "acme/shop")

    bundle = memory.get_context("#14", project=shop)

    related = {entity.name: entity.title for entity, _ in bundle.related}
    assert related.get("!12") == ""
    assert "Rounding fix" not in bundle.markdown
    assert "titles from GitLab" not in bundle.markdown


def test_a_github_checkouts_file_is_not_said_changed_by_another_projects_mr(
    memory: MemoryService, tmp_path: Path
) -> None:
    shop = checkout(tmp_path / "shop", "git@github.com:acme/shop.git")
    memory.remember(f"Refunds are retried in {REFUND} since !12", category="fact", project=shop)
    fetched_before(memory, shop, "acme/shop")

    bundle = memory.get_context(REFUND, project=shop)

    assert "Changed by" not in dict(bundle.code)
    assert "Rounding fix" not in bundle.markdown


def titles(entities: Iterable[Entity]) -> dict[str, str]:
    return {entity.name: entity.title for entity in entities}


def test_a_recalls_hits_name_a_github_checkouts_ref_without_the_title_gitlab_gave_another_project(
    memory: MemoryService, tmp_path: Path
) -> None:
    shop = checkout(tmp_path / "shop", "git@github.com:acme/shop.git")
    remembered = memory.remember("Retries land in !12", category="fact", project=shop)
    fetched_before(memory, shop, "acme/shop")

    found = memory.recall("retries land", project=shop)

    hit = {h.memory.id: h for h in found.hits}[remembered.memory.id]
    assert titles(hit.entities) == {"!12": ""}


def test_remember_again_answers_with_a_github_checkouts_ref_without_another_projects_title(
    memory: MemoryService, tmp_path: Path
) -> None:
    shop = checkout(tmp_path / "shop", "git@github.com:acme/shop.git")
    memory.remember("Retries land in !12", category="fact", project=shop)
    fetched_before(memory, shop, "acme/shop")

    again = memory.remember("Retries land in !12", category="fact", project=shop)

    assert not again.created
    assert titles(again.entities) == {"!12": ""}


def test_show_details_a_memory_about_a_github_checkouts_ref_without_another_projects_title(
    memory: MemoryService, tmp_path: Path
) -> None:
    shop = checkout(tmp_path / "shop", "git@github.com:acme/shop.git")
    remembered = memory.remember("Retries land in !12", category="fact", project=shop)
    fetched_before(memory, shop, "acme/shop")

    detail = memory.show(remembered.memory.id)

    assert titles(detail.entities) == {"!12": ""}


def test_the_graph_view_draws_a_github_checkouts_ref_without_another_projects_title_or_changes(
    memory: MemoryService, tmp_path: Path
) -> None:
    shop = checkout(tmp_path / "shop", "git@github.com:acme/shop.git")
    remembered = memory.remember(f"Refunds are retried in {REFUND} since !12", category="fact", project=shop)
    fetched_before(memory, shop, "acme/shop")
    graph = memory.parts.neighbourhood

    mr = graph.around("MergeRequest:acme/shop!12")
    refund = graph.around(file_key(shop, REFUND))
    about = graph.around(remembered.memory.id)

    assert mr.center.title == "" and [e.relation for e in mr.edges] == ["ABOUT"]
    assert "CHANGES" not in {e.relation for e in refund.edges}
    assert {n.label: n.title for n in about.nodes}.get("!12") == ""


def test_a_gitlab_checkouts_ref_shows_gitlabs_title_and_changes_as_before(
    memory: MemoryService, tmp_path: Path
) -> None:
    api = checkout(tmp_path / "api", "git@gitlab.com:acme/api.git")
    memory.remember(f"Retries of #14 land in !12, in {REFUND}", category="fact", project=api)
    fetched_before(memory, api, "acme/api")

    headed = memory.get_context("!12", project=api)
    related = memory.get_context("#14", project=api)
    changed = memory.get_context(REFUND, project=api)

    assert headed.markdown.startswith("## Memory: !12 (Rounding fix of acme/api)\n")
    assert {e.name: e.title for e, _ in related.related if e.kind is EntityKind.MERGE_REQUEST} == {
        "!12": "Rounding fix of acme/api"
    }
    assert dict(changed.code)["Changed by"] == ["- !12 Rounding fix of acme/api (merged 2026-05-01)"]
    drawn = memory.parts.neighbourhood.around("MergeRequest:acme/api!12")
    assert drawn.center.title == "Rounding fix of acme/api" and "CHANGES" in {e.relation for e in drawn.edges}


def test_a_gitlab_checkouts_ref_keeps_gitlabs_title_in_recall_remember_and_show(
    memory: MemoryService, tmp_path: Path
) -> None:
    api = checkout(tmp_path / "api", "git@gitlab.com:acme/api.git")
    remembered = memory.remember("Retries land in !12", category="fact", project=api)
    fetched_before(memory, api, "acme/api")

    found = memory.recall("retries land", project=api)
    again = memory.remember("Retries land in !12", category="fact", project=api)
    detail = memory.show(remembered.memory.id)

    hit = {h.memory.id: h for h in found.hits}[remembered.memory.id]
    assert titles(hit.entities) == {"!12": "Rounding fix of acme/api"}
    assert titles(again.entities) == {"!12": "Rounding fix of acme/api"}
    assert titles(detail.entities) == {"!12": "Rounding fix of acme/api"}
