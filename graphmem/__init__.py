"""graphmem: local knowledge-graph memory for coding agents.

The Python API is the Memory service::

    from graphmem import open_memory

    memory = open_memory()
    memory.remember("We chose Kùzu for the graph store", category="decision")
    for hit in memory.recall("why kuzu").hits:
        print(hit.memory.text)

``open_memory()`` returns a ``graphmem.Memory`` (``graphmem/api.py``): the same verbs whether
the store opens in this process or a daemon holds it. Importing this package is cheap; the
store and the model open on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Memory", "open_memory"]

if TYPE_CHECKING:
    from graphmem.api import Memory
    from graphmem.connect import open_memory


def __getattr__(name: str) -> Any:
    if name == "open_memory":
        from graphmem.connect import open_memory

        return open_memory
    if name == "Memory":
        from graphmem.api import Memory

        return Memory
    raise AttributeError(name)
