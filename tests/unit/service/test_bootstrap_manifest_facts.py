"""bootstrap reads a repository's manifests as written, with the real file walker, git and the
in-memory store (``service/repository_docs.py``).

A package.json whose dev dependency was named like a secret (``generate-password``) was
redacted before it was parsed: redaction ate the closing quote of its version, the JSON no longer
parsed, and the pass found no facts in it; the pass after, the facts it gave before were archived.
Now the manifest is parsed from its raw text and each fact's text is redacted; a manifest this
pass cannot read or parse keeps its facts and is named in the report's notes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest
from support.git_repo import git, new_repo

from graphmem.adapters.fake_store import FakeGraphStore
from graphmem.adapters.repo_files import RepositoryFileWalker
from graphmem.core.models import Status
from graphmem.service.memory import MemoryService

NODE = "The project requires node >= 18 (from package.json)."
MANIFEST = {
    "name": "shop",
    "engines": {"node": ">= 18"},
    "scripts": {"test": "mocha", "lint": "eslint ."},
    "devDependencies": {"generate-password": "^1.7.1", "mocha": "^11.0.0"},
}
WITHOUT_IT = {**MANIFEST, "devDependencies": {"mocha": "^11.0.0"}}


def commit(root: Path, files: Mapping[str, str | bytes]) -> None:
    for path, data in files.items():
        if isinstance(data, bytes):
            (root / path).write_bytes(data)
        else:
            (root / path).write_text(data, "utf-8")
    git(root, "add", *files)
    git(root, "commit", "-q", "-m", "change")


def facts(store: FakeGraphStore, path: str, status: Status = Status.ACTIVE) -> list[str]:
    prefix = f"bootstrap:{path}#"
    return sorted(m.text for m in store.all_memories() if m.source.startswith(prefix) and m.status is status)


def test_a_dependency_named_like_a_secret_neither_hides_nor_archives_the_manifests_facts(
    memory_service: MemoryService, memory_store: FakeGraphStore, tmp_path: Path
) -> None:
    # The express repository: no engines, scripts or tools facts, and facts archived when the
    # dependency came back
    root = new_repo(tmp_path / "repo")
    commit(root, {"package.json": json.dumps(MANIFEST, indent=2)})

    first = memory_service.bootstrap(root, history=0)
    commit(root, {"package.json": json.dumps(WITHOUT_IT, indent=2)})
    second = memory_service.bootstrap(root, history=0)
    commit(root, {"package.json": json.dumps(MANIFEST, indent=2)})
    third = memory_service.bootstrap(root, history=0)

    assert first.facts_added == 5 and NODE in facts(memory_store, "package.json")
    assert (second.facts_added, second.facts_updated, second.facts_archived) == (0, 0, 0)
    assert (third.facts_added, third.facts_updated, third.facts_archived) == (0, 0, 0)
    assert len(facts(memory_store, "package.json")) == 5
    assert third.notes == []


def test_a_secret_in_a_manifest_is_redacted_in_the_facts_made_of_it(
    memory_service: MemoryService, memory_store: FakeGraphStore, tmp_path: Path
) -> None:
    token = "ghp_" + "Xk9mq2LpW7rT4vB8nC1dF6gH3jK5sA0eZyQu"
    manifest = {
        "name": "shop",
        "description": "the admin password is Xk9#mq2LpW",
        "scripts": {"test": f"GITHUB_TOKEN={token} mocha"},
        "devDependencies": {"pbkdf2-password": "1.2.1", "pass": "0.1.0"},
    }
    root = new_repo(tmp_path / "repo")
    commit(root, {"package.json": json.dumps(manifest)})

    report = memory_service.bootstrap(root, history=0)

    found = facts(memory_store, "package.json")
    assert report.facts_added == 2
    assert not any(token in text or "Xk9#mq2LpW" in text for text in found)
    assert any("[REDACTED:github-token] mocha" in text for text in found)


@pytest.mark.parametrize(
    ("path", "good", "bad"),
    [
        ("package.json", json.dumps(MANIFEST), json.dumps(MANIFEST)[:-10]),
        ("package.json", json.dumps(MANIFEST), b'{"name": "shop"}\x00' + bytes(range(256)) * 8),
        ("pyproject.toml", '[project]\nname = "shop"\nrequires-python = ">=3.11"\n', "[project\nname = "),
        ("go.mod", "module example.com/shop\n\ngo 1.22\n", "<<<<<<< HEAD\ngo 1.22\n"),
    ],
    ids=["invalid-json", "not-text", "invalid-toml", "no-module-line"],
)
def test_a_manifest_that_stops_parsing_keeps_its_facts_and_is_named_in_a_note(
    memory_service: MemoryService,
    memory_store: FakeGraphStore,
    tmp_path: Path,
    path: str,
    good: str,
    bad: str | bytes,
) -> None:
    root = new_repo(tmp_path / "repo")
    commit(root, {path: good})
    memory_service.bootstrap(root, history=0)
    before = facts(memory_store, path)
    commit(root, {path: bad})

    report = memory_service.bootstrap(root, history=0)

    assert before and facts(memory_store, path) == before
    assert report.facts_archived == 0
    assert [note for note in report.notes if repr(path) in note and "kept" in note]


def test_a_manifest_that_cannot_be_read_keeps_its_facts(
    memory_service: MemoryService,
    memory_store: FakeGraphStore,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = new_repo(tmp_path / "repo")
    commit(root, {"package.json": json.dumps(MANIFEST)})
    memory_service.bootstrap(root, history=0)
    before = facts(memory_store, "package.json")
    commit(root, {"package.json": json.dumps(WITHOUT_IT)})  # changed: the next pass reads it again
    monkeypatch.setattr(RepositoryFileWalker, "read_doc", lambda self, root, path, max_bytes: None)

    report = memory_service.bootstrap(root, history=0)

    assert before and facts(memory_store, "package.json") == before
    assert report.facts_archived == 0
    assert any("'package.json' cannot be read" in note for note in report.notes)


def test_a_field_gone_from_a_manifest_that_parses_archives_its_fact(
    memory_service: MemoryService, memory_store: FakeGraphStore, tmp_path: Path
) -> None:
    root = new_repo(tmp_path / "repo")
    commit(root, {"package.json": json.dumps(WITHOUT_IT)})
    memory_service.bootstrap(root, history=0)
    commit(root, {"package.json": json.dumps({k: v for k, v in WITHOUT_IT.items() if k != "engines"})})

    report = memory_service.bootstrap(root, history=0)

    assert report.facts_archived == 1
    assert facts(memory_store, "package.json", Status.ARCHIVED) == [NODE]
    assert report.notes == []
