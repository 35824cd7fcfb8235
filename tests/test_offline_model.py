"""A machine without the local embedding model and without a route to fetch it: the gateway
answers, memory search goes on by words, and the log says so once, with the ways out, and
never with a traceback however often fetching is tried again."""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
from pathlib import Path

import pytest

from agent.memory import semantic
from agent.memory.embedding import local
from tests.conftest import PRIVATE, RecordingChannel, make_config
from tests.fakes.anthropic_api import FakeAnthropic, Reply


def closed_port() -> int:
    """A loopback port nothing listens on: every connection is refused, as offline."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Tries(logging.Handler):
    """Counts the embedder's tries (its "embedding again" line after each failure)."""

    def __init__(self, wanted: int) -> None:
        super().__init__(logging.DEBUG)
        self.count = 0
        self.wanted = wanted
        self.done = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("embedding again in"):
            self.count += 1
            if self.count >= self.wanted:
                self.done.set()


async def test_no_model_and_no_network_is_one_warning_with_the_fix_and_no_traceback(
    home: Path, fake_api: FakeAnthropic, monkeypatch: pytest.MonkeyPatch, caplog
):
    from gateway.app import build_app

    monkeypatch.undo()  # the real local model loader this time (the tests' guard refuses it)
    monkeypatch.setattr(local, "packaged_model", lambda: None)  # no package carries it here
    monkeypatch.setattr(semantic, "FIRST_PAUSE", 0.01)  # the worker tries again at once
    (home / "workspace" / "memory" / "2026-03-05.md").write_text(
        "## 09:00\n\nAnna moved to Lisbon last week.\n"
    )
    tries = Tries(wanted=4)
    logging.getLogger("agent.memory.semantic").addHandler(tries)
    caplog.set_level(logging.DEBUG)
    config = make_config(
        home,
        fake_api.base_url,
        memory={
            "embeddings": {"provider": "local", "model_url": f"http://127.0.0.1:{closed_port()}"},
            "consolidation": {"enabled": False},
        },
    )
    channel = RecordingChannel()
    app = build_app(config, [channel])
    await app.start()
    try:
        assert await asyncio.to_thread(tries.done.wait, 20)
        fake_api.enqueue(Reply(text="Lisbon, last week."))
        await asyncio.wait_for(channel.push("where did Anna move?", key=PRIVATE), 20)
        assert channel.texts() == ["Lisbon, last week."]
        progress = app.agent.memory.vectors.progress()  # type: ignore[union-attr]
    finally:
        await app.stop()
        logging.getLogger("agent.memory.semantic").removeHandler(tries)
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.levelname for r in loud] == ["WARNING"], [r.getMessage() for r in loud]
    said = loud[0].getMessage()
    assert "all-MiniLM-L6-v2 is not on this machine" in said
    for way in ("memory.embeddings.model_path", "pip install", "provider: none"):
        assert way in said
    assert "keyword search until it works" in said
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    assert progress.embedded == 0 and "not on this machine" in progress.error
