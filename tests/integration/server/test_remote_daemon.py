"""``RemoteMemory`` through a real ``graphmem serve`` (hash vectors, ``support/hash_vectors.py``):
its calls share one connection, kept open by the daemon between them."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from support.daemons import HASH_VECTORS, start_daemon, wait_healthy

from graphmem.server import loopback
from graphmem.server.daemon_process import find_daemon
from graphmem.server.remote import RemoteMemory


def test_five_calls_through_a_real_daemon_open_one_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data_dir = tmp_path / "data"
    daemon = start_daemon(data_dir, program=HASH_VECTORS)
    try:
        wait_healthy(daemon)
        info = find_daemon(data_dir)
        assert info is not None
        opened: list[tuple[str, int]] = []
        create_connection = socket.create_connection

        def counted(address: tuple[str, int], *args: Any, **kwargs: Any) -> socket.socket:
            opened.append(address)
            return create_connection(address, *args, **kwargs)

        monkeypatch.setattr(loopback.socket, "create_connection", counted)
        memory = RemoteMemory(info)  # type: ignore[abstract]
        try:
            memory.remember("The invoice service retries webhooks three times")
            memory.remember("Refunds keep the card fee")
            found = [memory.recall(text).hits for text in ("webhooks retries", "card fee", "refunds")]
        finally:
            memory.close()
    finally:
        daemon.stop()

    assert all(found)
    assert len(opened) == 1
