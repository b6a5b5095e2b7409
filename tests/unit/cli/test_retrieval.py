"""recall, context and boot in process on a fresh store (more in test_cli.py)."""

from __future__ import annotations

import json
from collections.abc import Callable

from click.testing import Result

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
