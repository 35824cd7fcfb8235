"""The runtime's own logic on the model port, in process: a scripted model and a recording
channel, no HTTP fake, so a failure points at the gateway and not at a client library."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from gateway.app import build_app
from gateway.running import App
from tests.conftest import PRIVATE, RecordingChannel, make_config
from tests.fakes.scripted_model import ScriptedModel, text


@pytest.fixture
async def running(home) -> AsyncIterator[tuple[App, RecordingChannel, ScriptedModel]]:
    model, channel = ScriptedModel(), RecordingChannel()
    # The address is never called: the scripted model stands in for the API client.
    app = build_app(make_config(home, "http://127.0.0.1:9"), [channel], llm=model)
    await app.start()
    try:
        yield app, channel, model
    finally:
        await app.stop()


async def test_a_silent_answer_sends_nothing_and_the_next_is_answered(running):
    _app, channel, model = running
    model.enqueue(text("NO_REPLY"), text("Here you are."))
    await channel.push("just so you know")
    await channel.push("and now a question?")
    assert channel.texts(PRIVATE) == ["Here you are."]
    assert len(model.calls) == 2
    assert model.calls[1].messages[-1]["content"][-1]["text"].endswith("and now a question?")


async def test_a_chat_command_is_answered_without_the_model(running):
    _app, channel, model = running
    await channel.push("/status")
    (answer,) = channel.texts(PRIVATE)
    assert answer.startswith("Model: scripted") and model.calls == []
