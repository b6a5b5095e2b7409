"""An ONNX file for a BERT sentence encoder, made locally from its safetensors weights.

The default model package ships all-MiniLM-L6-v2 as ``model.safetensors`` plus its
``config.json``; nothing ships an ONNX file and nothing may be downloaded. So graphmem
writes the graph itself: the standard BERT encoder (embeddings, ``num_hidden_layers``
self-attention blocks, exact-erf GELU), then sentence-transformers' mean pooling over the
attention mask and L2 normalisation, with the weights copied in unchanged (float32).

The file is written once into a cache folder, named by the sha256 of the weights and by
``GRAPH_VERSION`` (so a change of this builder makes a new file), atomically: a crash
mid-write leaves no file that a later start would load. The ONNX protobuf is written
directly (a dozen message fields: see ``_Proto``), so the ``onnx`` package (31 MB) is not
needed; ``safetensors`` is imported only while building.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import struct
import tempfile
from pathlib import Path
from typing import Any

from graphmem.errors import EmbedderError

log = logging.getLogger(__name__)

# Bump when the graph below changes: cached files of older versions are then not used. The
# quantized variant's own: 3, its word embeddings in half precision (``build``).
GRAPH_VERSION = 2
QUANTIZED_GRAPH_VERSION = 3
OPSET = 17
WEIGHTS_FILE = "model.safetensors"
_STAMP_SUFFIX = ".source.json"


def weights_sha256(weights: Path) -> str:
    digest = hashlib.sha256()
    with weights.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def model_file(model_dir: Path, cache_dir: Path, *, quantized: bool = False) -> Path:
    """The ONNX file for the BERT model in ``model_dir``, building it into ``cache_dir`` if needed;
    ``quantized``: the variant whose dense layers run on 8-bit weights (``build``).

    Hashing 90 MB of weights at every start costs time, so the weights' path, size and
    mtime are remembered beside the file with the hash they had; the hash is computed
    again only when one of them changes.
    """
    weights = model_dir / WEIGHTS_FILE
    if not weights.is_file():
        raise EmbedderError(
            f"The embedding model at {model_dir} has no {WEIGHTS_FILE}; reinstall its package."
        )
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EmbedderError(
            f"Cannot create the model cache folder {cache_dir}: {exc}. "
            "Make it writable, or set XDG_CACHE_HOME to a writable folder (graphmem keeps the "
            "model file in $XDG_CACHE_HOME/graphmem/models)."
        ) from exc
    sha = _known_sha(weights, cache_dir) or weights_sha256(weights)
    variant = "-q8" if quantized else ""
    version = QUANTIZED_GRAPH_VERSION if quantized else GRAPH_VERSION
    target = cache_dir / f"minilm-{sha[:32]}-g{version}{variant}.onnx"
    if not target.is_file():
        log.info("building the ONNX model file %s from %s", target, weights)
        _write_atomically(target, build(model_dir, quantized=quantized))
    _remember_sha(weights, cache_dir, sha)
    return target


def _stat_key(weights: Path) -> dict[str, Any]:
    stat = weights.stat()
    return {"path": str(weights.resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def _stamp(weights: Path, cache_dir: Path) -> Path:
    name = hashlib.sha256(str(weights.resolve()).encode()).hexdigest()[:16]
    return cache_dir / f"weights-{name}{_STAMP_SUFFIX}"


def _known_sha(weights: Path, cache_dir: Path) -> str | None:
    try:
        stamp = json.loads(_stamp(weights, cache_dir).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(stamp, dict) or stamp.get("source") != _stat_key(weights):
        return None
    sha = stamp.get("sha256")
    return sha if isinstance(sha, str) and len(sha) == 64 else None


def _remember_sha(weights: Path, cache_dir: Path, sha: str) -> None:
    payload = json.dumps({"source": _stat_key(weights), "sha256": sha}).encode()
    try:
        _write_atomically(_stamp(weights, cache_dir), payload)
    except EmbedderError:
        log.debug("could not remember the weights' hash; it is computed again next time", exc_info=True)


def _write_atomically(target: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise EmbedderError(
            f"Cannot write {target}: {exc}. Free some disk space or fix its permissions."
        ) from exc


def build(model_dir: Path, *, quantized: bool = False) -> bytes:
    """The serialised ONNX model for the BERT encoder in ``model_dir``, pooled and normalised.

    ``quantized``: every dense layer's weights as 8-bit integers, one scale per output
    column (symmetric), multiplied by ONNX Runtime's ``DynamicQuantizeMatMul``, which
    quantizes its input per call; and the word embeddings in half precision (since
    ``QUANTIZED_GRAPH_VERSION`` 3: 22 MB of a recalling process where 45 as floats). A
    one-sentence query runs 2.3 times faster on one core; its vector is within a cosine of
    0.987 of the exact one (0.993 on average, on LoCoMo's questions and turns and the scale
    benchmark's queries). graphmem embeds queries with it, never the memories it stores
    (docs/recall.md)."""
    try:
        from safetensors.numpy import load_file
    except ImportError as exc:
        raise EmbedderError(
            "Building the ONNX model file needs safetensors: pip install safetensors"
        ) from exc
    try:
        config = json.loads((model_dir / "config.json").read_text("utf-8"))
        _check_supported(config)
        weights = load_file(str(model_dir / WEIGHTS_FILE))
        return _graph(config, weights, quantized=quantized)
    except Exception as exc:  # OSError, bad JSON, missing tensors, safetensors' own error type
        raise EmbedderError(f"Cannot build an ONNX model from {model_dir}: {exc}") from exc


def _check_supported(config: dict[str, Any]) -> None:
    if config.get("model_type") != "bert" or config.get("hidden_act") != "gelu":
        raise ValueError("only BERT models with exact GELU are supported")
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError("only absolute position embeddings are supported")


def _graph(config: dict[str, Any], w: dict[str, Any], *, quantized: bool = False) -> bytes:
    import numpy as np

    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    head_dim = hidden // heads
    eps = float(config.get("layer_norm_eps", 1e-12))
    inits: list[Any] = []
    nodes: list[Any] = []

    def const(name: str, array: Any) -> str:
        inits.append(_Proto.tensor(name, np.asarray(array)))
        return name

    def node(op: str, inputs: list[str], name: str, **attrs: Any) -> str:
        nodes.append(_Proto.node(op, inputs, name, attrs))
        return name

    def linear(x: str, prefix: str, out: str) -> str:
        weight_t = w[f"{prefix}.weight"].T.astype(np.float32)
        bias = const(f"{prefix}.bias", w[f"{prefix}.bias"].astype(np.float32))
        if not quantized:
            weight = const(f"{prefix}.weight_t", weight_t)
            return node("Add", [node("MatMul", [x, weight], f"{out}_mm"), bias], out)
        scale = np.maximum(np.abs(weight_t).max(axis=0), 1e-12) / 127.0
        weight = const(f"{prefix}.weight_q", np.round(weight_t / scale).astype(np.int8))
        scale_name = const(f"{prefix}.weight_scale", scale.astype(np.float32))
        zero = const(f"{prefix}.weight_zero", np.zeros(scale.shape, np.int8))
        nodes.append(
            _Proto.node("DynamicQuantizeMatMul", [x, weight, scale_name, zero, bias], out, {}, MS_DOMAIN)
        )
        return out

    def quantized_words(table: Any) -> str:
        """The word embeddings of ``input_ids`` from the table in half precision: 22 MB where the
        floats took 45, each process's largest tensor. As 8-bit integers (a scale per word, 11
        MB, 0.7% off a row) two of the real-model recall tests lost their answer; so, 0.02%."""
        half = const("word_embeddings_f16", np.asarray(table, np.float32).astype(np.float16))
        return node("Cast", [node("Gather", [half, "input_ids"], "words_f16")], "words", to=_FLOAT)

    def layer_norm(x: str, prefix: str, out: str) -> str:
        scale = const(f"{prefix}.weight", w[f"{prefix}.weight"].astype(np.float32))
        bias = const(f"{prefix}.bias", w[f"{prefix}.bias"].astype(np.float32))
        return node("LayerNormalization", [x, scale, bias], out, axis=-1, epsilon=eps)

    def projected_heads(x: str, prefix: str, out: str, perm: list[int]) -> str:
        """``x`` projected by the linear layer ``prefix``, split into the attention heads, its
        axes in ``perm``'s order."""
        split = node("Reshape", [linear(x, prefix, out), "split_heads"], f"{out}_r")
        return node("Transpose", [split], f"{out}_t", perm=perm)

    const("one_f", np.array(1.0, np.float32))
    const("half_f", np.array(0.5, np.float32))
    const("sqrt2_f", np.array(math.sqrt(2.0), np.float32))
    const("scale_f", np.array(1.0 / math.sqrt(head_dim), np.float32))
    const("mask_min_f", np.array(np.finfo(np.float32).min, np.float32))
    const("tiny_count_f", np.array(1e-9, np.float32))
    const("tiny_norm_f", np.array(1e-12, np.float32))
    const("axis1", np.array([1], np.int64))
    const("axis_last", np.array([-1], np.int64))
    const("axis0", np.array([0], np.int64))
    const("axis0_start", np.array([0], np.int64))
    const("split_heads", np.array([0, 0, heads, head_dim], np.int64))
    const("merge_heads", np.array([0, 0, hidden], np.int64))

    # Embeddings: word + position + token type 0 (graphmem embeds single sentences), LayerNorm.
    if quantized:
        words = quantized_words(w["embeddings.word_embeddings.weight"])
    else:
        words = node(
            "Gather", [const("word_embeddings", w["embeddings.word_embeddings.weight"]), "input_ids"], "words"
        )
    length = node("Shape", ["input_ids"], "seq_len", start=1, end=2)
    table = const("position_embeddings", w["embeddings.position_embeddings.weight"])
    pos = node("Slice", [table, "axis0_start", length, "axis0"], "pos")
    type0 = const("token_type_0", w["embeddings.token_type_embeddings.weight"][0])
    summed = node("Add", [node("Add", [words, pos], "words_pos"), type0], "embedded")
    x = layer_norm(summed, "embeddings.LayerNorm", "h0")

    # Attention bias: 0 where the mask is 1, the lowest float where it is 0; shape [B, 1, 1, T].
    mask_f = node("Cast", ["attention_mask"], "mask_f", to=_FLOAT)
    inverted = node("Sub", ["one_f", mask_f], "mask_inverted")
    bias = node("Mul", [inverted, "mask_min_f"], "mask_bias_2d")
    bias = node("Unsqueeze", [node("Unsqueeze", [bias, "axis1"], "mask_bias_3d"), "axis1"], "mask_bias")

    for i in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{i}"
        q = projected_heads(x, f"{p}.attention.self.query", f"q{i}", [0, 2, 1, 3])
        k = projected_heads(x, f"{p}.attention.self.key", f"k{i}", [0, 2, 3, 1])  # transposed, for q·k
        v = projected_heads(x, f"{p}.attention.self.value", f"v{i}", [0, 2, 1, 3])
        scores = node(
            "Add",
            [node("Mul", [node("MatMul", [q, k], f"qk{i}"), "scale_f"], f"qk{i}_s"), bias],
            f"scores{i}",
        )
        probs = node("Softmax", [scores], f"probs{i}", axis=-1)
        context = node("Transpose", [node("MatMul", [probs, v], f"ctx{i}")], f"ctx{i}_t", perm=[0, 2, 1, 3])
        context = node("Reshape", [context, "merge_heads"], f"ctx{i}_m")
        attended = linear(context, f"{p}.attention.output.dense", f"attn_out{i}")
        x = layer_norm(
            node("Add", [attended, x], f"attn_res{i}"), f"{p}.attention.output.LayerNorm", f"h{i}_a"
        )
        inner = linear(x, f"{p}.intermediate.dense", f"inter{i}")
        erf = node("Erf", [node("Div", [inner, "sqrt2_f"], f"inter{i}_d")], f"inter{i}_erf")
        gelu = node(
            "Mul",
            [node("Mul", [inner, "half_f"], f"inter{i}_h"), node("Add", [erf, "one_f"], f"inter{i}_e1")],
            f"gelu{i}",
        )
        out = linear(gelu, f"{p}.output.dense", f"ffn_out{i}")
        x = layer_norm(node("Add", [out, x], f"ffn_res{i}"), f"{p}.output.LayerNorm", f"h{i + 1}")

    # Mean pooling over real tokens (sum clamped at 1e-9), then L2 normalisation (norm clamped at 1e-12).
    mask_3d = node("Unsqueeze", [mask_f, "axis_last"], "mask_3d")
    token_sum = node("ReduceSum", [node("Mul", [x, mask_3d], "masked"), "axis1"], "token_sum", keepdims=0)
    count = node(
        "Max", [node("ReduceSum", [mask_3d, "axis1"], "token_count", keepdims=0), "tiny_count_f"], "count"
    )
    mean = node("Div", [token_sum, count], "mean")
    square = node("ReduceSum", [node("Mul", [mean, mean], "mean_sq"), "axis_last"], "sq_sum", keepdims=1)
    norm = node("Max", [node("Sqrt", [square], "norm_raw"), "tiny_norm_f"], "norm")
    nodes.append(_Proto.node("Div", [mean, norm], "sentence_embedding", {}))

    graph = b"".join(
        [
            *(_Proto.field(1, n) for n in nodes),
            _Proto.field(2, "sentence_encoder"),
            *(_Proto.field(5, t) for t in inits),
            _Proto.field(11, _Proto.value_info("input_ids", _INT64, ["batch", "tokens"])),
            _Proto.field(11, _Proto.value_info("attention_mask", _INT64, ["batch", "tokens"])),
            _Proto.field(12, _Proto.value_info("sentence_embedding", _FLOAT, ["batch", hidden])),
        ]
    )
    opsets = [_Proto.field(1, "") + _Proto.integer(2, OPSET)]
    if quantized:
        opsets.append(_Proto.field(1, MS_DOMAIN) + _Proto.integer(2, 1))
    return b"".join(
        [
            _Proto.integer(1, IR_VERSION),
            _Proto.field(2, "graphmem"),
            _Proto.field(7, graph),
            *(_Proto.field(8, opset) for opset in opsets),
        ]
    )


