"""A bootstrap stopped halfway (kill -9 while parsing, kill -9 while linking commits to the
symbols they changed) leaves a store that answers, and running it again completes it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support.git_repo import git

from graphmem.adapters.embedders import HashEmbedder
from graphmem.app import open_memory
from graphmem.core.models import Category
from graphmem.service.memory import MemoryService
from graphmem.settings import load_settings

pytestmark = pytest.mark.integration

FILES = 120
PER_COMMIT = 5

_BOOTSTRAP = f"""
import os, signal, sys
from pathlib import Path
from graphmem.adapters.embedders import HashEmbedder
from graphmem.app import open_memory
from graphmem.service.writer import MemoryWriter
from graphmem.settings import load_settings

data_dir, repo, stage = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
memory = open_memory(load_settings(data_dir=data_dir), embedder=HashEmbedder(256))

def killed_while_parsing(done, total):
    if done >= {FILES // 2}:
        os.kill(os.getpid(), signal.SIGKILL)

def killed_while_linking(self, links, *, store_entities=True):
    if not store_entities:  # the commits' links to the symbols their blamed lines are in
        os.kill(os.getpid(), signal.SIGKILL)
    return attach(self, links, store_entities=store_entities)

if stage == "linking":  # the commits are stored, git blamed their files (beside the parse)
    attach = MemoryWriter.attach
    MemoryWriter.attach = killed_while_linking
memory.bootstrap(repo, history=100, progress=killed_while_parsing if stage == "parsing" else None)
print("finished", flush=True)
"""


def _repo(path: Path) -> Path:
    """``FILES`` modules, ``PER_COMMIT`` to a commit."""
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    for start in range(0, FILES, PER_COMMIT):
        for n in range(start, start + PER_COMMIT):
            module = path / "pkg" / f"m{n % 10}" / f"mod_{n}.py"
            module.parent.mkdir(parents=True, exist_ok=True)
            module.write_text(
                textwrap.dedent(f"""\
                    def step_{n}(x):
                        return x + {n}


                    class Stage{n}:
                        def run(self):
                            return step_{n}(1)
                    """),
                "utf-8",
            )
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", f"Add pipeline stages {start} to {start + PER_COMMIT - 1}")
    return path.resolve()


def _killed(tmp_path: Path, repo: Path, stage: str) -> Path:
    data_dir = tmp_path / "data"
    done = subprocess.run(
        [sys.executable, "-c", _BOOTSTRAP, str(data_dir), str(repo), stage],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == -9, (done.stdout, done.stderr[-2000:])  # killed halfway, as meant
    assert "finished" not in done.stdout
    return data_dir


def _open(data_dir: Path) -> MemoryService:
    return open_memory(load_settings(data_dir=data_dir), embedder=HashEmbedder(256))


def _events_about(memory: MemoryService, target: str, project: str) -> list[str]:
    bundle = memory.get_context(target, project=project, max_tokens=4000)
    return [item.hit.memory.text for item in bundle.groups.get(Category.EVENT, [])]


def test_a_bootstrap_killed_while_parsing_leaves_a_store_that_answers_and_a_rerun_completes(
    tmp_path: Path,
) -> None:
    repo = _repo(tmp_path / "shop")
    data_dir = _killed(tmp_path, repo, "parsing")

    memory = _open(data_dir)
    try:
        assert memory.recall("pipeline stages").query == "pipeline stages"  # answers, maybe nothing
        memory.get_context("pkg/m1/mod_1.py", project=str(repo))
        report = memory.bootstrap(repo, history=100)
        assert report.files == FILES and report.symbols == 3 * FILES
        last = f"pkg/m{(FILES - 1) % 10}/mod_{FILES - 1}.py"
        assert memory.get_context(last, project=str(repo)).found is True
        assert report.commits == FILES // PER_COMMIT
    finally:
        memory.close()


def test_a_bootstrap_killed_while_linking_commits_to_symbols_links_them_when_rerun(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "shop")
    data_dir = _killed(tmp_path, repo, "linking")

    memory = _open(data_dir)
    try:
        found = memory.recall("pipeline stages", project=str(repo))
        assert found.hits, "the commits stored before the kill answer"
        memory.bootstrap(repo, history=100)
        # every symbol is linked to the commit that wrote it, the last file's too
        events = _events_about(memory, f"step_{FILES - 1}", str(repo))
        assert any(f"to {FILES - 1}" in text for text in events)
    finally:
        memory.close()
