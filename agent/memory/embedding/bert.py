"""A BERT encoder's forward pass in NumPy (float32), for sentence-embedding models."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from agent.memory.embedding.safetensors import ModelFileError, read_safetensors

F32 = NDArray[np.float32]
_LAYER_PARTS = (
    "attention.self.query",
    "attention.self.key",
    "attention.self.value",
    "attention.output.dense",
    "intermediate.dense",
    "output.dense",
)
_LAYER_NORMS = ("attention.output.LayerNorm", "output.LayerNorm")


@dataclass(frozen=True, slots=True)
class BertConfig:
    hidden: int
    heads: int
    layers: int
    max_positions: int
    eps: float

    @classmethod
    def from_file(cls, path: Path) -> BertConfig:
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            config = cls(
                hidden=int(raw["hidden_size"]),
                heads=int(raw["num_attention_heads"]),
                layers=int(raw["num_hidden_layers"]),
                max_positions=int(raw.get("max_position_embeddings", 512)),
                eps=float(raw.get("layer_norm_eps", 1e-12)),
            )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ModelFileError(f"{path}: not a BERT configuration ({exc})") from exc
        # Anything else would run without error and give meaningless vectors.
        if raw.get("hidden_act", "gelu") != "gelu":
            raise ModelFileError(f"{path}: activation {raw['hidden_act']!r} is not supported")
        if raw.get("position_embedding_type", "absolute") != "absolute":
            raise ModelFileError(f"{path}: only absolute position embeddings are supported")
        if config.hidden % config.heads:
            raise ModelFileError(f"{path}: {config.hidden} does not split into {config.heads}")
        return config


def erf(x: F32) -> F32:
    """The error function by Abramowitz and Stegun's 7.1.26 (within 1.5e-7), worked in
    float32 in place: under 6e-7 in all, far below what separates GELU's exact erf form
    from its tanh shortcut (1e-3), so this is the exact form BERT was trained with."""
    a = np.abs(x)
    t = a * np.float32(0.3275911)
    t += np.float32(1)
    np.reciprocal(t, out=t)
    poly = t * np.float32(1.061405429)
    for c in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        poly += np.float32(c)
        poly *= t
    np.square(a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    poly *= a
    np.subtract(np.float32(1), poly, out=poly)
    result: F32 = np.copysign(poly, x, out=poly)
    return result


def gelu(x: F32) -> F32:
    result = erf(x * np.float32(1 / math.sqrt(2)))
    result += np.float32(1)
    result *= x
    result *= np.float32(0.5)
    return result


def layer_norm(x: F32, weight: F32, bias: F32, eps: float) -> F32:
    centred = x - x.mean(axis=-1, keepdims=True)
    variance = np.mean(centred * centred, axis=-1, keepdims=True)
    result: F32 = centred / np.sqrt(variance + np.float32(eps)) * weight + bias
    return result


class BertEncoder:
    """The weights of a BERT model (views on the memory-mapped file) and its forward pass."""

    def __init__(self, config: BertConfig, weights: dict[str, NDArray[Any]]) -> None:
        self.config = config
        self._w = weights
        embedding = self._w["embeddings.word_embeddings.weight"]
        if embedding.ndim != 2 or embedding.shape[1] != config.hidden:
            raise ModelFileError(f"word embeddings of shape {embedding.shape} do not fit")
        self.vocab_size = int(embedding.shape[0])
        # Query, key and value in one matrix: one product per layer instead of three.
        self._qkv = [
            (
                np.concatenate([weights[f"{p}{n}.weight"] for n in ("query", "key", "value")]).T,
                np.concatenate([weights[f"{p}{n}.bias"] for n in ("query", "key", "value")]),
            )
            for p in (f"encoder.layer.{i}.attention.self." for i in range(config.layers))
        ]

    @classmethod
    def from_folder(cls, folder: Path) -> BertEncoder:
        config = BertConfig.from_file(folder / "config.json")
        tensors = read_safetensors(folder / "model.safetensors")
        # Checkpoints saved from a task model prefix every name with "bert.".
        weights = {name.removeprefix("bert."): t for name, t in tensors.items()}
        needed = [
            "embeddings.word_embeddings.weight",
            "embeddings.position_embeddings.weight",
            "embeddings.token_type_embeddings.weight",
            "embeddings.LayerNorm.weight",
            "embeddings.LayerNorm.bias",
        ]
        for i in range(config.layers):
            for part in (*_LAYER_PARTS, *_LAYER_NORMS):
                needed += [f"encoder.layer.{i}.{part}.weight", f"encoder.layer.{i}.{part}.bias"]
        missing = [name for name in needed if name not in weights]
        if missing:
            raise ModelFileError(f"{folder}: the model lacks {len(missing)} tensors: {missing[:3]}")
        wrong = [n for n in needed if weights[n].dtype != np.float32]
        if wrong:
            raise ModelFileError(f"{folder}: tensors that are not floating point: {wrong[:3]}")
        return cls(config, {name: weights[name] for name in needed})

    def forward(self, ids: NDArray[np.int64], mask: NDArray[np.bool_]) -> F32:
        """The last hidden states, shape (batch, length, hidden), for right-padded ``ids``
        whose real tokens ``mask`` marks. Rows of padding hold finite values of no meaning."""
        batch, length = ids.shape
        if length > self.config.max_positions:
            raise ValueError(f"{length} tokens exceed the model's {self.config.max_positions}")
        w = self._w
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:length]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = layer_norm(
            x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps
        )
        lengths = [int(n) for n in mask.sum(axis=1)]
        hidden = x.reshape(batch * length, self.config.hidden)
        for i in range(self.config.layers):
            hidden = self._layer(i, hidden, lengths, length)
        return hidden.reshape(batch, length, self.config.hidden)

    @property
    def eps(self) -> float:
        return self.config.eps

    def _dense(self, name: str, x: F32) -> F32:
        # PyTorch stores a linear layer as (out, in); the transposed view costs no copy.
        result: F32 = x @ self._w[name + ".weight"].T
        result += self._w[name + ".bias"]
        return result

    def _layer(self, i: int, x: F32, lengths: list[int], length: int) -> F32:
        c, p = self.config, f"encoder.layer.{i}."
        size = c.hidden // c.heads
        weight, bias = self._qkv[i]
        qkv = (x @ weight + bias).reshape(len(lengths), length, 3, c.heads, size)
        context = np.zeros((len(lengths), length, c.hidden), dtype=np.float32)
        scale = np.float32(1 / math.sqrt(size))
        # One sequence at a time, over its real tokens only: padding never takes part (the
        # effect of BERT's attention mask), and each score matrix stays small enough for
        # the cache.
        for row, n in enumerate(lengths):
            # Contiguous per head (keys already transposed): NumPy hands stacked matrices to
            # BLAS quickly only when they are laid out so.
            q = np.ascontiguousarray(qkv[row, :n, 0].transpose(1, 0, 2))
            k = np.ascontiguousarray(qkv[row, :n, 1].transpose(1, 2, 0))
            v = np.ascontiguousarray(qkv[row, :n, 2].transpose(1, 0, 2))
            scores: F32 = q @ k
            scores *= scale
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context[row, :n] = (scores @ v).transpose(1, 0, 2).reshape(n, c.hidden)
        attended = self._dense(p + "attention.output.dense", context.reshape(x.shape))
        attended += x
        n1 = p + "attention.output.LayerNorm"
        x = layer_norm(attended, self._w[n1 + ".weight"], self._w[n1 + ".bias"], c.eps)
        out = self._dense(p + "output.dense", gelu(self._dense(p + "intermediate.dense", x)))
        out += x
        n2 = p + "output.LayerNorm"
        return layer_norm(out, self._w[n2 + ".weight"], self._w[n2 + ".bias"], c.eps)
