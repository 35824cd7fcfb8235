"""The app drives the model only through the port: warmed up at start, given new settings on
reload, closed at stop (a model of one's own, not only the Anthropic client)."""

from __future__ import annotations

import asyncio

from gateway.app import build_app
from gateway.config.loader import load_config, parse_config
from tests.conftest import RecordingChannel
from tests.fakes.scripted_model import ScriptedModel


class Lifecycle(ScriptedModel):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []
        self.warm = asyncio.Event()

    async def warm_up(self) -> None:
        self.seen.append("warm_up")
        self.warm.set()

    def apply(self, cfg) -> None:
        self.seen.append(f"apply {cfg.model}")

    async def close(self) -> None:
        self.seen.append("close")


async def test_the_app_calls_the_model_port_over_its_life(home):
    model = Lifecycle()
    app = build_app(load_config(home, {}), [RecordingChannel()], llm=model, with_scheduler=False)
    async with app:
        await asyncio.wait_for(model.warm.wait(), 5)
        new = parse_config({"llm": {"model": "claude-next"}}, home=home, environ={})
        app.appliers()["model"](new)
    assert model.seen == ["warm_up", "apply claude-next", "close"]
