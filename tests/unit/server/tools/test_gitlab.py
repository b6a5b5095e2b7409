"""The GitLab tool (enrich_entity) through an MCP client, on a daemon without GitLab configured.
The fetching itself: tests/unit/service/test_enrichment.py and
tests/integration/test_gitlab_enrichment.py."""

from __future__ import annotations

from support.tools_client import Tools


def test_without_gitlab_enrich_entity_says_how_to_configure_it(tools: Tools) -> None:
    message = tools.refused("enrich_entity", ref="!12", project="/work/shop")

    assert message.startswith("GitLab is not configured: set GRAPHMEM_GITLAB_TOKEN")
    assert "docs/gitlab.md" in message


def test_a_ref_too_long_is_refused_before_gitlab_is_asked(tools: Tools) -> None:
    message = tools.refused("enrich_entity", ref="!" + "1" * 2001)

    assert message.startswith("Invalid arguments for enrich_entity: ref:")
