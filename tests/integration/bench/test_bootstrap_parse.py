"""The parse alone beside a bootstrap (``bench/bootstrap_parse.py``): both run parser processes
(``adapters/parse_pool.py``), so they are here, not among the unit tests."""

from __future__ import annotations

from pathlib import Path

from graphmem.bench.bootstrap import format_report, run
from graphmem.bench.bootstrap_parse import parse_alone


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


def test_the_report_puts_each_scan_beside_the_parse_alone(tmp_path: Path) -> None:
    report = run(_repo(tmp_path / "repo"), rescans=1, changed_rescans=1)

    assert report["parse_alone_s"] > 0 and report["parse_alone_cpu_s"] > 0
    assert report["first_scan_over_parse"] > 0 and report["all_changed_over_parse"] > 0
    assert report["first_scan_cpu_s"] > 0 and report["rescan_all_changed_cpu_s"] > 0
    assert "parse alone" in format_report(report) and "all-changed re-scan" in format_report(report)
