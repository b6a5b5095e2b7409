"""Which symbols and files a re-scan moved, so the memories about them follow: pure.

A re-scan sees a symbol disappear and another appear. When the two are the same code
under a new name, or in another file, the memories linked to the old symbol belong to the
new one. A removed symbol S is matched to an added symbol T when:

- S's file was renamed (git's rename detection, or the same bytes under a new path) and T
  has S's qualified name in the new file: *moved with its file*; or
- T is of S's kind, has S's qualified name in another file (*moved*) or sits in S's file
  (after any rename of it) under another name (*renamed*), and their bodies are
  near-identical: the Jaccard similarity of their normalised token 3-shingles (the
  symbol's declared name replaced by a placeholder, so a rename alone changes nothing) is
  at least ``SIMILARITY_MIN``;
- and the match is unambiguous: S has exactly one such T and T exactly one such S.
  Otherwise nothing moves and the plan says which symbols were ambiguous.

Each definition carries a *fingerprint* for this (``fingerprint``): a hash of its
normalised tokens (equal: the same body but for its name) and a bottom-k MinHash sketch
of its shingles (``SKETCH_SIZE`` values), small enough to store with the parsed file.
"""

from __future__ import annotations

import hashlib
import heapq
import re
import zlib
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import numpy.typing as npt

from graphmem.core.code import Definition, ParsedFile

# Two bodies at least this similar (Jaccard of their token 3-shingles, the symbol's own name
# normalised away) are the same code: a one-token edit in a 30-token function stays above it,
# a rewrite of half of it falls far below.
SIMILARITY_MIN = 0.8
SKETCH_SIZE = 32  # MinHash values kept per definition (bottom-k): about ±0.07 at 0.8
SHINGLE_TOKENS = 3
# Tokens of one definition fingerprinted: a generated table of a million tokens costs no more.
MAX_FINGERPRINT_TOKENS = 50_000
# Pairs of removed and added symbols compared in one re-scan, at most: a rewrite of a huge
# generated file is not worth seconds of matching.
MAX_MOVE_COMPARISONS = 200_000
AMBIGUOUS_SHOWN = 20  # ambiguous symbols named in the plan; the rest are counted
_TOKEN = re.compile(r"\w+|[^\w\s]")
_NAME = "\x00"  # what the definition's own name becomes
# Each distinct token's hash, kept across definitions and files (identifiers repeat).
_TOKEN_CODES: dict[str, int] = {}
MAX_CACHED_TOKENS = 200_000
_FACTORS = (0x100000001B3, 0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F)  # odd: shingle order counts


def fingerprint(text: str, name: str) -> tuple[str, str]:
    """(shape, sketch) of a definition's source ``text``: ``shape_of`` and ``sketches`` of
    its ``tokens_of``."""
    tokens = tokens_of(text, name)
    return shape_of(tokens), sketches([tokens])[0]


def tokens_of(text: str, name: str) -> list[str]:
    """The tokens of ``text`` (at most ``MAX_FINGERPRINT_TOKENS``), the declaration of ``name``
    (its first occurrence, or of its last dotted segment) replaced by a placeholder."""
    own = {name, name.rsplit(".", 1)[-1]}
    tokens = _TOKEN.findall(text)
    del tokens[MAX_FINGERPRINT_TOKENS:]
    # Only where it is declared (its first occurrence): the new name of a renamed function
    # often appears in its body already ("refund" in a log line), and must not count there.
    first = next((i for i, token in enumerate(tokens) if token in own), None)
    if first is not None:
        tokens[first] = _NAME
    return tokens


