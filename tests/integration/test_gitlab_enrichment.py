"""GitLab enrichment end to end: the real client against the fixture server, a real Kùzu store
(and the same on a PostgreSQL store).

remember "... !12 ..." -> enrich -> get_context shows the MR's files, symbols (the sample
repository is bootstrapped first), closing issue, epic and memories; every fault leaves
memory operations working and nothing lost; the token never leaves the process.
"""

from __future__ import annotations

import asyncio
import io
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from support.daemons import start_daemon, token_for, wait_healthy
from support.fake_gitlab import PROJECT, TOKEN, FakeGitLab, shop_checkout
from support.stores import postgres_url

from graphmem.adapters.embedders import HashEmbedder
from graphmem.app import open_memory
from graphmem.cli.gitlab import status_lines
from graphmem.core.enrichment import EnrichState
from graphmem.errors import ConfigError, InvalidInputError
from graphmem.service.memory import MemoryService
from graphmem.settings import load_settings

pytestmark = pytest.mark.integration

MR = "MergeRequest:acme/shop/backend!12"


@pytest.fixture
def gitlab() -> Iterator[FakeGitLab]:
    with FakeGitLab() as server:
        yield server


@pytest.fixture
def shop(tmp_path: Path) -> str:
    """The sample repository as a git checkout whose origin is acme/shop/backend."""
    return shop_checkout(tmp_path)


def open_with(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str, **env: str) -> MemoryService:
    monkeypatch.delenv("GITLAB_TOKEN", raising=False)
    monkeypatch.setenv("GRAPHMEM_GITLAB_TOKEN", TOKEN)
    monkeypatch.setenv("GRAPHMEM_GITLAB__URL", url)
    monkeypatch.setenv("GRAPHMEM_GITLAB__TIMEOUT_SECONDS", "1")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return open_memory(load_settings(data_dir=tmp_path / "data"), embedder=HashEmbedder(64))


@pytest.fixture(params=["kuzu", "postgres"])
def memory(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gitlab: FakeGitLab
) -> Iterator[MemoryService]:
    """The service on the embedded store, then on a team's PostgreSQL store (docs/team.md)."""
    store = {"GRAPHMEM_STORE_URL": postgres_url(request)} if request.param == "postgres" else {}
    service = open_with(tmp_path, monkeypatch, gitlab.url, **store)
    yield service
    service.close()


def state_of(memory: MemoryService, key: str) -> EnrichState:
    assert memory.enricher is not None
    return memory.enricher.graph.rows([key])[key].state


# -- the whole path ------------------------------------------------------------------


def test_get_context_on_an_enriched_mr_shows_files_symbols_issues_epic_and_memories(
    memory: MemoryService, shop: str
) -> None:
    memory.bootstrap(shop, history=0)
    decision = memory.remember("We round refunds half-even, see !12", category="decision", project=shop)
    about_issue = memory.remember("Finance reported the cent error in #34", category="fact", project=shop)
    report = memory.enrich(project=shop)
    assert report.counts.get("fetched", 0) >= 3  # !12, #34 it closes, &5 the issue is in
    bundle = memory.get_context("!12", project=shop)
    text = bundle.markdown
    assert "Refunds round half-even and keep a 1% fee" in text
    assert "@alice" in text and "@bob" in text and "fix/refund-rounding" in text
    assert "- src/shop/refund.py (L1–5, L9–17)" in text
    assert "`RefundService.apply`" in text and "`RefundService.fee`" in text
    assert "acme/shop/backend#34 Refunds round to the wrong cent" in text
    assert "part of epic acme/shop&5 Refunds without surprises" in text
    ids = {item.hit.memory.id for items in bundle.groups.values() for item in items}
    assert {decision.memory.id, about_issue.memory.id} <= ids
    assert not any("not enriched" in note for note in bundle.notes)


def test_get_context_on_a_file_lists_the_mrs_that_changed_it(memory: MemoryService, shop: str) -> None:
    memory.bootstrap(shop, history=0)
    memory.enrich(["!12"], project=shop)
    bundle = memory.get_context("src/shop/refund.py", project=shop)
    changed_by = dict(bundle.code)["Changed by"]
    assert changed_by == ["- !12 Refunds round half-even and keep a 1% fee (merged 2024-05-16)"]


