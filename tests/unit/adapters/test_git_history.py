"""read_history: one ``git log`` over real temporary repositories."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from support.git_repo import copied_repository, fast_import

from graphmem.adapters import git_history
from graphmem.adapters.git_history import read_history

ANA = ("Ana Lopez", "ana@example.com")
BO = ("Bo Chen", "bo@example.com")
# No user or system git config: a developer's hooks, signing or templates cannot interfere.
CLEAN_GIT = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        ["git", *args],
        cwd=repo,
        env={**os.environ, **CLEAN_GIT, **(env or {})},
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()


def init(repo: Path) -> Path:
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    return repo


def commit(
    repo: Path,
    message: str,
    files: dict[str, str | None],
    *,
    author: tuple[str, str] = ANA,
    date: str = "2026-03-02T10:00:00+01:00",
) -> str:
    """Write (or, for None, delete) ``files``, commit them, and return the new sha."""
    for name, content in files.items():
        path = repo / name
        if content is None:
            path.unlink()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content, "utf-8")
    git(repo, "add", "-A")
    who = {
        "GIT_AUTHOR_NAME": author[0],
        "GIT_AUTHOR_EMAIL": author[1],
        "GIT_AUTHOR_DATE": date,
        "GIT_COMMITTER_NAME": author[0],
        "GIT_COMMITTER_EMAIL": author[1],
        "GIT_COMMITTER_DATE": date,
    }
    git(repo, "commit", "-q", "--allow-empty", "-m", message, env=who)
    return git(repo, "rev-parse", "HEAD")


def _three_commits(root: Path) -> None:
    """What ``repo`` copies: three commits by two authors on three days."""
    init(root)
    commit(root, "Add money helpers", {"src/money.py": "ROUND = 2\n", "README.md": "# shop\n"})
    commit(
        root,
        "Fix refund rounding (fixes #12)",
        {"src/refund.py": "x = 1\n", "src/money.py": "ROUND = 3\n"},
        author=BO,
        date="2026-03-03T23:30:00-05:00",
    )
    commit(
        root,
        "Docs: refunds\n\nWhy: people asked.\n",
        {"docs/refunds.md": "# Refunds\n"},
        date="2026-03-05T08:00:00Z",
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """Three commits by two authors on three days: a copy of the repository this process built
    once (``copied_repository``), where each test ran ten git processes to build its own."""
    return copied_repository(tmp_path / "repo", _three_commits)


def test_reads_commits_newest_first_with_author_time_message_and_files(repo: Path) -> None:
    commits = read_history(repo, max_commits=10)

    assert [c.subject for c in commits] == [
        "Docs: refunds",
        "Fix refund rounding (fixes #12)",
        "Add money helpers",
    ]
    fix = commits[1]
    assert (fix.author_name, fix.author_email) == BO
    assert fix.authored_at == datetime(2026, 3, 4, 4, 30, tzinfo=UTC)
    assert fix.files == ("src/money.py", "src/refund.py")
    assert len(fix.sha) == 40 and fix.parents == (commits[2].sha,)
    assert commits[0].body == "Why: people asked."
    assert commits[2].parents == ()


def test_max_commits_bounds_the_read(repo: Path) -> None:
    assert [c.subject for c in read_history(repo, max_commits=1)] == ["Docs: refunds"]
    assert read_history(repo, max_commits=0) == []


def test_file_names_with_spaces_newlines_and_unicode_survive(tmp_path: Path) -> None:
    root = init(tmp_path / "odd")
    names = ["with space.md", "new\nline.txt", "ünïcödé/ファイル.py", '"quoted".txt', "tab\there.txt"]
    commit(root, "Odd names", dict.fromkeys(names, "x\n"))

    [only] = read_history(root, max_commits=5)

    assert sorted(only.files) == sorted(names)


def test_a_merge_lists_no_files_and_the_merged_commits_keep_theirs(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "feature")
    commit(repo, "Feature work", {"src/feature.py": "f = 1\n"})
    git(repo, "checkout", "-q", "main")
    commit(repo, "Main work", {"src/main.py": "m = 1\n"})
    who = {
        "GIT_AUTHOR_NAME": "Ana",
        "GIT_AUTHOR_EMAIL": "a@x",
        "GIT_COMMITTER_NAME": "Ana",
        "GIT_COMMITTER_EMAIL": "a@x",
    }
    git(repo, "merge", "-q", "--no-ff", "--no-edit", "feature", env=who)

    commits = read_history(repo, max_commits=10)
    by_subject = {c.subject: c for c in commits}
    merge = commits[0]

    assert merge.is_merge and merge.files == ()
    assert by_subject["Feature work"].files == ("src/feature.py",)
    assert by_subject["Main work"].files == ("src/main.py",)
    assert len(commits) == 6


def test_before_keeps_only_older_commits_and_merges_can_be_left_out(repo: Path) -> None:
    cut = datetime(2026, 3, 5, 8, 0, tzinfo=UTC)  # the third commit's time: strictly before it
    assert [c.subject for c in read_history(repo, max_commits=10, before=cut)] == [
        "Fix refund rounding (fixes #12)",
        "Add money helpers",
    ]
    git(repo, "checkout", "-q", "-b", "feature", "HEAD~1")
    commit(repo, "Feature work", {"src/feature.py": "f = 1\n"})
    git(repo, "checkout", "-q", "main")
    git(
        repo,
        "merge",
        "-q",
        "--no-ff",
        "--no-edit",
        "feature",
        env={
            "GIT_COMMITTER_NAME": "A",
            "GIT_COMMITTER_EMAIL": "a@x",
            "GIT_AUTHOR_NAME": "A",
            "GIT_AUTHOR_EMAIL": "a@x",
        },
    )

    commits = read_history(repo, max_commits=10, merges=False)
    assert not any(c.is_merge for c in commits)
    assert sorted(c.subject for c in commits) == [
        "Add money helpers",
        "Docs: refunds",
        "Feature work",
        "Fix refund rounding (fixes #12)",
    ]
    assert any(c.is_merge for c in read_history(repo, max_commits=10))


def test_a_rename_is_a_deletion_and_an_addition(repo: Path) -> None:
    content = (repo / "src/refund.py").read_text("utf-8")
    commit(repo, "Rename refund", {"src/refund.py": None, "src/refunds.py": content})

    assert read_history(repo, max_commits=1)[0].files == ("src/refund.py", "src/refunds.py")


def test_since_sha_reads_only_the_newer_commits(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    commit(repo, "Newer one", {"a.txt": "1\n"})
    commit(repo, "Newer two", {"b.txt": "2\n"})

    assert [c.subject for c in read_history(repo, max_commits=10, since_sha=head)] == [
        "Newer two",
        "Newer one",
    ]
    assert [c.subject for c in read_history(repo, max_commits=1, since_sha=head)] == ["Newer two"]
    assert read_history(repo, max_commits=10, since_sha=git(repo, "rev-parse", "HEAD")) == []
    assert len(read_history(repo, max_commits=10, since_sha=head[:8])) == 2


@pytest.mark.parametrize("since", ["0123456789abcdef0123456789abcdef01234567", "HEAD~1", "main", ""])
def test_an_unknown_or_invalid_since_sha_falls_back_to_the_bounded_full_read(repo: Path, since: str) -> None:
    assert len(read_history(repo, max_commits=10, since_sha=since)) == 3


def test_since_sha_is_never_passed_to_git_as_an_option(repo: Path, tmp_path: Path) -> None:
    target = tmp_path / "written-by-git"

    assert len(read_history(repo, max_commits=10, since_sha=f"--output={target}")) == 3
    assert not target.exists()


def test_a_rewritten_history_reads_what_is_not_yet_seen(repo: Path) -> None:
    old_head = git(repo, "rev-parse", "HEAD")
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    commit(repo, "Rewritten docs", {"docs/refunds.md": "# Refunds v2\n"})

    assert [c.subject for c in read_history(repo, max_commits=10, since_sha=old_head)] == ["Rewritten docs"]


def test_a_directory_outside_git_has_no_history(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()

    assert read_history(tmp_path / "plain", max_commits=10) == []
    assert read_history(tmp_path / "plain", max_commits=10, since_sha="abcdef12") == []


def test_a_missing_directory_has_no_history(tmp_path: Path) -> None:
    assert read_history(tmp_path / "nope", max_commits=10) == []


def test_an_empty_repository_has_no_history(tmp_path: Path) -> None:
    assert read_history(init(tmp_path / "empty"), max_commits=10) == []


def test_a_shallow_clone_reads_what_is_there_and_its_boundary_changes_nothing(
    repo: Path, tmp_path: Path
) -> None:
    clone = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "2", f"file://{repo}", str(clone))

    commits = read_history(clone, max_commits=10)
    first_sha = read_history(repo, max_commits=10)[-1].sha

    assert [c.subject for c in commits] == ["Docs: refunds", "Fix refund rounding (fixes #12)"]
    assert commits[0].files == ("docs/refunds.md",)
    assert commits[1].files == ()  # grafted: its "diff" would be the whole tree
    assert len(read_history(clone, max_commits=10, since_sha=first_sha)) == 2


def test_a_depth_one_clone_has_one_commit(repo: Path, tmp_path: Path) -> None:
    clone = tmp_path / "depth1"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{repo}", str(clone))

    [only] = read_history(clone, max_commits=10)

    assert only.subject == "Docs: refunds" and only.files == ()


def test_a_subdirectory_sees_paths_relative_to_itself(repo: Path) -> None:
    commits = read_history(repo / "src", max_commits=10)

    assert commits[1].files == ("money.py", "refund.py")
    assert commits[0].files == ()


def test_git_variables_of_another_repository_are_ignored(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = init(tmp_path / "other")
    commit(other, "Other repo", {"o.txt": "o\n"})
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))

    assert len(read_history(repo, max_commits=10)) == 3


def test_without_git_there_is_no_history(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(repo / "no-bin"))

    assert read_history(repo, max_commits=10) == []


def test_a_git_that_times_out_gives_no_history(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow = tmp_path / "slow-bin"
    slow.mkdir()
    (slow / "git").write_text("#!/bin/sh\nexec sleep 30\n", "utf-8")
    (slow / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{slow}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(git_history, "HISTORY_TIMEOUT_S", 0.2)

    started = time.perf_counter()

    assert read_history(repo, max_commits=10) == []
    assert time.perf_counter() - started < 10


def test_a_thousand_commits_read_well_under_a_second(tmp_path: Path) -> None:
    root = init(tmp_path / "big")
    stream: list[str] = []
    for i in range(1_000):
        message = f"Change {i}\n\nFixes #{i + 1}"
        stream += [
            "commit refs/heads/main",
            f"author Ana <ana@example.com> {1_700_000_000 + i * 60} +0000",
            f"committer Ana <ana@example.com> {1_700_000_000 + i * 60} +0000",
            f"data {len(message)}",
            message,
        ]
        for j in range(3):
            content = f"{i}-{j}"
            stream += [f"M 644 inline src/mod{(i + j) % 40}/file{j}.py", f"data {len(content)}", content]
        stream.append("")
    fast_import(root, stream)

    started = time.perf_counter()
    commits = read_history(root, max_commits=1_000)
    elapsed = time.perf_counter() - started

    assert len(commits) == 1_000
    assert commits[0].subject == "Change 999" and len(commits[0].files) == 3
    assert elapsed < 1.0


def imported(root: Path, messages: list[str], author: str = "Ana") -> Path:
    """A repository at ``root`` whose commits (``git fast-import``: no message is an argument)
    have ``messages``, oldest first, each changing one file."""
    init(root)
    stream: list[bytes] = []
    for i, message in enumerate(messages):
        data = message.encode("utf-8")
        stream += [
            b"commit refs/heads/main",
            f"author {author} <ana@example.com> {1_700_000_000 + i * 60} +0000".encode(),
            f"committer Ana <ana@example.com> {1_700_000_000 + i * 60} +0000".encode(),
            f"data {len(data)}".encode(),
            data,
            f"M 644 inline file{i}.py".encode(),
            b"data 2",
            b"x\n",
        ]
    subprocess.run(
        ["git", "fast-import", "--quiet"],
        cwd=root,
        input=b"\n".join(stream) + b"\n",
        check=True,
        env={**os.environ, **CLEAN_GIT},
    )
    return root


def test_a_commit_of_megabytes_is_read_with_its_message_and_author_bounded(tmp_path: Path) -> None:
    message = "Huge\n\nFixes #12. " + "word " * 1_000_000
    root = imported(tmp_path / "huge", [message], author="A" * 100_000)

    [found] = read_history(root, max_commits=10)

    assert found.body.startswith("Fixes #12.")
    assert len(found.body) <= git_history.MAX_MESSAGE_CHARS
    assert len(found.author_name) <= git_history.MAX_NAME_CHARS


def test_a_history_past_the_read_limit_keeps_its_newest_whole_commits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = imported(tmp_path / "long", [f"Change {i}\n\n" + "word " * 20_000 for i in range(5)])
    monkeypatch.setattr(git_history, "MAX_LOG_BYTES", 250_000)  # two commits of 100 KB, and part of a third

    commits = read_history(root, max_commits=10)

    assert [c.subject for c in commits] == ["Change 4", "Change 3"]
    assert [c.files for c in commits] == [("file4.py",), ("file3.py",)]


def test_history_notes_say_what_a_history_lacks(repo: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    shallow = tmp_path / "shallow-notes"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{repo}", str(shallow))

    assert git_history.history_notes(repo) == []
    assert "not inside a git repository" in git_history.history_notes(plain)[0]
    assert "no commits yet" in git_history.history_notes(init(tmp_path / "empty"))[0]
    assert "git fetch --unshallow" in git_history.history_notes(shallow)[0]


def test_a_detached_head_reads_the_history_behind_it(repo: Path) -> None:
    newest, older = read_history(repo, max_commits=2)
    git(repo, "checkout", "-q", "--detach", older.sha)

    assert read_history(repo, max_commits=10)[0].sha == older.sha
    assert git_history.history_notes(repo) == []
    assert newest.sha not in {c.sha for c in read_history(repo, max_commits=10)}


def test_a_message_that_is_not_utf8_is_read_with_replacement_characters(repo: Path) -> None:
    (repo / "x.txt").write_text("x", "utf-8")
    git(repo, "add", "-A")
    subprocess.run(
        ["git", "-c", "i18n.commitEncoding=latin1", "commit", "-q", "-m", "caf\xe9".encode("latin1")],
        cwd=repo, env={**os.environ, **CLEAN_GIT, "GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL": "a@x",
                       "GIT_COMMITTER_NAME": "A", "GIT_COMMITTER_EMAIL": "a@x"}, check=True,
    )  # fmt: skip

    [newest] = read_history(repo, max_commits=1)

    assert newest.subject.startswith("caf") and newest.subject.encode("utf-8")


def test_head_commit_is_the_checked_out_sha_and_none_outside_git(repo: Path, tmp_path: Path) -> None:
    assert git_history.head_commit(repo) == git(repo, "rev-parse", "HEAD")
    assert git_history.head_commit(init(tmp_path / "empty")) is None
    outside = tmp_path / "plain"
    outside.mkdir()
    assert git_history.head_commit(outside) is None


def test_renames_since_a_commit_include_committed_and_staged_moves(repo: Path) -> None:
    since = git(repo, "rev-parse", "HEAD")
    content = (repo / "src/refund.py").read_text("utf-8")
    commit(repo, "Rename refund", {"src/refund.py": None, "src/refunds.py": content})
    git(repo, "mv", "README.md", "README.txt")  # staged, not committed

    assert git_history.renames(repo, since) == {"src/refund.py": "src/refunds.py", "README.md": "README.txt"}
    assert git_history.renames(repo / "src", since) == {"refund.py": "refunds.py"}  # relative to the root


@pytest.mark.parametrize("since", ["0123456789abcdef0123456789abcdef01234567", "HEAD~1", "--output=x", ""])
def test_renames_since_an_unknown_or_invalid_commit_are_none(repo: Path, since: str) -> None:
    assert git_history.renames(repo, since) == {}
    assert not (repo / "x").exists()


def _three_line_history(root: Path) -> tuple[str, str, str]:
    """Line 1 written in January, line 2 changed in March, line 3 added in May."""
    old = commit(root, "a", {"m.py": "a = 1\nb = 1\n"}, date="2026-01-10T10:00:00Z")
    mid = commit(root, "b", {"m.py": "a = 1\nb = 2\n"}, date="2026-03-10T10:00:00Z")
    new = commit(root, "c", {"m.py": "a = 1\nb = 2\nc = 3\n"}, date="2026-05-10T10:00:00Z")
    return old, mid, new


def test_line_commits_names_the_commit_that_last_changed_each_line(tmp_path: Path) -> None:
    root = init(tmp_path / "repo")
    old, mid, new = _three_line_history(root)

    assert git_history.line_commits(root, "m.py") == [old, mid, new]


def test_line_commits_since_leaves_older_lines_unknown_and_keeps_the_newer_ones(tmp_path: Path) -> None:
    """git walks back only to ``since``: the newer lines are attributed as a full blame does,
    an older line is "" (not the boundary commit's, which did not change it)."""
    root = init(tmp_path / "repo")
    _old, mid, new = _three_line_history(root)

    assert git_history.line_commits(root, "m.py", datetime(2026, 3, 1, tzinfo=UTC)) == ["", mid, new]
    assert git_history.line_commits(root, "m.py", datetime(2026, 4, 1, tzinfo=UTC)) == ["", "", new]


def _objects_info(root: Path) -> list[str]:
    return sorted(p.name for p in (root / ".git" / "objects" / "info").iterdir())


def test_the_blame_graph_changes_no_attribution_and_nothing_in_the_repository(tmp_path: Path) -> None:
    """The commit-graph lives in a temporary object directory, gone afterwards; blame through
    it names the same commits as without it."""
    root = init(tmp_path / "repo")
    old, mid, new = _three_line_history(root)
    commit(root, "other", {"other.py": "x = 1\n"}, date="2026-06-01T10:00:00Z")
    before = _objects_info(root)

    with git_history.blame_graph(root) as graph:
        assert graph is not None and (graph / "info" / "commit-graph").is_file()
        assert git_history.line_commits(root, "m.py", graph=graph) == [old, mid, new]

    assert not graph.exists()
    assert _objects_info(root) == before


def test_a_blame_graph_removes_what_a_killed_process_left_and_keeps_a_live_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process killed mid-bootstrap (SIGKILL) cannot remove its scratch folder: the next
    blame graph does, and leaves the folder of a process still running."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    gone = subprocess.Popen(["true"])
    gone.wait()
    left = scratch / f"graphmem-blame-{gone.pid}-abc123"
    (left / "info").mkdir(parents=True)
    (left / "info" / "commit-graph").write_bytes(b"CGPH")
    running = scratch / f"graphmem-blame-{os.getppid()}-def456"
    (running / "info").mkdir(parents=True)
    unrelated = scratch / "graphmem-blame-notapid-x"
    unrelated.mkdir()
    root = init(tmp_path / "repo")
    commit(root, "one", {"m.py": "x = 1\n"})

    with git_history.blame_graph(root) as graph:
        assert graph is not None and graph.parent == scratch
        assert graph.name.startswith(f"graphmem-blame-{os.getpid()}-")

    assert not left.exists()
    assert running.is_dir() and unrelated.is_dir()


def test_outside_a_repository_there_is_no_blame_graph(tmp_path: Path) -> None:
    with git_history.blame_graph(tmp_path) as graph:
        assert graph is None


def test_blame_files_answers_in_the_order_asked_and_stops_when_closed(tmp_path: Path) -> None:
    root = init(tmp_path / "repo")
    files = {f"f{i}.py": f"x = {i}\n" for i in range(12)}
    sha = commit(root, "all", dict(files))
    log = git_history.GitLog()

    answers = log.blame_files(root, sorted(files, reverse=True))
    first = [next(answers), next(answers)]
    answers.close()

    assert first == [("f9.py", [sha]), ("f8.py", [sha])]
    assert list(answers) == []
    assert list(log.blame_files(root, ["f1.py", "missing.py"])) == [("f1.py", [sha]), ("missing.py", [])]


def test_renames_past_the_read_limit_keep_the_whole_pairs_read(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    since = git(repo, "rev-parse", "HEAD")
    content = (repo / "src/refund.py").read_text("utf-8")
    commit(repo, "Rename refund", {"src/refund.py": None, "src/refunds.py": content})
    git(repo, "mv", "README.md", "README.txt")
    (old, new), _ = git_history.renames(repo, since).items()
    # git stopped 8 bytes into the second pair: its status and the start of its old name
    monkeypatch.setattr(git_history, "MAX_RENAME_BYTES", len(f"R100\0{old}\0{new}\0") + 8)

    assert git_history.renames(repo, since) == {old: new}


# ``line_commits`` of the file in a fresh interpreter: how many lines it names, and how far the
# process's peak memory grew while it read the blame (ru_maxrss: KiB on Linux).
MEASURED_BLAME = """
import json, resource, sys
from pathlib import Path
from graphmem.adapters.git_history import line_commits
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
shas = line_commits(Path(sys.argv[1]), sys.argv[2])
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(json.dumps({"lines": len(shas), "grown_mib": grown / 1024}))
"""


def test_a_blame_past_its_read_limit_links_no_lines_in_bounded_memory(tmp_path: Path) -> None:
    # A source file at the size limit, all newlines: its blame is 50 MB, once 250 MB held as read
    root = init(tmp_path / "repo")
    commit(root, "empty lines", {"blank.py": "\n" * 999_999})

    done = subprocess.run(
        [sys.executable, "-c", MEASURED_BLAME, str(root), "blank.py"],
        capture_output=True,
        text=True,
        check=True,
    )
    answer = json.loads(done.stdout)

    assert answer["lines"] == 0
    assert answer["grown_mib"] < 48
