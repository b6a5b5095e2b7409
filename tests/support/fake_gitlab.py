"""A GitLab REST v4 server on 127.0.0.1 that answers from the fixtures in ``samples/gitlab/``.

Tests point python-gitlab (through ``graphmem.adapters.gitlab_api.PythonGitLabClient``) at it. It
is a stdlib ``ThreadingHTTPServer`` on a free port, running in a daemon thread;
``start()``/``stop()`` or ``with FakeGitLab() as gitlab:``.

Routes. A fixture file's path below ``samples/gitlab/`` *is* its route: ``GET
/api/v4/projects/acme%2Fshop%2Fbackend/merge_requests/12/diffs`` answers
``projects/acme/shop/backend/merge_requests/12/diffs.json``. Projects and groups are addressed by
URL-encoded full path or by numeric id (``/projects/42``, ``/groups/7``: the ids come from the
``id`` of the project and group fixtures). A route with no fixture answers 404 with GitLab's
body (``{"message": "404 Not found"}``). :meth:`FakeGitLab.set_route` adds or replaces a route's
payload, :meth:`FakeGitLab.remove_route` takes one away (``remove_route(".../diffs")`` makes an
instance older than GitLab 15.7, which has only ``/changes``).

The instance: ``url`` is ``http://127.0.0.1:<port><prefix>``; with ``prefix="/gitlab"`` it
stands for a self-managed GitLab under a path (``https://example.com/gitlab``). The API lives
under ``<url>/api/v4``.

Auth. Every request must carry ``PRIVATE-TOKEN: <token>`` (default :data:`TOKEN`); otherwise
401 ``{"message": "401 Unauthorized"}``, as GitLab answers.

Pagination. A fixture holding a JSON list is paginated like GitLab: ``page`` and ``per_page``
(default 20, at most 100) in the query; ``X-Page``, ``X-Per-Page``, ``X-Next-Page``,
``X-Prev-Page``, ``X-Total``, ``X-Total-Pages`` and a ``Link`` header (``rel="next"``, ``prev``,
``first``, ``last``) with absolute URLs. ``send_totals = False`` leaves out ``X-Total``,
``X-Total-Pages`` and ``rel="last"``, as GitLab does above 10,000 rows.

Faults (:meth:`FakeGitLab.fail`), per route (a substring of the decoded route, e.g.
``"merge_requests/12/diffs"``) or for every route, optionally one ``page`` of a list, forever or
for the next ``times`` requests:
401, 403, 404, 429 (with ``Retry-After: <retry_after_s>`` when given), 500, 502, 503,
``"slow"`` (waits ``delay_s`` before answering normally; make it longer than the client's
timeout), ``"trickle"`` (the normal answer's headers, then its body a byte every ``delay_s``),
``"malformed"`` (200 with ``Content-Type: application/json`` and a body that is not JSON),
``"html"`` (200 with an HTML page, as a proxy's login page). "Offline" is
:meth:`FakeGitLab.stop`: the port then refuses connections (the ``url`` keeps its value).

Generated data. :meth:`FakeGitLab.add_huge_merge_request` makes an MR (a copy of !12 under a new
iid) with thousands of changed files: ``/diffs`` paginated, ``/changes`` capped at 1,000 files with
``overflow: true`` and ``changes_count: "1000+"``, as GitLab does.

Every request is recorded (:class:`Request`: method, raw path, decoded route, query, headers),
in ``requests``; :meth:`FakeGitLab.count` counts those whose route contains a substring.

The code the fixtures talk about: :func:`shop_checkout` copies ``samples/repos/shop`` into a git
checkout whose ``origin`` is :data:`PROJECT`.
"""

from __future__ import annotations

import contextlib
import copy
import json
import shutil
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

from support.git_repo import copied_repository
from support.local_server import POLL_S

SAMPLES_DIR = Path(__file__).resolve().parents[2] / "samples" / "gitlab"
SAMPLE_REPO = Path(__file__).resolve().parents[2] / "samples" / "repos" / "shop"
TOKEN = "glpat-fake-token-0123456789"
PROJECT = "acme/shop/backend"
GROUP = "acme/shop"
DEFAULT_PER_PAGE = 20
MAX_PER_PAGE = 100
# GitLab's /changes returns at most this many files (the instance's diff limit) and sets `overflow`.
CHANGES_LIMIT = 1000

JSON = Any
STATUS_FAULTS = (401, 403, 404, 429, 500, 502, 503)
OTHER_FAULTS = ("slow", "trickle", "malformed", "html")
_MESSAGES = {
    401: "401 Unauthorized",
    403: "403 Forbidden",
    404: "404 Not found",
    429: "Retry later",
    500: "500 Internal Server Error",
    502: "502 Bad Gateway",
    503: "503 Service Unavailable",
}


