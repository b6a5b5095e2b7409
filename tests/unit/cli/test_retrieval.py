"""recall, context and boot in process on a fresh store (more in test_cli.py)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

from click.testing import Result

from graphmem.core.recall_limit import MAX_RECALL_LIMIT, recall_limit_problem

Invoke = Callable[..., Result]  # the ``invoke`` fixture of conftest.py


def test_boot_prints_what_a_session_starts_with(invoke: Invoke) -> None:
    directive = invoke("remember", "-c", "directive", "Run the linters before every commit").stdout.strip()
    invoke("remember", "-c", "event", "Lunch was at noon")

    shown = invoke("boot")
    as_json = json.loads(invoke("boot", "--json").stdout)

    assert shown.exit_code == 0, shown.output
    assert "### Directives" in shown.stdout and directive in shown.stdout
    assert "Lunch" not in shown.stdout
    assert [m["id"] for m in as_json["groups"]["directive"]] == [directive]


def test_boot_refuses_a_budget_below_50(invoke: Invoke) -> None:
    result = invoke("boot", "--max-tokens", "10")

    assert result.exit_code == 2
    assert "--max-tokens" in result.stderr


def test_recall_refuses_a_limit_past_the_bound_in_the_words_of_the_recall_tool(invoke: Invoke) -> None:
    result = invoke("recall", "deploys", "--limit", str(MAX_RECALL_LIMIT + 1))

    assert result.exit_code == 2
    assert (
        f"Invalid value for '-n' / '--limit': {recall_limit_problem(MAX_RECALL_LIMIT + 1)}" in result.stderr
    )


def test_recall_names_the_code_edge_that_reached_a_hit(invoke: Invoke, tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path / "work", check=True)  # a project
    (tmp_path / "work" / "orders.py").write_text(
        "def refund_all(order):\n    return order\n\n\ndef cancel(order):\n    refund_all(order)\n", "utf-8"
    )
    assert invoke("bootstrap", str(tmp_path / "work"), "--history", "0").exit_code == 0
    stored = invoke("remember", "Refunds are idempotent: refund_all checks the ledger").stdout.strip()

    shown = invoke("recall", "what does cancel do")
    as_json = json.loads(invoke("recall", "what does cancel do", "--json").stdout)

    assert shown.exit_code == 0, shown.output
    assert "why: close in meaning; mentions `refund_all`, which is called by `cancel`" in shown.stdout
    hit = next(h for h in as_json["hits"] if h["id"] == stored)
    entity = next(c for c in hit["why"]["channels"] if c["channel"] == "entity")
    assert entity["steps"][0]["text"] == "cancel calls refund_all"
    assert hit["why"]["path"][1::2] == ["CALLS", "ABOUT"]
