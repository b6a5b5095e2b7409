"""A parser worker (``graphmem.adapters.parse_worker``'s protocol) that dies, as a grammar's bug
would, on any batch holding a source that starts with ``CRASH``, and never answers one holding
a source that starts with ``HANG``; otherwise it parses as the real one does.
``tests/unit/adapters/test_parse_pool.py`` starts it with ``ParserPool(command=...)``."""

from __future__ import annotations

import os
import sys
import time

from graphmem.adapters.code_parser import TreeSitterParser
from graphmem.adapters.parse_worker import READY, read_frame, write_frame


def main() -> None:
    parser = TreeSitterParser()
    write_frame(sys.stdout.buffer, READY)
    while True:
        try:
            batch = read_frame(sys.stdin.buffer)
        except EOFError:
            return
        if any(source.startswith(b"CRASH") for source, _ in batch):
            os.abort()
        if any(source.startswith(b"HANG") for source, _ in batch):
            time.sleep(3600)
        write_frame(sys.stdout.buffer, [parser.parse(source, language) for source, language in batch])


if __name__ == "__main__":
    main()
