"""The forge's lifecycle rules end to end: the real GitLab client against the fixture server, a real
Kùzu store, the service as ``open_memory`` builds it. An MR moves opened → merged, an issue closed →
reopened, an MR is closed unmerged; the memories follow, the history says why, undo restores them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.fake_gitlab import TOKEN, FakeGitLab, shop_checkout

from graphmem.adapters.embedders import HashEmbedder
from graphmem.app import open_memory
from graphmem.core.models import Category, Status
from graphmem.core.timeparse import utc_now
from graphmem.service.memory import MemoryService
from graphmem.settings import load_settings

pytestmark = pytest.mark.integration

MR_13 = "/projects/acme/shop/backend/merge_requests/13"
ISSUE_34 = "/projects/acme/shop/backend/issues/34"


@pytest.fixture
def gitlab() -> Iterator[FakeGitLab]:
    with FakeGitLab() as server:
        yield server


@pytest.fixture
def memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gitlab: FakeGitLab) -> Iterator[MemoryService]:
    monkeypatch.delenv("GITLAB_TOKEN", raising=False)
    monkeypatch.setenv("GRAPHMEM_GITLAB_TOKEN", TOKEN)
    monkeypatch.setenv("GRAPHMEM_GITLAB__URL", gitlab.url)
    service = open_memory(load_settings(data_dir=tmp_path / "data"), embedder=HashEmbedder(64))
    service = service.bound(shop_checkout(tmp_path))
    yield service
    service.close()


def answer(gitlab: FakeGitLab, route: str, **changes: Any) -> None:
    payload = gitlab.fixture(route)
    payload.update({k: v.isoformat() if hasattr(v, "isoformat") else v for k, v in changes.items()})
    gitlab.set_route(route, payload)


def status(memory: MemoryService, memory_id: str) -> Status:
    return memory.show(memory_id).memory.status


def test_merge_close_and_reopen_change_the_memories_and_undo_restores_them(
    memory: MemoryService, gitlab: FakeGitLab
) -> None:
    blocker = memory.remember("Releases are blocked by !13.", category=Category.BLOCKER).memory.id
    decision = memory.remember("We switch refund retries to tenacity in !13.", category=Category.DECISION)
    deploys = memory.remember("Deploys are blocked until #34 is fixed.", category=Category.BLOCKER).memory.id
    answer(gitlab, ISSUE_34, state="opened", closed_at=None)
    memory.enrich(["!13", "#34"], refresh=True)

    answer(gitlab, MR_13, state="closed", updated_at=utc_now())
    memory.enrich(["!13"], refresh=True)
    assert status(memory, decision.memory.id) is Status.NOT_MERGED
    assert status(memory, blocker) is Status.ACTIVE

    answer(gitlab, MR_13, state="merged", merged_at=utc_now())
    memory.enrich(["!13"], refresh=True)
    [resolved] = memory.history(blocker)
    assert status(memory, blocker) is Status.RESOLVED and resolved.rule == "mr-merged-resolves-blocker"

    answer(gitlab, ISSUE_34, state="closed", closed_at=utc_now())
    memory.enrich(["#34"], refresh=True)
    answer(gitlab, ISSUE_34, state="reopened", closed_at=None, updated_at=utc_now())
    memory.enrich(["#34"], refresh=True)
    assert [e.rule for e in memory.history(deploys)] == [
        "issue-reopened-reopens-blocker",
        "issue-closed-resolves-blocker",
    ]
    assert status(memory, deploys) is Status.ACTIVE

    memory.undo(resolved.id)
    memory.undo(memory.history(decision.memory.id)[0].id)
    assert status(memory, blocker) is Status.ACTIVE
    back, before = memory.show(decision.memory.id).memory, decision.memory
    assert (back.status, back.text, back.category, back.valid_to) == (
        before.status, before.text, before.category, before.valid_to,
    )  # fmt: skip
