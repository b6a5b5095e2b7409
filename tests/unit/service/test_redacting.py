"""No secret reaches the store or an export, whatever path writes it.

Each test writes the same secrets (one of each kind that used to pass, plus a GitLab
token) through one write path, then reads back everything the store holds -- memories,
entities, GitLab rows -- and a full export, and asserts that none of the secrets is in
any of it. All values are fake. The write paths run on the in-memory store
(``memory_service``, composed by ``build_memory`` as on Kùzu); the door itself is checked on a
fresh Kùzu store (``fake_memory``), as ``open_memory`` builds it.
"""

from __future__ import annotations

import io
import json
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.fake_gitlab import PROJECT, TOKEN, FakeGitLab, shop_checkout
from support.opencode_db import T0_MS, OpenCodeDB, text

from graphmem.adapters.embedders import HashEmbedder
from graphmem.adapters.git import GitToplevel
from graphmem.adapters.opencode_sessions import OpenCodeSessions
from graphmem.app import open_memory
from graphmem.cli import main
from graphmem.core.models import Category, Entity, EntityKind, MemoryRecord, Scope
from graphmem.core.sessions import Learned, Transcript
from graphmem.server import rpc
from graphmem.service.ingest import Ingester, IngestOptions
from graphmem.service.memory import MemoryService
from graphmem.service.redacting import RedactingGitLabGraph, RedactingStore, redact_record
from graphmem.settings import load_settings

SECRETS = {
    "gitlab-token": "glpat-" + "l9guXCYJmdQFTvffexLP",
    "docker-token": "dckr_pat_" + "2b3e36beeb386dfdaacb9b46004",
    "twilio-key": "SK" + "5bbc06823caf04375fe0e542fc169188",
    "azure-key": "Zm9vYmFyYmF6cXV4cXV1eHF1dXhxdXV4cXV1eHF1dXhxdXV4cXV1eHF1dXhxdXV4cXV1eA==",
    "password": "S3cretPw42",
    "telegram-token": "123456789:" + "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0",
    "api-key": "23a1cb8f9d0e4b7c8a2f6e5d4c3b2a19",
}
NOTES = (
    f"Ops notes: export GITLAB_TOKEN={SECRETS['gitlab-token']}; "
    f"docker login -u ci -p {SECRETS['docker-token']}; twilio {SECRETS['twilio-key']}; "
    f"AccountName=acme;AccountKey={SECRETS['azure-key']};EndpointSuffix=core.windows.net; "
    f"mysql -u root -p{SECRETS['password']} shop; alerts bot {SECRETS['telegram-token']}; "
    f"the API key is {SECRETS['api-key']}."
)


def everything_stored(memory: MemoryService) -> str:
    """All the text the store holds and a full JSONL export, as one string."""
    parts = []
    for record in memory.store.all_memories():
        parts += [record.text, record.source, record.origin or "", record.content_hash, record.id]
    for entity in memory.store.all_entities():
        parts += [entity.key, entity.name, entity.title]
    if memory.enricher is not None:
        for row in memory.enricher.graph.all_rows():
            parts.append(repr(row))
    out = io.StringIO()
    memory.export(out)
    markdown = io.StringIO()
    memory.export(markdown, fmt="markdown")
    return "\n".join([*parts, out.getvalue(), markdown.getvalue()])


def assert_no_secret(memory: MemoryService) -> None:
    stored = everything_stored(memory)
    leaked = [kind for kind, secret in SECRETS.items() if secret in stored]
    assert leaked == [], f"stored in clear: {leaked}"


def test_remember_stores_no_secret_of_any_kind(memory_service: MemoryService) -> None:
    result = memory_service.remember(NOTES)
    assert result.redacted == len(SECRETS)
    assert "[REDACTED:telegram-token]" in result.memory.text
    assert_no_secret(memory_service)


def test_rpc_remember_stores_no_secret(memory_service: MemoryService) -> None:
    answer = rpc.call(memory_service, {"method": "remember", "arguments": {"text": NOTES}})
    assert "result" in answer
    assert_no_secret(memory_service)


def test_cli_remember_stores_no_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def factory(data_dir: Path | None, *, check_model: bool = True) -> MemoryService:
        return open_memory(
            load_settings(data_dir=data_dir), embedder=HashEmbedder(64), check_model=check_model
        )

    monkeypatch.setattr(main, "SERVICE_FACTORY", factory)
    (tmp_path / "work").mkdir()
    args = ["--data-dir", str(tmp_path / "data"), "--project", str(tmp_path / "work")]
    result = CliRunner().invoke(main.cli, [*args, "remember", NOTES])
    assert result.exit_code == 0, result.output
    memory = factory(tmp_path / "data")
    try:
        assert len(list(memory.store.all_memories())) == 1
        assert_no_secret(memory)
    finally:
        memory.close()


def test_edit_stores_no_secret(memory_service: MemoryService) -> None:
    memory_id = memory_service.remember("The ops notes live in the wiki").memory.id
    edited = memory_service.edit(memory_id, text=NOTES)
    assert "[REDACTED:docker-token]" in edited.text
    assert_no_secret(memory_service)


