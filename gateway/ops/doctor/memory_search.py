"""``corvid doctor``'s line on memory search: keywords only, or where its vectors come from."""

from __future__ import annotations

import asyncio
import urllib.parse
from pathlib import Path

from gateway.config.layout import Layout
from gateway.config.loader import Config
from gateway.contract.ports import Check, Status

NAME = "memory search"


async def check_memory_search(config: Config, limit: float) -> Check:
    """How memory is searched; ``limit`` bounds the look at where the local model would be
    fetched from (nothing is downloaded)."""
    emb = config.memory.embeddings
    recall = "recall before answering " + ("on" if config.memory.recall.enabled else "off")
    if emb.provider == "none":
        return Check(
            Status.OK, NAME, f"by keywords only (memory.embeddings.provider: none); {recall}"
        )
    if emb.provider == "openai":
        from agent.memory.embedding.factory import OPENAI_MODEL

        return Check(
            Status.OK,
            NAME,
            f"by words and meaning, vectors from {emb.base_url} ({emb.model or OPENAI_MODEL}): "
            f"every memory chunk and every search is sent there; {recall}",
        )
    from agent.memory.embedding.fetch import HUB_URL, MODEL_NAME, unreachable, ways_to_get

    where = local_model(config)
    if isinstance(where, Check):
        return where
    if where is None:
        source = emb.model_url or HUB_URL
        why = await asyncio.to_thread(unreachable, source, limit)
        if why:
            host = urllib.parse.urlsplit(source).netloc or source
            return Check(
                Status.WARN,
                NAME,
                f"by words only: the local model {MODEL_NAME} is not on this machine and "
                f"cannot be fetched from {host} ({why}); nothing is searched by meaning until "
                "it is there",
                ways_to_get(Layout(config.home).models),
            )
        where = "fetched once into models/ when first needed"
    return Check(
        Status.OK,
        NAME,
        f"by words and meaning, local model {MODEL_NAME} {where}; nothing leaves the machine; "
        f"{recall}",
    )


def local_model(config: Config) -> str | Check | None:
    """Where the local model's files are (without loading them), a FAIL for a ``model_path``
    that holds none, or None when they must still be fetched."""
    from agent.memory.embedding.fetch import MODEL_NAME, is_model_folder
    from agent.memory.embedding.local import packaged_model

    emb = config.memory.embeddings
    if emb.model_path:
        if not is_model_folder(Path(emb.model_path)):
            return Check(
                Status.FAIL,
                NAME,
                f"memory.embeddings.model_path {emb.model_path} has no model "
                "(config.json, model.safetensors and vocab.txt)",
                "point model_path at the model's folder, or leave it empty to fetch the model",
            )
        return f"from {emb.model_path}"
    if (folder := packaged_model()) is not None:
        return f"from the installed package ({folder})"
    if is_model_folder(Layout(config.home).models / MODEL_NAME):
        return f"from models/{MODEL_NAME}"
    return None