def test_get_context_on_an_issue_and_an_epic(memory: MemoryService, shop: str) -> None:
    memory.enrich(["#34", "&5"], project=shop)
    issue = dict(memory.get_context("#34", project=shop).code)
    assert issue["Epic"] == ["- acme/shop&5 Refunds without surprises"]
    assert any("!12" in line for line in issue["Merge requests"])
    epic = dict(memory.get_context("&5", project=shop).code)
    assert any("#34" in line for line in epic["Child issues (2)"])
    assert epic["Parent epic"][0].startswith("- acme&2")


def test_a_ref_not_yet_enriched_says_so(memory: MemoryService, shop: str) -> None:
    memory.remember("Look at !13 later", project=shop)
    bundle = memory.get_context("!13", project=shop)
    assert any("not enriched yet" in note for note in bundle.notes)


@pytest.mark.parametrize("ref", ["!77", "#77", "&77"])
def test_a_ref_gitlab_does_not_know_says_so_without_empty_facts(
    memory: MemoryService, shop: str, ref: str
) -> None:
    memory.remember(f"Look at {ref} later", project=shop)
    assert memory.enrich(project=shop).counts == {"missing": 1}
    bundle = memory.get_context(ref, project=shop)
    assert any("GitLab has no" in note and "(404)" in note for note in bundle.notes)
    assert bundle.code == [] and "****" not in bundle.markdown and "author unknown" not in bundle.markdown


def test_enriching_again_within_the_ttl_asks_nothing_and_refresh_does(
    memory: MemoryService, shop: str, gitlab: FakeGitLab
) -> None:
    memory.enrich(["!12"], project=shop)
    gitlab.reset_requests()
    assert memory.enrich(["!12"], project=shop).counts == {"fresh": 1}
    assert gitlab.count() == 0
    assert memory.enrich(["!12"], project=shop, refresh=True).counts == {"fetched": 1}


def test_refresh_asks_the_instance_even_within_the_clients_cache(
    memory: MemoryService, shop: str, gitlab: FakeGitLab
) -> None:
    memory.enrich(["!12"], project=shop)
    route = f"/projects/{PROJECT}/merge_requests/12"
    changed = gitlab.fixture(route)
    changed.update(title="Refunds round half-up after all", updated_at="2026-11-20T09:00:00.000Z")
    gitlab.set_route(route, changed)

    memory.enrich(["!12"], project=shop, refresh=True)

    assert "Refunds round half-up after all" in memory.get_context("!12", project=shop).markdown


def test_bad_refs_name_the_accepted_forms(memory: MemoryService) -> None:
    with pytest.raises(InvalidInputError, match=r"!12 \(merge request\), #4 \(issue\), &7 \(epic\)"):
        memory.enrich(["not-a-ref"])


def test_without_a_token_nothing_is_fetched_and_status_says_not_configured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gitlab: FakeGitLab
) -> None:
    monkeypatch.delenv("GITLAB_TOKEN", raising=False)
    monkeypatch.setenv("GRAPHMEM_GITLAB__URL", gitlab.url)
    service = open_memory(load_settings(data_dir=tmp_path / "data"), embedder=HashEmbedder(64))
    try:
        service.remember("see acme/shop/backend!12")
        status = service.gitlab_status(probe=True)
        assert not status.configured and status.token == "missing" and status.pending == 1
        assert "not configured" in (status.paused or "")
        with pytest.raises(ConfigError, match="GRAPHMEM_GITLAB_TOKEN"):
            service.enrich()
        assert service.enrich_due() == 0
        assert gitlab.count() == 0
    finally:
        service.close()


# -- faults ----------------------------------------------------------------------------


def memory_still_works(memory: MemoryService, shop: str) -> None:
    made = memory.remember("Refund fees stay at 1% until finance says otherwise", project=shop)
    assert memory.recall("refund fees finance", project=shop, plan="lexical").hits
    assert memory.show(made.memory.id).memory.text.startswith("Refund fees")


