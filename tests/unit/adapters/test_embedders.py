"""Choosing the embedder, lazy imports, the torch extra's error, the ONNX file cache (no model run)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from graphmem.adapters import embedders, onnx_bert
from graphmem.adapters.embedders import (
    DEFAULT_MODEL,
    OnnxEmbedder,
    SentenceTransformerEmbedder,
    make_embedder,
)
from graphmem.errors import EmbedderError


def test_the_default_model_runs_on_onnx_runtime_and_keeps_its_name(tmp_path: Path) -> None:
    embedder = make_embedder(DEFAULT_MODEL, cache_dir=tmp_path)

    assert isinstance(embedder, OnnxEmbedder)
    assert (embedder.model_name, embedder.dimension) == (DEFAULT_MODEL, 384)


def test_another_local_model_directory_goes_to_sentence_transformers(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}", "utf-8")

    embedder = make_embedder(str(tmp_path))

    assert isinstance(embedder, SentenceTransformerEmbedder)
    assert embedder.model_name == str(tmp_path.resolve())


def test_a_directory_that_is_no_model_says_what_to_set(tmp_path: Path) -> None:
    with pytest.raises(EmbedderError, match="not a local sentence-transformers model directory"):
        make_embedder(str(tmp_path / "nowhere"))


def test_another_model_without_the_torch_extra_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "config.json").write_text("{}", "utf-8")
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # import fails as if not installed
    embedders._load_model.cache_clear()
    try:
        with pytest.raises(EmbedderError, match=r"pip install 'graphmem\[torch\]'"):
            SentenceTransformerEmbedder(str(tmp_path)).embed(["x"])
    finally:
        embedders._load_model.cache_clear()


def test_an_empty_batch_needs_no_model(tmp_path: Path) -> None:
    vectors = OnnxEmbedder(cache_dir=tmp_path / "cache").embed([])

    assert vectors.shape == (0, 384)
    assert not (tmp_path / "cache").exists()


class _WordTokenizer:
    """A text's tokens are its words plus [CLS] and [SEP], at most 256, as the model's."""

    @staticmethod
    def encode(text: str) -> list[int]:
        return [1] * min(256, len(text.split()) + 2)

    def batch(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        width = max(len(self.encode(text)) for text in texts)
        return np.zeros((len(texts), width), np.int64), np.ones((len(texts), width), np.int64)


class _RecordingSession:
    """Each call's shape (texts, padded tokens) and the thread it ran on."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int, str]] = []

    def run(self, outputs: None, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        rows, width = feeds["input_ids"].shape
        self.calls.append((rows, width, threading.current_thread().name))
        return [np.ones((rows, 384), np.float32)]


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[OnnxEmbedder, _RecordingSession]:
    """The default embedder over a session that records its calls instead of running the model."""
    session = _RecordingSession()
    runtime = embedders._OnnxRuntime(_WordTokenizer(), session, tmp_path / "model.onnx")  # type: ignore[arg-type]
    monkeypatch.setattr(embedders, "_load_onnx", lambda *args: runtime)
    return OnnxEmbedder(cache_dir=tmp_path), session


def _commits(n: int) -> list[str]:
    """Texts of 30-70 tokens, the length of a bootstrap's commit messages."""
    return [f"commit {i}: " + "fix the parser " * (10 + i % 14) for i in range(n)]


@pytest.mark.parametrize(
    "texts", [_commits(256), [f"fix typo {i}" for i in range(256)]], ids=["commits", "one-liners"]
)
def test_a_bulk_embed_runs_calls_of_at_most_the_token_budget_on_the_pool(
    recorded: tuple[OnnxEmbedder, _RecordingSession], texts: list[str]
) -> None:
    embedder, session = recorded

    vectors = embedder.embed(texts)  # a bootstrap's backlog: one chunk

    assert vectors.shape == (256, 384)
    assert sum(rows for rows, _, _ in session.calls) == 256
    assert max(rows * width for rows, width, _ in session.calls) <= embedders.EMBED_BATCH_TOKENS
    assert {thread for _, _, thread in session.calls} <= {
        t.name for t in threading.enumerate() if t.name.startswith("graphmem-embed")
    }


def test_a_text_of_the_longest_length_is_a_call_of_its_own(
    recorded: tuple[OnnxEmbedder, _RecordingSession],
) -> None:
    embedder, session = recorded

    embedder.embed(["word " * 400, *_commits(3)])

    assert (1, 256) in [(rows, width) for rows, width, _ in session.calls]


def test_a_small_call_runs_on_the_calling_thread(recorded: tuple[OnnxEmbedder, _RecordingSession]) -> None:
    # A daemon's background step (8 texts) or a recall's share of the backlog (32) leaves the
    # other core to queries, though it is several calls.
    embedder, session = recorded

    embedder.embed(_commits(32))

    assert len(session.calls) > 1
    assert {thread for _, _, thread in session.calls} == {threading.current_thread().name}


LAZY_SCRIPT = """
import sys
from graphmem.adapters.embedders import make_embedder
make_embedder()
print(",".join(m for m in ("onnxruntime", "onnx", "tokenizers", "safetensors", "torch") if m in sys.modules))
"""


def test_making_the_default_embedder_imports_no_runtime() -> None:
    done = subprocess.run([sys.executable, "-c", LAZY_SCRIPT], capture_output=True, text=True, check=False)

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""


def test_an_unwritable_cache_folder_is_an_embedder_error_that_says_what_to_do(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder", "utf-8")
    model_dir = Path(embedders.resolve_model_path(DEFAULT_MODEL))

    with pytest.raises(EmbedderError, match="Cannot create the model cache folder"):
        onnx_bert.model_file(model_dir, blocker / "models")


def test_a_model_folder_without_weights_says_to_reinstall(tmp_path: Path) -> None:
    with pytest.raises(EmbedderError, match=r"no model\.safetensors; reinstall"):
        onnx_bert.model_file(tmp_path, tmp_path / "cache")


def test_a_model_that_is_not_bert_is_refused_with_the_reason(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "t5"}), "utf-8")
    (tmp_path / "model.safetensors").write_bytes(b"")

    with pytest.raises(EmbedderError, match="Cannot build an ONNX model"):
        onnx_bert.build(tmp_path)