def shape_of(tokens: list[str]) -> str:
    """The hash of a definition's tokens: equal when the code is the same but for its name."""
    return hashlib.blake2b("\x1f".join(tokens).encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


def sketches(token_lists: Sequence[list[str]]) -> list[str]:
    """The MinHash sketch of each list's 3-shingles (``SKETCH_SIZE`` smallest distinct 32-bit
    hashes, as 8 hex digits each: a string stores and loads far faster than numbers), computed
    for all the lists at once (one file's definitions: a few array operations, not a few per
    definition). An empty list has an empty sketch."""
    found = [""] * len(token_lists)
    if not token_lists:
        return found
    codes = _codes([token for tokens in token_lists for token in tokens])
    if not len(codes):
        return found
    lengths = np.fromiter(map(len, token_lists), dtype=np.int64, count=len(token_lists))
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    owner = np.repeat(np.arange(len(token_lists), dtype=np.uint64), lengths)
    size = np.repeat(lengths, lengths)  # the length of each token's list
    at = np.arange(len(codes)) - np.repeat(starts, lengths)  # each token's place in its list
    keys = []
    for width in range(1, SHINGLE_TOKENS + 1):  # lists shorter than a shingle are one shingle
        fits = size == width if width < SHINGLE_TOKENS else size >= width
        first = np.flatnonzero(fits & (at <= size - width))  # where each shingle starts
        if not len(first):
            continue
        mixed = np.zeros(len(first), dtype=np.uint64)
        for offset, factor in zip(range(width), _FACTORS, strict=False):
            mixed = mixed * np.uint64(factor) + codes[first + offset]
        mixed ^= mixed >> np.uint64(29)
        mixed *= np.uint64(0xBF58476D1CE4E5B9)
        mixed ^= mixed >> np.uint64(32)
        mixed &= np.uint64(0xFFFFFFFF)
        keys.append((owner[first] << np.uint64(32)) | mixed)
    ordered = np.unique(np.concatenate(keys))  # by list, then by hash; each pair once
    lists_of = (ordered >> np.uint64(32)).astype(np.int64)
    group_starts = np.searchsorted(lists_of, np.arange(len(token_lists)))
    rank = np.arange(len(ordered)) - group_starts[lists_of]
    kept = ordered[rank < SKETCH_SIZE]
    kept_lists = (kept >> np.uint64(32)).astype(np.int64)
    hexed = (kept & np.uint64(0xFFFFFFFF)).astype(">u4").tobytes().hex()
    bounds = np.searchsorted(kept_lists, np.arange(len(token_lists) + 1))
    for i in range(len(token_lists)):
        found[i] = hexed[8 * bounds[i] : 8 * bounds[i + 1]]
    return found


def _codes(tokens: list[str]) -> npt.NDArray[np.uint64]:
    """Each token's 32-bit hash, each distinct token hashed once (and kept for the next file)."""
    cache = _TOKEN_CODES
    if len(cache) > MAX_CACHED_TOKENS:
        cache.clear()
    table: dict[str, int] = {}
    for token in set(tokens):  # a local table: another thread clearing the cache loses nothing
        code = cache.get(token)
        if code is None:
            code = cache[token] = zlib.crc32(token.encode("utf-8", "surrogatepass"))
        table[token] = code
    return np.fromiter(map(table.__getitem__, tokens), dtype=np.uint64, count=len(tokens))


def same_body(a: Definition, b: Definition) -> bool:
    """Whether two definitions are the same code but for their name (or identical)."""
    return a.body_hash == b.body_hash or (a.shape != "" and a.shape == b.shape)


def similarity(a: Definition, b: Definition) -> float:
    """How alike two definitions' bodies are, 0..1 (1: the same but for the name)."""
    if same_body(a, b):
        return 1.0
    if not a.sketch or not b.sketch:
        return 0.0  # parsed before fingerprints existed: only exact bodies match
    mine, theirs = _values(a.sketch), _values(b.sketch)
    union = heapq.nsmallest(SKETCH_SIZE, mine | theirs)
    both = mine & theirs
    return sum(1 for value in union if value in both) / len(union)


def _values(sketch: str) -> set[int]:
    return {int(sketch[i : i + 8], 16) for i in range(0, len(sketch) - 7, 8)}


@dataclass(frozen=True, slots=True)
class SymbolMove:
    """The memories of the symbol at (``old_path``, ``old_name``) move to (``new_path``, ``new_name``)."""

    old_path: str
    old_name: str  # qualified name
    new_path: str
    new_name: str
    why: str  # "renamed", "moved", "moved with its file"
    similarity: float
    same_body: bool  # the body is unchanged but for the name: memories do not become stale

    def describe(self) -> str:
        where = (
            f"in {self.new_path}" if self.old_path == self.new_path else f"{self.old_path} → {self.new_path}"
        )
        names = (
            f"`{self.old_name}`"
            if self.old_name == self.new_name
            else f"`{self.old_name}` → `{self.new_name}`"
        )
        body = "same body" if self.same_body else f"body {self.similarity:.2f} alike"
        return f"{names} {where} ({self.why}, {body})"


@dataclass
class MovePlan:
    """What a re-scan moved: symbols, files (old path -> new path), and what it could not decide."""

    symbols: list[SymbolMove] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)
    ambiguous: list[str] = field(default_factory=list)
    ambiguous_count: int = 0


def file_moves(
    removed: Mapping[str, str], added: Mapping[str, str], renames: Mapping[str, str]
) -> dict[str, str]:
    """Old path -> new path for removed files that reappear under an added path: git's renames
    first, then bytes that are unique to one removed and one added file (``path -> content hash``)."""
    moves = {old: new for old, new in renames.items() if old in removed and new in added}
    taken = set(moves.values())
    by_hash: dict[str, list[str]] = defaultdict(list)
    for path, digest in added.items():
        if path not in taken:
            by_hash[digest].append(path)
    gone_by_hash: dict[str, list[str]] = defaultdict(list)
    for path, digest in removed.items():
        if path not in moves:
            gone_by_hash[digest].append(path)
    for digest, olds in gone_by_hash.items():
        news = by_hash.get(digest, [])
        if len(olds) == 1 and len(news) == 1:
            moves[olds[0]] = news[0]
    return moves


