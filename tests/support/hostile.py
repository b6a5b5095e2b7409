"""What the hostile-input suite checks after every case: the daemon is up and healthy, it
answered no 500 and no internal error, and the stored memories are exactly what they were
(or exactly what an acknowledged call changed).

A snapshot is the daemon's full JSONL export (every project) read through ``/rpc``: each
memory's id, text, category, scope, project, status, end of validity and reinforcement
count, and every link. Fields that reads may touch (times of access) are left out.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support.daemons import Daemon, http

# What a clear error never contains: a Python traceback, a code location, the MCP
# library's catch-all, or graphmem's own catch-all for an unexpected failure.
LEAKS = re.compile(
    r"Traceback \(most recent call last\)|File \"/|Internal error|Internal Server Error|"
    r"graphmem failed inside|Error executing tool"
)
JSON = {"Content-Type": "application/json"}

# In every file outside the store that a hostile call might try to read or reveal.
SECRET = "TOP-SECRET-7731"


@dataclass(frozen=True)
class Stage:
    """The daemon, its project and the things hostile paths point at."""

    daemon: Daemon
    project: Path  # a git checkout (resolved)
    outside: Path  # a folder outside the project and the data dir, holding the secret
    home: Path  # the daemon's $HOME
    fifo: Path  # a FIFO inside the project
    seeded: dict[str, str]  # name -> memory id
    # What points a CLI or proxy at the daemon's store (GRAPHMEM_STORE_URL on PostgreSQL): a
    # caller whose settings ask for another store than the daemon's is refused.
    store_env: dict[str, str] = field(default_factory=dict)

    @property
    def exports(self) -> Path:
        return self.daemon.data_dir / "exports"

    def untouched(self) -> dict[str, bytes]:
        """Every file outside the store and the project's .graphmem, with its bytes."""
        return {
            str(path): path.read_bytes()
            for base in (self.outside, self.home)
            for path in sorted(base.rglob("*"))
            if path.is_file() and not path.is_symlink()
        }


@dataclass(frozen=True)
class Snapshot:
    memories: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    links: frozenset[tuple[str, str, str]] = frozenset()

    def without(self, memory_id: str) -> Snapshot:
        return Snapshot(
            {k: v for k, v in self.memories.items() if k != memory_id},
            frozenset(link for link in self.links if memory_id not in link[:2]),
        )


def rpc_call(daemon: Daemon, method: str, **arguments: Any) -> dict[str, Any]:
    """One ``/rpc`` call with the daemon's token; its JSON answer (``result`` or ``error``)."""
    status, _, raw = http(
        "POST", f"{daemon.url}/rpc", json.dumps({"method": method, "arguments": arguments}).encode(), JSON
    )
    assert status in (200, 400), f"/rpc {method} answered {status}: {raw[:300]!r}"
    answer: dict[str, Any] = json.loads(raw)
    return answer


def snapshot(daemon: Daemon) -> Snapshot:
    """Every stored memory and link, of every project."""
    answer = rpc_call(daemon, "export")
    assert "result" in answer, answer
    memories: dict[str, tuple[Any, ...]] = {}
    links: set[tuple[str, str, str]] = set()
    for line in filter(None, answer["result"]["text"].split("\n")):  # JSON strings may hold U+2028
        record = json.loads(line)
        if record["type"] == "memory":
            memories[record["id"]] = (
                record["text"], record["category"], record["scope"], record["project"],
                record["status"], record["valid_to"], record["reinforced"],
            )  # fmt: skip
        elif record["type"] == "link":
            links.add((record["source"], record["target"], record["kind"]))
    return Snapshot(memories, frozenset(links))


def assert_healthy(daemon: Daemon) -> None:
    """The daemon process runs and ``/health`` says healthy."""
    assert daemon.process.poll() is None, f"the daemon died: {daemon.log.read_text()[-3000:]}"
    status, _, raw = http("GET", f"{daemon.url}/health", token=False)
    assert status == 200 and json.loads(raw)["status"] == "healthy", raw[:500]


def assert_clear(message: str) -> None:
    """An error a person or a model can act on: something said, no internals leaked."""
    assert message.strip(), "an empty error"
    leak = LEAKS.search(message)
    assert leak is None, f"the error leaks internals ({leak.group(0)!r}): {message[:500]}"


def metric_total(daemon: Daemon, name: str, label: str) -> float:
    """The sum of ``name{...label...}`` in /metrics (0 when absent)."""
    status, _, raw = http("GET", f"{daemon.url}/metrics")
    assert status == 200
    total = 0.0
    for line in raw.decode().splitlines():
        if line.startswith(name + "{") and label in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


def assert_no_internal_failures(daemon: Daemon) -> None:
    """No route answered 500 and no tool failed with an unexpected exception, ever."""
    assert metric_total(daemon, "graphmem_http_responses_total", 'status="500"') == 0
    assert metric_total(daemon, "graphmem_tool_calls_total", 'outcome="internal"') == 0