def test_a_failed_write_leaves_no_partial_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(onnx_bert.os, "replace", fail)

    with pytest.raises(EmbedderError, match="No space left"):
        onnx_bert._write_atomically(tmp_path / "model.onnx", b"data")
    assert list(tmp_path.iterdir()) == []


PRELOAD_SCRIPT = """
import sys, threading
from graphmem.adapters import embedders
embedders.preload(cache_dir=sys.argv[1])
loaders = [t for t in threading.enumerate() if t.name == "graphmem-model-load"]
vector = embedders.OnnxEmbedder(cache_dir=sys.argv[1]).embed_query("which linter")
print(len(loaders), embedders._load_onnx.cache_info().misses, vector.shape[0])
"""


def test_a_preloaded_model_is_built_once_and_used_by_the_first_query(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PRELOAD_SCRIPT, str(tmp_path)], capture_output=True, text=True, check=False
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "1", "384"]  # one loader, one query session built, a vector


def test_only_the_bundled_model_is_preloaded(tmp_path: Path) -> None:
    before = embedders._load_onnx.cache_info().misses

    embedders.preload(str(tmp_path / "another-model"), cache_dir=tmp_path)

    assert "graphmem-model-load" not in {t.name for t in threading.enumerate()}
    assert embedders._load_onnx.cache_info().misses == before


# What a Ctrl-C swallowed in CPython's module-lock callback leaves behind: the main thread holds
# the import lock, and the warm-up thread, holding ``_LOADING``, waits for it inside an import.
SWALLOWED_INTERRUPT_SCRIPT = """
import _imp, importlib, sys, threading
from graphmem.adapters import embedders
sys.path.insert(0, sys.argv[2])
started = threading.Event()
def warm():
    with embedders._LOADING:
        started.set()
        importlib.import_module("a_module_not_yet_imported")
_imp.acquire_lock()
embedders._start_warm_up(warm)
started.wait()
try:
    if sys.argv[3] == "query":
        embedders.OnnxEmbedder(cache_dir=sys.argv[1]).embed_query("which linter")
    else:
        embedders.settle_warm_ups(1.0)
except KeyboardInterrupt:
    print("interrupted", embedders.settle_warm_ups(30.0), _imp.lock_held())
"""


@pytest.mark.parametrize("wait", ["query", "exit"])
def test_a_ctrl_c_that_left_the_import_lock_held_ends_the_command_instead_of_hanging(
    tmp_path: Path, wait: str
) -> None:
    (tmp_path / "a_module_not_yet_imported.py").write_text("", "utf-8")
    try:
        done = subprocess.run(
            [sys.executable, "-c", SWALLOWED_INTERRUPT_SCRIPT, str(tmp_path / "cache"), str(tmp_path), wait],
            capture_output=True, text=True, check=False, timeout=60,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail("the command hung on the model's warm-up")

    # The interrupt is raised again, the lock freed, and the warm-up it held up ends.
    assert done.stdout.split() == ["interrupted", "True", "False"], done.stderr