def test_a_rejected_token_pauses_the_queue_without_retrying(
    memory: MemoryService, shop: str, gitlab: FakeGitLab
) -> None:
    memory.remember("see !12 and #34", project=shop)
    gitlab.fail(401)
    report = memory.enrich(project=shop)
    assert report.counts.get("deferred") == 2 and "rejected the token" in (report.paused or "")
    asked = gitlab.count()
    assert memory.enrich_due() == 0 and memory.enrich_due() == 0
    assert gitlab.count() == asked  # no retry storm
    status = memory.gitlab_status()
    assert status.token == "rejected" and status.pending == 2
    assert state_of(memory, MR) is EnrichState.PENDING
    memory_still_works(memory, shop)
    gitlab.clear_faults()
    assert memory.enrich(project=shop).counts.get("fetched", 0) >= 2  # asked explicitly: tried again


@pytest.mark.parametrize(("mode", "state"), [(404, EnrichState.MISSING), (403, EnrichState.FORBIDDEN)])
def test_404_and_403_mark_the_entity_and_are_not_retried_every_time(
    memory: MemoryService, shop: str, gitlab: FakeGitLab, mode: int, state: EnrichState
) -> None:
    memory.remember("see !12", project=shop)
    gitlab.fail(mode, route="merge_requests/12")
    report = memory.enrich(project=shop)
    assert report.counts == {state.value: 1} and report.problems
    assert state_of(memory, MR) is state
    gitlab.reset_requests()
    assert memory.enrich_due() == 0 and memory.enrich(project=shop).counts == {}
    assert gitlab.count() == 0
    memory_still_works(memory, shop)
    assert memory.show(memory.list(project=shop)[-1].id).entities  # the ref's link is kept


def test_a_project_the_token_cannot_see_is_missing(memory: MemoryService, shop: str) -> None:
    memory.remember("see secret/vault!3", project=shop)
    assert memory.enrich(project=shop).counts == {"missing": 1}
    assert state_of(memory, "MergeRequest:secret/vault!3") is EnrichState.MISSING


def test_429_waits_retry_after(memory: MemoryService, shop: str, gitlab: FakeGitLab) -> None:
    memory.remember("see !12", project=shop)
    gitlab.fail(429, retry_after_s=120)
    report = memory.enrich(project=shop)
    assert report.counts == {"deferred": 1} and "asked to wait" in (report.paused or "")
    status = memory.gitlab_status()
    assert status.rate_limited_until is not None and status.reachable
    asked = gitlab.count()
    assert memory.enrich_due() == 0 and gitlab.count() == asked  # the worker waits too
    assert state_of(memory, MR) is EnrichState.PENDING
    memory_still_works(memory, shop)


@pytest.mark.parametrize("mode", [500, 503, "malformed", "html", "slow"])
def test_server_errors_timeouts_and_garbage_back_off(
    memory: MemoryService, shop: str, gitlab: FakeGitLab, mode: int | str
) -> None:
    memory.remember("see !12", project=shop)
    gitlab.fail(mode, delay_s=3.0)
    report = memory.enrich(project=shop)
    assert report.counts == {"error": 1}
    assert state_of(memory, MR) is EnrichState.ERROR
    status = memory.gitlab_status()
    assert status.reachable is False and status.last_error
    asked = gitlab.count()
    assert memory.enrich_due() == 0 and gitlab.count() == asked  # backing off
    memory_still_works(memory, shop)
    gitlab.clear_faults()
    assert memory.enrich(["!12"], project=shop).counts == {"fetched": 1}


def test_an_enriched_mr_keeps_its_facts_when_a_refresh_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shop: str, gitlab: FakeGitLab
) -> None:
    first = open_with(tmp_path, monkeypatch, gitlab.url)
    first.enrich(["!12"], project=shop)
    first.close()
    memory = open_with(tmp_path, monkeypatch, gitlab.url)  # a new process: no cached answers
    try:
        gitlab.fail(500)
        assert memory.enrich(["!12"], project=shop, refresh=True).counts == {"error": 1}
        assert state_of(memory, MR) is EnrichState.OK
        assert "Refunds round half-even" in memory.get_context("!12", project=shop).markdown
    finally:
        memory.close()


