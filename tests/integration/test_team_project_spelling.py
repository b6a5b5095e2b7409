"""On a team's PostgreSQL store, remotes that differ only in ASCII case name one project
(docs/team.md, "One project, wherever it is checked out"): GitHub, GitLab and Bitbucket resolve
``Acme/Shop`` and ``acme/shop`` to one repository. A clone binds to the spelling the store keeps
first; a store that kept a mixed-case name keeps it, its memories seen by every clone; a project
split in two before is seen as one by every read, which changes nothing, and joined by the next
write, its code graph following at the next bootstrap; no other letter
(``ſ``, the Kelvin sign) makes a name another's. Each member is a daemon-less service of its own,
on one real database."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from support.git_repo import commit, git, new_repo
from support.records import NOW, memory
from support.stores import postgres_url, writer_role

from graphmem.adapters.embedders import HashEmbedder
from graphmem.app import open_memory
from graphmem.core.codegraph import file_key
from graphmem.core.models import Entity, EntityKind, Scope, Status
from graphmem.service import project_names
from graphmem.service.memory import MemoryService
from graphmem.settings import load_settings

pytestmark = pytest.mark.integration

DIMENSION = 256
FIRST = "github.com/Acme/Shop"  # the spelling a teammate's clone stored first
SECOND = "github.com/acme/shop"
SOURCE = "def refund(order):\n    return order.total\n"
DECISION = "Refunds go through src/refunds.py and never call the card network twice"


def service(url: str | None, data_dir: Path, checkout: Path) -> MemoryService:
    settings = load_settings(data_dir=data_dir, store={"url": url} if url else None)
    opened = open_memory(settings, embedder=HashEmbedder(DIMENSION))
    return opened.bound(str(checkout))  # as graphmem.open_memory binds the current directory's


def clone(upstream: Path, where: Path, origin: str) -> Path:
    """A clone of ``upstream`` at ``where`` whose origin is written ``origin``."""
    where.parent.mkdir(parents=True, exist_ok=True)
    git(where.parent, "clone", "-q", str(upstream), str(where))
    git(where, "remote", "set-url", "origin", origin)
    return where.resolve()


@pytest.fixture
def upstream(tmp_path: Path) -> Path:
    root = new_repo(tmp_path / "upstream" / "shop")
    (root / "src").mkdir()
    commit(root, "src/refunds.py", SOURCE)
    return root


@pytest.fixture
def clones(upstream: Path, tmp_path: Path) -> tuple[Path, Path]:
    """Alice's clone of ``git@github.com:Acme/Shop.git``, Bob's of ``https://github.com/acme/shop``."""
    alice = clone(upstream, tmp_path / "alice" / "work" / "shop", "git@github.com:Acme/Shop.git")
    bob = clone(upstream, tmp_path / "bob" / "code" / "shop", "https://github.com/acme/shop")
    return alice, bob


@pytest.fixture
def url(request: pytest.FixtureRequest) -> str:
    return postgres_url(request)


@pytest.fixture
def opened(url: str, tmp_path: Path) -> Iterator[list[MemoryService]]:
    """The services a test opens, closed when it ends."""
    services: list[MemoryService] = []
    yield services
    for each in services:
        each.close()


def member(opened: list[MemoryService], url: str | None, data_dir: Path, checkout: Path) -> MemoryService:
    opened.append(service(url, data_dir, checkout))
    return opened[-1]


def stored_projects(url: str, table: str = "memories") -> dict[str, int]:
    live = " AND deleted_at IS NULL" if table == "code_files" else ""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            f"SELECT project, count(*) FROM {table} WHERE project IS NOT NULL{live} GROUP BY 1"
        )
        return {str(project): int(n) for project, n in rows}


def test_two_clones_whose_remotes_differ_in_case_are_one_project(
    url: str, clones: tuple[Path, Path], tmp_path: Path, opened: list[MemoryService]
) -> None:
    commit(clones[1], "src/retries.py", "WAIT_S = 5\n")  # only in Bob's checkout so far
    alice = member(opened, url, tmp_path / "alice-data", clones[0])
    bob = member(opened, url, tmp_path / "bob-data", clones[1])

    written = alice.remember(DECISION, category="decision").memory
    answer = bob.remember("src/retries.py waits 5 s between tries of a refund", category="decision").memory

    assert written.project == answer.project == FIRST
    assert {m.id for m in bob.list()} == {m.id for m in alice.list()} == {written.id, answer.id}
    bob.embed_pending()
    assert written.id in [hit.memory.id for hit in bob.recall("refunds card network").hits]
    # Bob's checkout is found under the store's spelling: his file is named, his context read there
    assert [e.key for e in bob.store.about([answer.id]).get(answer.id, [])] == [
        file_key(FIRST, "src/retries.py")
    ]
    context = bob.get_context("src/retries.py", max_tokens=2000)
    assert context.entity is not None and context.entity.key == file_key(FIRST, "src/retries.py")
    assert answer.id in {item.hit.memory.id for items in context.groups.values() for item in items}
    assert stored_projects(url) == {FIRST: 2}


