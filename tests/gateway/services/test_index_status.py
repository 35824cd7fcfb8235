"""How far memory search's index is, in ``corvid status``: keywords only, vectors on their
way, all embedded, and a provider that fails."""

from __future__ import annotations

import asyncio

from gateway.ops.cli import main
from gateway.services.index_status import index_line
from tests.fakes.embeddings_api import FakeEmbeddings


def test_the_line_says_how_far_the_vectors_are_and_why_they_stop():
    base = {"provider": "openai", "hybrid": True, "model": "openai:m", "error": ""}
    assert index_line({**base, "embedded": 3, "total": 4}) == (
        "Memory search: by words and meaning, model openai:m: 3 of 4 chunks embedded (75 %); "
        "the rest are found by their words until then."
    )
    assert "all 1,200 chunks embedded." in index_line({**base, "embedded": 1200, "total": 1200})
    failing = index_line({**base, "embedded": 0, "total": 2, "error": "HTTP 401"})
    assert failing.endswith("Embedding fails: HTTP 401")
    assert failing.startswith("Memory search: by words only for now, model openai:m")
    assert index_line({"provider": "none", "hybrid": False}) == (
        "Memory search: by keywords only (memory.embeddings.provider: none)."
    )


async def test_corvid_status_shows_the_index_of_the_running_gateway(home, start_gateway, capsys):
    ws = home / "workspace"
    (ws / "MEMORY.md").write_text("- Anna moved to Lisbon.\n")
    (ws / "memory").mkdir(exist_ok=True)
    (ws / "memory" / "2026-03-11.md").write_text("## 09:00\n\nNew door code: 4711\n")
    embeddings = FakeEmbeddings(api_key="emb-key")
    await embeddings.start()
    section = {"provider": "openai", "base_url": embeddings.base_url, "api_key": "emb-key"}
    try:
        app, _chan = await start_gateway(memory={"embeddings": section})
        vectors = app.gateway.agent.memory.vectors
        assert vectors is not None and await asyncio.to_thread(vectors.wait_idle, 10)
        capsys.readouterr()
        assert await asyncio.to_thread(main, ["status", "--home", str(home)], {}) == 0
        out = capsys.readouterr().out
    finally:
        await embeddings.close()
    assert (
        "Memory search: by words and meaning, model openai:text-embedding-3-small: "
        "all 2 chunks embedded." in out
    )
