"""Branch-aware memory over MCP: the proxy's working directory names the checkout, whose branch the
tools write on and see; recall's ``branch`` and ``all_branches``; the mark; a bad name refused."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.tools_client import Tools

from graphmem.server.runtime import Runtime
from graphmem.server.tools import build_mcp
from graphmem.service.memory import MemoryService

SHOP, FEES = "/src/shop", "/src/shop-fees"  # the main checkout and a worktree on feature/fees
BRANCHES = {FEES: "feature/fees"}


@pytest.fixture
def tools(memory_service: MemoryService) -> Iterator[Tools]:
    runtime = Runtime(
        memory_service,
        log_hint="the test's log",
        resolve_project=lambda path: SHOP if path in (SHOP, FEES) else path,
        resolve_branch=BRANCHES.get,
        version="test",
    )
    with Tools(build_mcp(runtime), runtime) as tools:
        yield tools


def ids(answer: dict[str, object]) -> list[str]:
    return [hit["id"] for hit in answer["hits"]]  # type: ignore[attr-defined]


def test_a_memory_remembered_in_a_worktree_is_on_its_branch(tools: Tools) -> None:
    answer = tools.ok("remember", text="Refunds keep the card fee", category="decision", project=FEES)

    assert answer["memory"]["branch"] == "feature/fees"
    assert answer["memory"]["project"] == SHOP


def test_recall_sees_a_branch_memory_from_its_checkout_or_when_asked(tools: Tools) -> None:
    memory_id = tools.ok("remember", text="Refunds keep the card fee", project=FEES)["id"]

    assert ids(tools.ok("recall", query="card fee refunds", project=FEES)) == [memory_id]
    assert ids(tools.ok("recall", query="card fee refunds", project=SHOP)) == []
    named = tools.ok("recall", query="card fee refunds", project=SHOP, branch="feature/fees")
    every = tools.ok("recall", query="card fee refunds", project=SHOP, all_branches=True)
    assert ids(named) == ids(every) == [memory_id]
    assert every["hits"][0]["branch"] == "feature/fees"


def test_context_and_boot_context_follow_the_checkout(tools: Tools, memory_service: MemoryService) -> None:
    stored = tools.ok(
        "remember", text="Always keep the card fee on refunds", category="directive", project=FEES
    )
    memory_service.confirm(stored["id"])  # the user makes the agent's proposal a convention

    on_branch = tools.ok("get_context", target="card fee refunds", project=FEES)["markdown"]
    boot = tools.ok("get_boot_context", project=FEES)["markdown"]

    assert "Always keep" in on_branch and "on branch feature/fees" in on_branch
    assert "Always keep" in boot
    assert "Always keep" not in tools.ok("get_context", target="card fee refunds", project=SHOP)["markdown"]
    assert "Always keep" not in tools.ok("get_boot_context", project=SHOP)["markdown"]


@pytest.mark.parametrize("branch", ["a..b", "x y", "ends/", "-flag", "new\nline", "x" * 251])
def test_a_bad_branch_is_refused_with_how_to_fix_it(tools: Tools, branch: str) -> None:
    message = tools.refused("recall", query="refunds", project=SHOP, branch=branch)

    assert "branch" in message and "failed inside" not in message
