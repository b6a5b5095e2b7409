"""Opening the store in a one-shot command imports only what its call uses (structural, no timing)."""

from __future__ import annotations

import pytest
from support.imports import RECALL_GROUP, imported, recall_without_a_daemon

# What a recall on the embedded store never uses: the code parser's grammars, Arrow (bulk
# writes and reads only), the MCP server, PostgreSQL's driver, GitLab's client.
UNUSED_BY_RECALL = ("tree_sitter", "tree_sitter_language_pack", "pyarrow", "fastmcp", "psycopg", "gitlab")


# The recall is run once for this test and test_thin_path.py's (``support/imports.py``).
@pytest.mark.xdist_group(RECALL_GROUP)
def test_a_one_shot_recall_opens_the_store_without_the_code_parser_or_arrow(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    report, done = recall_without_a_daemon(tmp_path_factory)

    assert report["exit"] in (0, None), done.stderr
    loaded = imported(report["modules"], {*UNUSED_BY_RECALL, "kuzu"})
    assert {module.split(".")[0] for module in loaded} == {"kuzu"}  # the store, opened here
