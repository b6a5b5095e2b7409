"""One member of a team writing to a shared PostgreSQL store, as its own process.

``python -m support.team_writer URL PREFIX COUNT`` opens the memory on the store at ``URL``
(``graphmem.app.open_memory`` with the hash embedder), remembers ``COUNT`` memories whose
text names ``PREFIX`` and recalls each right after writing it, and prints one line: how many
of its own memories its recalls found. ``tests/integration/test_team_store.py`` runs several
at once.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from graphmem.adapters.embedders import HashEmbedder
from graphmem.app import open_memory
from graphmem.settings import load_settings

DIMENSION = 256


def main(url: str, prefix: str, count: int) -> None:
    with tempfile.TemporaryDirectory() as data_dir:
        settings = load_settings(data_dir=Path(data_dir), store={"url": url})
        memory = open_memory(settings, embedder=HashEmbedder(DIMENSION))
        try:
            found = 0
            for i in range(count):
                memory.remember(f"Writer {prefix} decided rule number {i} for the {prefix} service")
                hits = memory.recall(f"{prefix} service rule number {i}", limit=5)
                found += any(f"rule number {i} for the {prefix}" in hit.memory.text for hit in hits.hits)
            print(found)
        finally:
            memory.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
