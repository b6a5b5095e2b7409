"""The GitLab tool (enrich_entity) through an MCP client, on a daemon without GitLab configured.
The fetching itself: tests/unit/service/test_enrichment.py and
tests/integration/test_gitlab_enrichment.py."""

from __future__ import annotations

from pathlib import Path

from support.git_repo import git, new_repo
from support.tools_client import Tools


def test_without_gitlab_enrich_entity_says_how_to_configure_it(tools: Tools) -> None:
    message = tools.refused("enrich_entity", ref="!12", project="/work/shop")

    assert message.startswith("GitLab is not configured: set GRAPHMEM_GITLAB_TOKEN")
    assert "docs/gitlab.md" in message


def test_a_ref_too_long_is_refused_before_gitlab_is_asked(tools: Tools) -> None:
    message = tools.refused("enrich_entity", ref="!" + "1" * 2001)

    assert message.startswith("Invalid arguments for enrich_entity: ref:")


def test_enrich_entity_of_a_github_checkouts_ref_says_why_instead_of_asking_gitlab(
    tools: Tools, tmp_path: Path
) -> None:
    shop = new_repo(tmp_path / "shop")
    git(shop, "remote", "add", "origin", "https://github.com/acme/shop")

    result = tools.ok("enrich_entity", ref="#12", project=str(shop))

    assert (result["outcome"], result["counts"]) == ("foreign", {"foreign": 1})
    assert result["problems"] == [
        "#12: github.com/acme/shop is a GitHub repository, and graphmem enriches GitLab's merge "
        "requests, issues and epics only."
    ]
