"""``git log`` output a hostile repository can make git print: what one commit keeps, and what
a whole history keeps, stays bounded whatever git printed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.git_repo import fast_import, git

from graphmem.adapters import git_history
from graphmem.adapters.git_history import read_history
from graphmem.core.commits import MAX_COMMIT_FILES


def fast_imported(root: Path, commits: list[list[str]]) -> Path:
    """A repository at ``root`` whose commits, oldest first, each add the files named (all with
    one blob: ``git fast-import`` writes thousands in a blink)."""
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    stream = ["blob", "mark :1", "data 2", "x", ""]
    for i, paths in enumerate(commits):
        stream += [
            "commit refs/heads/main",
            f"committer Ana <ana@example.com> {1_700_000_000 + i * 60} +0000",
            "data 7",
            f"Commit{i}",
            *(f"M 644 :1 {path}" for path in paths),
            "",
        ]
    fast_import(root, stream)
    return root


def test_a_commit_of_thousands_of_files_names_its_first_and_counts_the_rest(tmp_path: Path) -> None:
    paths = [f"vendor/f{i:05d}.js" for i in range(3_000)]
    root = fast_imported(tmp_path / "sweep", [["src/a.py"], paths])

    sweep, first = read_history(root, max_commits=10)

    assert sweep.files == tuple(paths[:MAX_COMMIT_FILES])  # git lists them in path order
    assert sweep.more_files == 3_000 - MAX_COMMIT_FILES
    assert (first.files, first.more_files) == (("src/a.py",), 0)


def test_a_history_names_at_most_its_budget_of_files_newest_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = fast_imported(tmp_path / "many", [[f"c{i}/a.py", f"c{i}/b.py"] for i in range(4)])
    monkeypatch.setattr(git_history, "MAX_HISTORY_FILES", 5, raising=False)

    commits = read_history(root, max_commits=10)

    assert [len(c.files) for c in commits] == [2, 2, 1, 0]
    assert [getattr(c, "more_files", 0) for c in commits] == [0, 0, 1, 2]


def test_a_path_longer_than_any_checkout_is_counted_not_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = fast_imported(tmp_path / "long", [["a.py", "a_name_past_the_limit.py"]])
    monkeypatch.setattr(git_history, "MAX_PATH_BYTES", 10, raising=False)

    [found] = read_history(root, max_commits=10)

    assert (found.files, getattr(found, "more_files", 0)) == (("a.py",), 1)


def test_a_merge_of_thousands_of_parents_keeps_the_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parents = " ".join(f"{i:040x}" for i in range(5_000))
    header = f"\x1e{'a' * 40}\x1f{parents}\x1fAna\x1fana@example.com\x1f1700000000\x1f\x1fMerge\x1f\0"

    def printed(*args: object, **kwargs: object) -> tuple[int, bytes, bytes]:
        return 0, header.encode(), b""

    monkeypatch.setattr(git_history, "run_bounded", printed)

    [merge] = read_history(tmp_path, max_commits=10)

    assert merge.is_merge and merge.subject == "Merge"
    assert 2 <= len(merge.parents) <= 100  # MAX_PARENTS
    assert merge.parents == tuple(f"{i:040x}" for i in range(len(merge.parents)))


# ``read_history`` of what git printed (a commit listing one path three million times: 33 MB) in a
# fresh interpreter: what the commit keeps, and how far the peak memory grew (ru_maxrss: KiB).
MEASURED_LOG = """
import json, resource, sys
from pathlib import Path
from graphmem.adapters import git_history
header = b"\\x1e" + b"a" * 40 + b"\\x1f\\x1fAna\\x1fana@example.com\\x1f1700000000\\x1f\\x1fSweep\\x1f\\0\\n"
output = header + b"M\\0src/a.py\\0" * 3_000_000
git_history.run_bounded = lambda *args, **kwargs: (0, output, b"")
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
[found] = git_history.read_history(Path(sys.argv[1]), max_commits=10)
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(json.dumps({"subject": found.subject, "files": len(found.files), "grown_mib": grown / 1024}))
"""


@pytest.mark.timeout(60)
def test_a_commit_of_millions_of_files_is_read_in_bounded_memory(tmp_path: Path) -> None:
    # Once 300 MB: every token of the output a string of its own
    done = subprocess.run(
        [sys.executable, "-c", MEASURED_LOG, str(tmp_path)], capture_output=True, text=True, check=True
    )
    answer = json.loads(done.stdout)

    assert answer["subject"] == "Sweep"
    assert answer["files"] == 1
    assert answer["grown_mib"] < 48
