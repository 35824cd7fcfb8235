"""A whisper.cpp model file for the tests: the real file format, tiny dimensions and random
weights (no real model can be fetched here). whisper.cpp loads it and runs it like any other;
what it hears is noise, so tests check that the words arrive, not what they say.

The format is whisper.cpp's "ggml" model file (what its convert-pt-to-ggml.py writes):
a magic number, eleven int32 hyper-parameters, the mel filter bank, the vocabulary, then each
tensor as (n_dims, name length, type, dims in ggml order, name, data). whisper.cpp derives its
special tokens from ``n_vocab``, so that stays a real value (51864, English-only); it needs
the vocabulary to hold " " (GPT-2's byte tokens give it, id 220), and runs only the f16 layout
(``ftype`` 1): matrices and convolution kernels in f16, the rest in f32.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

import numpy as np

MAGIC = 0x67676D6C
HPARAMS = {
    "n_vocab": 51864,
    "n_audio_ctx": 64,
    "n_audio_state": 8,
    "n_audio_head": 1,
    "n_audio_layer": 1,
    "n_text_ctx": 32,  # decodes up to n_text_ctx / 2 - 4 tokens a window
    "n_text_state": 8,
    "n_text_head": 1,
    "n_text_layer": 1,
    "n_mels": 80,
    "ftype": 1,
}
FFT_BINS = 201


Tensor = tuple[str, tuple[int, ...], str]


def _tensors(h: dict[str, int]) -> Iterator[Tensor]:
    """Each tensor's name, dims in ggml order (numpy's reversed) and what fills it."""
    s, t = h["n_audio_state"], h["n_text_state"]
    yield "encoder.positional_embedding", (s, h["n_audio_ctx"]), "random32"
    yield "encoder.conv1.weight", (3, h["n_mels"], s), "random16"
    yield "encoder.conv1.bias", (1, s), "zeros"
    yield "encoder.conv2.weight", (3, s, s), "random16"
    yield "encoder.conv2.bias", (1, s), "zeros"
    for i in range(h["n_audio_layer"]):
        yield from _block(f"encoder.blocks.{i}.", s, ("attn",))
    yield "encoder.ln_post.weight", (s,), "ones"
    yield "encoder.ln_post.bias", (s,), "zeros"
    yield "decoder.positional_embedding", (t, h["n_text_ctx"]), "random32"
    yield "decoder.token_embedding.weight", (t, h["n_vocab"]), "random16"
    for i in range(h["n_text_layer"]):
        yield from _block(f"decoder.blocks.{i}.", t, ("attn", "cross_attn"))
    yield "decoder.ln.weight", (t,), "ones"
    yield "decoder.ln.bias", (t,), "zeros"


def _block(prefix: str, n: int, attentions: tuple[str, ...]) -> Iterator[Tensor]:
    for att in attentions:
        yield f"{prefix}{att}_ln.weight", (n,), "ones"
        yield f"{prefix}{att}_ln.bias", (n,), "zeros"
        for part in ("query", "key", "value", "out"):
            yield f"{prefix}{att}.{part}.weight", (n, n), "random16"
            if part != "key":
                yield f"{prefix}{att}.{part}.bias", (n,), "zeros"
    yield f"{prefix}mlp_ln.weight", (n,), "ones"
    yield f"{prefix}mlp_ln.bias", (n,), "zeros"
    yield f"{prefix}mlp.0.weight", (n, 4 * n), "random16"
    yield f"{prefix}mlp.0.bias", (4 * n,), "zeros"
    yield f"{prefix}mlp.2.weight", (4 * n, n), "random16"
    yield f"{prefix}mlp.2.bias", (n,), "zeros"


def _byte_tokens() -> list[bytes]:
    """GPT-2's 256 byte-level tokens in its id order (printable bytes first)."""
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    return [bytes([b]) for b in printable + [b for b in range(256) if b not in printable]]


def write_model(path: Path, seed: int = 0) -> Path:
    """Write the model (about 1 MB) to ``path``."""
    h = HPARAMS
    rng = np.random.default_rng(seed)
    out = [struct.pack("<I", MAGIC), struct.pack("<11i", *h.values())]
    mel = rng.uniform(0.0, 0.01, size=(h["n_mels"], FFT_BINS)).astype(np.float32)
    out += [struct.pack("<2i", h["n_mels"], FFT_BINS), mel.tobytes()]
    tokens = _byte_tokens()
    out.append(struct.pack("<i", len(tokens)))
    out += [struct.pack("<I", len(tok)) + tok for tok in tokens]
    for name, dims, fill in _tensors(h):
        shape = tuple(reversed(dims))
        if fill == "ones":
            data = np.ones(shape, np.float32)
        elif fill == "zeros":
            data = np.zeros(shape, np.float32)
        elif fill == "random32":
            data = (rng.standard_normal(shape) * 0.02).astype(np.float32)
        else:
            data = (rng.standard_normal(shape) * 0.05).astype(np.float16)
        raw = name.encode()
        kind = 1 if data.dtype == np.float16 else 0
        out.append(struct.pack(f"<3i{len(dims)}i", len(dims), len(raw), kind, *dims))
        out += [raw, np.ascontiguousarray(data).tobytes()]
    path.write_bytes(b"".join(out))
    return path
