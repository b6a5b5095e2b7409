"""Composition root: builds one Memory service from Settings.

Only this module (and entry points through it) reads configuration and picks
implementations. Opening is cheap: the embedding model loads on first use.

``open_memory`` opens the Kùzu store and its adapters; ``build_memory`` wires the service
layer on any implementation of the ports (the tests' in-memory store too): the writer
(the one door for writes), recall, context, listing, lifecycle, transfer, enrichment,
bootstrap and ingest, handed to the ``MemoryService`` facade.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from graphmem.adapters.claude_code_transcripts import ClaudeCodeTranscripts
from graphmem.adapters.codex_sessions import CodexSessions
from graphmem.adapters.embedders import DEFAULT_DIMENSION, DEFAULT_MODEL, make_embedder
from graphmem.adapters.git import GitToplevel, gitlab_path
from graphmem.adapters.git_history import GitLog
from graphmem.adapters.kuzu_code import KuzuCodeGraph
from graphmem.adapters.kuzu_gitlab import KuzuGitLabGraph
from graphmem.adapters.kuzu_store import KuzuGraphStore
from graphmem.adapters.opencode_sessions import OpenCodeSessions
from graphmem.adapters.process_memory import collecting_rarely, release_after
from graphmem.adapters.repo_files import RepositoryFileWalker
from graphmem.adapters.vector_files import DIRNAME as VECTORS_DIRNAME
from graphmem.adapters.vector_files import VectorIndexFiles
from graphmem.adapters.vector_index import HnswVectorIndex
from graphmem.connect import resolve_branch as resolve_branch  # re-exported: the daemon's
from graphmem.connect import resolve_project as resolve_project  # re-exported: the daemon's
from graphmem.core.gitlab_ports import GitLabClient, GitLabGraph
from graphmem.core.ports import (
    CodeGraph,
    CodeParser,
    Embedder,
    GraphStore,
    LearningSources,
    ProjectRoots,
    SessionExtractor,
    StoreLogin,
)
from graphmem.core.projects import ForeignRemote, checkout_path, foreign_remote, is_checkout_path
from graphmem.core.timeparse import utc_now
from graphmem.errors import ConfigError, StoreMismatchError
from graphmem.service.bootstrap import Bootstrapper
from graphmem.service.branches import BranchLifecycle
from graphmem.service.context import ContextBuilder
from graphmem.service.coordination import Coordination, Coordinator
from graphmem.service.enrichment import Enricher, EnrichmentConfig
from graphmem.service.forge_rules import ForgeRules
from graphmem.service.home import Home
from graphmem.service.ingest import CLAUDE_CODE, CODEX, Ingester, IngestOptions
from graphmem.service.lifecycle import Lifecycle
from graphmem.service.listing import Listing
from graphmem.service.memory import MemoryService
from graphmem.service.mentions import Mentions, Namespace
from graphmem.service.neighbourhood import NeighbourhoodReader
from graphmem.service.parts import MemoryParts
from graphmem.service.project_names import ProjectNames
from graphmem.service.recall import Recaller
from graphmem.service.remember import Rememberer
from graphmem.service.review import Review
from graphmem.service.semantic import SemanticIndex, record_model
from graphmem.service.session_files import SESSION_CLIENTS, SessionFiles
from graphmem.service.staleness import Staleness
from graphmem.service.stores import Stores, never_theirs
from graphmem.service.transfer_files import TransferFiles
from graphmem.service.writer import MemoryWriter
from graphmem.settings import PluginSettings, Settings, load_settings

if TYPE_CHECKING:
    from graphmem.adapters.postgres_migrate import MigrationReport
    from graphmem.server.runtime import Runtime
    from graphmem.service.injection import Injector
    from graphmem.service.transfer import Transfer


def _namespace(roots: ProjectRoots, project: str) -> str | None:
    root = roots.checkout(project)
    return gitlab_path(root) if root is not None else None


def _foreign_remote(roots: ProjectRoots, project: str) -> ForeignRemote | None:
    """The project's ``origin`` when it is on a forge other than GitLab: its checkout's here, else
    (a team's project not checked out here) the shared name's, which is its remote's."""
    root = roots.checkout(project)
    if root is not None:
        return foreign_remote(roots.origin(root))
    return None if is_checkout_path(project) else foreign_remote(project)


def open_memory(
    settings: Settings | None = None,
    *,
    data_dir: Path | None = None,
    embedder: Embedder | None = None,
    check_model: bool = True,
) -> MemoryService:
    """Open (creating if needed) the store and return the Memory service.

    ``check_model=False`` skips the embedding-model check; only ``reindex`` uses it.
    """
    return _open_memory(settings, data_dir=data_dir, embedder=embedder, check_model=check_model)


def _open_memory(
    settings: Settings | None,
    *,
    data_dir: Path | None = None,
    embedder: Embedder | None = None,
    check_model: bool = True,
    background: bool = False,
    worker: bool | None = None,
) -> MemoryService:
    """``open_memory``; ``background``: the daemon's (a team's store waits for its server and
    keeps its full-text index beside it), whose worker loads the model and embeds unless
    ``worker`` is False (then the model loads on first use and reads embed the backlog)."""
    worker = background if worker is None else worker
    settings = settings or load_settings()
    data_dir = Path(data_dir or settings.data_dir).expanduser()
    if embedder is None:
        embedder = configured_embedder(settings)
    dimension = DEFAULT_DIMENSION if embedder.model_name == DEFAULT_MODEL else embedder.dimension
    default_project = settings.gitlab.default_project
    sources = learning_sources(settings)
    namespace = (lambda project: default_project) if default_project else partial(_namespace, sources.roots)
    if settings.store.url:
        opened = _open_postgres(
            settings,
            embedder,
            dimension,
            data_dir=data_dir,
            check_model=check_model,
            background=background,
            worker=worker,
        )
    else:
        opened = _open_kuzu(data_dir, embedder, dimension, check_model=check_model, worker=worker)
    return build_memory(
        opened.store,
        opened.semantic,
        settings,
        data_dir=data_dir,
        namespace=namespace,
        code=opened.code,
        enricher=_enricher(
            settings, opened.gitlab, opened.code, namespace, partial(_foreign_remote, sources.roots)
        ),
        sources=sources,
        login=opened.login,
        coordinator=opened.coordinator,
    )


@dataclass(frozen=True, slots=True)
class _Opened:
    """One store technology's adapters, opened: what ``build_memory`` wires the service on."""

    store: GraphStore
    semantic: SemanticIndex
    code: CodeGraph
    gitlab: GitLabGraph
    login: StoreLogin | None = None  # a team's store's role
    coordinator: Coordination | None = None  # sessions and claims kept in the store


def _open_kuzu(
    data_dir: Path, embedder: Embedder, dimension: int, *, check_model: bool, worker: bool
) -> _Opened:
    """The embedded Kùzu store in ``data_dir``, its HNSW vector index saved beside it."""
    store = KuzuGraphStore(data_dir, dimension=dimension)
    _check_model(store, str(store.path), embedder.model_name, dimension, enforce=check_model)
    files = VectorIndexFiles(data_dir / VECTORS_DIRNAME)

    def index(width: int) -> HnswVectorIndex:
        # An 8-bit graph whose candidates are scored again from ``graph.vectors``: half the
        # half-precision graph's memory (docs/storage.md, "8-bit graph").
        return HnswVectorIndex(width, exact=store.vectors.vectors_of)

    semantic = SemanticIndex(store, embedder, index, files, background=worker)
    return _Opened(store, semantic, KuzuCodeGraph(store), KuzuGitLabGraph(store))


def serve_memory(
    settings: Settings, *, embedder: Embedder | None = None, worker: bool = True
) -> MemoryService:
    """The daemon's Memory service (``graphmem serve``): the store opened as ``open_memory`` opens
    it, its path verbs held to what an agent may touch, sessions and claims kept by the daemon
    (or, on a team's store, by the database), the model loaded and the backlog embedded by the
    daemon's worker (recall is lexical until then and never waits for a batch); a person's or an
    agent's memory is embedded by its write once the model has loaded. ``embedder``: one already
    built, else ``[embedding]``'s. ``worker=False``: no worker will run, so the model loads on
    first use and reads embed the backlog, as ``open_memory``'s do (``bench scale``'s measure
    phase, which times the same calls on both stores)."""
    memory = _open_memory(settings, embedder=embedder, background=True, worker=worker)
    ttl = timedelta(seconds=settings.server.session_ttl_seconds)
    return memory.serving(memory.coordinator or Coordinator(utc_now, ttl))


def daemon_runtime(settings: Settings, *, log_hint: str, embedder: Embedder | None = None) -> Runtime:
    """What ``graphmem serve`` runs but its HTTP server: the daemon's service (``serve_memory``)
    in the daemon's state (``server/runtime.py``), its worker not started yet
    (``Runtime.start_worker``). ``bench scale --clients`` runs its clients on it; ``embedder`` as
    ``serve_memory``'s."""
    from importlib.metadata import version

    from graphmem.server.runtime import Runtime

    return Runtime(
        serve_memory(settings, embedder=embedder),
        log_hint=log_hint,
        resolve_project=resolve_project,
        resolve_branch=resolve_branch,
        version=version("graphmem"),
    )


class Daemon(Protocol):
    """What the plugin's injector reads of the daemon (its ``Runtime``): the service it serves
    and how it names a directory's project and branch."""

    @property
    def memory(self) -> MemoryService: ...

    def resolve_project(self, path: str | None) -> str | None: ...

    def resolve_branch(self, path: str | None) -> str | None: ...


def plugin_injector(daemon: Daemon, plugin: PluginSettings | None = None) -> Injector:
    """The ``<memory>`` blocks of the plugin's routes (``server/plugin_routes.py``) on the daemon's
    service, within the ``[plugin]`` budgets the daemon validated at start (default: the defaults)."""
    # Loaded only here: the plugin's blocks are the daemon's, never a one-shot command's.
    from graphmem.service.injection import Injector

    budget = plugin or PluginSettings()
    return Injector(
        daemon.memory,
        daemon.resolve_project,
        boot_max_tokens=budget.boot_max_tokens,
        turn_max_tokens=budget.turn_max_tokens,
        resolve_branch=daemon.resolve_branch,
    )


def configured_embedder(settings: Settings) -> Embedder:
    """The embedder ``[embedding]`` names (its model loads on first use)."""
    embedding = settings.embedding
    return make_embedder(embedding.model, quantized_queries=embedding.quantized_queries)


def _open_postgres(
    settings: Settings,
    embedder: Embedder,
    dimension: int,
    *,
    data_dir: Path,
    check_model: bool,
    background: bool,
    worker: bool,
) -> _Opened:
    """A team's PostgreSQL store (``[store] url``, docs/team.md): recall searches the database
    itself (pgvector; full text from the daemon's index of it in ``data_dir`` once built, else the
    database's); the code graph, GitLab's, and agent sessions and claims are kept there too."""
    from graphmem.adapters.postgres_code import PostgresCodeGraph
    from graphmem.adapters.postgres_coordination import PgCoordinator
    from graphmem.adapters.postgres_gitlab import PostgresGitLabGraph
    from graphmem.adapters.postgres_store import PostgresGraphStore
    from graphmem.adapters.postgres_vectors import PgVectorIndex

    assert settings.store.url is not None
    store = PostgresGraphStore(
        settings.store.url,
        dimension=dimension,
        password=settings.store.password_value,
        tls=settings.store.tls,
        # A daemon (a service started at boot, a laptop's database started later) serves while the
        # server does not answer yet: /health and each call say so, and the store is checked once
        # it answers. A one-shot CLI fails at once instead (exit 5).
        wait=background,
        then=lambda opened: _check_stored_model(
            opened, opened.where, embedder.model_name, dimension, enforce=check_model
        ),
        # The daemon's full-text index beside it (adapters/postgres_lexical.py); a one-shot CLI
        # asks the database, rather than build an index it would leave before it is done.
        text_index=data_dir if background else None,
    )
    return _Opened(
        store,
        SemanticIndex(store, embedder, lambda dim: PgVectorIndex(store, dim), background=worker),
        PostgresCodeGraph(store),
        PostgresGitLabGraph(store),
        login=store,
        # Sessions and claims in the database: every daemon (and CLI) of the team sees them.
        coordinator=PgCoordinator(store, utc_now, timedelta(seconds=settings.server.session_ttl_seconds)),
    )


def build_memory(
    store: GraphStore,
    semantic: SemanticIndex | None,
    settings: Settings,
    *,
    data_dir: Path,
    namespace: Namespace = lambda project: None,
    code: CodeGraph | None = None,
    enricher: Enricher | None = None,
    sources: LearningSources | None = None,
    clock: Callable[[], datetime] = utc_now,
    login: StoreLogin | None = None,
    coordinator: Coordination | None = None,
) -> MemoryService:
    """The Memory service on ``store`` and its peers: every service object is built here, once.

    ``namespace`` gives a project's GitLab path (relative refs); without ``code`` there is no
    bootstrap, without ``enricher`` no GitLab, without ``sources`` no bootstrap or ingest;
    ``login`` is a team's store's role (``stats`` says who the caller is); ``coordinator``
    keeps sessions and claims (a team's store's; else only a daemon has one).
    """
    roots = sources.roots if sources is not None else None
    mentions = Mentions(code, namespace, roots.checkout if roots is not None else checkout_path)
    writer = MemoryWriter(store, semantic, mentions, clock=clock)
    store = writer.store  # every peer reads (and the writer writes) behind the redaction door
    gitlab = enricher.graph if enricher is not None else None
    names = ProjectNames(roots, writer, code)  # a read sees a project's pending names as its own
    stores = Stores(
        store,
        semantic,
        code=code,
        gitlab=gitlab,
        namespace=namespace,
        clock=clock,
        aliases=names.pending,
        # a GitHub ref: not another project's GitLab title, nor its GitLab edges (Stores.shown)
        another_projects=enricher.another_projects if enricher is not None else never_theirs,
    )
    rememberer = Rememberer(
        writer,
        stores=stores,
        near_duplicate=settings.dedup.near_duplicate,
        same_subject=settings.dedup.same_subject,
    )
    branches = BranchLifecycle(stores, writer, roots)
    if enricher is not None:
        enricher.listen(ForgeRules(writer, mentions).entity_changed)  # the forge's lifecycle rules
        enricher.listen(branches.state_changed)  # a branch's MR merged or closed
    staleness = Staleness(stores)  # what changed in the code since a memory was written
    recaller = Recaller(
        stores, staleness, mentions=mentions, plan=settings.recall.plan, limit=settings.recall.limit
    )
    context = ContextBuilder(
        stores,
        recaller.unmarked,
        names.checkout,
        staleness,
        enricher,
        max_tokens=settings.recall.context_max_tokens,
    )
    transfer = TransferFiles(
        partial(_transfer, stores, writer, staleness), data_dir, writer.lock, names, settle=release_after
    )
    options = IngestOptions(
        opencode_db=str(settings.ingest.opencode_db) if settings.ingest.opencode_db else None,
        idle_seconds=settings.ingest.idle_seconds,
        llm_max_sessions_per_run=settings.extraction.max_sessions_per_run,
        background=settings.ingest.enabled,
        interval_seconds=settings.ingest.interval_seconds,
    )
    bootstrapper = ingester = None
    session_files = SessionFiles()
    if sources is not None:
        if code is not None:
            bootstrapper = Bootstrapper(
                writer,
                code,
                clock,
                refs_in=mentions.refs_in,
                new_parser=sources.new_parser,
                files=sources.files,
                history=sources.history,
                large_job=collecting_rarely,
                branch_of=sources.roots.branch,
            )
        ingester = Ingester(
            writer,
            rememberer,
            options=options,
            clock=clock,
            sessions=sources.sessions,
            roots=sources.roots,
            names=names,
            llm=sources.extractor,
        )
        session_files = SessionFiles({
            name: Ingester(writer, rememberer, options=options, clock=clock, sessions=files,
                           roots=sources.roots, names=names, llm=sources.extractor,
                           client=SESSION_CLIENTS[name])
            for name, files in sources.session_files.items()
        })  # fmt: skip
    parts = MemoryParts(
        writer=writer,
        rememberer=rememberer,
        mentions=mentions,
        recaller=recaller,
        context=context,
        listing=Listing(stores, data_dir, staleness, login),
        lifecycle=Lifecycle(writer, rememberer),
        review=Review(stores, staleness),
        staleness=staleness,
        neighbourhood=NeighbourhoodReader(stores),
        home=Home(stores, staleness),
        transfer=transfer,
        ingest=options,
        names=names,
        enricher=enricher,
        bootstrapper=bootstrapper,
        ingester=ingester,
        session_files=session_files,
        code=code,
        branches=branches,
        coordinator=coordinator,
    )
    return MemoryService(parts)


def _transfer(stores: Stores, writer: MemoryWriter, staleness: Staleness) -> Transfer:
    """Export and import, built by ``TransferFiles`` on the first of them: a command that never
    exports nor imports loads neither their modules nor the export format's pydantic models."""
    from graphmem.service.transfer import Transfer

    return Transfer(stores, writer, staleness)


def _enricher(
    settings: Settings,
    graph: GitLabGraph,
    code: CodeGraph,
    namespace: Callable[[str], str | None],
    foreign: Callable[[str], ForeignRemote | None],
) -> Enricher:
    """The GitLab enrichment queue; it fetches nothing unless ``[gitlab]`` has a token, and never
    a ref of a repository on another forge (``foreign``: a project's origin there)."""
    gitlab = settings.gitlab
    client: GitLabClient | None = None
    if gitlab.configured:
        from graphmem.adapters.gitlab_api import PythonGitLabClient

        assert gitlab.token is not None
        client = PythonGitLabClient(
            gitlab.url, gitlab.token.get_secret_value(), timeout_s=gitlab.timeout_seconds
        )
    config = EnrichmentConfig(
        url=gitlab.url,
        enabled=gitlab.enabled,
        token_set=gitlab.token is not None,
        ttl_s=gitlab.ttl_seconds,
        missing_ttl_s=gitlab.missing_ttl_seconds,
    )
    return Enricher(graph, client, config, namespace=namespace, clock=utc_now, code=code, foreign=foreign)


def migrate_store(settings: Settings, target: int | None = None) -> MigrationReport:
    """Apply (or with ``target``, roll back to) the PostgreSQL store's schema migrations
    (``graphmem migrate``); the embedded store migrates itself when it opens."""
    from graphmem.adapters.postgres_migrate import migrate

    if not settings.store.url:
        raise ConfigError(
            "graphmem migrate changes the schema of a PostgreSQL store: set [store] url in the config "
            "file or GRAPHMEM_STORE_URL (the embedded store migrates itself when it opens)."
        )
    return migrate(
        settings.store.url, target=target, password=settings.store.password_value, tls=settings.store.tls
    )


def store_schema(settings: Settings) -> tuple[str, int, int]:
    """Where the PostgreSQL store is, its schema version and the version this graphmem needs."""
    from graphmem.adapters.postgres_connection import PostgresConnection
    from graphmem.adapters.postgres_migrate import SCHEMA_VERSION, schema_version

    if not settings.store.url:
        raise ConfigError("No PostgreSQL store is configured: set [store] url or GRAPHMEM_STORE_URL.")
    conn = PostgresConnection(
        settings.store.url, password=settings.store.password_value, tls=settings.store.tls
    )
    try:
        return conn.where, schema_version(conn), SCHEMA_VERSION
    finally:
        conn.close()


def store_size_mb(settings: Settings) -> float:
    """The PostgreSQL store's database size on disk, in MB (``bench scale``)."""
    from graphmem.adapters.postgres_connection import PostgresConnection

    assert settings.store.url is not None
    conn = PostgresConnection(
        settings.store.url, password=settings.store.password_value, tls=settings.store.tls
    )
    try:
        return round(int(conn.rows("SELECT pg_database_size(current_database())")[0][0]) / 1e6, 1)
    finally:
        conn.close()


def learning_sources(settings: Settings) -> LearningSources:
    """What bootstrap and ingest read: tree-sitter, the files and history of git, OpenCode's sessions."""
    return LearningSources(
        new_parser=partial(_tree_sitter_parser, settings.bootstrap.parse_workers),
        files=RepositoryFileWalker(),
        history=GitLog(),
        roots=GitToplevel(shared=settings.store.url is not None),
        sessions=OpenCodeSessions(),
        extractor=_session_extractor(settings),
        session_files={CLAUDE_CODE.source: ClaudeCodeTranscripts(), CODEX.source: CodexSessions()},
    )


def _tree_sitter_parser(workers: int) -> CodeParser:
    """Tree-sitter in ``workers`` processes (0: one per core, at most 4; see ``ParserPool``): the
    grammars are imported by the workers of a bootstrap, never by graphmem's process."""
    from graphmem.adapters.parse_pool import ParserPool

    return ParserPool(workers)


def _session_extractor(settings: Settings) -> SessionExtractor | None:
    """The LLM extractor when ``[extraction] model`` is set; None means the rules alone."""
    extraction = settings.extraction
    if not extraction.model:
        return None
    from graphmem.adapters.llm_extractor import LLMExtractor

    key = os.environ.get(extraction.api_key_env, "").strip() if extraction.api_key_env else ""
    return LLMExtractor(
        model=extraction.model,
        base_url=extraction.base_url,
        api_key=key or None,
        max_input_tokens=extraction.max_input_tokens,
        max_output_tokens=extraction.max_output_tokens,
        timeout_s=extraction.timeout_seconds,
    )


def _check_model(store: GraphStore, where: str, model: str, dimension: int, *, enforce: bool) -> None:
    """Record the embedding model of a new store; refuse (closing the store) one embedded with
    another model unless not ``enforce``d."""
    try:
        _check_stored_model(store, where, model, dimension, enforce=enforce)
    except BaseException:
        store.close()
        raise


def _check_stored_model(store: GraphStore, where: str, model: str, dimension: int, *, enforce: bool) -> None:
    stored_model = store.get_meta("embedding_model")
    stored_dimension = store.get_meta("embedding_dimension")
    if stored_model is None:
        record_model(store, model, dimension)
        return
    if enforce and (stored_model != model or stored_dimension != str(dimension)):
        # Quoted in part: on a team's store anyone with write access may have set either.
        raise StoreMismatchError(
            f"The store at {where} was embedded with {stored_model[:200]} "
            f"({str(stored_dimension)[:20]} dims) but the configured model is {model} ({dimension} dims). "
            "Run `graphmem reindex` to re-embed every memory with the configured model, or set "
            "[embedding] model back."
        )
