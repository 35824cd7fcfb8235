"""What a start does in which order, where the order is what makes the first reply quick: the
control page's server is not imported beside the model's SDK (the two imports would share one
interpreter lock, and a message waiting at start was answered later). The page's address is
held from the start and its server imported by the first browser (``gateway/web/listener.py``),
so the start neither imports it nor waits for the SDK on its account."""

from __future__ import annotations

import asyncio

from gateway.app import build_app
from tests.conftest import RecordingChannel, make_config
from tests.fakes.scripted_model import ScriptedModel
from tests.gateway.web.conftest import ControlClient


class SlowToLoad(ScriptedModel):
    """A model whose SDK loads when the test says so; counts who is waiting for it."""

    def __init__(self) -> None:
        super().__init__()
        self.loaded = asyncio.Event()
        self.waiting = 0
        self.changed = asyncio.Condition()

    async def warm_up(self) -> None:
        async with self.changed:
            self.waiting += 1
            self.changed.notify_all()
        await self.loaded.wait()


class FailsToLoad(ScriptedModel):
    async def warm_up(self) -> None:
        raise ImportError("no module named 'anthropic'")


async def test_the_start_neither_imports_the_page_nor_waits_for_the_sdk_on_its_account(home):
    model = SlowToLoad()  # never loaded, until the end
    config = make_config(home, "http://127.0.0.1:9", web={"enabled": True, "port": 0})
    app = build_app(config, [RecordingChannel()], llm=model)
    try:
        await asyncio.wait_for(app.start(), 30)
        assert app.web is not None and app.web.server is None
        async with asyncio.timeout(30), model.changed:
            await model.changed.wait_for(lambda: model.waiting >= 1)  # the gateway's warm-up
        assert model.waiting == 1  # nobody else waits for it
        client = ControlClient(app.web.url, app.web.token)
        try:
            status, text, _ = await client.get("/login")  # served while the SDK still loads
        finally:
            await client.close()
        assert status == 200 and "Sign in" in text
        assert app.web.server is not None
    finally:
        model.loaded.set()
        await app.stop()


async def test_an_sdk_that_does_not_load_leaves_the_control_page_to_start(home):
    config = make_config(home, "http://127.0.0.1:9", web={"enabled": True, "port": 0})
    app = build_app(config, [RecordingChannel()], llm=FailsToLoad())
    try:
        await asyncio.wait_for(app.start(), 30)
        assert app.web is not None
    finally:
        await app.stop()


async def test_the_history_is_made_before_the_embedding_thread_can_open_it(home, monkeypatch):
    """The embedding thread first brings the index up to date, dating each line of memory by
    the workspace's history. Were it started before the history was made, both threads could
    make it at once, and the start failed with "database is locked"."""
    import sqlite3
    from contextlib import AsyncExitStack

    from agent.memory.semantic import SemanticIndex
    from gateway.tool_setup import open_memory
    from tests.fakes.clock import FakeClock

    config = make_config(
        home,
        "http://127.0.0.1:9",
        memory={"embeddings": {"provider": "openai", "base_url": "http://127.0.0.1:9/v1"}},
    )
    history = config.layout.history
    seen: dict[str, object] = {}

    def start(self: SemanticIndex, prepare: object = None) -> None:  # the thread, not started
        seen["made"] = history.is_file()
        if seen["made"]:
            with sqlite3.connect(f"{history.as_uri()}?mode=ro", uri=True) as db:
                sql = "SELECT name FROM sqlite_master WHERE type = 'table'"
                seen["tables"] = {row[0] for row in db.execute(sql)} >= {"blobs", "changes"}
                seen["mode"] = db.execute("PRAGMA journal_mode").fetchone()[0]

    monkeypatch.setattr(SemanticIndex, "start", start)
    async with AsyncExitStack() as resources:
        open_memory(config, resources, FakeClock())
    assert seen == {"made": True, "tables": True, "mode": "wal"}
