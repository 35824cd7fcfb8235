"""Which embedder ``memory.embeddings`` asks for: none, an OpenAI-compatible service, or local."""

from __future__ import annotations

import importlib
from pathlib import Path

from agent.memory.embedding.base import Embedder, EmbeddingError, LazyEmbedder
from agent.settings import EmbeddingSettings

LOCAL_MODEL = "all-MiniLM-L6-v2"
OPENAI_MODEL = "text-embedding-3-small"


def model_id(settings: EmbeddingSettings) -> str:
    """The id the configured provider's vectors are cached under ("" when there is none)."""
    if settings.provider == "local":
        return f"local:{settings.model or LOCAL_MODEL}"
    if settings.provider == "openai":
        return f"openai:{settings.model or OPENAI_MODEL}"
    return ""


def build_embedder(settings: EmbeddingSettings, models_dir: Path) -> Embedder | None:
    """The embedder ``memory.embeddings`` asks for, not yet loaded; None for ``none``; a
    fetched local model is kept in ``models_dir``."""
    if settings.provider == "none":
        return None
    if settings.provider == "openai":
        from agent.memory.embedding.openai import OpenAIEmbedder

        return OpenAIEmbedder(
            base_url=settings.base_url,
            model=settings.model or OPENAI_MODEL,
            api_key=settings.api_key.value if settings.api_key else None,
            batch_size=settings.batch_size,
            timeout=settings.timeout,
            retries=settings.retries,
        )
    model_path, model_url = settings.model_path, settings.model_url
    return LazyEmbedder(model_id(settings), lambda: load_local(model_path, models_dir, model_url))


def load_local(model_path: str, models_dir: Path, model_url: str = "") -> Embedder:
    """The local model, read from ``model_path`` or fetched once into ``models_dir`` (from
    ``model_url``, or the hub when it is empty)."""
    # Imported by name when first used: the forward pass and its tokenizer stay out of
    # memory until then.
    try:
        local = importlib.import_module("agent.memory.embedding.local")
    except ImportError as exc:
        raise EmbeddingError(f"the local embedding model is not available: {exc}") from exc
    if model_url:
        embedder: Embedder = local.load_local_embedder(model_path, models_dir, base_url=model_url)
    else:
        embedder = local.load_local_embedder(model_path, models_dir)
    return embedder
