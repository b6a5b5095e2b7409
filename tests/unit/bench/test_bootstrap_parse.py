"""The parse alone beside a bootstrap (``bench/bootstrap_parse.py``), and the generated repository
``graphmem bench bootstrap`` is measured on (``scripts/generate_bootstrap_repo.py``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from graphmem.adapters.repo_files import list_sources
from graphmem.bench.bootstrap import format_report, run
from graphmem.bench.bootstrap_parse import measured, parse_alone
from scripts import generate_bootstrap_repo


def _repo(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    app = "from pkg.util import helper\n\n\ndef main():\n    return helper()\n"
    (root / "pkg" / "app.py").write_text(app)
    (root / "pkg" / "util.py").write_text("def helper():\n    return 1\n")
    (root / "web.ts").write_text("export function start(): number {\n  return 2;\n}\n")
    (root / "blob.py").write_bytes(b"\0binary")  # skipped by a pass, and by the parse alone
    return root


def test_the_parse_alone_parses_the_files_a_pass_would_and_stores_nothing(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")

    parsed, took = parse_alone(repo, workers=1)

    assert parsed == 3
    assert took.wall_s > 0 and took.cpu_s > 0  # the worker's CPU counts: it ended with the pass
    assert sorted(p.name for p in repo.rglob("*")) == ["app.py", "blob.py", "pkg", "util.py", "web.ts"]


def test_measured_returns_the_calls_result() -> None:
    result, took = measured(lambda: sum(range(1000)))

    assert result == 499500 and took.wall_s >= 0 and took.cpu_s >= 0


def test_the_report_puts_each_scan_beside_the_parse_alone(tmp_path: Path) -> None:
    report = run(_repo(tmp_path / "repo"), rescans=1, changed_rescans=1)

    assert report["parse_alone_s"] > 0 and report["parse_alone_cpu_s"] > 0
    assert report["first_scan_over_parse"] > 0 and report["all_changed_over_parse"] > 0
    assert report["first_scan_cpu_s"] > 0 and report["rescan_all_changed_cpu_s"] > 0
    assert "parse alone" in format_report(report) and "all-changed re-scan" in format_report(report)


def test_the_generated_repository_has_its_files_and_history_and_is_the_same_each_time(tmp_path: Path) -> None:
    for name in ("one", "two"):
        generate_bootstrap_repo.generate(tmp_path / name, packages=2, modules=3, commits=4)
    heads = [
        subprocess.run(["git", "-C", str(tmp_path / n), "log", "--format=%H"], capture_output=True, text=True)
        for n in ("one", "two")
    ]

    assert len(list_sources(tmp_path / "one").files) == 2 * 3 + 2
    assert len(heads[0].stdout.split()) == 5  # the first commit and four edits
    assert heads[0].stdout == heads[1].stdout
