"""What ``graphmem bootstrap`` says of the files it left out, and what ``graphmem context`` says
of one of them afterwards (in process, on the in-memory store)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

from click.testing import Result

Invoke = Callable[..., Result]  # the ``invoke`` fixture of conftest.py


def a_repository_with_binaries(work: Path, binaries: int) -> None:
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    (work / "app.py").write_text("def main():\n    return 1\n", "utf-8")
    for n in range(binaries):
        (work / f"blob{n}.py").write_bytes(b"\0\1\2" * 100)


def test_the_report_names_the_first_skipped_files_of_each_reason_and_its_counts_add_up(
    invoke: Invoke, tmp_path: Path
) -> None:
    a_repository_with_binaries(tmp_path / "work", 7)

    shown = invoke("bootstrap", str(tmp_path / "work"), "--history", "0")
    as_json = json.loads(invoke("bootstrap", str(tmp_path / "work"), "--history", "0", "--json").stdout)

    assert shown.exit_code == 0, shown.output
    assert "1 file indexed (1 parsed, 0 unchanged), 0 removed, 7 skipped in " in shown.stdout
    named = ", ".join(f"blob{n}.py" for n in range(5))
    assert f"skipped, binary (7): {named}, and 2 more\n" in shown.stdout
    assert (as_json["files"], as_json["parsed"], as_json["unchanged"]) == (1, 0, 1)
    assert as_json["skipped"] == {"binary": 7}
    assert as_json["skipped_files"] == {"binary": [f"blob{n}.py" for n in range(5)]}


def test_context_on_a_file_the_bootstrap_skipped_says_so_and_why(invoke: Invoke, tmp_path: Path) -> None:
    a_repository_with_binaries(tmp_path / "work", 1)
    assert invoke("bootstrap", str(tmp_path / "work"), "--history", "0").exit_code == 0

    skipped = invoke("context", "blob0.py")
    never_seen = invoke("context", "later.py")

    assert skipped.exit_code == 0, skipped.output
    assert "blob0.py is not in the graph: `graphmem bootstrap` skipped it (binary: it holds NUL bytes" in (
        skipped.stdout
    )
    assert "`graphmem bootstrap` scans the repository's code" not in skipped.stdout  # it would skip it again
    assert "later.py is not in the graph: nothing is linked to it" in never_seen.stdout