def plan_moves(
    before: Mapping[str, ParsedFile],
    after: Mapping[str, ParsedFile],
    paths: Iterable[str],
    files: Mapping[str, str],
) -> MovePlan:
    """Match the symbols of ``paths`` (the files a re-scan changed or removed) that are in
    ``before`` but not ``after`` to those new in ``after`` (see the module doc); ``files``
    are the file moves (``file_moves``)."""
    plan = MovePlan(files=dict(files))
    gone: list[tuple[str, Definition]] = []
    added: list[tuple[str, Definition]] = []
    for path in sorted(set(paths)):
        old = before.get(path)
        new = after.get(path)
        old_names = {d.qualified_name for d in old.definitions} if old else set()
        new_names = {d.qualified_name for d in new.definitions} if new else set()
        if old is not None:
            gone += [(path, d) for d in old.definitions if d.qualified_name not in new_names]
        if new is not None:
            added += [(path, d) for d in new.definitions if d.qualified_name not in old_names]
    if not gone or not added:
        return plan
    by_path: dict[str, list[int]] = defaultdict(list)
    by_name: dict[str, list[int]] = defaultdict(list)
    for i, (path, d) in enumerate(added):
        by_path[path].append(i)
        by_name[d.qualified_name].append(i)
    candidates: dict[int, list[tuple[int, float, str]]] = {}
    claimed: dict[int, list[int]] = defaultdict(list)
    compared = 0
    for g, (path, old_def) in enumerate(gone):
        moved_to = files.get(path)
        found: list[tuple[int, float, str]] = []
        if moved_to is not None:  # the same name in the renamed file: the same symbol
            found = [
                (i, similarity(old_def, added[i][1]), "moved with its file")
                for i in by_path.get(moved_to, [])
                if added[i][1].qualified_name == old_def.qualified_name and added[i][1].kind == old_def.kind
            ]
        if not found:
            near = dict.fromkeys(
                [
                    *by_path.get(path, []),
                    *by_path.get(moved_to or "", []),
                    *by_name.get(old_def.qualified_name, []),
                ]
            )
            for i in near:
                new_path, new_def = added[i]
                if new_def.kind != old_def.kind:
                    continue
                compared += 1
                if compared > MAX_MOVE_COMPARISONS:
                    break
                score = similarity(old_def, new_def)
                if score >= SIMILARITY_MIN:
                    why = "renamed" if new_def.qualified_name != old_def.qualified_name else "moved"
                    found.append((i, score, why))
        candidates[g] = found
        for i, _, _ in found:
            claimed[i].append(g)
        if compared > MAX_MOVE_COMPARISONS:
            break
    for g, found in candidates.items():
        path, old_def = gone[g]
        if len(found) == 1 and len(claimed[found[0][0]]) == 1:
            i, score, why = found[0]
            new_path, new_def = added[i]
            plan.symbols.append(
                SymbolMove(
                    path,
                    old_def.qualified_name,
                    new_path,
                    new_def.qualified_name,
                    why,
                    round(score, 3),
                    same_body(old_def, new_def),
                )
            )
        elif found:
            plan.ambiguous_count += 1
            if len(plan.ambiguous) < AMBIGUOUS_SHOWN:
                others = sorted(
                    {f"{added[i][0]}::{added[i][1].qualified_name}" for i, _, _ in found}
                    | {
                        f"{gone[o][0]}::{gone[o][1].qualified_name}"
                        for i, _, _ in found
                        for o in claimed[i]
                        if o != g
                    }
                )
                alike = ", ".join(others[:4])
                plan.ambiguous.append(
                    f"`{old_def.qualified_name}` in {path}: several alike ({alike}); left alone"
                )
    return plan


# A symbol's body as a store keeps it: its hash and when it last changed (``body_changed_at``).
Body = tuple[str | None, datetime | None]


def moved_body(recorded: str | None, old: Body | None, new: Body | None) -> str | None:
    """The body a memory's link to symbol ``old`` records once it moved to ``new``. A move that
    kept the body but for its name (``core.codegraph.symbol_changes`` then carries ``old``'s
    ``body_changed_at`` to ``new``) takes a link that recorded ``old``'s body of now to ``new``'s:
    the memory holds as it did. Any other link keeps what it recorded: after a move with an edit,
    or when it was flagged already, the memory is (still) possibly stale."""
    if recorded is None or old is None or new is None or new[0] is None:
        return recorded
    kept = recorded == old[0] and old[1] == new[1]
    return new[0] if kept else recorded
