"""The project's code graph is its default branch's (docs/code-graph.md, "Branches"): once a pass ran
on the default branch, a bootstrap of a checkout on another branch is refused, so it never replaces
the files and symbols, their bodies (what flags a memory "possibly stale") and their edges that
every checkout of the project reads. Before, the graph followed whichever branch was bootstrapped
last: a feature branch that deleted ``void`` marked it deleted for everyone on the default branch,
and flagged their memories about it. Until then a branch's pass writes the graph and says so: a
first bootstrap is useful wherever it runs. Real git, the real parser, on the Kùzu and the
PostgreSQL stores."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support.git_repo import commit, copied_repository, git, new_repo
from support.stores import KuzuTemplates, postgres_url
from support.team import on_postgres

from graphmem.adapters.embedders import HashEmbedder
from graphmem.app import open_memory
from graphmem.core.codegraph import symbol_key
from graphmem.errors import InvalidInputError
from graphmem.service.memory import MemoryService
from graphmem.settings import load_settings

DIMENSION = 64
LEDGER = "def post(entry):\n    return entry.amount\n\n\ndef void(entry):\n    return -entry.amount\n"
POST_ONLY = "def post(entry):\n    return entry.amount * 2\n"
VOID_NOTE = "void() in src/ledger.py reverses a posting, never deletes it"


def _kuzu(tmp_path: Path, request: pytest.FixtureRequest) -> MemoryService:
    templates: KuzuTemplates = request.getfixturevalue("kuzu_templates")
    templates.lay_out(tmp_path / "kuzu", DIMENSION)  # an empty store's files, as open_memory makes them
    return open_memory(load_settings(data_dir=tmp_path / "kuzu"), embedder=HashEmbedder(DIMENSION))


def _postgres(tmp_path: Path, request: pytest.FixtureRequest) -> MemoryService:
    return on_postgres(postgres_url(request, DIMENSION), tmp_path / "postgres", DIMENSION)


Opens = Callable[[Path, pytest.FixtureRequest], MemoryService]


def _ledger(root: Path) -> None:
    """The shop's repository: on ``main``, a commit that adds src/ledger.py after the first."""
    new_repo(root)
    (root / "src").mkdir()
    commit(root, "src/ledger.py", LEDGER)


class Shop:
    """A repository on ``main`` (src/ledger.py: ``post`` and ``void``), bootstrapped, and a memory
    about ``void`` written there. ``symbols`` are the ledger's live ones (a deleted symbol a memory
    is about stays, marked deleted)."""

    def __init__(self, tmp_path: Path, request: pytest.FixtureRequest, opens: Opens) -> None:
        self.root = copied_repository(tmp_path / "shop", _ledger)
        self.memory = opens(tmp_path, request).bound(str(self.root))
        self.project = self.memory.bootstrap(self.root, history=0).project
        self.note = self.memory.remember(VOID_NOTE).memory.id
        self.void = symbol_key(self.project, "src/ledger.py", "void")

    def symbols(self) -> set[str]:
        assert self.memory.code is not None
        live = self.memory.code.symbols_in(self.project, "src/ledger.py")
        return {s.qualified_name for s in live if s.deleted_at is None}

    def stale(self) -> str | None:
        return self.memory.show(self.note).memory.stale


@pytest.fixture(params=[_kuzu, _postgres], ids=["kuzu", "postgres"])
def shop(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Shop]:
    made = Shop(tmp_path, request, request.param)
    yield made
    made.memory.close()


@pytest.fixture
def kuzu_shop(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Shop]:
    made = Shop(tmp_path, request, _kuzu)
    yield made
    made.memory.close()


def test_a_bootstrap_on_another_branch_is_refused_and_says_how_to_fix_it(shop: Shop) -> None:
    git(shop.root, "switch", "-q", "-c", "feature/no-void")
    commit(shop.root, "src/ledger.py", POST_ONLY)  # void deleted, post's body changed

    with pytest.raises(InvalidInputError) as refused:
        shop.memory.bootstrap(shop.root, history=0)

    message = str(refused.value)
    assert "feature/no-void" in message and "'main'" in message
    assert "git config graphmem.defaultBranch" in message


def test_the_default_branchs_code_and_staleness_stay_when_another_branch_is_bootstrapped(shop: Shop) -> None:
    assert shop.void in {e.key for e in shop.memory.show(shop.note).entities}
    git(shop.root, "switch", "-q", "-c", "feature/no-void")
    commit(shop.root, "src/ledger.py", POST_ONLY)
    with pytest.raises(InvalidInputError):
        shop.memory.bootstrap(shop.root, history=0)
    git(shop.root, "switch", "-q", "main")

    assert shop.symbols() == {"post", "void"}
    assert shop.stale() is None  # void is as the memory was written against, on main
    context = shop.memory.get_context("void").markdown
    assert "def void(entry)" in context and "deleted from the code" not in context


