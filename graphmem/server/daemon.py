"""``graphmem serve``: the one process that owns the store, serving MCP over HTTP."""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import logging
import os
import signal
import socket
import sys
import time
from pathlib import Path

from graphmem.errors import ConfigError, ConflictError
from graphmem.locate import describe_store, shown_value
from graphmem.server.daemon_process import (
    LOG_FILENAME,
    DaemonInfo,
    ServeLock,
    collect_as_long_running,
    ensure_token,
)
from graphmem.settings import Settings, unknown_settings
from graphmem.settings_addresses import checked_host

log = logging.getLogger(__name__)

# A client probing the lock holds it for microseconds: retry that long before giving up.
LOCK_RETRY_S = 1.0


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the daemon on this machine (then no ``api_key`` is needed);
    anything this cannot tell is not (``127.1``: the settings refuse a name of numbers)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _bind(host: str, port: int, *, fallback: bool = False) -> socket.socket:
    """A listening socket on ``host:port``; a ``ConfigError`` (a ``ConflictError`` for a port in
    use) for any address it cannot listen on, never the socket's own exception: the settings
    refuse what no address is (``settings_addresses``), but a name may still not resolve."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    shown = f"{shown_value(host)} port {port}"
    try:
        sock.bind((host, port))
    except socket.gaierror as exc:  # before OSError, its base: a name that does not resolve
        sock.close()
        raise ConfigError(
            f"Cannot listen on {shown}: the address does not resolve ({exc.strerror}). Set [server] host "
            "(or --host) to an address of this machine, e.g. 127.0.0.1."
        ) from None
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE and fallback and port != 0:
            log.warning("port %s is in use; serving on a free port (clients read it from daemon.json)", port)
            return _bind(host, 0)
        if exc.errno == errno.EADDRINUSE:
            raise ConflictError(
                f"Port {port} on {host} is in use by another program: pass --port, or set "
                "[server] port (0 picks a free port)."
            ) from None
        raise ConfigError(f"Cannot listen on {shown}: {exc.strerror}.") from None
    except (ValueError, TypeError) as exc:  # CPython's for a NUL or a name no encoding takes
        sock.close()
        raise ConfigError(
            f"Cannot listen on {shown}: it is no address ({exc}). Set [server] host (or --host) to an "
            "IP address or a host name, e.g. 127.0.0.1."
        ) from None
    # Accepted connections inherit this: without it a keep-alive client waits ~40 ms per
    # call (Nagle on the response's second write meets the client's delayed ACK).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.listen(128)
    sock.set_inheritable(False)
    return sock


def _take_lock(data_dir: Path) -> ServeLock:
    deadline = time.monotonic() + LOCK_RETRY_S
    while True:
        try:
            return ServeLock(data_dir)
        except ConflictError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.05)


def published_info(settings: Settings, url: str, version: str) -> DaemonInfo:
    """What ``daemon.json`` says of this daemon: its pid, address and store, and its data dir as
    the settings give it, absolute (``graphmem.locate.absolute_data_dir``): each client finds
    ``daemon.token`` by it, from its own current directory."""
    data_dir = settings.data_dir
    return DaemonInfo(
        os.getpid(), url, str(data_dir), time.time(), version, describe_store(data_dir, settings.store.url)
    )


def serve(
    settings: Settings,
    *,
    host: str | None = None,
    port: int | None = None,
    port_fallback: bool = False,
    detached: bool = False,
) -> None:
    """Run the daemon until SIGTERM / SIGINT. Raises graphmem errors for bad setups."""
    import uvicorn

    from graphmem.app import daemon_runtime, plugin_injector
    from graphmem.server.connections import GuardedH11Protocol
    from graphmem.server.guard import Policy
    from graphmem.server.http import build_app

    for note in unknown_settings():
        log.warning("%s", note)
    # An explicit host is refused as the setting is: an empty one would bind every interface.
    host = settings.server.host if host is None else checked_host(host, "--host")
    port = settings.server.port if port is None else port
    api_key = settings.api_key.get_secret_value().strip() if settings.api_key else None
    if not is_loopback(host) and not api_key:
        raise ConfigError(
            f"Binding {host} exposes the memory beyond this machine: set GRAPHMEM_API_KEY (clients "
            "send it as a bearer token), or bind 127.0.0.1."
        )
    data_dir = settings.data_dir  # absolute, ``~`` expanded: the settings make it so
    lock = _take_lock(data_dir)
    try:
        token = ensure_token(data_dir)
        sock = _bind(host, port, fallback=port_fallback)
        runtime = daemon_runtime(
            settings, log_hint=str(data_dir / LOG_FILENAME) if detached else "the daemon's stderr"
        )
        memory = runtime.memory
        bound_host, bound_port = sock.getsockname()[:2]
        named = [] if ipaddress.ip_address(bound_host).is_unspecified else [bound_host]
        policy = Policy.build(
            token=token,
            api_key=api_key,
            max_bytes=settings.server.max_request_bytes,
            rate_limit=settings.rate_limit,
            allowed_hosts=[*settings.server.allowed_hosts, *named],  # the address it binds is its own
            allowed_origins=settings.server.allowed_origins,
        )
        app = build_app(runtime, policy, plugin_injector(runtime, settings.plugin))
        url_host = f"[{bound_host}]" if ":" in bound_host else bound_host
        # GuardedH11Protocol: deadlines for request heads and bodies, a cap on connections.
        # log_config=None: uvicorn logs through the daemon's own log (server/daemon_log.py).
        config = uvicorn.Config(
            app,
            log_level="warning",
            log_config=None,
            access_log=False,
            lifespan="on",
            http=GuardedH11Protocol,
        )
        server = uvicorn.Server(config)
        # A SIGTERM from now on stops the server: before ``server.run`` installs its own handler
        # (a ``graphmem stop`` reads the address published below at once), it marks the server
        # to stop as soon as it has started. uvicorn re-raises the signal under this handler once
        # it has stopped gracefully, which then only marks it again: the cleanup below runs.
        signal.signal(signal.SIGTERM, server.handle_exit)

        collect_as_long_running()
        runtime.start_worker()
        lock.publish(published_info(settings, f"http://{url_host}:{bound_port}", runtime.version))
        log.info("graphmem daemon serving %s at http://%s:%s/mcp", data_dir, url_host, bound_port)
        print(f"graphmem daemon: http://{url_host}:{bound_port}/mcp (data: {data_dir})", file=sys.stderr)
        try:
            server.run(sockets=[sock])
        finally:
            runtime.stop_worker()
            memory.close()
            with contextlib.suppress(OSError):
                sock.close()
    finally:
        lock.release()