_FLOAT = 1  # TensorProto.DataType
_INT8 = 3
_INT64 = 7
_FLOAT16 = 10
MS_DOMAIN = "com.microsoft"  # ONNX Runtime's own operators (DynamicQuantizeMatMul)
IR_VERSION = 8


class _Proto:
    """The few ONNX protobuf messages the graph needs, in protobuf's wire format.

    Field numbers are those of onnx.proto: ModelProto (ir_version 1, producer_name 2,
    graph 7, opset_import 8), GraphProto (node 1, name 2, initializer 5, input 11,
    output 12), NodeProto (input 1, output 2, name 3, op_type 4, attribute 5, domain 7),
    AttributeProto (name 1, f 2, i 3, ints 8, type 20), TensorProto (dims 1, data_type 2,
    name 8, raw_data 9), ValueInfoProto (name 1, type 2), TypeProto (tensor_type 1),
    TypeProto.Tensor (elem_type 1, shape 2), TensorShapeProto (dim 1), Dimension
    (dim_value 1, dim_param 2), OperatorSetIdProto (domain 1, version 2).
    """

    @staticmethod
    def varint(value: int) -> bytes:
        value &= (1 << 64) - 1  # int64 as two's complement, like protobuf
        out = bytearray()
        while value > 0x7F:
            out.append((value & 0x7F) | 0x80)
            value >>= 7
        out.append(value)
        return bytes(out)

    @staticmethod
    def integer(number: int, value: int) -> bytes:
        return _Proto.varint(number << 3) + _Proto.varint(value)

    @staticmethod
    def field(number: int, value: bytes | str) -> bytes:
        data = value.encode() if isinstance(value, str) else value
        return _Proto.varint(number << 3 | 2) + _Proto.varint(len(data)) + data

    @staticmethod
    def tensor(name: str, array: Any) -> bytes:
        import numpy as np

        if array.dtype == np.float32:
            kind, raw = _FLOAT, array.astype("<f4").tobytes()
        elif array.dtype == np.int64:
            kind, raw = _INT64, array.astype("<i8").tobytes()
        elif array.dtype == np.int8:
            kind, raw = _INT8, array.tobytes()
        elif array.dtype == np.float16:
            kind, raw = _FLOAT16, array.astype("<f2").tobytes()
        else:
            raise ValueError(f"tensor {name} has unsupported dtype {array.dtype}")
        dims = b"".join(_Proto.integer(1, int(d)) for d in array.shape)
        return dims + _Proto.integer(2, kind) + _Proto.field(8, name) + _Proto.field(9, raw)

    @staticmethod
    def node(op: str, inputs: list[str], output: str, attrs: dict[str, Any], domain: str = "") -> bytes:
        parts = [*(_Proto.field(1, i) for i in inputs), _Proto.field(2, output), _Proto.field(3, output)]
        parts.append(_Proto.field(4, op))
        parts.extend(_Proto.field(5, _Proto.attribute(key, value)) for key, value in sorted(attrs.items()))
        if domain:
            parts.append(_Proto.field(7, domain))
        return b"".join(parts)

    @staticmethod
    def attribute(name: str, value: Any) -> bytes:
        head = _Proto.field(1, name)
        if isinstance(value, float):
            return head + _Proto.varint(2 << 3 | 5) + struct.pack("<f", value) + _Proto.integer(20, 1)
        if isinstance(value, int):
            return head + _Proto.integer(3, value) + _Proto.integer(20, 2)
        if isinstance(value, list) and all(isinstance(v, int) for v in value):
            return head + b"".join(_Proto.integer(8, v) for v in value) + _Proto.integer(20, 7)
        raise ValueError(f"unsupported attribute {name}={value!r}")

    @staticmethod
    def value_info(name: str, elem_type: int, shape: list[str | int]) -> bytes:
        dims = b"".join(
            _Proto.field(1, _Proto.field(2, d) if isinstance(d, str) else _Proto.integer(1, d)) for d in shape
        )
        tensor_type = _Proto.integer(1, elem_type) + _Proto.field(2, dims)
        return _Proto.field(1, name) + _Proto.field(2, _Proto.field(1, tensor_type))
