"""A BERT sentence model for the tests: the real folder layout and file formats (safetensors,
vocab.txt, config.json, the pooling config) with tiny dimensions and random weights, and a
plain reference forward pass to check the NumPy one against."""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

VOCAB = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    ".", ",", "!", "?", "'", "-", "$", "(", ")",
    "the", "a", "cat", "sat", "on", "mat", "dog", "ran", "hello", "world", "cafe", "naive",
    "un", "##aff", "##able", "##s", "##ing", "play", "flight", "lh", "##12", "##34", "12", "34",
    "北", "京", "我", "去", "東", "の", "##の", "い", "##い", "σ", "##σ", "##ς", "ο", "##ο",
    "##δ", "δ", "t", "don", "s", "x", "##x", "new", "york", "anna", "lisbon", "moved", "to",
]  # fmt: skip
HIDDEN, HEADS, LAYERS, INTERMEDIATE, POSITIONS = 32, 4, 2, 64, 64
_CODES = {np.dtype("<f4"): "F32", np.dtype("<f2"): "F16", np.dtype("<i8"): "I64"}


def write_safetensors(path: Path, tensors: Mapping[str, NDArray[Any]], pad: bool = True) -> None:
    """The safetensors layout: u64 little-endian header length, JSON header, raw data."""
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset = 0
    blobs = []
    for name, array in tensors.items():
        data = np.ascontiguousarray(array).tobytes()
        header[name] = {
            "dtype": _CODES[array.dtype],
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        offset += len(data)
        blobs.append(data)
    raw = json.dumps(header).encode()
    if pad:  # writers pad the header with spaces to 8 bytes
        raw += b" " * (-len(raw) % 8)
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"".join(blobs))


def weights(seed: int = 7) -> dict[str, NDArray[np.float32]]:
    rng = np.random.default_rng(seed)

    def rand(*shape: int, scale: float = 0.3) -> NDArray[np.float32]:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    w = {
        "embeddings.word_embeddings.weight": rand(len(VOCAB), HIDDEN, scale=1.0),
        "embeddings.position_embeddings.weight": rand(POSITIONS, HIDDEN),
        "embeddings.token_type_embeddings.weight": rand(2, HIDDEN),
        "embeddings.LayerNorm.weight": 1 + rand(HIDDEN, scale=0.1),
        "embeddings.LayerNorm.bias": rand(HIDDEN, scale=0.1),
    }
    shapes = {
        "attention.self.query": (HIDDEN, HIDDEN),
        "attention.self.key": (HIDDEN, HIDDEN),
        "attention.self.value": (HIDDEN, HIDDEN),
        "attention.output.dense": (HIDDEN, HIDDEN),
        "intermediate.dense": (INTERMEDIATE, HIDDEN),
        "output.dense": (HIDDEN, INTERMEDIATE),
    }
    for i in range(LAYERS):
        for part, shape in shapes.items():
            w[f"encoder.layer.{i}.{part}.weight"] = rand(*shape)
            w[f"encoder.layer.{i}.{part}.bias"] = rand(shape[0], scale=0.1)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            w[f"encoder.layer.{i}.{norm}.weight"] = 1 + rand(HIDDEN, scale=0.1)
            w[f"encoder.layer.{i}.{norm}.bias"] = rand(HIDDEN, scale=0.1)
    return w


def write_model(folder: Path, *, max_seq_length: int = 16, seed: int = 7) -> Path:
    """A complete model folder as the hub and the packaged model lay it out."""
    (folder / "1_Pooling").mkdir(parents=True, exist_ok=True)
    config = {
        "architectures": ["BertModel"],
        "hidden_act": "gelu",
        "hidden_size": HIDDEN,
        "intermediate_size": INTERMEDIATE,
        "layer_norm_eps": 1e-12,
        "max_position_embeddings": POSITIONS,
        "model_type": "bert",
        "num_attention_heads": HEADS,
        "num_hidden_layers": LAYERS,
        "position_embedding_type": "absolute",
        "type_vocab_size": 2,
        "vocab_size": len(VOCAB),
    }
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    tokenizer = {"do_lower_case": True, "strip_accents": None, "tokenize_chinese_chars": True}
    (folder / "tokenizer_config.json").write_text(json.dumps(tokenizer))
    (folder / "sentence_bert_config.json").write_text(
        json.dumps({"max_seq_length": max_seq_length})
    )
    pooling = {"word_embedding_dimension": HIDDEN, "pooling_mode_mean_tokens": True}
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    tensors: dict[str, NDArray[Any]] = dict(weights(seed))
    # Real checkpoints carry this buffer too; the loader must ignore it.
    tensors["embeddings.position_ids"] = np.arange(POSITIONS, dtype=np.int64)[None, :]
    write_safetensors(folder / "model.safetensors", tensors)
    return folder


def reference_embedding(ids: list[int], seed: int = 7) -> NDArray[np.float64]:
    """One sentence through BERT in float64, a token and a head at a time, written from the
    architecture's definition rather than from the code under test; mean-pooled and
    normalised."""
    w = {k: v.astype(np.float64) for k, v in weights(seed).items()}

    def norm(x: NDArray[np.float64], name: str) -> NDArray[np.float64]:
        mu, var = x.mean(), x.var()
        out: NDArray[np.float64] = (x - mu) / math.sqrt(var + 1e-12) * w[name + ".weight"]
        return out + w[name + ".bias"]

    def dense(x: NDArray[np.float64], name: str) -> NDArray[np.float64]:
        out: NDArray[np.float64] = w[name + ".weight"] @ x + w[name + ".bias"]
        return out

    rows = [
        norm(
            w["embeddings.word_embeddings.weight"][t]
            + w["embeddings.position_embeddings.weight"][pos]
            + w["embeddings.token_type_embeddings.weight"][0],
            "embeddings.LayerNorm",
        )
        for pos, t in enumerate(ids)
    ]
    size = HIDDEN // HEADS
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."
        q = [dense(r, p + "attention.self.query") for r in rows]
        k = [dense(r, p + "attention.self.key") for r in rows]
        v = [dense(r, p + "attention.self.value") for r in rows]
        new_rows = []
        for a in range(len(rows)):
            context = np.zeros(HIDDEN)
            for h in range(HEADS):
                part = slice(h * size, (h + 1) * size)
                scores = [
                    float(q[a][part] @ k[b][part]) / math.sqrt(size) for b in range(len(rows))
                ]
                top = max(scores)
                exps = [math.exp(s - top) for s in scores]
                for b, e in enumerate(exps):
                    context[part] += e / sum(exps) * v[b][part]
            mid = norm(
                dense(context, p + "attention.output.dense") + rows[a],
                p + "attention.output.LayerNorm",
            )
            inner = dense(mid, p + "intermediate.dense")
            inner = np.array([0.5 * x * (1 + math.erf(x / math.sqrt(2))) for x in inner])
            new_rows.append(norm(dense(inner, p + "output.dense") + mid, p + "output.LayerNorm"))
        rows = new_rows
    pooled: NDArray[np.float64] = np.mean(rows, axis=0)
    return pooled / np.linalg.norm(pooled)
