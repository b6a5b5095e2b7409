"""Bootstrap benchmark: a repository scanned into the graph, end to end.

On a fresh temporary store: the first scan (listing, parsing, resolving, and every
database write) as files/s and symbols/s; then the re-scan with nothing changed
(median of several), per 1,000 files; then the re-scan after one file changed; and, when
asked, re-scans of a copy of the repository after every file in it changed (a branch
switch, a formatter run), with the process's peak memory. Beside them the parse alone (the same
files through the same parser processes, nothing resolved or stored: ``bench/bootstrap_parse.py``)
and each scan's time over it, in wall time and in CPU time.
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphmem.adapters.embedders import HashEmbedder
from graphmem.adapters.parse_pool import worker_count
from graphmem.app import open_memory
from graphmem.bench.bootstrap_parse import Measured, measured, parse_alone
from graphmem.settings import load_settings

if TYPE_CHECKING:
    from graphmem.service.memory import MemoryService


def run(path: Path, *, history: int = 0, rescans: int = 3, changed_rescans: int = 0) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="graphmem-bootstrap-") as scratch:
        settings = load_settings(data_dir=Path(scratch) / "data")
        # The model plays no part in a scan (facts and commits are embedded later).
        memory = open_memory(settings, embedder=HashEmbedder(64))
        _, parse = parse_alone(path, settings.bootstrap.parse_workers)
        try:
            first, first_time = measured(lambda: memory.bootstrap(path, history=history))
            again = []
            for _ in range(rescans):
                started = time.perf_counter()
                memory.bootstrap(path, history=0)
                again.append(time.perf_counter() - started)
            one_change = None
            sample = next((p for p in sorted(path.rglob("*.py")) if ".git" not in p.parts), None)
            if sample is not None:
                stat = sample.stat()
                os.utime(sample, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
                started = time.perf_counter()
                memory.bootstrap(path, history=0)
                one_change = round(time.perf_counter() - started, 3)
            all_changed = _all_changed(memory, path, Path(scratch) / "copy", changed_rescans)
        finally:
            memory.close()
    rescan = statistics.median(again)
    return {
        "path": str(path),
        "files": first.files,
        "symbols": first.symbols,
        "first_scan_s": first.seconds,
        "files_per_s": round(first.files / first.seconds, 1) if first.seconds else None,
        "symbols_per_s": round(first.symbols / first.seconds, 1) if first.seconds else None,
        "calls": first.calls,
        "parse_errors": first.parse_errors,
        "skipped": first.skipped,
        "rescan_unchanged_s": round(rescan, 3),
        "rescan_per_1000_files_s": round(rescan * 1000 / max(first.files, 1), 3),
        "rescan_after_touching_one_file_s": one_change,
        "rescan_all_changed_s": all_changed.wall_s if all_changed else None,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "parse_workers": worker_count(settings.bootstrap.parse_workers),
        "commits": first.commits,
        "first_scan_cpu_s": first_time.cpu_s,
        "rescan_all_changed_cpu_s": all_changed.cpu_s if all_changed else None,
        "parse_alone_s": parse.wall_s,
        "parse_alone_cpu_s": parse.cpu_s,
        "first_scan_over_parse": _ratio(first_time.wall_s, parse.wall_s),
        "first_scan_over_parse_cpu": _ratio(first_time.cpu_s, parse.cpu_s),
        "all_changed_over_parse": _ratio(all_changed.wall_s, parse.wall_s) if all_changed else None,
        "all_changed_over_parse_cpu": _ratio(all_changed.cpu_s, parse.cpu_s) if all_changed else None,
    }


def _ratio(part: float, whole: float) -> float | None:
    return round(part / whole, 2) if whole > 0 else None


def _all_changed(memory: MemoryService, path: Path, copy: Path, passes: int) -> Measured | None:
    """The median of ``passes`` re-scans of a copy of ``path`` (``path`` is not touched),
    each after a line was added to every file of the copy (by wall time)."""
    if passes <= 0:
        return None
    shutil.copytree(path, copy, ignore=shutil.ignore_patterns(".git"), symlinks=True)
    files = [p for p in copy.rglob("*") if p.is_file() and not p.is_symlink()]
    memory.bootstrap(copy, history=0)
    took: list[Measured] = []
    for _ in range(passes):
        for file in files:
            with file.open("ab") as out:
                out.write(b"\n")
        took.append(measured(lambda: memory.bootstrap(copy, history=0))[1])
    return sorted(took, key=lambda m: m.wall_s)[(len(took) - 1) // 2]


def format_report(report: dict[str, Any]) -> str:
    return "\n".join(
        [
            f"bootstrap benchmark: {report['path']}",
            f"first scan    {report['files']:,} files, {report['symbols']:,} symbols "
            f"in {report['first_scan_s']} s "
            f"= {report['files_per_s']} files/s, {report['symbols_per_s']} symbols/s",
            f"calls         {report['calls']}",
            f"re-scan       {report['rescan_unchanged_s']} s with nothing changed "
            f"({report['rescan_per_1000_files_s']} s per 1,000 files); "
            f"{report['rescan_after_touching_one_file_s']} s after touching one file"
            + (
                f"; {report['rescan_all_changed_s']} s with every file changed"
                if report["rescan_all_changed_s"] is not None
                else ""
            ),
            f"parse alone   {report['parse_alone_s']} s ({report['parse_alone_cpu_s']} s CPU); "
            f"first scan {report['first_scan_over_parse']}× of it "
            f"({report['first_scan_over_parse_cpu']}× in CPU)"
            + (
                f", all-changed re-scan {report['all_changed_over_parse']}× "
                f"({report['all_changed_over_parse_cpu']}× in CPU)"
                if report["all_changed_over_parse"] is not None
                else ""
            ),
            f"memory        peak RSS {report['peak_rss_mb']} MB; up to {report['parse_workers']} parser "
            "processes",
            f"skipped       {report['skipped']}; syntax errors {report['parse_errors']}",
        ]
    )
