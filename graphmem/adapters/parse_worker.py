"""One parser process of ``ParserPool`` (``parse_pool.py``).

``python -m graphmem.adapters.parse_worker`` first writes :data:`READY` once it has imported
the parser, then answers batches until its standard input ends. A batch is a frame holding
how many files it has, then two frames a file: its language, its bytes. The answer is one
frame a file: its parse as JSON (``core.code.parsed_to_json``), which the parent validates
(``parsed_from_json``), or :data:`TOO_BIG` for a parse no frame holds. A frame is its length
(8 bytes, big-endian) and that many bytes.
Nothing is pickled: the worker reads files nobody vetted, and its answers are data the parent
checks, never code it would run. What the grammars might print goes to standard error, never
into the frames.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from graphmem.core.code import ParsedFile

LENGTH_BYTES = 8
# The largest frame either side accepts: a source file is 1 MB at most (repo_files.py), its
# parse as JSON a few times that.
FRAME_MAX_BYTES = 64 * 1024 * 1024
# The first frame of a worker that started: what tells a parser's crash on a file from a
# command that is not a worker at all (a frozen build, a broken install).
READY = b"graphmem parse worker ready"
# Files in one batch at most (the pool sends 8).
BATCH_MAX = 1024
# The answer for a file whose parse is longer than a frame: a hostile file's can be a hundred
# times the file (250,000 calls in a method of a 490-character name: 130 MB as JSON), and the
# parent stores a parse only if it can read it back (``parse_store.py``). Never a parse's JSON.
TOO_BIG = b""


def answer(parsed: ParsedFile) -> bytes:
    """``parsed`` as its frame says it: its JSON, or :data:`TOO_BIG`."""
    from graphmem.core.code import parsed_to_json

    data = parsed_to_json(parsed).encode()
    return data if len(data) <= FRAME_MAX_BYTES else TOO_BIG


def write_frame(stream: IO[bytes], data: bytes) -> None:
    stream.write(len(data).to_bytes(LENGTH_BYTES, "big"))
    stream.write(data)


def read_frame(stream: IO[bytes]) -> bytes:
    """The next frame's bytes; ``EOFError`` when the stream ended (between frames or in one) or
    the frame is not this protocol's (longer than :data:`FRAME_MAX_BYTES`: never allocated)."""
    head = stream.read(LENGTH_BYTES)
    if len(head) < LENGTH_BYTES:
        raise EOFError("the parser process's stream ended")
    size = int.from_bytes(head, "big")
    if size > FRAME_MAX_BYTES:
        raise EOFError(f"a frame of {size} bytes from a parser process")
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("the parser process's stream ended in a frame")
    return data


def write_batch(stream: IO[bytes], sources: Sequence[tuple[bytes, str]]) -> None:
    """``sources`` as the frames of one batch (see the module doc)."""
    write_frame(stream, str(len(sources)).encode())
    for source, language in sources:
        write_frame(stream, language.encode())
        write_frame(stream, source)
    stream.flush()


def read_batch(stream: IO[bytes]) -> list[tuple[bytes, str]]:
    count = int(read_frame(stream))
    if not 0 <= count <= BATCH_MAX:
        raise EOFError(f"a batch of {count} files")
    batch = []
    for _ in range(count):
        language = read_frame(stream).decode()
        batch.append((read_frame(stream), language))
    return batch


def main() -> None:
    frames_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # a stray print cannot corrupt a frame
    from graphmem.adapters.code_parser import TreeSitterParser

    parser = TreeSitterParser()
    write_frame(frames_out, READY)
    frames_out.flush()
    frames_in = sys.stdin.buffer
    while True:
        try:
            batch = read_batch(frames_in)
        except EOFError:
            return
        for source, language in batch:
            write_frame(frames_out, answer(parser.parse(source, language)))
        frames_out.flush()


if __name__ == "__main__":
    main()
