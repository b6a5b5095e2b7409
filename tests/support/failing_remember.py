"""``graphmem`` whose daemon stores hash vectors (``hash_vectors.py``) and fails every remember as a
store that lost its connection does: for a benchmark's clients over HTTP whose calls fail. Run as
``python failing_remember.py serve ...``."""

from __future__ import annotations

import functools
from typing import Any

from hash_vectors import named_hash_embedder

from graphmem.errors import StoreError
from graphmem.service.remember import Rememberer


@functools.wraps(Rememberer.remember)  # its signature: the daemon binds a call's arguments by it
def failing_remember(*_: Any, **__: Any) -> Any:
    raise StoreError("Lost the connection to the PostgreSQL store: try again.")


if __name__ == "__main__":
    from graphmem import app
    from graphmem.service.memory import MemoryService

    app.make_embedder = named_hash_embedder  # type: ignore[assignment]
    MemoryService.remember = failing_remember  # type: ignore[method-assign]
    from graphmem.cli.main import main

    main()
