"""graphmem bootstrap in process on the in-memory store: what a re-scan says about code that moved."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from graphmem.service.memory import MemoryService

Invoke = Callable[..., Result]  # the ``invoke`` fixture of conftest.py

ORDERS = (
    "def {name}(order):\n    total = sum(line.price for line in order.lines)\n    return total - order.paid\n"
)


def test_a_rescan_says_what_moved_and_how_many_memory_links_followed(invoke: Invoke, tmp_path: Path) -> None:
    work = tmp_path / "work"
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    (work / "orders.py").write_text(ORDERS.format(name="balance"), "utf-8")
    assert invoke("bootstrap", str(work), "--history", "0").exit_code == 0
    assert invoke("remember", "-c", "decision", "`balance` never goes below zero").exit_code == 0
    (work / "orders.py").write_text(ORDERS.format(name="amount_due"), "utf-8")

    shown = invoke("bootstrap", str(work), "--history", "0")
    (work / "orders.py").write_text(ORDERS.format(name="still_due"), "utf-8")
    as_json = json.loads(invoke("bootstrap", str(work), "--history", "0", "--json").stdout)

    assert shown.exit_code == 0, shown.output
    assert "moved: 1 symbol, 0 files; 1 memory link followed them" in shown.stdout
    assert "  `balance` → `amount_due` in orders.py (renamed, same body): 1 memory moved" in shown.stdout
    assert (as_json["moved_symbols"], as_json["memories_moved"], as_json["ambiguous_moves"]) == (1, 1, 0)
    assert as_json["moves"] == [
        "`amount_due` → `still_due` in orders.py (renamed, same body): 1 memory moved"
    ]


def test_ctrl_c_during_a_bootstrap_says_what_is_kept_and_how_to_finish(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(self: MemoryService, *args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(MemoryService, "bootstrap", interrupted)

    result = invoke("bootstrap", str(tmp_path / "work"))

    assert result.exit_code == 130
    assert "bootstrap interrupted: what it stored is kept and answers" in result.stderr
    assert "run `graphmem bootstrap` again to finish" in result.stderr
    assert "Aborted" not in result.output
