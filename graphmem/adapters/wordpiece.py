"""BERT's WordPiece tokenizer in plain Python, read from a model's ``tokenizer.json``.

It gives the ids Hugging Face ``tokenizers`` gives for a ``BertNormalizer`` +
``BertPreTokenizer`` + ``WordPiece`` tokenizer (all-MiniLM-L6-v2's), without that
package and the ``huggingface_hub`` stack it pulls in (about 35 MB):

1. normalise: drop NUL, U+FFFD and control/format/unassigned/private characters, turn
   whitespace into spaces, put spaces around CJK ideographs, strip accents (NFD, drop
   combining marks) and lowercase, as the file's normalizer says; the special tokens
   (``[CLS]``, ``[UNK]``…) written in a text are kept whole, as ``tokenizers`` does;
2. split on whitespace, and make each punctuation character a word of its own;
3. split each word into the longest vocabulary pieces from the left (``##`` marks a
   continuation); a word longer than 100 characters, or with a part that is in no piece,
   becomes ``[UNK]``;
4. ``[CLS]`` + the first ``max_tokens - 2`` pieces + ``[SEP]``.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

_CONTROL = frozenset(("Cc", "Cf", "Cn", "Co"))
_CJK = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)
_ASCII_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
# Most text is ASCII, and for it steps 1 and 2 need no walk over its characters in Python
# (which was about half of a short query's tokenizing): its control characters go, its
# tab and line breaks become spaces (one translation), and its words and punctuation come
# from one pattern.
_ASCII_CLEANED = str.maketrans({**{chr(c): None for c in (*range(32), 127)}, **{c: " " for c in "\t\n\r"}})
_PUNCTUATION_CLASS = re.escape("".join(sorted(_ASCII_PUNCTUATION)))
_ASCII_WORD_RE = re.compile(rf"[^\s{_PUNCTUATION_CLASS}]+|[{_PUNCTUATION_CLASS}]")
_WORD_CACHE_LIMIT = 50_000


class WordPieceTokenizer:
    """Texts to padded ``input_ids`` and ``attention_mask`` arrays, as the model expects."""

    def __init__(self, tokenizer_json: Path, *, max_tokens: int) -> None:
        spec = json.loads(tokenizer_json.read_text("utf-8"))
        model: dict[str, Any] = spec["model"]
        if model.get("type") != "WordPiece":
            raise ValueError(f"{tokenizer_json} is not a WordPiece tokenizer")
        normalizer: dict[str, Any] = spec.get("normalizer") or {}
        if normalizer.get("type") != "BertNormalizer":
            raise ValueError(f"{tokenizer_json} does not use BERT's normalizer")
        self._vocab: dict[str, int] = model["vocab"]
        self._prefix: str = model.get("continuing_subword_prefix", "##")
        self._max_word_chars: int = int(model.get("max_input_chars_per_word", 100))
        self._unk = self._vocab[model.get("unk_token", "[UNK]")]
        self._lowercase = bool(normalizer.get("lowercase", True))
        strip = normalizer.get("strip_accents")
        self._strip_accents = self._lowercase if strip is None else bool(strip)
        self._clean = bool(normalizer.get("clean_text", True))
        self._cjk = bool(normalizer.get("handle_chinese_chars", True))
        self._cls, self._sep = self._vocab["[CLS]"], self._vocab["[SEP]"]
        self.pad_id = int((spec.get("padding") or {}).get("pad_id", self._vocab.get("[PAD]", 0)))
        self._max_pieces = max_tokens - 2
        self._words: dict[str, list[int]] = {}
        special = {t["content"]: int(t["id"]) for t in spec.get("added_tokens") or [] if t.get("special")}
        self._special = special
        alternatives = "|".join(re.escape(t) for t in sorted(special, key=len, reverse=True))
        self._special_re = re.compile(f"({alternatives})") if special else None

    def encode(self, text: str) -> list[int]:
        pieces: list[int] = []
        parts = self._special_re.split(text) if self._special_re else [text]
        for part in parts:
            if part in self._special:
                pieces.append(self._special[part])
                continue
            text = self._normalise(part)
            for word in _ASCII_WORD_RE.findall(text) if text.isascii() else self._split(text):
                pieces.extend(self._pieces(word))
                if len(pieces) >= self._max_pieces:
                    break
            if len(pieces) >= self._max_pieces:
                break
        return [self._cls, *pieces[: self._max_pieces], self._sep]

    def batch(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """``input_ids`` and ``attention_mask`` (int64), padded to the batch's longest text."""
        encoded = [self.encode(text) for text in texts]
        width = max(len(ids) for ids in encoded)
        ids = np.full((len(encoded), width), self.pad_id, np.int64)
        mask = np.zeros((len(encoded), width), np.int64)
        for row, tokens in enumerate(encoded):
            ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1
        return ids, mask

    def _normalise(self, text: str) -> str:
        if text.isascii():  # no CJK, no accents: only control characters and case to mind
            text = text.translate(_ASCII_CLEANED) if self._clean else text
            return text.lower() if self._lowercase else text
        return self._normalise_any(text)

    def _normalise_any(self, text: str) -> str:
        out: list[str] = []
        for char in text:
            if self._clean:
                if char in "\x00\ufffd" or (char not in "\t\n\r" and unicodedata.category(char) in _CONTROL):
                    continue
                if char.isspace():
                    char = " "
            if self._cjk and _is_cjk(ord(char)):
                out.extend((" ", char, " "))
            else:
                out.append(char)
        text = "".join(out)
        if self._strip_accents:
            text = "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")
        return text.lower() if self._lowercase else text

    @staticmethod
    def _split(text: str) -> list[str]:
        words: list[str] = []
        for chunk in text.split():
            start = 0
            for i, char in enumerate(chunk):
                if char in _ASCII_PUNCTUATION or unicodedata.category(char).startswith("P"):
                    if start < i:
                        words.append(chunk[start:i])
                    words.append(char)
                    start = i + 1
            if start < len(chunk):
                words.append(chunk[start:])
        return words

    def _pieces(self, word: str) -> list[int]:
        known = self._words.get(word)
        if known is not None:
            return known
        pieces = self._wordpiece(word)
        if len(self._words) < _WORD_CACHE_LIMIT:
            self._words[word] = pieces
        return pieces

    def _wordpiece(self, word: str) -> list[int]:
        if len(word) > self._max_word_chars:
            return [self._unk]
        pieces: list[int] = []
        start = 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else self._prefix + word[start:end]
                found = self._vocab.get(piece)
                if found is not None:
                    pieces.append(found)
                    break
                end -= 1
            else:
                return [self._unk]
            start = end
        return pieces


def _is_cjk(code: int) -> bool:
    return any(low <= code <= high for low, high in _CJK)
