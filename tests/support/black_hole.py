"""A TCP proxy on loopback that forwards to a server and, told so, goes silent: what a network
partition looks like to graphmem (``adapters/postgres_liveness.py``).

While :meth:`SilentProxy.silence`-d it forwards nothing either way and answers nothing: no
connection is closed, a new one is left unanswered (the kernel completes its handshake; nothing
reads from it), so a client waits for an answer that does not come, as it does when the
server's packets are dropped on the way. :meth:`SilentProxy.resume` forwards again, the
connections that waited included.

It is the path behind a proxy or tunnel, not the kernel's own TCP view (the proxy's kernel
still acknowledges what it is sent): the TCP keepalives a silent *peer* trips cannot be tested
on loopback without changing the machine's firewall, which a test must not.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

# How often a forwarding thread looks whether it should stop (the proxy closed).
POLL_S = 0.05
CHUNK = 65536


class SilentProxy:
    """Forwards ``127.0.0.1:port`` to ``target`` (host, port) until :meth:`close`."""

    def __init__(self, target: tuple[str, int]) -> None:
        self._target = target
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=64)
        self._listener.settimeout(POLL_S)
        self.port: int = self._listener.getsockname()[1]
        self._open = threading.Event()  # set: forwarding; clear: silent
        self._open.set()
        self._closed = threading.Event()
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._accept, name="silent-proxy", daemon=True)]
        self._threads[0].start()

    def url(self, database_url: str) -> str:
        """``database_url`` (a ``postgresql://user@host:port/db``) through this proxy."""
        head, _, rest = database_url.partition("@")
        _, _, path = rest.partition("/")
        return f"{head}@127.0.0.1:{self.port}/{path}"

    def silence(self) -> None:
        """Stop forwarding and answering, closing nothing."""
        self._open.clear()

    def resume(self) -> None:
        """Forward again, what waited meanwhile included."""
        self._open.set()

    def close(self) -> None:
        self._closed.set()
        self._open.set()
        for thread in self._threads:
            thread.join(timeout=5)
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in [self._listener, *sockets]:
            sock.close()

    def _accept(self) -> None:
        while not self._closed.is_set():
            if not self._open.wait(POLL_S):
                continue  # silent: the kernel keeps new connections waiting, unanswered
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                server = socket.create_connection(self._target, timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets += [client, server]
            for source, sink in ((client, server), (server, client)):
                thread = threading.Thread(target=self._pump, args=(source, sink), daemon=True)
                self._threads.append(thread)
                thread.start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        source.settimeout(POLL_S)
        while not self._closed.is_set():
            if not self._open.wait(POLL_S):
                continue  # silent: nothing read, nothing sent, nothing closed
            try:
                data = source.recv(CHUNK)
            except TimeoutError:
                continue
            except OSError:
                data = b""
            if not data:
                break
            while not self._open.wait(POLL_S):  # silenced meanwhile: held until resumed
                if self._closed.is_set():
                    return
            try:
                sink.sendall(data)
            except OSError:
                break
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


@contextmanager
def silent_proxy(target: tuple[str, int]) -> Iterator[SilentProxy]:
    proxy = SilentProxy(target)
    try:
        yield proxy
    finally:
        proxy.close()
