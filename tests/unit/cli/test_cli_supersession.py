"""`graphmem link --kind supersedes` refuses a link that would close a cycle, with exit 2 and the fix."""

from __future__ import annotations

from collections.abc import Callable

from click.testing import Result

Invoke = Callable[..., Result]  # the ``invoke`` fixture of conftest.py


def test_a_supersedes_link_that_closes_a_cycle_exits_2_and_says_how_to_fix_it(invoke: Invoke) -> None:
    a = invoke("remember", "-c", "decision", "Use ruff for linting").stdout.strip()
    b = invoke("remember", "The staging db is read-only on Mondays").stdout.strip()
    assert invoke("link", a, b, "--kind", "supersedes").exit_code == 0

    refused = invoke("link", b, a, "--kind", "supersedes")

    assert refused.exit_code == 2, refused.output
    assert f"{a} already supersedes {b}" in refused.stderr
    assert f"graphmem unlink {a} {b} --kind supersedes" in refused.stderr
    assert a in invoke("recall", "ruff").stdout  # still current: nothing was stored
