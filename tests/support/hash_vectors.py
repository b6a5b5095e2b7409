"""``graphmem`` whose embedder is the hash embedder under the bundled model's name and dimension,
as ``graphmem bench scale --hash-vectors`` stores them: for a test that needs a large store (a
bootstrap of 1,000 commits) but is not about what the model finds, its daemon neither loads the
model nor embeds every memory with it. Everything else is the daemon a user runs. Run as
``python hash_vectors.py serve ...`` (``support.daemons.start_daemon(..., program=HASH_VECTORS)``)."""

from __future__ import annotations

from typing import Any

from graphmem.adapters.embedders import DEFAULT_DIMENSION, DEFAULT_MODEL, HashEmbedder
from graphmem.core.ports import Embedder


def named_hash_embedder(*_: Any, **__: Any) -> Embedder:
    """What ``[embedding] model`` gives: hash vectors, stored as the bundled model's."""
    embedder = HashEmbedder(DEFAULT_DIMENSION)
    embedder.model_name = DEFAULT_MODEL
    return embedder


if __name__ == "__main__":
    from graphmem import app

    app.make_embedder = named_hash_embedder  # type: ignore[assignment]
    from graphmem.cli.main import main

    main()
