"""A parser worker (``graphmem.adapters.parse_worker``'s protocol) that dies, as a grammar's bug
would, on any batch holding a source that starts with ``CRASH``, and never answers one holding
a source that starts with ``HANG``, and answers what is no parse for one holding a source that
starts with ``LIE``; a source that starts with ``BIG`` it answers as one whose parse no frame
holds (``TOO_BIG``); otherwise it parses as the real one does.
``tests/integration/adapters/test_parse_pool.py`` starts it with ``ParserPool(command=...)``."""

from __future__ import annotations

import os
import sys
import time

from graphmem.adapters.code_parser import TreeSitterParser
from graphmem.adapters.parse_worker import READY, TOO_BIG, read_batch, write_frame
from graphmem.core.code import parsed_to_json


def main() -> None:
    parser = TreeSitterParser()
    out = sys.stdout.buffer
    write_frame(out, READY)
    out.flush()
    while True:
        try:
            batch = read_batch(sys.stdin.buffer)
        except EOFError:
            return
        if any(source.startswith(b"CRASH") for source, _ in batch):
            os.abort()
        if any(source.startswith(b"HANG") for source, _ in batch):
            time.sleep(3600)
        lie = any(source.startswith(b"LIE") for source, _ in batch)
        for source, language in batch:
            parsed = parsed_to_json(parser.parse(source, language)).encode()
            if source.startswith(b"BIG"):
                parsed = TOO_BIG
            write_frame(out, b'{"__reduce__": "os.system"}' if lie else parsed)
        out.flush()


if __name__ == "__main__":
    main()
