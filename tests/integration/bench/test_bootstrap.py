"""``graphmem bench bootstrap``: its report, and that it leaves the repository it measures alone."""

from __future__ import annotations

from pathlib import Path

from graphmem.bench.bootstrap import format_report, run


def test_the_report_counts_the_files_and_re_scans_a_copy_with_every_file_changed(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    sources = {
        repo / "pkg" / "app.py": "from pkg.util import helper\n\n\ndef main():\n    return helper()\n",
        repo / "pkg" / "util.py": "def helper():\n    return 1\n",
        repo / "web.ts": "export function start(): number {\n  return 2;\n}\n",
    }
    for file, text in sources.items():
        file.write_text(text)
    stamps = {file: file.stat().st_mtime_ns for file in sources if file.name != "app.py"}

    report = run(repo, rescans=1, changed_rescans=2)

    assert report["files"] == 3 and report["symbols"] >= 3
    assert isinstance(report["rescan_all_changed_s"], float)
    assert report["peak_rss_mb"] > 0
    assert all(file.read_text() == text for file, text in sources.items())  # the copy changed, not these
    assert all(file.stat().st_mtime_ns == stamp for file, stamp in stamps.items())
    assert "with every file changed" in format_report(report)
    assert run(repo, rescans=1)["rescan_all_changed_s"] is None
