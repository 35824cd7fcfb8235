"""What a start does in which order, where the order is what makes the first reply quick: the
control page's server is imported only once the model's SDK has loaded (beside it, the two
imports shared one interpreter lock and a message waiting at start was answered later)."""

from __future__ import annotations

import asyncio

from gateway.app import build_app
from tests.conftest import RecordingChannel, make_config
from tests.fakes.scripted_model import ScriptedModel


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


async def test_the_control_page_starts_once_the_model_s_sdk_has_loaded(home):
    model = SlowToLoad()
    config = make_config(home, "http://127.0.0.1:9", web={"enabled": True, "port": 0})
    app = build_app(config, [RecordingChannel()], llm=model)
    starting = asyncio.create_task(app.start())
    try:
        async with asyncio.timeout(30), model.changed:
            # the gateway's own warm-up once the channels are up, then the page's wait
            await model.changed.wait_for(lambda: model.waiting == 2)
        assert app.web is None and not starting.done()
        model.loaded.set()
        await asyncio.wait_for(starting, 30)
        assert app.web is not None
    finally:
        model.loaded.set()
        if not starting.done():
            starting.cancel()
        await asyncio.gather(starting, return_exceptions=True)
        await app.stop()


async def test_an_sdk_that_does_not_load_leaves_the_control_page_to_start(home):
    config = make_config(home, "http://127.0.0.1:9", web={"enabled": True, "port": 0})
    app = build_app(config, [RecordingChannel()], llm=FailsToLoad())
    try:
        await asyncio.wait_for(app.start(), 30)
        assert app.web is not None
    finally:
        await app.stop()
