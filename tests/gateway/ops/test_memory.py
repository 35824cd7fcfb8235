"""``corvid memory reindex`` and ``search`` with vectors on: every chunk embedded (from the
cache the second time), a progress bar on a terminal and plain lines elsewhere, and hits that
say why they ranked. The embeddings come from a fake OpenAI-compatible service on loopback."""

from __future__ import annotations

import asyncio
import io
import json
from datetime import UTC
from pathlib import Path

import yaml

from agent.usage.ledger import UsageLedger
from gateway.ops.cli import main
from gateway.ops.memory import ProgressBar
from tests.fakes.embeddings_api import FakeEmbeddings


def _home(tmp_path: Path, base_url: str) -> Path:
    home = tmp_path / "h"
    main(["init", "--home", str(home)], environ={})
    config = yaml.safe_load((home / "config.yaml").read_text())
    config["memory"]["embeddings"].update(
        provider="openai", base_url=base_url, api_key="${EMB_KEY}", batch_size=2
    )
    (home / "config.yaml").write_text(yaml.safe_dump(config))
    log = home / "workspace" / "memory" / "2026-11-20.md"
    log.write_text("## 10:00\n\nCall the bank about the loan\n\n## 11:00\n\nWater the plants\n")
    return home


async def test_reindex_embeds_every_chunk_once_and_search_says_why(tmp_path, capsys):
    api = FakeEmbeddings(api_key="emb-secret")
    await api.start()
    env = {"EMB_KEY": "emb-secret"}
    try:
        home = _home(tmp_path, api.base_url)
        capsys.readouterr()
        argv = ["memory", "reindex", "--home", str(home)]
        assert await asyncio.to_thread(main, argv, environ=env) == 0
        out = capsys.readouterr().out
        # MEMORY.md, and the log's two entries: a chunk each.
        assert "Indexed 2 file(s) into 3 chunk(s)" in out
        assert "Embedding with openai:text-embedding-3-small: 0/3 chunks" in out  # not a tty
        assert "3 of 3 chunk(s) have vectors (openai:text-embedding-3-small)" in out
        sent = len(api.asked)
        assert sent >= 1 and all(a.model == "text-embedding-3-small" for a in api.asked)
        assert await asyncio.to_thread(main, argv, environ=env) == 0  # all from the cache
        assert len(api.asked) == sent
        capsys.readouterr()
        argv = ["memory", "search", "bank", "loan", "--home", str(home)]
        assert await asyncio.to_thread(main, argv, environ=env) == 0
        out = capsys.readouterr().out
        assert out.startswith("memory/2026-11-20.md:1-")
        assert "; text 1.0, vector " in out and ", recency " in out
        assert len(api.asked) == sent + 1  # the query
    finally:
        await api.close()
    # What the service billed, for the reindex and for the query, is in the usage ledger.
    ledger = UsageLedger(home / "state" / "usage.sqlite", UTC)
    try:
        [row] = ledger.totals("purpose")
    finally:
        ledger.close()
    assert (row["key"], row["calls"]) == ("embedding", sent + 1)
    assert row["input"] == api.billed > 0


async def test_reindex_says_when_the_service_fails_and_keeps_the_keyword_index(tmp_path, capsys):
    api = FakeEmbeddings(api_key="emb-secret")
    await api.start()
    try:
        home = _home(tmp_path, api.base_url)
        capsys.readouterr()
        argv = ["memory", "reindex", "--home", str(home)]
        assert await asyncio.to_thread(main, argv, environ={"EMB_KEY": "wrong"}) == 1
        out = capsys.readouterr().out
        assert "Indexed 2 file(s)" in out
        assert "embedding stopped: the embedding service refused the API key (HTTP 401" in out
        assert "Incorrect API key provided: ***" in out  # the service echoed it; not shown
        argv = ["memory", "search", "bank", "--home", str(home)]
        assert await asyncio.to_thread(main, argv, environ={"EMB_KEY": "wrong"}) == 0
        assert "Call the bank" in capsys.readouterr().out  # by keywords
    finally:
        await api.close()


