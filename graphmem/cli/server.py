"""The daemon and its entries: serve, mcp, stop, ui."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from graphmem.cli.state import CliState, pass_state

if TYPE_CHECKING:
    from graphmem.settings import Settings


def _start_log(data_dir: Path, max_bytes: int, *, to_file: bool) -> None:
    """The daemon's log (``server/daemon_log.py``): rotated ``daemon.log`` in the background, else
    stderr; then its data dir made private (an older store's tightened, said in the log). A
    folder that is not graphmem's is refused before the log is written into it."""
    from graphmem.adapters.data_dir import make_private, refuse_foreign
    from graphmem.errors import StoreError
    from graphmem.server.daemon_log import log_to_file, log_to_stderr

    try:
        refuse_foreign(data_dir)
        if to_file:
            data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            log_to_file(data_dir, max_bytes)
        else:
            log_to_stderr()
        make_private(data_dir)
    except OSError as exc:
        raise StoreError(f"Cannot prepare the data dir {data_dir}: {exc.strerror or exc}.") from None


@click.command()
@click.option("--host", default=None, help="Address to bind (default: [server] host, 127.0.0.1).")
@click.option(
    "--port", type=click.IntRange(0, 65535), default=None, help="Port (default: [server] port, 9824)."
)
@click.option("--detach", is_flag=True, help="Start the daemon in the background and return once it serves.")
@click.option(
    "--start-timeout",
    type=click.FloatRange(min=1),
    default=None,
    help="With --detach: seconds to wait for it (default: [server] start_timeout_seconds).",
)
@click.option("--port-fallback", is_flag=True, hidden=True, help="Serve on a free port if the port is taken.")
@click.option("--detached-child", is_flag=True, hidden=True, help="Set by --detach for the daemon it starts.")
@pass_state
def serve(
    state: CliState,
    host: str | None,
    port: int | None,
    detach: bool,
    start_timeout: float | None,
    port_fallback: bool,
    detached_child: bool,
) -> None:
    """Run the daemon: MCP over HTTP at /mcp, plus /health, /stats and /metrics.

    One daemon owns a data dir; `graphmem mcp` starts it when needed, so you
    rarely run this yourself. It stops on Ctrl-C or `graphmem stop`.

    \b
    Example:
        $ graphmem serve --port 9824
        graphmem daemon: http://127.0.0.1:9824/mcp (data: ~/.local/share/graphmem)
        $ graphmem serve --detach
        graphmem daemon (pid 4242): http://127.0.0.1:9824/mcp
    """
    from graphmem.server.daemon import serve as run
    from graphmem.server.daemon_process import spawn_detached, wait_for_daemon
    from graphmem.settings import load_settings
    from graphmem.settings_addresses import checked_host

    # Checked here, not only by the daemon: a detached one would say it in its log alone.
    host = None if host is None else checked_host(host, "--host")
    settings = load_settings(data_dir=state.data_dir)
    if not detach:
        _start_log(settings.data_dir.expanduser(), settings.server.log_max_bytes, to_file=detached_child)
        run(settings, host=host, port=port, port_fallback=port_fallback, detached=detached_child)
        return
    data_dir = settings.data_dir.expanduser()
    timeout = start_timeout or settings.server.start_timeout_seconds
    info = wait_for_daemon(data_dir, timeout)  # one starting (another client's) is the one asked for
    if info is None:
        env = dict(os.environ)
        env["GRAPHMEM_DATA_DIR"] = str(data_dir)
        if host is not None:
            env["GRAPHMEM_SERVER__HOST"] = host
        if port is not None:
            env["GRAPHMEM_SERVER__PORT"] = str(port)
        fallback = port_fallback and port is None
        info = spawn_detached(data_dir, timeout=timeout, env=env, port_fallback=fallback)
    click.echo(f"graphmem daemon (pid {info.pid}): {info.mcp_url}")


@click.command()
@pass_state
def mcp(state: CliState) -> None:
    """The stdio MCP server an MCP client launches (OpenCode: `graphmem install opencode`).

    Lists the tools at once, starts the daemon if none serves the data dir, and
    forwards every call to it. Logs go to stderr only.

    \b
    Example:
        graphmem mcp     # what the client runs; it speaks MCP on stdin/stdout
    """
    import logging
    from importlib.metadata import version

    from graphmem.server.proxy import main as run
    from graphmem.settings import load_settings

    if not logging.getLogger("graphmem").handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("graphmem mcp: %(levelname)s %(message)s"))
        logging.getLogger("graphmem").addHandler(handler)
        logging.getLogger("graphmem").setLevel(logging.WARNING)
    state.check_settings()  # as every reader: invalid values stop it, unknown keys are warned of
    settings = load_settings(data_dir=state.data_dir)
    _check_data_dir(settings)
    run(
        settings.data_dir.expanduser(),
        start_timeout=settings.server.start_timeout_seconds,
        api_key=settings.api_key.get_secret_value() if settings.api_key else None,
        max_line_bytes=settings.server.max_request_bytes,
        version=version("graphmem"),
    )


