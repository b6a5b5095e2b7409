"""Opening the store in a one-shot command imports only what its call uses (structural, no timing)."""

from __future__ import annotations

import os
from pathlib import Path

from support.imports import command_imports

# What a recall on the embedded store never uses: the code parser's grammars, Arrow (bulk
# writes and reads only), the MCP server, PostgreSQL's driver, GitLab's client.
UNUSED_BY_RECALL = ("tree_sitter", "tree_sitter_language_pack", "pyarrow", "fastmcp", "psycopg", "gitlab")


def test_a_one_shot_recall_opens_the_store_without_the_code_parser_or_arrow(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHMEM_")}
    env["GRAPHMEM_CONFIG"] = str(tmp_path / "none.toml")
    argv = ["--data-dir", str(tmp_path / "data"), "recall", "which linter", "--plan", "lexical", "--json"]

    report, done = command_imports(argv, {*UNUSED_BY_RECALL, "kuzu"}, cwd=tmp_path, env=env)

    assert report["exit"] in (0, None), done.stderr
    assert {module.split(".")[0] for module in report["loaded"]} == {"kuzu"}  # the store, opened here