def test_bootstrap_from_both_clones_builds_one_code_graph(
    url: str, clones: tuple[Path, Path], tmp_path: Path, opened: list[MemoryService]
) -> None:
    alice = member(opened, url, tmp_path / "alice-data", clones[0])
    bob = member(opened, url, tmp_path / "bob-data", clones[1])

    assert alice.bootstrap(clones[0], history=0).project == FIRST  # no memory yet: its code names it
    report = bob.bootstrap(clones[1], history=0)

    assert (report.project, report.renamed_from) == (FIRST, None)
    assert set(stored_projects(url, "code_files")) == {FIRST}


def test_a_stored_mixed_case_name_is_kept_and_its_memories_seen_by_every_clone(
    url: str, clones: tuple[Path, Path], tmp_path: Path, opened: list[MemoryService]
) -> None:
    before = member(opened, url, tmp_path / "before", clones[0])
    kept = [
        memory("mem_00000000000000a1", DECISION, scope=Scope.PROJECT, project=FIRST),
        memory("mem_00000000000000a2", "An archived rule", scope=Scope.PROJECT, project=FIRST,
               status=Status.ARCHIVED),
    ]  # fmt: skip
    before.store.add_memories(kept)  # as a team's store from before keeps them
    with psycopg.connect(url) as conn:
        hashes = dict(conn.execute("SELECT id, content_hash FROM memories").fetchall())

    alice = member(opened, url, tmp_path / "alice-data", clones[0])  # the remote as the store spells it
    bob = member(opened, url, tmp_path / "bob-data", clones[1])  # the remote in small letters

    assert [m.id for m in alice.list()] == [m.id for m in bob.list()] == ["mem_00000000000000a1"]
    assert {m.id for m in bob.list(statuses=list(Status))} == {"mem_00000000000000a1", "mem_00000000000000a2"}
    with psycopg.connect(url) as conn:  # nothing rewritten: the name, the hashes as they were
        assert dict(conn.execute("SELECT id, content_hash FROM memories").fetchall()) == hashes
    assert stored_projects(url) == {FIRST: 2}


def test_a_project_split_in_two_before_is_joined_and_its_code_graph_follows(
    url: str, clones: tuple[Path, Path], tmp_path: Path, opened: list[MemoryService]
) -> None:
    # Before: Bob's clone bootstrapped under his spelling and wrote about its file; Alice's
    # memories, older, were kept under hers.
    old = member(opened, url, tmp_path / "old", clones[1])
    assert old.bootstrap(clones[1], history=0).project == SECOND
    old.store.add_memories(
        [
            memory("mem_00000000000000b1", "refunds.py is the one door", scope=Scope.PROJECT, project=SECOND),
            memory("mem_00000000000000a1", DECISION, scope=Scope.PROJECT, project=FIRST,
                   created_at=NOW - timedelta(days=30)),
        ]
    )  # fmt: skip
    bobs_file = file_key(SECOND, "src/refunds.py")
    old.store.link_about([("mem_00000000000000b1", Entity(bobs_file, EntityKind.FILE, "src/refunds.py"))])
    assert stored_projects(url) == {FIRST: 1, SECOND: 1}

    bob = member(opened, url, tmp_path / "bob-data", clones[1])
    alice = member(opened, url, tmp_path / "alice-data", clones[0])

    both = {"mem_00000000000000a1", "mem_00000000000000b1"}
    assert {m.id for m in bob.list()} == {m.id for m in alice.list()} == both
    assert stored_projects(url) == {FIRST: 1, SECOND: 1}  # a read moves nothing
    report = bob.bootstrap(clones[1], history=0)
    assert stored_projects(url) == {FIRST: 2}  # under the spelling the store had first
    assert (report.project, report.renamed_from, report.links_followed) == (FIRST, SECOND, 1)
    about = bob.store.about(["mem_00000000000000b1"])["mem_00000000000000b1"]
    assert [e.key for e in about] == [file_key(FIRST, "src/refunds.py")]
    assert set(stored_projects(url, "code_files")) == {FIRST}


