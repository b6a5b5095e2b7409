"""Recall quality with the bundled MiniLM model on realistic developer memories."""

from __future__ import annotations

import pytest

from graphmem.core.text import clean_fts_query, fold, words
from graphmem.service.memory import MemoryService

pytestmark = pytest.mark.integration

# name -> (category, text)
MEMORIES: dict[str, tuple[str, str]] = {
    "kuzu": (
        "decision",
        "We picked Kùzu as our embedded DB for remembered knowledge (nodes and relationships) "
        "because it runs in-process without a server.",
    ),
    "model": ("decision", "Embeddings come from the bundled all-MiniLM-L6-v2 model so recall works offline."),
    "ci": (
        "blocker",
        "CI on main is red: the e2e login test times out on the shared GitLab runners, tracked in #456.",
    ),
    "release": (
        "procedure",
        "To cut a release, bump the version in pyproject.toml, tag it vX.Y.Z and run make release.",
    ),
    "small_mr": (
        "preference",
        "Prefer small merge requests of under 300 changed lines; reviewers skip large diffs.",
    ),
    "secrets": (
        "directive",
        "Never commit secrets: the GitLab token lives in the GITLAB_TOKEN environment variable only.",
    ),
    "webhooks": (
        "fact",
        "The payments service retries failed webhooks three times with exponential backoff.",
    ),
    "ruff": ("decision", "We use ruff for linting and formatting instead of black plus flake8."),
    "migrations": (
        "procedure",
        "Run database migrations with alembic upgrade head before starting the API locally.",
    ),
    "k8s": ("fact", "The staging cluster runs on Kubernetes in the eu-west-1 region."),
    "backup": ("blocker", "The nightly backup job fails because the S3 bucket policy denies PutObject."),
    "redux": ("decision", "Frontend state is managed with Redux Toolkit; we dropped MobX in 2023."),
    "types": ("preference", "Use type hints everywhere and keep mypy strict mode green."),
    "lock": ("fact", "Kùzu allows only one process to open a database directory at a time."),
    "flaky": (
        "procedure",
        "To reproduce the flaky login test locally, run pytest -k login --count 50 with pytest-repeat.",
    ),
    "sse": (
        "plan",
        "Next quarter we will replace the REST polling in the dashboard with server-sent events.",
    ),
    "auth": ("decision", "Authentication uses OAuth2 with PKCE through Keycloak; we never store passwords."),
    "logs": ("fact", "Log output goes to stdout as JSON lines and is shipped to Loki by the cluster agent."),
    "cache": ("idea", "We could cache recall results per query to speed up repeated agent questions."),
    "docstrings": (
        "directive",
        "All public functions need docstrings because the MCP tools expose them to the model.",
    ),
    "outage": (
        "event",
        "On 2024-03-12 the production database ran out of disk space and writes failed for 40 minutes.",
    ),
}

# query -> the memory it is about
QUERIES: list[tuple[str, str]] = [
    ("why did we choose kuzu", "kuzu"),
    ("which database backs the memory graph", "kuzu"),
    ("how do I ship a new version", "release"),
    ("why is the login test failing in CI", "ci"),
    ("where should the gitlab token be kept", "secrets"),
    ("which linter and formatter do we use", "ruff"),
    ("how are webhooks retried in payments", "webhooks"),
    ("apply schema changes before running the api", "migrations"),
    ("why does the backup fail every night", "backup"),
    ("how do users sign in", "auth"),
    ("where do the logs end up", "logs"),
    ("can two processes open the store at once", "lock"),
]

PARAPHRASE = "which database backs the memory graph"
# Words the full-text index drops; sharing them is not sharing words.
STOPWORDS = {"the", "a", "which", "of", "and", "it"}


@pytest.fixture
def names(real_memory: MemoryService) -> dict[str, str]:
    """Stores MEMORIES; memory id -> name."""
    stored: dict[str, str] = {}
    for name, (category, text) in MEMORIES.items():
        result = real_memory.remember(text, category=category)
        assert result.created, f"{name} was taken for a duplicate of {result.duplicate_of}"
        stored[result.memory.id] = name
    return stored


def top(
    memory: MemoryService, names: dict[str, str], query: str, plan: str | None = None, n: int = 3
) -> list[str]:
    return [names[hit.memory.id] for hit in memory.recall(query, plan=plan).hits[:n]]


def accuracy(memory: MemoryService, names: dict[str, str], plan: str) -> int:
    return sum(expected in top(memory, names, query, plan) for query, expected in QUERIES)


def test_why_did_we_choose_kuzu_finds_the_decision(real_memory: MemoryService, names: dict[str, str]) -> None:
    assert "kuzu" in top(real_memory, names, "why did we choose kuzu")


def test_the_paraphrase_shares_no_words_with_the_decision() -> None:
    shared = set(clean_fts_query(PARAPHRASE).split()) & set(words(fold(MEMORIES["kuzu"][1])))
    assert shared <= STOPWORDS


def test_a_paraphrase_without_shared_words_finds_the_decision(
    real_memory: MemoryService, names: dict[str, str]
) -> None:
    assert "kuzu" in top(real_memory, names, PARAPHRASE)


def test_the_paraphrase_is_found_by_meaning_not_by_words(
    real_memory: MemoryService, names: dict[str, str]
) -> None:
    assert "kuzu" not in top(real_memory, names, PARAPHRASE, plan="lexical")
    assert "kuzu" in top(real_memory, names, PARAPHRASE, plan="semantic")


@pytest.mark.parametrize("query", ["recipe for banana bread", "who won the football world cup"])
def test_an_unrelated_query_returns_nothing(
    real_memory: MemoryService, names: dict[str, str], query: str
) -> None:
    assert real_memory.recall(query).hits == []


def test_the_fused_plan_is_at_least_as_accurate_as_each_channel(
    real_memory: MemoryService, names: dict[str, str]
) -> None:
    fused = accuracy(real_memory, names, "hybrid")
    lexical = accuracy(real_memory, names, "lexical")
    semantic = accuracy(real_memory, names, "semantic")
    assert fused >= lexical and fused >= semantic, f"hybrid {fused}, lexical {lexical}, semantic {semantic}"
    assert fused >= len(QUERIES) - 2


def test_a_ref_query_finds_the_memory_about_it(real_memory: MemoryService, names: dict[str, str]) -> None:
    assert top(real_memory, names, "#456", n=1) == ["ci"]
