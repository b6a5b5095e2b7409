"""The ``/rpc`` verbs: which parameters each takes by position, and what it returns.

Declared from the light result and model modules only, so that the CLI's side
(``graphmem.server.remote``) binds a call and decodes the daemon's answer without
importing the Memory service and all it pulls in (the store's ports, numpy, the ingest
and transfer machinery): a call through a daemon starts fast. ``MemoryService``'s own
signatures stay the reference: tests/unit/server/test_rpc_types.py holds every entry
equal to its type hints, so the two cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from graphmem.core.bundle import ContextBundle
from graphmem.core.enrichment import EnrichReport, GitLabStatus
from graphmem.core.models import Link, MemoryRecord
from graphmem.service.results import (
    BootstrapReport,
    ExportSummary,
    ImportSummary,
    IngestReport,
    MemoryDetail,
    RecallResult,
    RememberResult,
    RepositoryExport,
    RepositoryFiles,
    Stats,
)

NONE = type(None)


@dataclass(frozen=True, slots=True)
class Verb:
    """One verb of ``MemoryService`` as the CLI calls it through a daemon."""

    positional: tuple[str, ...]  # the parameters a call may pass by position, in order
    result: Any  # the return type


_MEMORY_ID = ("memory_id",)
_LINK = ("source", "target", "kind")

VERBS: dict[str, Verb] = {
    "remember": Verb(("text",), RememberResult),
    "recall": Verb(("query",), RecallResult),
    "get_context": Verb(("target",), ContextBundle),
    "boot_context": Verb((), ContextBundle),
    "show": Verb(_MEMORY_ID, MemoryDetail),
    "list": Verb((), list[MemoryRecord]),
    "edit": Verb(_MEMORY_ID, MemoryRecord),
    "archive": Verb(_MEMORY_ID, MemoryRecord),
    "restore": Verb(_MEMORY_ID, MemoryRecord),
    "resolve": Verb(_MEMORY_ID, MemoryRecord),
    "unresolve": Verb(_MEMORY_ID, MemoryRecord),
    "delete": Verb(_MEMORY_ID, MemoryRecord),
    "link": Verb(_LINK, Link),
    "unlink": Verb(_LINK, NONE),
    "stats": Verb((), Stats),
    "import_file": Verb(("path",), ImportSummary),
    "import_text": Verb(("text",), ImportSummary),
    "embed_pending": Verb(("progress",), int),
    "load_model": Verb((), NONE),
    "reindex": Verb(("progress",), int),
    "export": Verb(("out",), ExportSummary),  # the text travels beside the summary
    "export_dir": Verb(("directory",), RepositoryExport),
    "export_repository": Verb((), RepositoryFiles),
    "bootstrap": Verb(("path",), BootstrapReport),
    "enrich": Verb(("refs",), EnrichReport),
    "gitlab_status": Verb((), GitLabStatus),
    "ingest_opencode": Verb((), IngestReport),
}