def test_two_first_writers_at_once_are_one_project_at_the_next_read_and_joined_at_the_next_write(
    url: str,
    clones: tuple[Path, Path],
    tmp_path: Path,
    opened: list[MemoryService],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    alice = member(opened, url, tmp_path / "alice-data", clones[0])
    bob = member(opened, url, tmp_path / "bob-data", clones[1])
    assert alice.list() == bob.list() == []  # each binds its own spelling: the store has none yet
    first = alice.remember(DECISION, category="decision").memory
    second = bob.remember("Retries of a refund wait 5 s between tries", category="decision").memory
    assert (first.project, second.project) == (FIRST, SECOND)

    monkeypatch.setattr(project_names, "PROJECT_SPELLING_TTL_S", 0.0)  # as once a minute has passed

    assert {m.id for m in bob.list()} == {m.id for m in alice.list()} == {first.id, second.id}
    assert stored_projects(url) == {FIRST: 1, SECOND: 1}  # a read moves nothing
    third = bob.remember("A refund of a refund is refused", category="decision").memory
    assert third.project == FIRST
    assert stored_projects(url) == {FIRST: 3}


def test_a_writer_role_binds_and_joins_a_split_as_the_owner_would(
    url: str, clones: tuple[Path, Path], tmp_path: Path, opened: list[MemoryService]
) -> None:
    owner = member(opened, url, tmp_path / "owner", clones[0])
    owner.store.add_memories(
        [
            memory("mem_00000000000000a1", DECISION, scope=Scope.PROJECT, project=FIRST),
            memory("mem_00000000000000b1", "Retries wait 5 s", scope=Scope.PROJECT, project=SECOND,
                   created_at=NOW + timedelta(days=1)),
        ]
    )  # fmt: skip
    bob = member(opened, writer_role(url, f"bob_{url.rsplit('/', 1)[1]}"), tmp_path / "bob-data", clones[1])

    assert {m.id for m in bob.list()} == {"mem_00000000000000a1", "mem_00000000000000b1"}
    assert stored_projects(url) == {FIRST: 1, SECOND: 1}  # a read moves nothing
    bob.remember("Refunds are logged", category="decision")
    assert stored_projects(url) == {FIRST: 3}


@pytest.mark.parametrize(
    ("ascii_origin", "hostile_origin", "hostile_name"),
    [
        ("https://github.com/acme/shop", "https://github.com/acme/\u017fhop", "github.com/acme/\u017fhop"),
        (
            "https://github.com/acme/kitchen",
            "https://github.com/acme/\u212aitchen",
            "github.com/acme/\u212aitchen",
        ),
        (
            "https://github.com/istanbul/app",
            "https://github.com/\u0130stanbul/app",
            "github.com/\u0130stanbul/app",
        ),
    ],
    ids=["long-s", "kelvin-sign", "dotted-I"],
)
def test_a_letter_beyond_ascii_never_makes_a_remote_anothers_project(
    ascii_origin: str,
    hostile_origin: str,
    hostile_name: str,
    url: str,
    upstream: Path,
    tmp_path: Path,
    opened: list[MemoryService],
) -> None:
    honest = member(opened, url, tmp_path / "honest-data", clone(upstream, tmp_path / "honest", ascii_origin))
    written = honest.remember(DECISION, category="decision").memory
    lookalike = clone(upstream, tmp_path / "lookalike", hostile_origin)
    other = member(opened, url, tmp_path / "lookalike-data", lookalike)

    theirs = other.remember("The lookalike's own note", category="decision").memory

    assert theirs.project == hostile_name and written.project != hostile_name
    assert [m.id for m in other.list()] == [theirs.id]
    assert [m.id for m in honest.list()] == [written.id]
    assert stored_projects(url) == {written.project or "": 1, hostile_name: 1}


@pytest.mark.parametrize(
    "origin",
    ["https://github.com/" + "Acme/" * 2000 + "Shop", "https://github.com/Acme/Sh\x07op"],
    ids=["huge", "control-character"],
)
def test_an_unusable_remote_names_the_project_by_its_checkout(
    origin: str, url: str, upstream: Path, tmp_path: Path, opened: list[MemoryService]
) -> None:
    first = member(
        opened,
        url,
        tmp_path / "first-data",
        clone(upstream, tmp_path / "first", "git@github.com:Acme/Shop.git"),
    )
    first.remember(DECISION, category="decision")
    checkout = clone(upstream, tmp_path / "odd", origin)
    odd = member(opened, url, tmp_path / "odd-data", checkout)

    written = odd.remember("The odd clone's own note", category="decision").memory

    assert written.project == str(checkout)
    assert stored_projects(url) == {FIRST: 1, str(checkout): 1}


def test_the_embedded_store_keeps_checkouts_whose_paths_differ_in_case_apart(
    upstream: Path, tmp_path: Path, opened: list[MemoryService]
) -> None:
    upper = clone(upstream, tmp_path / "work" / "Shop", "git@github.com:Acme/Shop.git")
    lower = clone(upstream, tmp_path / "work" / "shop", "https://github.com/acme/shop")
    alone = member(opened, None, tmp_path / "kuzu", upper)

    first = alone.remember(DECISION, category="decision").memory
    second = alone.bound(str(lower)).remember("Retries wait 5 s", category="decision").memory

    assert (first.project, second.project) == (str(upper), str(lower))
    assert [m.id for m in alone.list()] == [first.id]