@dataclass(frozen=True, slots=True)
class Request:
    """One request the server received."""

    method: str
    path: str  # as sent, URL-encoded, with the query
    route: str  # decoded, under /api/v4, ids replaced by full paths: /projects/acme/shop/backend/...
    query: dict[str, str]
    headers: dict[str, str]


@dataclass(slots=True)
class Fault:
    """A failure mode: ``mode`` for requests whose route contains ``route`` (None: every route)."""

    mode: int | str
    route: str | None = None
    times: int | None = None  # None: until cleared
    retry_after_s: float | None = None
    delay_s: float = 2.0
    page: int | None = None  # None: every page of a list
    hits: int = field(default=0)

    def matches(self, route: str, page: int) -> bool:
        return (
            (self.route is None or self.route in route)
            and (self.page is None or self.page == page)
            and (self.times is None or self.times > 0)
        )


def load_fixtures(root: Path = SAMPLES_DIR) -> dict[str, JSON]:
    """Every fixture under ``root`` by route (``/projects/acme/shop/backend``), parsed."""
    routes: dict[str, JSON] = {}
    for path in sorted(root.rglob("*.json")):
        route = "/" + path.relative_to(root).with_suffix("").as_posix()
        routes[route] = json.loads(path.read_text(encoding="utf-8"))
    return routes


