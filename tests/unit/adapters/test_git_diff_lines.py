"""``lines_from_diffs`` says what ``git blame -w --since`` says of the files it answers for,
and leaves the others to blame (real git repositories, no user or system config)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest
from support.git_repo import CLEAN_GIT, git

from graphmem.adapters import git_diff_lines, git_history
from graphmem.adapters.git_diff_lines import lines_from_diffs
from graphmem.core.skipped_files import MAX_SOURCE_BYTES

SINCE = datetime(2026, 3, 1, tzinfo=UTC)
BODY = "".join(f"def f{n}(x):\n    return x + {n}\n\n\n" for n in range(6))


def commit(repo: Path, message: str, files: dict[str, str | None], date: str) -> str:
    for name, content in files.items():
        if content is None:
            (repo / name).unlink()
        else:
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            (repo / name).write_text(content, "utf-8")
    git(repo, "add", "-A")
    env = {**os.environ, **CLEAN_GIT, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    subprocess.run(["git", "commit", "-q", "-m", message], cwd=repo, env=env, check=True)
    return git(repo, "rev-parse", "HEAD")


def repository(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    old = {f"m{n}.py": BODY for n in range(5)}
    commit(root, "old", {**old, "gone.py": "x = 1\n"}, "2026-01-10T10:00:00Z")
    return root


def blame(root: Path, paths: list[str]) -> dict[str, list[str]]:
    return {path: git_history.line_commits(root, path, SINCE) for path in paths}


def test_files_the_commits_changed_read_as_blame_reads_them(tmp_path: Path) -> None:
    root = repository(tmp_path)
    edited = BODY.replace("return x + 1\n", "return x + 10\n").replace("return x + 4", "  return x + 4")
    edited = edited.replace("def f3(x):\n", "def f3(x):\n    y = x\n") + "def tail():\n    pass"
    commit(root, "edit m0, whitespace in m1", {"m0.py": edited, "m1.py": BODY.replace("x + 2", "x  +  2")},
           "2026-03-05T10:00:00Z")  # fmt: skip
    shorter = BODY[BODY.index("\n") + 1 :]
    commit(
        root,
        "add n, remove a line of m2",
        {"n.py": "a = 1\nb = 2\n", "m2.py": shorter},
        "2026-03-06T10:00:00Z",
    )
    commit(
        root, "edit n and m3", {"n.py": "a = 1\nb = 3\n", "m3.py": BODY + "z = 0\n"}, "2026-03-07T10:00:00Z"
    )
    commit(root, "edit m3 again", {"m3.py": BODY + "z = 1\n"}, "2026-03-08T10:00:00Z")
    commit(
        root, "rename gone.py to moved.py", {"gone.py": None, "moved.py": "x = 1\n"}, "2026-03-09T10:00:00Z"
    )
    paths = ["m0.py", "m1.py", "m2.py", "m3.py", "m4.py", "n.py", "moved.py"]

    found = lines_from_diffs(root, paths, SINCE)

    # moved.py: added beside a deletion (blame follows a rename)
    assert sorted(found) == ["m0.py", "m1.py", "m2.py", "m3.py", "n.py"]
    assert found == blame(root, sorted(found))
    assert set(found["m1.py"]) == {""}  # a change of whitespace alone: blame -w passes over it


def test_files_added_beside_a_change_are_not_read(tmp_path: Path) -> None:
    """Only the diffs of modified files are read: a file added in the same commit, even one whose
    name git quotes (which file of the commit it is, only blame could say), leaves the change to
    the diffs."""
    root = repository(tmp_path)
    added = {f"new{n}.py": BODY for n in range(3)} | {'say "hi".py': "x = 1\n"}
    commit(root, "edit m0, add files", {"m0.py": "a = 0\n" + BODY, **added}, "2026-03-05T10:00:00Z")
    commit(root, "edit new0", {"new0.py": BODY + "b = 1\n"}, "2026-03-06T10:00:00Z")

    found = lines_from_diffs(root, ["m0.py", "new0.py"], SINCE)

    assert sorted(found) == ["m0.py", "new0.py"]
    assert found == blame(root, ["m0.py", "new0.py"])


def test_a_history_with_a_merge_is_left_to_blame(tmp_path: Path) -> None:
    root = repository(tmp_path)
    git(root, "checkout", "-q", "-b", "side")
    commit(root, "side", {"m0.py": BODY + "s = 1\n"}, "2026-03-05T10:00:00Z")
    git(root, "checkout", "-q", "main")
    commit(root, "main", {"m1.py": BODY + "t = 1\n"}, "2026-03-06T10:00:00Z")
    env = {**os.environ, **CLEAN_GIT, "GIT_AUTHOR_DATE": "2026-03-07T10:00:00Z"}
    env["GIT_COMMITTER_DATE"] = env["GIT_AUTHOR_DATE"]
    subprocess.run(["git", "merge", "-q", "--no-edit", "side"], cwd=root, env=env, check=True)

    assert lines_from_diffs(root, ["m0.py", "m1.py"], SINCE) == {}


def test_a_commit_dated_before_since_ends_the_history_as_it_ends_blame(tmp_path: Path) -> None:
    """blame stops at the first commit older than ``since`` (a rebase's old date): so does it."""
    root = repository(tmp_path)
    commit(root, "new", {"m0.py": BODY + "a = 1\n", "m1.py": BODY + "b = 0\n"}, "2026-03-05T10:00:00Z")
    commit(root, "back-dated", {"m0.py": BODY + "a = 2\n"}, "2026-02-01T10:00:00Z")
    commit(root, "newer", {"m1.py": BODY + "b = 1\n"}, "2026-03-06T10:00:00Z")

    found = lines_from_diffs(root, ["m0.py", "m1.py"], SINCE)

    assert found == blame(root, sorted(found))
    assert "m0.py" not in found  # changed behind the old date only: blame says


def test_blame_files_answers_alike_with_and_without_it(tmp_path: Path) -> None:
    root = repository(tmp_path)
    commit(root, "edit", {"m0.py": BODY + "a = 1\n", "m1.py": "b = 1\n" + BODY}, "2026-03-05T10:00:00Z")
    commit(root, "edit again", {"m1.py": "b = 2\n" + BODY}, "2026-03-06T10:00:00Z")
    paths = ["m1.py", "m0.py", "missing.py"]

    answers = list(git_history.GitLog().blame_files(root, paths, SINCE))

    assert answers == [(path, git_history.line_commits(root, path, SINCE)) for path in paths]
    assert lines_from_diffs(root, ["m0.py", "m1.py"], None) == {}  # no since: blame it all


def _edited(rng: random.Random, lines: list[str], commit: int) -> list[str]:
    """``lines`` after a few random edits: lines inserted, deleted, replaced, re-indented,
    or moved (a line deleted here and inserted elsewhere), as a history's commits make them."""
    before, lines = lines, list(lines)
    for _ in range(rng.randint(1, 4)):
        kind = rng.choice(["insert", "delete", "replace", "indent", "move", "block"])
        at = rng.randrange(len(lines) + 1)
        if kind == "insert" or not lines:
            lines.insert(at, f"x{commit}_{rng.randrange(1000)} = {at}")
        elif kind == "block":
            lines[at:at] = [f"    y{commit}_{n} = {n}" for n in range(rng.randint(2, 5))]
        else:
            at = min(at, len(lines) - 1)
            if kind == "delete":
                del lines[at]
            elif kind == "replace":
                lines[at] = f"z{commit} = {rng.randrange(1000)}"
            elif kind == "indent":
                lines[at] = "  " + lines[at]  # whitespace only: blame -w passes over it
            else:
                lines.insert(rng.randrange(len(lines)), lines.pop(at))
    return lines if lines != before else [*lines, f"w{commit} = 0"]


def _text(rng: random.Random, lines: list[str]) -> str:
    return "\n".join(lines) + ("\n" if rng.random() < 0.8 else "")


def test_files_many_commits_changed_are_credited_as_blame_credits_them(tmp_path: Path) -> None:
    rng = random.Random(7)
    root = repository(tmp_path)
    names = [f"m{n}.py" for n in range(5)]
    contents = {name: BODY.splitlines() for name in names}
    changed: set[str] = set()
    for n in range(14):
        touched = rng.sample(names, rng.randint(1, 3))
        changed |= set(touched)
        changes: dict[str, str | None] = {}
        for name in touched:
            contents[name] = _edited(rng, contents[name], n)
            changes[name] = _text(rng, contents[name])
            if changes[name] == (root / name).read_text("utf-8"):  # a last blank line for the newline
                contents[name].append(f"w{n} = 0")
                changes[name] = _text(rng, contents[name])
        if n == 3:
            contents["new.py"] = ["a = 1", "b = 2", "c = 3"]
            changes["new.py"] = "a = 1\nb = 2\nc = 3\n"
            names.append("new.py")
            changed.add("new.py")
        commit(root, f"commit {n}", changes, f"2026-03-{n + 2:02d}T10:00:00Z")

    found = lines_from_diffs(root, names, SINCE)

    assert sorted(found) == sorted(changed)  # every file changed: no merge, no rename
    assert found == blame(root, sorted(changed))


def test_blame_files_writes_no_commit_graph_when_the_diffs_answer_for_every_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = repository(tmp_path)
    commit(root, "edit", {"m0.py": BODY + "a = 1\n", "m1.py": "b = 1\n" + BODY}, "2026-03-05T10:00:00Z")
    commit(root, "edit again", {"m1.py": "b = 2\n" + BODY}, "2026-03-06T10:00:00Z")
    graphs: list[Path] = []
    real = git_history.blame_graph

    @contextmanager
    def counted(at: Path) -> Iterator[Path | None]:
        graphs.append(at)
        with real(at) as graph:
            yield graph

    monkeypatch.setattr(git_history, "blame_graph", counted)

    answered = list(git_history.GitLog().blame_files(root, ["m1.py", "m0.py"], SINCE))
    assert graphs == []
    assert answered == [(path, git_history.line_commits(root, path, SINCE)) for path in ["m1.py", "m0.py"]]

    list(git_history.GitLog().blame_files(root, ["m0.py", "missing.py"], SINCE))
    assert graphs == [root]  # a file the diffs do not answer for is blamed


def test_diffs_past_the_read_limit_are_left_to_blame(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A file made huge and small again in turn: a repository of kilobytes whose diffs are gigabytes
    root = repository(tmp_path)
    for day in range(4):
        text = "x = 1\n" * 20_000 if day % 2 == 0 else BODY
        commit(root, f"swap {day}", {"m0.py": text}, f"2026-03-0{day + 2}T10:00:00Z")
    monkeypatch.setattr(git_diff_lines, "MAX_DIFF_BYTES", 100_000)

    assert lines_from_diffs(root, ["m0.py"], SINCE) == {}
    assert blame(root, ["m0.py"])["m0.py"]  # what bootstrap asks instead


# ``lines_from_diffs`` of the paths after the repository in a fresh interpreter: what it answers
# for, and how far the process's peak memory grew while it read (ru_maxrss: KiB on Linux).
MEASURED = """
import json, resource, sys
from datetime import UTC, datetime
from pathlib import Path
from graphmem.adapters.git_diff_lines import lines_from_diffs
from graphmem.core.skipped_files import MAX_SOURCE_BYTES
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
found = lines_from_diffs(Path(sys.argv[1]), sys.argv[2:], datetime(2026, 3, 1, tzinfo=UTC))
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(json.dumps({"found": sorted(found), "grown_mib": grown / 1024}))
"""


def measured(root: Path, paths: list[str]) -> tuple[list[str], float]:
    done = subprocess.run(
        [sys.executable, "-c", MEASURED, str(root), *paths], capture_output=True, text=True, check=True
    )
    answer = json.loads(done.stdout)
    return answer["found"], answer["grown_mib"]


def test_a_file_over_the_source_limit_at_head_is_left_to_blame_unread(tmp_path: Path) -> None:
    # 64 MiB of zeros at HEAD: a few hundred kilobytes in the repository, 128 MiB held as read
    root = repository(tmp_path)
    with open(root / "zeros.py", "wb") as zeros:
        zeros.truncate(64 * 1024 * 1024)  # sparse: nothing written
    (root / "small.py").write_text(BODY, "utf-8")
    commit(root, "add", {}, "2026-03-05T10:00:00Z")
    (root / "zeros.py").write_text("x = 1\n", "utf-8")  # the checkout may differ from HEAD

    found, grown_mib = measured(root, ["small.py", "zeros.py"])

    assert found == ["small.py"]
    assert grown_mib < 32


def test_a_file_one_size_too_big_at_head_is_left_to_blame(tmp_path: Path) -> None:
    root = repository(tmp_path)
    commit(root, "add", {"big.py": "#" * MAX_SOURCE_BYTES + "\n", "small.py": BODY}, "2026-03-05T10:00:00Z")

    assert sorted(lines_from_diffs(root, ["big.py", "small.py"], SINCE)) == ["small.py"]


def test_a_file_that_was_longer_than_a_source_file_is_left_to_blame_in_bounded_memory(tmp_path: Path) -> None:
    # Two million lines cut to five since ``since``: a 6 MB diff, whose lines were all held apart
    root = repository(tmp_path)
    commit(root, "long", {"long.py": "x\n" * 2_000_000}, "2026-01-20T10:00:00Z")
    commit(root, "short", {"long.py": BODY}, "2026-03-05T10:00:00Z")

    found, grown_mib = measured(root, ["long.py", "m0.py"])

    assert found == []
    assert grown_mib < 32


def test_diffs_of_more_hunks_than_kept_are_left_to_blame(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = repository(tmp_path)
    edited = BODY.replace("return x + 1\n", "return x + 10\n").replace("return x + 4\n", "return x + 40\n")
    commit(root, "two hunks", {"m0.py": edited}, "2026-03-05T10:00:00Z")
    assert sorted(lines_from_diffs(root, ["m0.py"], SINCE)) == ["m0.py"]
    monkeypatch.setattr(git_diff_lines, "MAX_HUNKS", 1)

    assert lines_from_diffs(root, ["m0.py"], SINCE) == {}
