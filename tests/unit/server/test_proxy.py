"""``graphmem mcp`` sends its token and the call only to a daemon that proved it holds the token."""

from __future__ import annotations

from pathlib import Path

from support.squatter import Squatter

from graphmem.server.daemon_process import DaemonInfo
from graphmem.server.proxy import Proxy

TOKEN = "t" * 43
CALL = {
    "jsonrpc": "2.0",
    "id": 7,
    "method": "tools/call",
    "params": {"name": "remember", "arguments": {"text": "The deploy key is hunter2"}},
}


def test_a_squatter_on_the_daemons_port_gets_no_token_and_no_call(tmp_path: Path) -> None:
    (tmp_path / "daemon.token").write_text(TOKEN + "\n", "ascii")
    squatter = Squatter(pid=4242)
    info = DaemonInfo(4242, squatter.url, str(tmp_path), 0.0, "t")
    started: list[Path] = []

    def start(data_dir: Path, timeout: float) -> DaemonInfo:
        started.append(data_dir)
        return info  # the squatter still answers where the daemon would be

    proxy = Proxy(tmp_path, None, "t", 1.0, start=start)
    try:
        reply = proxy.handle(CALL)
    finally:
        squatter.close()

    assert reply is not None and reply["result"]["isError"] is True
    text = reply["result"]["content"][0]["text"]
    assert "not the graphmem daemon" in text and "Nothing was stored" in text
    assert TOKEN.encode() not in squatter.received and b"hunter2" not in squatter.received
    assert b"/identity" in squatter.received  # it was asked to prove itself, and could not
    assert len(started) == 2  # it looked for the daemon again before giving up
