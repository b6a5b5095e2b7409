"""Synthetic developer memories and questions, seeded: the benchmarks' stores at any size.

``iter_synthetic_memories`` makes ``n`` distinct memories as export records (decisions,
blockers, procedures... about made-up components and real tools, each with an identifier
of Zipf-like rare words, so the vocabulary grows with the store the way real notes do),
global or spread over projects (``project_of``: named by their checkouts' paths, as graphmem
names a project); ``synthetic_queries`` asks about them as a developer would.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from graphmem.core.keys import memory_id

COMPONENTS = [
    "payments",
    "auth",
    "search",
    "billing",
    "notifications",
    "checkout",
    "inventory",
    "reports",
    "scheduler",
    "importer",
    "exporter",
    "gateway",
    "cache",
    "queue",
    "webhooks",
    "admin panel",
    "mobile app",
    "CLI",
    "graph store",
    "embedding worker",
    "rate limiter",
    "audit log",
    "sync job",
]
TECH = [
    "PostgreSQL",
    "Redis",
    "Kùzu",
    "SQLite",
    "Kafka",
    "RabbitMQ",
    "gRPC",
    "GraphQL",
    "FastAPI",
    "Django",
    "React",
    "TypeScript",
    "Go",
    "Rust",
    "Celery",
    "S3",
    "Terraform",
    "Docker",
    "nginx",
    "OpenTelemetry",
    "pytest",
    "Playwright",
    "pnpm",
    "uv",
    "ruff",
    "mypy",
    "tree-sitter",
]
REASONS = [
    "because it keeps latency under 50 ms",
    "since the old approach leaked connections",
    "to avoid vendor lock-in",
    "because the team already knows it",
    "after the outage last week",
    "to cut the CI time in half",
    "because it is simpler to operate",
    "to keep data on the machine",
    "since retries were piling up",
    "because the license allows redistribution",
]
FILES = [
    "src/{c}/service.py",
    "src/{c}/models.py",
    "src/{c}/api.ts",
    "cmd/{c}/main.go",
    "lib/{c}/client.rs",
    "tests/test_{c}.py",
    "docs/{c}.md",
    "config/{c}.yaml",
]
TEMPLATES = [
    ("decision", "We chose {t} for the {c} {r}."),
    ("decision", "The {c} service now talks to {t} directly instead of through the {c2}, {r}."),
    ("blocker", "The {c} tests fail on CI with a timeout against {t}; see #{n}."),
    ("blocker", "Deploying {c} is blocked until !{n} is merged: {t} migration pending."),
    ("procedure", "To rebuild the {c} index run `make {c2}-reindex` then restart {t}."),
    ("procedure", "Release {c}: tag the commit, wait for the pipeline, then bump {f}."),
    ("fact", "{f} holds the retry policy of the {c}; it uses exponential backoff with {t}."),
    ("fact", "The {c} stores its state in {t}; the schema lives in {f}."),
    ("preference", "Prefer {t} over hand-written code in the {c}."),
    ("directive", "Never call {t} from the {c} request path; enqueue a job instead."),
    ("event", "Incident: {c} went down for {m} minutes after a {t} upgrade (!{n})."),
    ("plan", "Next sprint: move the {c} from {t} to {t2}, tracked in &{e}."),
    ("idea", "Maybe cache {c} lookups in {t} to save a round trip."),
]
# Words for identifiers and details, so the vocabulary grows with the store the way
# real notes do (a few common words, a long tail of rare ones).
DEV_WORDS = """account address adapter alert archive audit backoff balance batch bucket buffer build
bundle cache callback cancel cart channel charge checksum chunk claim client cluster column commit
config consumer context cookie coupon credit cursor customer dashboard deadline debounce decoder
delivery digest discount dispatch document domain draft encoder endpoint entity event export
feature fetch filter flag flush folder form gateway grant handler hash header health hook image
index invoice job journal kernel key label lease ledger limit listener loader lock log mailer
manifest mapper merchant message metric migration mutex node notice offset order owner packet page
parser partition payload payout permission pipeline plan policy pool price profile prompt provider
proxy publisher quota receipt record refund region registry release replica report request
resolver retry role route rule runner schema scope secret segment sender session shard signal
snapshot socket source span stream subscriber summary table task tenant thread ticket timer token
topic trace tracker transfer trigger upload user validator vault vendor version voucher webhook
widget worker workspace""".split()  # noqa: SIM905

QUERIES = [
    "why did we pick {t} for the {c}",
    "how do I release the {c}",
    "what is blocking {c} deploys",
    "where is the retry policy of the {c}",
    "{c} outage",
    "should the {c} call {t} directly",
    "{t} migration plan",
]


def _rare_word(rng: random.Random) -> str:
    """A dev word, Zipf-like: a few are common, most are rare."""
    return DEV_WORDS[int(len(DEV_WORDS) * rng.random() ** 2)]


def _identifier(rng: random.Random) -> str:
    return "_".join(_rare_word(rng) for _ in range(rng.randint(2, 3)))


def project_of(i: int, projects: int, root: Path | None) -> str | None:
    """The project of memory ``i`` of a store spread over ``projects``: ``<root>/proj-0``,
    ``<root>/proj-1``, ... in turn; None (global) when ``projects`` is 0. ``project_of(0, projects,
    root)`` is the one the benchmarks' recalls ask for.

    A project is named by its checkout's path (``graphmem.connect.resolve_project``), so the
    names are paths in ``root``, the folder the benchmark keeps the checkouts in, given resolved
    (as graphmem resolves a checkout's path): a plain ``proj-0`` is a name no ``graphmem recall``
    asks for, and a store of such names skips what the product does with a checkout's path.
    Raises ``ValueError`` for projects without a ``root``."""
    if not projects:
        return None
    if root is None:
        raise ValueError(
            "synthetic projects are named by their checkouts' paths: give the folder they are in (root=)."
        )
    return str(root / f"proj-{i % projects}")


def synthetic_memories(
    n: int, seed: int = 7, projects: int = 0, root: Path | None = None
) -> list[dict[str, Any]]:
    """``n`` distinct, realistic-looking developer memories as export records."""
    return list(iter_synthetic_memories(n, seed, projects, root))


def iter_synthetic_memories(
    n: int, seed: int = 7, projects: int = 0, root: Path | None = None
) -> Iterator[dict[str, Any]]:
    """``synthetic_memories`` one at a time: a million of them held at once took 600 MB of the
    benchmark's peak. ``projects``: each memory a project memory of ``project_of(i, projects,
    root)`` (the same texts and ids as global ones); 0: every memory global."""
    rng = random.Random(seed)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    for i in range(n):
        category, template = rng.choice(TEMPLATES)
        c, c2 = rng.sample(COMPONENTS, 2)
        t, t2 = rng.sample(TECH, 2)
        text = template.format(
            c=c,
            c2=c2,
            t=t,
            t2=t2,
            r=rng.choice(REASONS),
            f=rng.choice(FILES).format(c=c.replace(" ", "_")),
            n=rng.randint(1, 5000),
            e=rng.randint(1, 300),
            m=rng.randint(2, 90),
        )
        created = start + timedelta(minutes=7 * i)
        detail = f"Touches `{_identifier(rng)}` and the {_rare_word(rng)} {_rare_word(rng)}"
        project = project_of(i, projects, root)
        yield {
            "type": "memory",
            "id": memory_id(seed=f"bench-{i}"),  # shaped as remember's ids: the indexes key on them
            "text": f"{text} {detail} [{i}].",
            "category": category,
            # as an export keeps a project memory: its scope, and the project it is kept under
            "scope": "project" if project else "global",
            **({"project": project} if project else {}),
            "created_at": created.isoformat(),
        }


def synthetic_queries(n: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    return [
        rng.choice(QUERIES).format(c=rng.choice(COMPONENTS), t=rng.choice(TECH)) + f" {_rare_word(rng)}"
        for _ in range(n)
    ]