def test_import_stores_no_secret_in_memories_or_entities(memory_service: MemoryService) -> None:
    lines = [
        {"type": "entity", "key": "Session:ops", "kind": "Session", "name": "ops", "title": NOTES},
        {
            "type": "memory",
            "id": "mem_handwritten01",
            "text": NOTES,
            "category": "fact",
            "scope": "global",
            "created_at": "2026-11-01T10:00:00+00:00",
            "entities": ["Session:ops"],
        },
    ]
    folder = memory_service.data_dir / "exports"  # where graphmem reads imports for an agent too
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "import.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), "utf-8")
    memory_service.import_file(path)
    assert "[REDACTED:twilio-key]" in memory_service.show("mem_handwritten01").memory.text
    assert_no_secret(memory_service)


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def test_bootstrap_stores_no_secret_from_a_readme_or_a_commit_message(
    memory_service: MemoryService, tmp_path: Path
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "README.md").write_text(
        "# Shop\n\n## Setup\n\n```sh\n"
        f"export GITLAB_TOKEN={SECRETS['gitlab-token']}\n"
        f"mysql -u root -p{SECRETS['password']} shop < schema.sql\n"
        "make install\n```\n\n"
        f"## Notes\n\nAlways rotate the bot token {SECRETS['telegram-token']} after a release.\n",
        "utf-8",
    )
    _git(root, "init", "-q")
    _git(root, "add", "README.md")
    _git(
        root,
        "-c",
        "user.name=Dev",
        "-c",
        "user.email=dev@example.com",
        "commit",
        "-q",
        "-m",
        "Add the CI deploy step",
        "-m",
        NOTES,
    )
    report = memory_service.bootstrap(root, history=10)
    assert report.facts_added >= 1 and report.commits == 1
    sources = [m.source for m in memory_service.store.all_memories()]
    assert any("redacted-gitlab-token" in source for source in sources)  # the key is made from redacted text
    assert_no_secret(memory_service)
    # A second pass finds the same (redacted) facts: nothing new, nothing archived.
    again = memory_service.bootstrap(root, history=10)
    assert (again.facts_added, again.facts_archived, again.commits) == (0, 0, 0)


class _Echoing:
    """An extractor that learns each user message as it is, as an LLM echoing a secret would."""

    name = "echo"

    def extract(self, transcript: Transcript) -> list[Learned]:
        return [Learned(Category.FACT, m.text, m.id, "llm") for m in transcript.messages if m.role == "user"]


def test_session_ingest_and_the_extractors_output_store_no_secret(
    memory_service: MemoryService, tmp_path: Path, git_project: str
) -> None:
    db = OpenCodeDB(tmp_path / "opencode" / "opencode.db")
    try:
        session = db.session(git_project, title=f"Deploy with {SECRETS['docker-token']}")
        db.message(session, "user", [text(NOTES)], at_ms=T0_MS + 100)
        later = datetime.fromtimestamp(T0_MS / 1000, tz=UTC) + timedelta(days=1)
        ingester = Ingester(
            memory_service.writer,
            memory_service.parts.rememberer,
            options=IngestOptions(idle_seconds=60, llm_max_sessions_per_run=10),
            clock=lambda: later,
            sessions=OpenCodeSessions(),
            roots=GitToplevel(),
            llm=_Echoing(),
        )
        report = ingester.run(db_path=str(db.path))
    finally:
        db.close()
    assert report.sessions_ingested == 1
    assert_no_secret(memory_service)


@pytest.fixture
def gitlab() -> Iterator[FakeGitLab]:
    with FakeGitLab() as server:
        yield server


def test_a_gitlab_merge_request_title_and_description_are_stored_without_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gitlab: FakeGitLab
) -> None:
    route = f"/projects/{PROJECT}/merge_requests/12"
    changed = gitlab.fixture(route)
    changed.update(title=f"Rotate {SECRETS['twilio-key']}", description=NOTES)
    gitlab.set_route(route, changed)
    monkeypatch.delenv("GITLAB_TOKEN", raising=False)
    monkeypatch.setenv("GRAPHMEM_GITLAB_TOKEN", TOKEN)
    monkeypatch.setenv("GRAPHMEM_GITLAB__URL", gitlab.url)
    monkeypatch.setenv("GRAPHMEM_GITLAB__TIMEOUT_SECONDS", "1")
    shop = shop_checkout(tmp_path)
    memory = open_memory(load_settings(data_dir=tmp_path / "data"), embedder=HashEmbedder(64))
    try:
        assert memory.enrich(["!12"], project=shop).counts.get("fetched") == 1
        context = memory.get_context("!12", project=shop).markdown
        assert "Rotate [REDACTED:twilio-key]" in context
        assert all(secret not in context for secret in SECRETS.values())
        assert_no_secret(memory)
    finally:
        memory.close()


# -- the door itself ---------------------------------------------------------------------


def test_the_service_and_the_enricher_hold_their_stores_behind_the_door(fake_memory: MemoryService) -> None:
    assert isinstance(fake_memory.store, RedactingStore)
    assert fake_memory.enricher is not None
    assert isinstance(fake_memory.enricher.graph, RedactingGitLabGraph)


def test_a_write_straight_to_the_store_is_redacted_too(fake_memory: MemoryService) -> None:
    """A path that builds records itself (as bootstrap and import do) cannot skip redaction."""
    now = datetime.now(UTC)
    record = MemoryRecord(
        "mem_direct00000001", NOTES, Category.FACT, Scope.GLOBAL, None, now, now, now, source="test"
    )
    fake_memory.store.add_memories([record])
    fake_memory.store.upsert_entities([Entity("Session:x", EntityKind.SESSION, "x", None, NOTES)])
    fake_memory.store.update_memory("mem_direct00000001", {"source": f"ci {SECRETS['gitlab-token']}"})
    assert_no_secret(fake_memory)


def test_the_content_hash_follows_the_redacted_text() -> None:
    from graphmem.core.dedup import memory_hash

    now = datetime.now(UTC)
    record = MemoryRecord(
        "mem_x", NOTES, Category.FACT, Scope.GLOBAL, None, now, now, now,
        content_hash=memory_hash(Scope.GLOBAL, None, NOTES),
    )  # fmt: skip
    clean = redact_record(record)
    assert clean.content_hash == memory_hash(Scope.GLOBAL, None, clean.text)
    untouched = redact_record(clean)
    assert untouched is clean