def _check_data_dir(settings: Settings) -> None:
    """Before ``graphmem mcp`` speaks MCP: a daemon already serving the data dir must serve the
    store these settings ask for; with none, the data dir must be one a daemon can start in, made
    (0700) as the daemon's start would make it. The proxy starts the daemon in the background, so
    a data dir it cannot use would come back on every tool call as "the daemon is unavailable",
    pointing at a daemon.log never written: here it is the command's error, one line with its exit
    code, as any other command's. One that is not graphmem's is refused with its files named
    (``refuse_foreign``: nothing is written into it)."""
    from graphmem.errors import StoreError
    from graphmem.locate import describe_store
    from graphmem.server.daemon_process import check_daemon_store, find_daemon, make_data_dir

    data_dir = settings.data_dir.expanduser()
    try:
        daemon = find_daemon(data_dir)
        if daemon is None:
            make_data_dir(data_dir)  # as the daemon's start makes it: refused first when not graphmem's
    except OSError as exc:  # a file in its path, no permission, a read-only file system
        raise StoreError(
            f"Cannot create the data dir {data_dir} ({exc.strerror or exc}): give a folder you can "
            "write with --data-dir, GRAPHMEM_DATA_DIR or data_dir in the config file."
        ) from None
    if daemon is not None:
        check_daemon_store(daemon, describe_store(data_dir, settings.store.url))


@click.command()
@pass_state
def stop(state: CliState) -> None:
    """Stop the daemon serving the data dir (clients restart it when they need it).

    \b
    Example:
        $ graphmem stop
        Stopped the graphmem daemon (pid 4242) at http://127.0.0.1:9824.
    """
    from graphmem.server.daemon_process import stop_daemon
    from graphmem.settings import load_settings

    settings = load_settings(data_dir=state.data_dir)
    info = stop_daemon(settings.data_dir.expanduser())
    if info is None:
        click.echo("No graphmem daemon serves this data dir.")
    else:
        click.echo(f"Stopped the graphmem daemon (pid {info.pid}) at {info.url}.")


@click.command()
@click.option("--print-url", is_flag=True, help="Print the signed-in URL instead of opening a browser.")
@pass_state
def ui(state: CliState, print_url: bool) -> None:
    """Open the memory's web view in your browser, signed in (starts the daemon if none runs).

    Search, browse, edit and delete memories and see the graph of memories, merge requests,
    issues, files and symbols, at http://127.0.0.1:<port>/ui/ (see docs/ui.md). The URL
    carries a one-time sign-in code, good for two minutes; the browser is handed a private
    page in the data dir that leads there, never the code itself (other users could read it).

    \b
    Example:
        $ graphmem ui
        Opened the graphmem view: http://127.0.0.1:9824/ui/
        $ graphmem ui --print-url
        http://127.0.0.1:9824/ui/#code=Qm9...
    """
    import json
    import webbrowser
    from urllib.parse import urlsplit

    from graphmem.errors import StoreError
    from graphmem.locate import locate
    from graphmem.server import loopback
    from graphmem.server.daemon_process import find_daemon, read_token

    location = locate(state.data_dir)  # the data dir and key alone: no full settings while a daemon runs
    data_dir = location.data_dir.expanduser()
    info = find_daemon(data_dir)
    if info is None:
        from graphmem.server.daemon_process import ensure_daemon
        from graphmem.settings import load_settings

        timeout = load_settings(data_dir=state.data_dir).server.start_timeout_seconds
        info = ensure_daemon(data_dir, timeout=timeout)
    secret = read_token(data_dir) or location.api_key or ""
    target = urlsplit(info.url)
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {secret}"}
    try:
        status, raw = loopback.post(
            target.hostname or "127.0.0.1",
            target.port or 80,
            "/ui/login",
            b"{}",
            headers,
            30.0,
            expected=loopback.Expected(secret, info.pid, info.url),  # the token goes to the daemon only
        )
        path = json.loads(raw)["path"] if status == 200 else None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise StoreError(
            f"The graphmem daemon at {info.url} did not answer ({exc}): try `graphmem stop`."
        ) from None
    if not isinstance(path, str):
        raise StoreError(
            f"The graphmem daemon at {info.url} refused to sign the view in (HTTP {status}): a daemon of an "
            "older graphmem? Restart it with `graphmem stop`, then run `graphmem ui` again."
        )
    from urllib.parse import quote

    from graphmem.connect import resolve_project

    project = resolve_project(Path.cwd())  # the view starts in the current directory's project
    url = info.url + path + (f"&project={quote(project, safe='/')}" if project else "")
    if print_url:
        click.echo(url)
    elif webbrowser.open(_sign_in_page(data_dir, url).as_uri()):
        click.echo(f"Opened the graphmem view: {info.url}/ui/")
    else:
        click.echo(f"No browser to open here: open this URL within two minutes (it signs in once):\n{url}")


SIGN_IN_PAGE = "ui-sign-in.html"


def _sign_in_page(data_dir: Path, url: str) -> Path:
    """A page (0600, in the private data dir) that sends the browser on to ``url``: the browser
    is started with this file's name, never with the sign-in code, which any user of the machine
    could read on its command line (``/proc/PID/cmdline``)."""
    import html
    import json

    from graphmem.errors import StoreError

    page = data_dir / SIGN_IN_PAGE
    script_url = json.dumps(url).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    text = (
        "<!doctype html><meta charset=utf-8><title>graphmem</title>"
        f'<meta http-equiv="refresh" content="0;url={html.escape(url, quote=True)}">'
        f"<script>location.replace({script_url})</script>"
        f'<p>Opening <a href="{html.escape(url, quote=True)}">the graphmem view</a>.</p>\n'
    )
    partial = page.with_name(f".{SIGN_IN_PAGE}.{os.getpid()}.partial")
    try:
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            os.fchmod(fd, 0o600)  # a leftover partial file keeps its mode through O_TRUNC
            os.write(fd, text.encode("utf-8"))
        finally:
            os.close(fd)
        os.replace(partial, page)
    except OSError as exc:
        raise StoreError(
            f"Cannot write the sign-in page {page} ({exc.strerror or exc}): run `graphmem ui --print-url` "
            "and open the URL yourself."
        ) from None
    return page


COMMANDS = [serve, mcp, stop, ui]
