"""``corvid doctor``'s line on memory search: keywords only, or where its vectors come from
(and so what leaves the machine), and whether recall before answering is on."""

from __future__ import annotations

from pathlib import Path

from gateway.config.layout import Layout
from gateway.config.loader import Config
from gateway.contract.ports import Check, Status

NAME = "memory search"


def check_memory_search(config: Config) -> Check:
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
    # The local model: where its files are, without loading it.
    from agent.memory.embedding.fetch import MODEL_NAME, is_model_folder
    from agent.memory.embedding.local import packaged_model

    if emb.model_path:
        if not is_model_folder(Path(emb.model_path)):
            return Check(
                Status.FAIL,
                NAME,
                f"memory.embeddings.model_path {emb.model_path} has no model "
                "(config.json, model.safetensors and vocab.txt)",
                "point model_path at the model's folder, or leave it empty to fetch the model",
            )
        where = f"from {emb.model_path}"
    elif (folder := packaged_model()) is not None:
        where = f"from the installed package ({folder})"
    elif is_model_folder(Layout(config.home).models / MODEL_NAME):
        where = f"from models/{MODEL_NAME}"
    else:
        where = "fetched once into models/ when first needed"
    return Check(
        Status.OK,
        NAME,
        f"by words and meaning, local model {MODEL_NAME} {where}; nothing leaves the machine; "
        f"{recall}",
    )
