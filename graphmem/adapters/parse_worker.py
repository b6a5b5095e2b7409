"""One parser process of ``ParserPool`` (``parse_pool.py``).

``python -m graphmem.adapters.parse_worker`` first writes :data:`READY` once it has imported
the parser, then reads batches of ``(source, language)`` from its standard input and writes
each batch's ``ParsedFile`` list to its standard output, each a pickled frame after its length
(8 bytes, big-endian), until its input ends. Only its parent,
which started it, writes to it; nothing else is read. What the grammars might print goes to
standard error, never into the frames.
"""

from __future__ import annotations

import os
import pickle
import sys
from typing import IO, Any

LENGTH_BYTES = 8
# The largest frame either side accepts: 8 source files and their parses are a few megabytes.
FRAME_MAX_BYTES = 256 * 1024 * 1024
# The first frame of a worker that started: what tells a parser's crash on a file from a
# command that is not a worker at all (a frozen build, a broken install).
READY = "graphmem parse worker ready"


def write_frame(stream: IO[bytes], value: Any) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(len(data).to_bytes(LENGTH_BYTES, "big"))
    stream.write(data)
    stream.flush()


def read_frame(stream: IO[bytes]) -> Any:
    """The next frame's value; ``EOFError`` when the stream ended (between frames or in one)."""
    head = stream.read(LENGTH_BYTES)
    if len(head) < LENGTH_BYTES:
        raise EOFError("the parser process's stream ended")
    size = int.from_bytes(head, "big")
    if size > FRAME_MAX_BYTES:  # not this protocol's: never allocated
        raise EOFError(f"a frame of {size} bytes from a parser process")
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("the parser process's stream ended in a frame")
    return pickle.loads(data)  # frames come from this process's own parent or child, never a file


def main() -> None:
    frames_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # a stray print cannot corrupt a frame
    from graphmem.adapters.code_parser import TreeSitterParser

    parser = TreeSitterParser()
    write_frame(frames_out, READY)
    frames_in = sys.stdin.buffer
    while True:
        try:
            batch = read_frame(frames_in)
        except EOFError:
            return
        write_frame(frames_out, [parser.parse(source, language) for source, language in batch])


if __name__ == "__main__":
    main()