def test_reindex_without_the_model_or_a_network_finishes_by_words_and_says_how_to_get_it(
    tmp_path, capsys, monkeypatch
):
    from agent.memory.embedding import local

    monkeypatch.undo()  # the real local model loader (the tests' guard refuses it)
    monkeypatch.setattr(local, "packaged_model", lambda: None)
    home = _home(tmp_path, "http://unused")
    config = yaml.safe_load((home / "config.yaml").read_text())
    # Port 9 on loopback: nothing listens, every connection is refused, as offline.
    config["memory"]["embeddings"].update(provider="local", model_url="http://127.0.0.1:9")
    (home / "config.yaml").write_text(yaml.safe_dump(config))
    capsys.readouterr()
    assert main(["memory", "reindex", "--home", str(home)], environ={}) == 0
    out = capsys.readouterr().out
    assert "Indexed 2 file(s) into 3 chunk(s)" in out
    assert "Memory search is by words only for now: the local model all-MiniLM-L6-v2" in out
    assert "memory.embeddings.model_path" in out and "provider: none" in out
    assert "unexpected error" not in out
    capsys.readouterr()
    assert main(["memory", "search", "bank", "--home", str(home)], environ={}) == 0
    assert "Call the bank" in capsys.readouterr().out


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_bar_redraws_on_a_terminal_and_writes_tenths_elsewhere():
    tty = Tty()
    bar = ProgressBar(tty, "Embedding")
    for done in (0, 5, 10):
        bar.show(done, 10)
    bar.end()
    assert tty.getvalue() == (
        "\rEmbedding [" + "." * 30 + "] 0/10"
        "\rEmbedding [" + "#" * 15 + "." * 15 + "] 5/10"
        "\rEmbedding [" + "#" * 30 + "] 10/10\n"
    )
    plain = io.StringIO()
    bar = ProgressBar(plain, "Embedding")
    for done in range(0, 101, 4):
        bar.show(done, 100)
    bar.end()
    lines = plain.getvalue().splitlines()
    assert lines[0] == "Embedding: 0/100 chunks" and lines[-1] == "Embedding: 100/100 chunks"
    assert len(lines) == 11


def test_with_embeddings_off_nothing_of_the_vectors_is_loaded(tmp_path):
    """provider none: memory as before vectors, and NumPy is not even imported."""
    import subprocess
    import sys

    script = (
        "import asyncio, sys\n"
        "from pathlib import Path\n"
        "from gateway.app import build_app\n"
        "from gateway.config.home import init_home\n"
        "from gateway.config.loader import parse_config\n"
        "async def main():\n"
        f"    home = Path({str(tmp_path / 'h')!r})\n"
        "    init_home(home, {})\n"
        "    raw = {'llm': {'api_key': 'x'}, 'web': {'enabled': False},\n"
        "           'memory': {'embeddings': {'provider': 'none'}}}\n"
        "    app = build_app(parse_config(raw, home=home, environ={}), [])\n"
        "    await app.start()\n"
        "    assert app.gateway.agent.memory.vectors is None\n"
        "    await app.stop()\n"
        "    print(sorted(m for m in sys.modules if m.startswith(('numpy', 'agent.memory'))))\n"
        "asyncio.run(main())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    loaded = done.stdout.strip()
    assert "numpy" not in loaded and "agent.memory.semantic" not in loaded, loaded
    assert "agent.memory.index" in loaded


def test_search_as_json_gives_each_hit_with_file_lines_text_date_and_scores(tmp_path, capsys):
    home = tmp_path / "h"
    main(["init", "--home", str(home)], environ={})
    config = yaml.safe_load((home / "config.yaml").read_text())
    config["memory"]["embeddings"]["provider"] = "none"
    (home / "config.yaml").write_text(yaml.safe_dump(config))
    logs = home / "workspace" / "memory"
    (logs / "2025-03-14.md").write_text("# 2025-03-14\n\n## 09:10\n\nThe bike lock code is 4812.\n")
    (logs / "2026-01-02.md").write_text("# 2026-01-02\n\n## 18:00\n\nBike lock code is 7305 now.\n")
    capsys.readouterr()
    assert main(["memory", "search", "bike", "lock", "--json", "--home", str(home)], {}) == 0
    hits = json.loads(capsys.readouterr().out)
    assert [(h["file"], h["lines"], h["date"]) for h in hits] == [
        ("memory/2026-01-02.md", [1, 5], "2026-01-02"),
        ("memory/2025-03-14.md", [1, 5], "2025-03-14"),
    ]
    assert "7305" in hits[0]["text"] and hits[0]["age"].endswith("ago")
    assert hits[1]["newer"] == "memory/2026-01-02.md:1"  # the same subject, written later
    assert set(hits[0]["scores"]) == {"score", "text", "vector", "recency", "words"}
    assert hits[0]["scores"]["vector"] is None  # embeddings off
    argv = ["memory", "search", "bike", "--until", "2025-12-31", "--json", "--home", str(home)]
    assert main(argv, {}) == 0
    assert [h["file"] for h in json.loads(capsys.readouterr().out)] == ["memory/2025-03-14.md"]
    assert main(["memory", "search", "bike", "--since", "March", "--home", str(home)], {}) == 2
    assert "--since must be a day written YYYY-MM-DD, not 'March'" in capsys.readouterr().err
    argv = ["memory", "search", "tandem", "--json", "--home", str(home)]
    assert main(argv, {}) == 1 and json.loads(capsys.readouterr().out) == []
