"""The plain-Python WordPiece tokenizer of the default model."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from graphmem.adapters.embedders import DEFAULT_MODEL, resolve_model_path
from graphmem.adapters.wordpiece import _ASCII_WORD_RE, WordPieceTokenizer

MODEL_DIR = Path(resolve_model_path(DEFAULT_MODEL))
REFERENCE = Path(__file__).resolve().parents[3] / "samples" / "embedding_reference.json"


@functools.cache
def default_tokenizer() -> WordPieceTokenizer:
    return WordPieceTokenizer(MODEL_DIR / "tokenizer.json", max_tokens=256)


@pytest.fixture(scope="module")
def tokenizer() -> WordPieceTokenizer:
    return default_tokenizer()


def test_ids_equal_those_of_hugging_face_tokenizers(tokenizer: WordPieceTokenizer) -> None:
    tokenizers = pytest.importorskip("tokenizers")  # a dev machine may still have it
    reference = tokenizers.Tokenizer.from_file(str(MODEL_DIR / "tokenizer.json"))
    reference.enable_truncation(256)
    reference.no_padding()
    texts = json.loads(REFERENCE.read_text("utf-8"))["texts"]
    texts += ["Write [CLS] and [UNK] literally", "x" * 150, "ÀÉÎõü ﬁ ① ２ ½ Ω ǅ", "中文和日本語のテキスト"]

    assert [tokenizer.encode(t) for t in texts] == [e.ids for e in reference.encode_batch(texts)]


def test_special_tokens_written_in_a_text_stay_whole(tokenizer: WordPieceTokenizer) -> None:
    assert tokenizer.encode("[CLS]") == [101, 101, 102]


def test_a_long_text_is_cut_to_256_tokens_with_sep_last(tokenizer: WordPieceTokenizer) -> None:
    ids = tokenizer.encode("memory graph " * 400)

    assert len(ids) == 256
    assert (ids[0], ids[-1]) == (101, 102)


def test_accents_and_case_fold_and_overlong_words_are_unknown(tokenizer: WordPieceTokenizer) -> None:
    assert tokenizer.encode("Café") == tokenizer.encode("cafe")
    assert tokenizer.encode("a" * 101) == [101, 100, 102]
    assert tokenizer.encode("") == tokenizer.encode(" \t\u200b ") == [101, 102]


def test_a_batch_is_padded_to_its_longest_text_with_a_mask(tokenizer: WordPieceTokenizer) -> None:
    ids, mask = tokenizer.batch(["one", "one two three"])

    assert ids.shape == mask.shape == (2, 5)
    assert ids.dtype == mask.dtype == np.int64
    assert mask.tolist() == [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]
    assert ids[0, 3:].tolist() == [0, 0]


def test_ids_equal_the_recorded_ones_of_hugging_face_tokenizers_in_many_scripts(
    tokenizer: WordPieceTokenizer,
) -> None:
    cases = json.loads((REFERENCE.parent / "wordpiece_reference.json").read_text("utf-8"))["cases"]

    assert [tokenizer.encode(case["text"]) for case in cases] == [case["ids"] for case in cases]


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=300))
def test_plain_ascii_takes_a_shortcut_to_the_same_words(text: str) -> None:
    tokenizer = default_tokenizer()
    shortcut = _ASCII_WORD_RE.findall(tokenizer._normalise(text))

    assert shortcut == tokenizer._split(tokenizer._normalise_any(text))
