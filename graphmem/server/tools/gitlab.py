"""The GitLab tool: enrich_entity."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from graphmem.server.tools.params import Project
from graphmem.server.tools.registry import ToolRegistry
from graphmem.server.tools.results import Enriched


def add_gitlab_tools(tools: ToolRegistry) -> None:
    """Register the tool that fetches an MR, issue or epic from GitLab now."""

    @tools.tool()
    def enrich_entity(
        ref: Annotated[
            str,
            Field(
                description="An MR (!123 or group/proj!123), issue (#45), epic (&6 or group&6), "
                "or a GitLab URL of one.",
                min_length=1,
                max_length=2000,
            ),
        ],
        refresh: Annotated[
            bool, Field(description="Fetch again even if it was fetched within the TTL.")
        ] = False,
        project: Project = None,
    ) -> Enriched:
        """Fetch an MR, issue or epic from GitLab now: title, state, people, labels,
        changed files and symbols, closing issues, epic. Refs in memories are enriched in
        the background anyway; call this when get_context says a ref is not enriched yet
        and you need it now. Fails with a fix-it message when GitLab is not configured. A ref
        of a GitHub or Bitbucket repository is not asked of GitLab: outcome "foreign", and
        the problems say why."""
        report = tools.memory.enrich([ref], project=tools.project_of(project), refresh=refresh)
        outcome = next((name for name, n in report.counts.items() if n), "fresh")
        return {
            "ref": ref,
            "outcome": outcome,
            "counts": report.counts,
            "problems": report.problems,
            "paused": report.paused,
            "gitlab": tools.runtime.gitlab_status(),
        }
