"""How far memory search's vectors are, for ``corvid status`` and the control page."""

from __future__ import annotations

from typing import Any

from agent.memory.store import Memory


def index_report(memory: Memory | None, provider: str) -> dict[str, Any]:
    """The part of the status report about memory search: keywords only, or hybrid with how
    many chunks have their vector."""
    vectors = memory.vectors if memory is not None else None
    if vectors is None:
        return {"provider": provider, "hybrid": False}
    p = vectors.progress()
    return {
        "provider": provider,
        "hybrid": True,
        "model": p.model,
        "embedded": p.embedded,
        "total": p.total,
        "error": p.error,
    }


def index_line(r: dict[str, Any]) -> str:
    """The report's memory search part, in one sentence."""
    if not r["hybrid"]:
        return f"Memory search: by keywords only (memory.embeddings.provider: {r['provider']})."
    embedded, total = r["embedded"], r["total"]
    if embedded >= total:
        state = f"all {total:,} chunks embedded"
    else:
        pct = 100 * embedded / total if total else 100.0
        state = (
            f"{embedded:,} of {total:,} chunks embedded ({pct:.0f} %); the rest are found "
            "by their words until then"
        )
    how = "by words only for now" if r["error"] and not embedded else "by words and meaning"
    line = f"Memory search: {how}, model {r['model']}: {state}."
    if r["error"]:
        line += f" Embedding fails: {r['error']}"
    return line