def test_offline_keeps_everything(memory: MemoryService, shop: str, gitlab: FakeGitLab) -> None:
    memory.remember("see !12", project=shop)
    gitlab.stop()
    assert memory.enrich(project=shop).counts == {"error": 1}
    assert memory.gitlab_status(probe=True).reachable is False
    memory_still_works(memory, shop)


def test_an_entity_waiting_for_its_retry_counts_as_waiting(
    memory: MemoryService, shop: str, gitlab: FakeGitLab
) -> None:
    memory.remember("see !12", project=shop)
    gitlab.stop()
    memory.enrich(project=shop)  # fails: retried after a back-off

    status = memory.gitlab_status()

    assert status.by_state == {"error": 1} and status.pending == 1
    assert any("waiting for enrichment: 1;" in line for line in status_lines(status))


def test_get_context_while_offline_says_why_in_one_sentence(
    memory: MemoryService, shop: str, gitlab: FakeGitLab
) -> None:
    memory.remember("see !12", project=shop)
    gitlab.stop()
    memory.enrich(project=shop)
    [note] = memory.get_context("!12", project=shop).notes
    assert note.startswith("!12 is not enriched yet: Cannot connect to GitLab at")
    assert "tries again later" in note and "(Cannot" not in note


def test_a_huge_mr_is_bounded_and_counted(memory: MemoryService, shop: str, gitlab: FakeGitLab) -> None:
    gitlab.add_huge_merge_request(99, 3_000)
    memory.enrich(["!99"], project=shop)
    mr = memory.get_context("!99", project=shop, max_tokens=4000)
    files = next(title for title, _ in mr.code if title.startswith("Changed files"))
    assert files == "Changed files (500 of 3000)"
    changed = memory.enricher.graph.merge_request("MergeRequest:acme/shop/backend!99")  # type: ignore[union-attr]
    assert changed is not None and len(changed.changed_files) == 500


# -- the token -------------------------------------------------------------------------


def test_the_token_never_reaches_the_store_exports_logs_or_status(
    memory: MemoryService, shop: str, gitlab: FakeGitLab, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    memory.remember("see !12 and #34", project=shop)
    memory.enrich(project=shop)
    gitlab.fail(401)
    memory.enrich(["!13"], project=shop)
    status = repr(memory.gitlab_status(probe=True))
    out = io.StringIO()
    memory.export(out)
    memory.close()
    stored = b"".join(p.read_bytes() for p in (tmp_path / "data").rglob("*") if p.is_file())
    assert TOKEN.encode() not in stored
    assert TOKEN not in out.getvalue() and TOKEN not in status and TOKEN not in caplog.text
    assert TOKEN not in repr(load_settings())


# -- the MCP tool, through a real daemon ---------------------------------------------------


def call(url: str, tool: str, **arguments: Any) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with Client(url, auth=token_for(url)) as client:
            result = await client.call_tool(tool, arguments)
            assert result.structured_content is not None
            return result.structured_content

    return asyncio.run(go())


def test_enrich_entity_and_memory_status_over_mcp(tmp_path: Path, gitlab: FakeGitLab, shop: str) -> None:
    daemon = start_daemon(
        tmp_path / "daemon-data",
        GRAPHMEM_GITLAB_TOKEN=TOKEN,
        GRAPHMEM_GITLAB__URL=gitlab.url,
        GITLAB_TOKEN="",
    )
    try:
        wait_healthy(daemon)
        url = daemon.mcp_url
        result = call(url, "enrich_entity", ref="!12", project=shop)
        assert result["outcome"] == "fetched" and result["gitlab"]["token"] == "ok"
        context = call(url, "get_context", target="!12", project=shop)
        assert "src/shop/refund.py" in context["markdown"]
        status = call(url, "memory_status")
        assert status["gitlab"]["configured"] and status["gitlab"]["reachable"]
        call(url, "remember", text="The fee rule came with #35", project=shop)
        assert TOKEN not in str(status) and TOKEN not in daemon.log.read_text()
    finally:
        daemon.stop()