def test_a_worktree_on_another_branch_leaves_the_code_graph_too(shop: Shop, tmp_path: Path) -> None:
    git(shop.root, "remote", "add", "origin", "git@gitlab.example.com:acme/shop.git")
    worktree = tmp_path / "no-void"
    git(shop.root, "worktree", "add", "-q", "-b", "feature/no-void", str(worktree))
    commit(worktree, "src/ledger.py", POST_ONLY)

    try:
        report = shop.memory.bootstrap(worktree, history=0)
    except InvalidInputError as refused:  # the store names both checkouts' project alike
        assert "feature/no-void" in str(refused)
    else:  # the store names a checkout's project by its path: the worktree's graph is its own
        assert report.project != shop.project

    assert shop.symbols() == {"post", "void"} and shop.stale() is None


def test_a_team_checkout_on_another_branch_is_refused_once_the_default_branch_wrote_the_graph(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    first, second = new_repo(tmp_path / "alice"), tmp_path / "bob"
    (first / "src").mkdir()
    commit(first, "src/ledger.py", LEDGER)
    git(first, "remote", "add", "origin", "git@gitlab.example.com:acme/shop.git")
    git(tmp_path, "clone", "-q", str(first), str(second))
    git(second, "remote", "set-url", "origin", "git@gitlab.example.com:acme/shop.git")
    git(second, "switch", "-q", "-c", "feature/no-void")
    commit(second, "src/ledger.py", POST_ONLY)
    memory = _postgres(tmp_path, request)
    try:
        project = memory.bootstrap(first, history=0).project

        with pytest.raises(InvalidInputError, match="feature/no-void"):
            memory.bootstrap(second, history=0)

        assert memory.code is not None
        live = memory.code.symbols_in(project, "src/ledger.py")
        assert {s.qualified_name for s in live if s.deleted_at is None} == {"post", "void"}
    finally:
        memory.close()


def test_once_the_branch_merges_a_bootstrap_on_the_default_branch_takes_its_code(kuzu_shop: Shop) -> None:
    git(kuzu_shop.root, "switch", "-q", "-c", "feature/no-void")
    commit(kuzu_shop.root, "src/ledger.py", POST_ONLY)
    git(kuzu_shop.root, "switch", "-q", "main")
    git(kuzu_shop.root, "merge", "-q", "--ff-only", "feature/no-void")

    kuzu_shop.memory.bootstrap(kuzu_shop.root, history=0)

    assert kuzu_shop.symbols() == {"post"}
    stale = kuzu_shop.stale()
    assert stale is not None and "void" in stale


def test_a_detached_head_is_bootstrapped_as_the_default_branch(kuzu_shop: Shop) -> None:
    commit(kuzu_shop.root, "src/ledger.py", POST_ONLY)  # a CI job checks out its commit detached
    git(kuzu_shop.root, "checkout", "-q", "--detach")

    assert kuzu_shop.memory.bootstrap(kuzu_shop.root, history=0).parsed == 1

    assert kuzu_shop.symbols() == {"post"}


def test_a_repository_with_no_default_branch_known_is_bootstrapped_on_any(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    root = new_repo(tmp_path / "trunk", default="trunk")  # no main, master, origin/HEAD or setting
    commit(root, "ledger.py", LEDGER)
    memory = _kuzu(tmp_path, request)
    try:
        assert memory.bootstrap(root, history=0).parsed == 1
    finally:
        memory.close()


def test_the_default_branch_a_repository_names_is_the_one_bootstrapped(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    root = new_repo(tmp_path / "shop")
    git(root, "config", "graphmem.defaultBranch", "develop")
    git(root, "switch", "-q", "-c", "develop")
    commit(root, "ledger.py", LEDGER)
    memory = _kuzu(tmp_path, request)
    try:
        assert memory.bootstrap(root, history=0).parsed == 1
        git(root, "switch", "-q", "main")
        with pytest.raises(InvalidInputError, match="'develop'"):
            memory.bootstrap(root, history=0)
    finally:
        memory.close()


def test_a_first_bootstrap_on_a_branch_writes_the_graph_until_the_default_branch_is_bootstrapped(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    root = new_repo(tmp_path / "shop")
    (root / "src").mkdir()
    commit(root, "src/ledger.py", LEDGER)
    git(root, "switch", "-q", "-c", "feature/no-void")
    commit(root, "src/ledger.py", POST_ONLY)
    memory = _kuzu(tmp_path, request)
    try:
        first = memory.bootstrap(root, history=0)
        assert first.parsed == 1
        assert any("branch 'feature/no-void''s until" in note and "'main'" in note for note in first.notes)
        assert memory.bootstrap(root, history=0).notes  # the branch's again: still the branch's graph

        git(root, "switch", "-q", "main")
        on_main = memory.bootstrap(root, history=0)
        assert on_main.parsed == 1 and not any("until graphmem bootstrap" in n for n in on_main.notes)
        assert memory.code is not None
        live = memory.code.symbols_in(on_main.project, "src/ledger.py")
        assert {s.qualified_name for s in live if s.deleted_at is None} == {"post", "void"}

        git(root, "switch", "-q", "feature/no-void")
        with pytest.raises(InvalidInputError, match="feature/no-void"):
            memory.bootstrap(root, history=0)
    finally:
        memory.close()
