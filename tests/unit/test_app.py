"""Opening the store in a one-shot command imports only what its call uses (structural, no timing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

# What a recall on the embedded store never uses: the code parser's grammars, Arrow (bulk
# writes and reads only), the MCP server, PostgreSQL's driver, GitLab's client.
UNUSED_BY_RECALL = ("tree_sitter", "tree_sitter_language_pack", "pyarrow", "fastmcp", "psycopg", "gitlab")

PROGRAM = """
import json, sys
from graphmem.cli.main import main
sys.argv = ["graphmem", "--data-dir", sys.argv[1], "recall", "which linter", "--plan", "lexical", "--json"]
try:
    main()
except SystemExit as exit:
    code = exit.code
loaded = sorted(m for m in sys.modules if m.split(".")[0] in {unused!r})
print(json.dumps({{"exit": code, "loaded": loaded, "store": "kuzu" in sys.modules}}), file=sys.stderr)
"""


def test_a_one_shot_recall_opens_the_store_without_the_code_parser_or_arrow(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHMEM_")}
    env["GRAPHMEM_CONFIG"] = str(tmp_path / "none.toml")
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM.format(unused=set(UNUSED_BY_RECALL)), str(tmp_path / "data")],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )

    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report["exit"] in (0, None), done.stderr
    assert report["store"]  # the store was opened in this process
    assert report["loaded"] == []
