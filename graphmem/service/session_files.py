"""Learning from the sessions a client keeps in files its hook names (Claude Code's transcripts,
Codex's session files).

``SessionFiles`` holds one ``Ingester`` per such client (built by ``graphmem.app``, each over the
client's ``SessionSource``, which reads a file only inside the client's own sessions folder) and
ingests the one session a hook names: as ``ingest_opencode`` does for an OpenCode session, once,
and again only with what its new messages teach. The daemon's ``/plugin/ingest`` route calls it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from graphmem.errors import InvalidInputError
from graphmem.service.ingest import CLAUDE_CODE, CODEX, Ingester, SessionClient
from graphmem.service.results import IngestReport

# The clients whose sessions are files a hook names, by their source.
SESSION_CLIENTS: Mapping[str, SessionClient] = {client.source: client for client in (CLAUDE_CODE, CODEX)}


class SessionFiles:
    """The ingesters of the clients whose sessions are files, by the client's source."""

    def __init__(self, ingesters: Mapping[str, Ingester] | None = None) -> None:
        self._ingesters = dict(ingesters or {})

    def check_session(self, client: str, path: str, session_id: str) -> Path:
        """The file ``ingest_session`` would read, checked now without reading it: inside the
        client's own sessions folder, not a symlink, and named for ``session_id`` (the daemon's
        route answers a wrong one at once instead of queueing it). ``InvalidInputError`` for a
        client graphmem does not learn from, ``SessionStoreError`` saying what is wrong with the file;
        ``ingest_session`` checks all of it again."""
        return self._ingester(client).locate(path, session_id)

    def ingest_session(self, client: str, path: str, session_id: str) -> IngestReport:
        """Learn from the session ``session_id`` of ``client`` (``claude-code``, ``codex``) kept in the file
        ``path``, as the client's hook names it."""
        return self._ingester(client).run(db_path=path, session_id=session_id)

    def _ingester(self, client: str) -> Ingester:
        ingester = self._ingesters.get(client)
        if ingester is None:
            known = ", ".join(sorted(self._ingesters)) or "none"
            raise InvalidInputError(f"graphmem does not learn from {client!r} sessions (known: {known}).")
        return ingester
