"""``graphmem mcp`` reads its client's lines a bound at a time: a line without end never fills
its memory, and one over the daemon's largest request is refused, the next one served."""

from __future__ import annotations

import io
import json
from typing import Any

from graphmem.server.proxy import lines_within, run_stdio


def test_lines_within_the_bound_are_read_as_they_are_and_a_longer_one_is_none() -> None:
    stdin = io.BytesIO(b"short\n" + b"x" * 25 + b"\n" + b"nine byte\n" + b"a last line, no newline")

    assert list(lines_within(stdin, 10)) == [b"short\n", None, b"nine byte\n", None]


class _Answering:
    """Stands for the proxy: answers each request with its id, and records what reached it."""

    def __init__(self) -> None:
        self.handled: list[Any] = []

    def warm(self) -> None:
        pass

    def close(self) -> None:
        pass

    def handle(self, message: Any) -> dict[str, Any]:
        self.handled.append(message)
        return {"jsonrpc": "2.0", "id": message["id"], "result": {}}


def test_a_line_over_the_bound_is_refused_and_the_next_is_served() -> None:
    huge = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "y" * 5_000}})
    ping = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    stdin = io.BytesIO(f"{huge}\n{ping}\n".encode())
    stdout = io.StringIO()
    proxy = _Answering()

    run_stdio(proxy, stdin, stdout, max_line_bytes=1_000)  # type: ignore[arg-type]

    first, second = (json.loads(line) for line in stdout.getvalue().splitlines())
    assert first["error"]["code"] == -32600 and "over 1,000 bytes" in first["error"]["message"]
    assert second == {"jsonrpc": "2.0", "id": 2, "result": {}}
    assert [m["id"] for m in proxy.handled] == [2]
