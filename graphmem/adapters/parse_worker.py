"""One parser process of ``ParserPool`` (``parse_pool.py``).

``python -m graphmem.adapters.parse_worker`` reads batches of ``(source, language)`` from its
standard input and writes each batch's ``ParsedFile`` list to its standard output, each a
pickled frame after its length (8 bytes, big-endian), until its input ends. Only its parent,
which started it, writes to it; nothing else is read. What the grammars might print goes to
standard error, never into the frames.
"""

from __future__ import annotations

import os
import pickle
import sys
from typing import IO, Any

LENGTH_BYTES = 8


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
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("the parser process's stream ended in a frame")
    return pickle.loads(data)  # frames come from this process's own parent or child, never a file


def main() -> None:
    frames_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # a stray print cannot corrupt a frame
    from graphmem.adapters.code_parser import TreeSitterParser

    parser = TreeSitterParser()
    frames_in = sys.stdin.buffer
    while True:
        try:
            batch = read_frame(frames_in)
        except EOFError:
            return
        write_frame(frames_out, [parser.parse(source, language) for source, language in batch])


if __name__ == "__main__":
    main()