class FakeGitLab:
    """The fixture server. Thread-safe; one instance per test (``with FakeGitLab() as gitlab:``)."""

    def __init__(self, *, token: str = TOKEN, prefix: str = "", samples: Path = SAMPLES_DIR) -> None:
        self.token = token
        self.prefix = "/" + prefix.strip("/") if prefix.strip("/") else ""
        self.routes: dict[str, JSON] = load_fixtures(samples)
        self.send_totals = True
        self.total_header: str | None = None  # what X-Total says instead of the count (a proxy's garble)
        self.link_base: str | None = None  # the whole address the pages' links name instead of this one
        self.redirect_to: str | None = None  # every API request answered 302 to this address + its path
        self.requests: list[Request] = []
        self.faults: list[Fault] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._port: int | None = None
        self._connections: set[socket.socket] = set()

    # -- data -----------------------------------------------------------------------------------

    def set_route(self, route: str, payload: JSON) -> None:
        """Answer ``route`` (decoded, e.g. ``/projects/acme/shop/backend/issues/9``) with ``payload``."""
        with self._lock:
            self.routes[route] = payload

    def remove_route(self, route: str) -> None:
        """Answer 404 on ``route`` from now on."""
        with self._lock:
            self.routes.pop(route, None)

    def fixture(self, route: str) -> JSON:
        """A deep copy of what ``route`` answers (to change it and :meth:`set_route` it back)."""
        with self._lock:
            return copy.deepcopy(self.routes[route])

    def add_huge_merge_request(self, iid: int, files: int, *, project: str = PROJECT) -> None:
        """An MR ``project!iid`` changing ``files`` files ``src/gen/module_00000.py``..., one hunk each."""
        base = self.fixture(f"/projects/{PROJECT}/merge_requests/12")
        base.update(
            iid=iid,
            id=900_000 + iid,
            title=f"Regenerate {files} modules",
            changes_count=f"{CHANGES_LIMIT}+" if files > CHANGES_LIMIT else str(files),
            reference=f"!{iid}",
            references={"short": f"!{iid}", "relative": f"!{iid}", "full": f"{project}!{iid}"},
            web_url=f"https://gitlab.example.com/{project}/-/merge_requests/{iid}",
        )
        diffs = [
            {
                "diff": f"@@ -1,2 +1,3 @@\n # generated\n+VALUE = {n}\n \n",
                "collapsed": False,
                "too_large": False,
                "new_path": f"src/gen/module_{n:05d}.py",
                "old_path": f"src/gen/module_{n:05d}.py",
                "a_mode": "100644",
                "b_mode": "100644",
                "new_file": False,
                "renamed_file": False,
                "deleted_file": False,
                "generated_file": True,
            }
            for n in range(files)
        ]
        changes = dict(base)
        changes["changes"] = [{k: v for k, v in d.items() if k != "generated_file"} for d in diffs][
            :CHANGES_LIMIT
        ]
        changes["overflow"] = files > CHANGES_LIMIT
        prefix = f"/projects/{project}/merge_requests/{iid}"
        with self._lock:
            self.routes[prefix] = base
            self.routes[f"{prefix}/diffs"] = diffs
            self.routes[f"{prefix}/changes"] = changes
            self.routes[f"{prefix}/closes_issues"] = []

    # -- faults ---------------------------------------------------------------------------------

    def fail(
        self,
        mode: int | str,
        *,
        route: str | None = None,
        times: int | None = None,
        retry_after_s: float | None = None,
        delay_s: float = 2.0,
        page: int | None = None,
    ) -> Fault:
        """Answer ``mode`` (a status in ``STATUS_FAULTS``, or ``"slow"``/``"malformed"``/``"html"``).

        ``route``: only requests whose decoded route contains it; ``times``: only the next
        ``times`` matching requests; ``page``: only that page of a list. The newest matching fault wins.
        """
        if mode not in STATUS_FAULTS and mode not in OTHER_FAULTS:
            raise ValueError(f"unknown fault {mode!r}: use one of {STATUS_FAULTS + OTHER_FAULTS}")
        fault = Fault(mode, route, times, retry_after_s, delay_s, page)
        with self._lock:
            self.faults.append(fault)
        return fault

    def clear_faults(self) -> None:
        """Answer normally again."""
        with self._lock:
            self.faults.clear()

    def _take_fault(self, route: str, page: int = 1) -> Fault | None:
        with self._lock:
            for fault in reversed(self.faults):
                if fault.matches(route, page):
                    fault.hits += 1
                    if fault.times is not None:
                        fault.times -= 1
                    return fault
        return None

    # -- recorded requests ----------------------------------------------------------------------

    def count(self, route_part: str = "") -> int:
        """How many requests had a decoded route containing ``route_part`` (all with "")."""
        with self._lock:
            return sum(1 for r in self.requests if route_part in r.route)

    def reset_requests(self) -> None:
        with self._lock:
            self.requests.clear()

    def _record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    # -- routing --------------------------------------------------------------------------------

    def resolve(self, raw_path: str) -> str | None:
        """The decoded route of a raw request path (``/api/v4/projects/42/...``), or None off the API."""
        api = f"{self.prefix}/api/v4"
        if not raw_path.startswith(api + "/"):
            return None
        segments = raw_path[len(api) + 1 :].split("/")
        if len(segments) >= 2 and segments[0] in ("projects", "groups"):
            ident = unquote(segments[1])
            if ident.isdigit():
                ident = self._path_of(segments[0], int(ident)) or ident
            segments = [segments[0], ident, *segments[2:]]
        return "/" + "/".join(unquote(s) if i != 1 else s for i, s in enumerate(segments)).rstrip("/")

    def _path_of(self, kind: str, ident: int) -> str | None:
        key = "path_with_namespace" if kind == "projects" else "full_path"
        with self._lock:
            for route, payload in self.routes.items():
                if (
                    route.startswith(f"/{kind}/")
                    and isinstance(payload, dict)
                    and payload.get("id") == ident
                    and key in payload
                ):
                    return str(payload[key])
        return None

    def answer(self, route: str) -> JSON | None:
        """What ``route`` answers (the stored object itself: only serialised, never changed)."""
        with self._lock:
            return self.routes.get(route)

    # -- lifecycle ------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("FakeGitLab was never started")
        return self._port

    @property
    def url(self) -> str:
        """The instance URL to configure (``http://127.0.0.1:<port>`` plus the prefix)."""
        return f"http://127.0.0.1:{self.port}{self.prefix}"

    @property
    def running(self) -> bool:
        return self._server is not None

    def start(self) -> FakeGitLab:
        """Listen (again, on the same port after :meth:`stop` when it is still free)."""
        if self._server is not None:
            return self
        server = _Server(("127.0.0.1", self._port or 0), _handler_for(self))
        server.daemon_threads = True
        self._server = server
        self._port = int(server.server_address[1])
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": POLL_S}, name="fake-gitlab", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening: from now on connections to ``url`` are refused ("offline")."""
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is not None:
            server.shutdown()
            server.server_close()
        with self._lock:
            open_connections, self._connections = list(self._connections), set()
        for connection in open_connections:  # kept-alive connections would go on being served
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> FakeGitLab:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet: a client that timed out closed the socket a slow answer writes to."""


def pages(items: list[JSON], page: int, per_page: int) -> tuple[list[JSON], int]:
    """The slice of ``items`` on ``page`` (1-based) and the number of pages (at least 1)."""
    total_pages = max(1, -(-len(items) // per_page))
    start = (page - 1) * per_page
    return items[start : start + per_page], total_pages


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def _handler_for(gitlab: FakeGitLab) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def setup(self) -> None:
            super().setup()
            # headers and body go out in two writes: without this, Nagle + delayed ACK add 40 ms a request
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with gitlab._lock:
                gitlab._connections.add(self.connection)

        def finish(self) -> None:
            with gitlab._lock:
                gitlab._connections.discard(self.connection)
            super().finish()

        def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            content_type = (headers or {}).pop("Content-Type", "application/json")
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            trickle = self.trickle_s
            if trickle is None:
                self.wfile.write(body)
                return
            for at in range(len(body)):  # until the client gives up (a broken pipe ends the thread)
                self.wfile.write(body[at : at + 1])
                time.sleep(trickle)

        def _send_json(self, status: int, payload: JSON, headers: dict[str, str] | None = None) -> None:
            self._send(status, json.dumps(payload).encode(), dict(headers or {}))

        def _fault(self, fault: Fault) -> bool:
            """Answer ``fault``; False when the request should then be answered normally (slow)."""
            if fault.mode == "slow":
                time.sleep(fault.delay_s)
                return False
            if fault.mode == "trickle":
                self.trickle_s = fault.delay_s
                return False
            if fault.mode == "malformed":
                self._send(200, b'{"id": 42, "title": "cut off', {"Content-Type": "application/json"})
            elif fault.mode == "html":
                page = b"<!DOCTYPE html><html><body>Sign in</body></html>"
                self._send(200, page, {"Content-Type": "text/html; charset=utf-8"})
            else:
                status = int(fault.mode)
                headers = {}
                if status == 429 and fault.retry_after_s is not None:
                    headers["Retry-After"] = f"{fault.retry_after_s:g}"
                self._send_json(status, {"message": _MESSAGES[status]}, headers)
            return True

        def do_GET(self) -> None:
            self.trickle_s: float | None = None  # this request's (the handler serves a connection's)
            parts = urlsplit(self.path)
            query = dict(parse_qsl(parts.query))
            route = gitlab.resolve(parts.path)
            gitlab._record(
                Request("GET", self.path, route or parts.path, query, {k: v for k, v in self.headers.items()})
            )
            if route is None:
                self._send(404, b"<html>not the API</html>", {"Content-Type": "text/html"})
                return
            if gitlab.redirect_to is not None:
                self._send(302, b"", {"Location": gitlab.redirect_to + self.path})
                return
            if self.headers.get("PRIVATE-TOKEN") != gitlab.token:
                self._send_json(401, {"message": "401 Unauthorized"})
                return
            fault = gitlab._take_fault(route, max(_int(query.get("page"), 1), 1))
            if fault is not None and self._fault(fault):
                return
            payload = gitlab.answer(route)
            if payload is None:
                self._send_json(404, {"message": "404 Not found"})
                return
            if not isinstance(payload, list):
                self._send_json(200, payload)
                return
            per_page = min(max(_int(query.get("per_page"), DEFAULT_PER_PAGE), 1), MAX_PER_PAGE)
            page = max(_int(query.get("page"), 1), 1)
            items, total_pages = pages(payload, page, per_page)
            self._send_json(
                200, items, self._page_headers(parts.path, query, page, per_page, total_pages, len(payload))
            )

        def _page_headers(
            self, path: str, query: dict[str, str], page: int, per_page: int, total_pages: int, total: int
        ) -> dict[str, str]:
            here = f"http://{self.headers.get('Host') or f'127.0.0.1:{gitlab.port}'}"
            base = gitlab.link_base or f"{here}{quote(path, safe='/%')}"

            def link(n: int) -> str:
                return f"{base}?{urlencode({**query, 'page': n, 'per_page': per_page})}"

            links = []
            headers = {"X-Page": str(page), "X-Per-Page": str(per_page)}
            headers["X-Next-Page"] = str(page + 1) if page < total_pages else ""
            headers["X-Prev-Page"] = str(page - 1) if page > 1 else ""
            if page > 1:
                links.append(f'<{link(page - 1)}>; rel="prev"')
            if page < total_pages:
                links.append(f'<{link(page + 1)}>; rel="next"')
            links.append(f'<{link(1)}>; rel="first"')
            if gitlab.send_totals:
                headers["X-Total"] = str(total) if gitlab.total_header is None else gitlab.total_header
                headers["X-Total-Pages"] = str(total_pages)
                links.append(f'<{link(total_pages)}>; rel="last"')
            headers["Link"] = ", ".join(links)
            return headers

    return Handler


def shop_checkout(parent: Path) -> str:
    """The sample repository as a git checkout under ``parent`` whose origin is :data:`PROJECT`;
    its resolved root."""
    return str(copied_repository(parent / "shop", _shop))


def _shop(root: Path) -> None:
    shutil.copytree(SAMPLE_REPO, root, dirs_exist_ok=True)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(
        ["git", "remote", "add", "origin", f"git@gitlab.example.com:{PROJECT}.git"], cwd=root, check=True
    )
