"""What the code-memory benchmark reads of a repository's diffs and files, from a repository
that may be hostile: a changed line that reads as a diff header, a file too large to parse, a
diff too large to hold (real git repositories, no user or system config)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.git_repo import git

from graphmem.adapters import git_blame
from graphmem.core.skipped_files import MAX_SOURCE_BYTES


def commit(repo: Path, files: dict[str, str]) -> str:
    for name, text in files.items():
        (repo / name).write_text(text, "utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "change")
    return git(repo, "rev-parse", "HEAD")


def repository(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    return root


def test_a_removed_line_that_reads_as_a_file_header_is_no_file(tmp_path: Path) -> None:
    # "-- a/evil.py" removed is "--- a/evil.py" in the diff: it named a file, given the hunks after
    root = repository(tmp_path)
    parent = commit(root, {"notes.txt": "x = 1\n-- a/evil.py\ny = 2\nz = 3\nw = 4\n"})
    sha = commit(root, {"notes.txt": "x = 1\ny = 2\nz = 3\nw = 5\n"})

    changes = git_blame.diff_changes(root, parent, sha)

    assert [(change.path, change.changed) for change in changes] == [("notes.txt", [(2, 2), (5, 5)])]


def test_a_diff_past_the_read_limit_is_not_evaluated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = repository(tmp_path)
    parent = commit(root, {"a.py": "x = 1\n" * 100})
    sha = commit(root, {"a.py": "x = 2\n" * 100})
    assert git_blame.diff_changes(root, parent, sha)[0].changed == [(1, 100)]
    monkeypatch.setattr(git_blame, "MAX_OUTPUT_BYTES", 200)

    assert git_blame.diff_changes(root, parent, sha) == []


def test_a_file_past_the_source_limit_is_not_read(tmp_path: Path) -> None:
    root = repository(tmp_path)
    sha = commit(root, {"big.py": "#" * MAX_SOURCE_BYTES + "\n", "small.py": "x = 1\n"})

    assert git_blame.file_at(root, sha, "big.py") is None
    assert git_blame.file_at(root, sha, "small.py") == b"x = 1\n"
