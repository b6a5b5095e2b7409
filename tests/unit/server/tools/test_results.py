"""A tool's answer is serialised through its declared result type, which keeps only the keys it
declares: the answers whose keys come from elsewhere (the daemon's status, a context bundle)
carry every key their source has."""

from __future__ import annotations

from support.tools_client import Tools

from graphmem.service.memory import MemoryService


def test_memory_status_carries_every_key_of_the_daemons_status(tools: Tools) -> None:
    assert set(tools.ok("memory_status")) == set(tools.runtime.status())


def test_a_context_carries_every_key_of_its_bundle(tools: Tools, memory_service: MemoryService) -> None:
    memory_service.remember("Refunds keep the card fee")
    bundle = memory_service.get_context("refunds").to_dict()

    assert set(tools.ok("get_context", target="refunds")) == set(bundle)
    assert set(tools.ok("get_boot_context")) == set(bundle) | {"active_sessions"}
