"""graphmem bench code-memory: the blame-recall protocol on a repository built here,
where the ground truth is known by construction (real git, real Kùzu, hash embedder)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from graphmem.adapters.embedders import HashEmbedder
from graphmem.bench import code_memory
from graphmem.cli.main import cli
from graphmem.errors import InvalidInputError

FUNCTIONS = 30
MEMORY_EDITS = 15  # commits m0..m14 before the cut; m_j rewrites f_j
EVAL_EDITS = 25  # commits e0..e24 after it; e_k rewrites f_k
BASE_TIME = 1_700_000_000


class Repo:
    def __init__(self, root: Path, home: Path) -> None:
        self.root = root
        self.clock = BASE_TIME
        self.env = {
            **os.environ,
            "GIT_AUTHOR_NAME": "Ana",
            "GIT_AUTHOR_EMAIL": "ana@example.com",
            "GIT_COMMITTER_NAME": "Ana",
            "GIT_COMMITTER_EMAIL": "ana@example.com",
            "GIT_CONFIG_NOSYSTEM": "1",
            "HOME": str(home),
        }
        root.mkdir()
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=self.root, env=self.env, check=True, capture_output=True, text=True
        ).stdout.strip()

    def commit(self, message: str, files: dict[str, str]) -> str:
        for name, text in files.items():
            (self.root / name).parent.mkdir(parents=True, exist_ok=True)
            (self.root / name).write_text(text, "utf-8")
        self.clock += 3600
        stamp = f"@{self.clock} +0000"
        self.env |= {"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)
        return self.git("rev-parse", "HEAD")


def _app(values: list[str]) -> str:
    return "".join(f'def f{i}():\n    return "{value}"\n\n' for i, value in enumerate(values))


def build(
    tmp_path: Path, memory_edits: int = MEMORY_EDITS, eval_edits: int = EVAL_EDITS
) -> tuple[Repo, dict[str, str]]:
    """root writes f0..f29; m_j rewrites f_j's body; e_k rewrites f_k's body again."""
    repo = Repo(tmp_path / "repo", tmp_path)
    values = ["v0"] * FUNCTIONS
    shas = {"root": repo.commit("Create the app", {"src/app.py": _app(values), "README.md": "app\n"})}
    for j in range(memory_edits):
        values[j] = f"m{j}"
        shas[f"m{j}"] = repo.commit(f"Return m{j} from f{j}", {"src/app.py": _app(values)})
    for k in range(eval_edits):
        values[k] = f"e{k}"
        shas[f"e{k}"] = repo.commit(f"Return e{k} from f{k}", {"src/app.py": _app(values)})
        if k == 3:  # only new lines, in a doc: no evaluation commit
            shas["doc"] = repo.commit("Document the app", {"README.md": "app\n\nIt returns values.\n"})
    return repo, shas


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> tuple[Repo, dict[str, str]]:
    return build(tmp_path_factory.mktemp("code-memory"))


def test_the_protocol_finds_the_cut_the_memories_and_the_truth(
    synthetic: tuple[Repo, dict[str, str]],
) -> None:
    repo, shas = synthetic
    protocol = code_memory.prepare(repo.root, eval_commits=EVAL_EDITS)
    assert len(protocol.cases) == EVAL_EDITS
    assert set(protocol.memories) == {shas["root"]} | {shas[f"m{j}"] for j in range(MEMORY_EDITS)}
    assert protocol.tree == shas[f"m{MEMORY_EDITS - 1}"]
    by_sha = {case.sha: case for case in protocol.cases}
    assert shas["doc"] not in by_sha
    case = by_sha[shas["e3"]]
    assert case.truth == {shas["m3"]}
    assert case.files == ("src/app.py",)
    assert case.symbols == ("f3",)
    assert case.subject == "Return e3 from f3"
    assert by_sha[shas["e20"]].truth == {shas["root"]}  # f20 was last written by the root commit


def test_recency_scores_exactly_what_the_construction_gives(synthetic: tuple[Repo, dict[str, str]]) -> None:
    repo, _ = synthetic
    protocol = code_memory.prepare(repo.root, eval_commits=EVAL_EDITS)
    figures = code_memory.summarise(code_memory.recency(protocol), protocol.cases)
    # The 10 newest memories of src/app.py are m14..m5: e5..e14 find theirs at ranks 10..1.
    assert figures["R@10"] == pytest.approx(10 / 25)
    assert figures["MRR"] == pytest.approx(sum(1 / r for r in range(1, 11)) / 25, abs=1e-4)


def test_the_whole_run_reports_every_method(synthetic: tuple[Repo, dict[str, str]]) -> None:
    repo, _ = synthetic
    report = code_memory.run(repo.root, HashEmbedder(64), eval_commits=EVAL_EDITS)
    assert report["evaluated"] == EVAL_EDITS
    assert report["memories"] == MEMORY_EDITS + 1
    assert report["store"]["commits"] == MEMORY_EDITS + 1  # bootstrap took exactly the memories
    assert set(report["methods"]) == {"graphmem", "recency", "bm25"}
    # The subject names the function, and so does the memory that last wrote it.
    assert report["methods"]["bm25"]["R@10"] > 0.5
    assert 0.0 <= report["methods"]["graphmem"]["R@10"] <= 1.0


def test_json_has_one_object_per_method(
    synthetic: tuple[Repo, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, _ = synthetic
    monkeypatch.setattr("graphmem.adapters.embedders.make_embedder", lambda *a, **k: HashEmbedder(64))
    result = CliRunner().invoke(
        cli, ["bench", "code-memory", "--repo", str(repo.root), "--eval-commits", "25", "--json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["evaluated"] == EVAL_EDITS and report["memories"] == MEMORY_EDITS + 1
    for name in ("graphmem", "recency", "bm25"):
        assert {"R@10", "MRR", "p50_ms", "p95_ms"} <= set(report["methods"][name])
    assert report["methods"]["recency"]["R@10"] == pytest.approx(0.4)


def test_a_repository_with_under_20_evaluable_commits_is_refused(tmp_path: Path) -> None:
    repo, _ = build(tmp_path, memory_edits=3, eval_edits=12)
    with pytest.raises(InvalidInputError, match="at least 20"):
        code_memory.prepare(repo.root)
    result = CliRunner().invoke(cli, ["bench", "code-memory", "--repo", str(repo.root)])
    assert result.exit_code == 2
    assert "at least 20" in result.stderr and "Traceback" not in result.output


def test_no_repository_a_shallow_clone_and_no_commits_get_clear_messages(
    synthetic: tuple[Repo, dict[str, str]], tmp_path: Path
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    shallow = tmp_path / "shallow"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "3", f"file://{synthetic[0].root}", str(shallow)],
        check=True,
        capture_output=True,
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=empty, check=True)
    for path, words in ((plain, "not a git repository"), (shallow, "shallow clone"), (empty, "no commits")):
        result = CliRunner().invoke(cli, ["bench", "code-memory", "--repo", str(path)])
        assert result.exit_code == 2, result.output
        assert words in result.stderr and "Traceback" not in result.output


def test_score_counts_recall_against_at_most_ten_and_the_first_hit() -> None:
    truth = frozenset({"a", "b"})
    assert code_memory.score(["x", "b", "y", "a"], truth) == (1.0, 0.5)
    assert code_memory.score(["x"], truth) == (0.0, 0.0)
    many = frozenset(str(i) for i in range(20))
    assert code_memory.score([str(i) for i in range(10)], many) == (1.0, 1.0)


def test_bootstrap_links_each_commit_to_the_symbols_whose_lines_it_last_changed(
    synthetic: tuple[Repo, dict[str, str]], tmp_path: Path
) -> None:
    from graphmem.app import open_memory
    from graphmem.settings import load_settings

    repo, shas = synthetic
    memory = open_memory(load_settings(data_dir=tmp_path / "data"), embedder=HashEmbedder(64))
    try:
        memory.bootstrap(repo.root, history=100)
        project = str(repo.root.resolve())
        f3 = f"Symbol:{project}::src/app.py::f3"
        f29 = f"Symbol:{project}::src/app.py::f29"
        about = memory.store.memories_about([f3, f29])
    finally:
        memory.close()
    # e3 wrote f3's body last and the root commit its header; m3's line is gone.
    assert set(about[f3]) == {f"mem_{shas['e3'][:16]}", f"mem_{shas['root'][:16]}"}
    assert about[f29] == [f"mem_{shas['root'][:16]}"]  # nothing rewrote f29


def test_a_detached_head_and_a_commit_whose_names_are_not_utf8_are_measured(
    synthetic: tuple[Repo, dict[str, str]], tmp_path: Path
) -> None:
    repo, _ = synthetic
    clone = tmp_path / "detached"
    subprocess.run(["git", "clone", "-q", str(repo.root), str(clone)], check=True, capture_output=True)
    app = (
        (clone / "src" / "app.py").read_text("utf-8").replace('"v0"', '"w0"', 1)
    )  # f25: the first not rewritten
    (clone / "src" / "app.py").write_text(app, "utf-8")
    with open(os.path.join(os.fsencode(clone), b"src", b"caf\xe9.py"), "wb") as file:
        file.write(b"x = 1\n")
    git = ["git", "-C", str(clone), "-c", "i18n.commitEncoding=latin1"]
    subprocess.run([*git, "add", "-A"], env=repo.env, check=True, capture_output=True)
    message = "Return w0 from f25 for the caf\xe9".encode("latin1")
    subprocess.run([*git, "commit", "-q", "-m", message], env=repo.env, check=True, capture_output=True)
    subprocess.run([*git, "checkout", "-q", "--detach", "HEAD"], check=True, capture_output=True)

    report = code_memory.run(clone, HashEmbedder(64), eval_commits=EVAL_EDITS)

    assert report["evaluated"] == EVAL_EDITS
    protocol = code_memory.prepare(clone, eval_commits=EVAL_EDITS)
    newest = protocol.cases[0]
    assert newest.subject.startswith("Return w0 from f25 for the caf") and newest.symbols == ("f25",)


def test_cross_validation_leaves_each_repository_out_once(tmp_path: Path) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    first, _ = build(tmp_path / "one")
    second, _ = build(tmp_path / "two", memory_edits=12, eval_edits=22)
    grid = {"weights.entity": (3.0, 1.0)}

    report = code_memory.cross_validate(
        [first.root, second.root], HashEmbedder(64), grid=grid, eval_commits=EVAL_EDITS
    )

    assert report["candidates"] == 2
    assert [(fold["held_out"], fold["questions"]) for fold in report["folds"]] == [
        (str(first.root), EVAL_EDITS),  # both clones are named "repo": the folds go by path
        (str(second.root), 22),
    ]
    assert 0.0 <= report["cross_validated"] <= report["tuned"]["score"] <= 1.0
    assert "cross-validated" in code_memory.format_cross_validation_report(report)


def test_cross_validation_needs_two_repositories(synthetic: tuple[Repo, dict[str, str]]) -> None:
    result = CliRunner().invoke(
        cli, ["bench", "code-memory", "--repo", str(synthetic[0].root), "--cross-validate"]
    )

    assert result.exit_code == 2
    assert "--repo twice" in result.stderr and "Traceback" not in result.output
