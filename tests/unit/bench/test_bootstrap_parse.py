"""The parse alone beside a bootstrap (``bench/bootstrap_parse.py``), and the generated repository
``graphmem bench bootstrap`` is measured on (``scripts/generate_bootstrap_repo.py``). The parse and
the scans themselves run parser processes: ``tests/integration/bench/test_bootstrap_parse.py``."""

from __future__ import annotations

import subprocess
from pathlib import Path

from graphmem.adapters.repo_files import list_sources
from graphmem.bench.bootstrap_parse import measured
from scripts import generate_bootstrap_repo


def test_measured_returns_the_calls_result() -> None:
    result, took = measured(lambda: sum(range(1000)))

    assert result == 499500 and took.wall_s >= 0 and took.cpu_s >= 0


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


def test_the_generated_c_repository_includes_headers_by_name_and_is_the_same_each_time(
    tmp_path: Path,
) -> None:
    for name in ("one", "two"):
        generate_bootstrap_repo.generate(tmp_path / name, packages=2, modules=3, commits=4, language="c")
    heads = [
        subprocess.run(["git", "-C", str(tmp_path / n), "log", "--format=%H"], capture_output=True, text=True)
        for n in ("one", "two")
    ]
    source = (tmp_path / "one" / "src" / "pkg1" / "mod2.c").read_text()

    assert len(list_sources(tmp_path / "one").files) == 2 * 3 * 2 + 1  # .c and .h pairs, util.h
    assert '#include "mod0.h"' in source and '#include "common/util.h"' in source
    assert len(heads[0].stdout.split()) == 5 and heads[0].stdout == heads[1].stdout
