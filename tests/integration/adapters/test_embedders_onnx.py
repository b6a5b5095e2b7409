"""The default embedder on the real packaged weights: the same vectors as sentence-transformers gave.

samples/embedding_reference.json holds 40 varied texts (long ones past 256 tokens,
unicode, code, blank ones) and the vectors that SentenceTransformerEmbedder produced
for them on torch before ONNX Runtime replaced it; no torch is needed here.
"""

from __future__ import annotations

import base64
import json
import threading
from pathlib import Path

import numpy as np
import pytest

from graphmem.adapters import onnx_bert
from graphmem.adapters.embedders import DEFAULT_MODEL, OnnxEmbedder, resolve_model_path

pytestmark = pytest.mark.integration

REFERENCE = Path(__file__).resolve().parents[3] / "samples" / "embedding_reference.json"


def _reference() -> tuple[dict[str, object], list[str], np.ndarray]:
    data = json.loads(REFERENCE.read_text("utf-8"))
    texts = data["texts"]
    raw = np.frombuffer(base64.b64decode(data["vectors_float16_b64"]), "<f2")
    vectors = raw.reshape(len(texts), data["dimension"]).astype(np.float32)
    return data, texts, vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_the_packaged_weights_are_the_ones_the_reference_was_made_with() -> None:
    data, _, _ = _reference()
    weights = Path(resolve_model_path(DEFAULT_MODEL)) / onnx_bert.WEIGHTS_FILE

    assert onnx_bert.weights_sha256(weights) == data["weights_sha256"]


def test_every_reference_text_embeds_as_sentence_transformers_did(real_embedder: OnnxEmbedder) -> None:
    _, texts, expected = _reference()

    vectors = real_embedder.embed(texts)

    cosines = (vectors * expected).sum(axis=1)
    assert vectors.shape == expected.shape
    assert cosines.min() >= 0.999, [texts[i][:40] for i in np.flatnonzero(cosines < 0.999)]
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_a_text_embeds_the_same_alone_as_in_any_batch_order(real_embedder: OnnxEmbedder) -> None:
    _, texts, _ = _reference()
    batch = real_embedder.embed(texts)

    reversed_batch = real_embedder.embed(texts[::-1])[::-1]
    alone = np.stack([real_embedder.embed([text])[0] for text in texts[:8]])

    assert np.allclose(reversed_batch, batch, atol=1e-5)
    assert np.allclose(alone, batch[:8], atol=1e-5)


def test_long_texts_go_in_smaller_batches_with_the_same_vectors(real_embedder: OnnxEmbedder) -> None:
    """Batches are cut by tokens (texts x padded length): 20 long texts and 80 short ones mixed
    embed as each does alone, and every text gets its row. Each long one (truncated to 256
    tokens, EMBED_BATCH_TOKENS) is a call of its own; the short ones share calls of up to
    EMBED_BATCH_TOKENS, on both cores (more than EMBED_ONE_CORE_TOKENS in all)."""
    sentence = "the payments service retries the webhook with backoff "
    long = [f"Release {i}: " + sentence * 30 for i in range(20)]
    short = [f"note {i} about redis" for i in range(80)]
    mixed = [text for pair in zip(long, short[:20], strict=True) for text in pair] + short[20:]
    last_long = 2 * (len(long) - 1)

    batch = real_embedder.embed(mixed)
    checked = [0, 1, last_long, len(mixed) - 1]
    alone = np.stack([real_embedder.embed([mixed[i]])[0] for i in checked])

    assert batch.shape == (100, real_embedder.dimension)
    assert np.allclose(alone, batch[checked], atol=1e-5)
    assert np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-4)


def test_embeds_from_several_threads_at_once_give_the_same_vectors(real_embedder: OnnxEmbedder) -> None:
    # A recall embeds its query while a bulk embed runs its batches on the pool's threads.
    _, texts, expected = _reference()
    out: dict[int, np.ndarray] = {}

    def query(n: int) -> None:
        out[n] = real_embedder.embed(texts[:5] if n % 2 else texts * 3)

    workers = [threading.Thread(target=query, args=(n,)) for n in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()

    assert (out[1] * expected[:5]).sum(axis=1).min() >= 0.999
    assert (out[0][: len(texts)] * expected).sum(axis=1).min() >= 0.999
    assert np.allclose(out[0], out[2], atol=1e-5)


def test_the_model_file_is_made_once_per_weights_and_then_reused(tmp_path: Path) -> None:
    model_dir = Path(resolve_model_path(DEFAULT_MODEL))
    data, _, _ = _reference()

    made = onnx_bert.model_file(model_dir, tmp_path)
    first_write = made.stat().st_mtime_ns
    again = onnx_bert.model_file(model_dir, tmp_path)

    assert made == again
    assert made.name.startswith(f"minilm-{str(data['weights_sha256'])[:32]}-g{onnx_bert.GRAPH_VERSION}")
    assert again.stat().st_mtime_ns == first_write
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    for note in tmp_path.glob("*.source.json"):  # a damaged note: the hash is computed again
        note.write_text('{"source": "garbage', "utf-8")
    assert onnx_bert.model_file(model_dir, tmp_path) == made


def test_a_query_on_the_8_bit_variant_is_close_to_the_exact_vector(real_embedder: OnnxEmbedder) -> None:
    _, texts, _ = _reference()
    sample = [text for text in texts if text.strip()][:16]
    exact = real_embedder.embed(sample)

    queries = np.stack([real_embedder.embed_query(text) for text in sample])

    cosines = (queries * exact).sum(axis=1)
    assert real_embedder.quantized_queries
    assert cosines.min() >= 0.98, cosines.min()
    assert not np.allclose(queries, exact, atol=1e-4)  # the variant ran, not the exact model
    assert np.allclose(np.linalg.norm(queries, axis=1), 1.0, atol=1e-5)


def test_without_quantized_queries_a_query_is_embedded_exactly(tmp_path: Path) -> None:
    embedder = OnnxEmbedder(quantized_queries=False)

    query = embedder.embed_query("which linter do we use")

    assert np.allclose(query, embedder.embed(["which linter do we use"])[0], atol=1e-6)
    assert not list(tmp_path.iterdir())  # no cache written here: the default cache holds the file


def test_the_8_bit_variant_is_its_own_model_file(tmp_path: Path) -> None:
    folder = Path(resolve_model_path(DEFAULT_MODEL))

    exact = onnx_bert.model_file(folder, tmp_path)
    quantized = onnx_bert.model_file(folder, tmp_path, quantized=True)

    assert exact != quantized and quantized.name.endswith("-q8.onnx")
    assert quantized.stat().st_size < exact.stat().st_size * 0.75  # 8-bit dense weights


def test_the_8_bit_variant_keeps_its_word_embeddings_in_half_precision(tmp_path: Path) -> None:
    folder = Path(resolve_model_path(DEFAULT_MODEL))

    exact = onnx_bert.model_file(folder, tmp_path)
    quantized = onnx_bert.model_file(folder, tmp_path, quantized=True)

    # The word table (30,522 x 384) is the largest tensor: 45 MB of every recalling process as
    # floats, 22 MB in half precision. Floats, the variant was 65% of the exact file; now 39%.
    assert quantized.stat().st_size < exact.stat().st_size * 0.45
