"""Failover through the real anthropic client against fake APIs: on 529, on a timeout and on
another endpoint with its own key; never on a request the API refused (400); sticky for a
while, then the first model again."""

from __future__ import annotations

from typing import Any

import pytest

from agent.model.charge import Charge, Purpose
from agent.model.llm import AnthropicLLM
from agent.settings import FallbackSettings, LLMSettings
from gateway.contract.errors import LLMError, LLMErrorKind
from gateway.contract.events import SessionKey
from gateway.contract.ports import Secret
from tests.fakes.anthropic_api import FakeAnthropic, Fault, Reply

CHAT = Charge(Purpose.CHAT, SessionKey("test", "private", "1"))
ASK = [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]


def models(api: FakeAnthropic) -> list[str]:
    return [r.body["model"] for r in api.message_requests]


def llm(base_url: str, *fallbacks: FallbackSettings, timeout: float = 10) -> AnthropicLLM:
    return AnthropicLLM(
        LLMSettings(
            api_key=Secret("sk-primary"),
            base_url=base_url,
            model="claude-sonnet-5-5",
            retries=0,
            timeout=timeout,
            fallbacks=list(fallbacks),
            fallback_minutes=10,
        )
    )


async def test_an_overloaded_model_fails_over_and_stays_there_for_a_while(fake_api):
    fake_api.enqueue(Fault(529, "overloaded_error"))
    model = llm(fake_api.base_url, FallbackSettings(model="claude-opus-5-5"))
    async with model:
        first = await model.complete("s", ASK, [], charge=CHAT)
        second = await model.complete("s", ASK, [], charge=CHAT)
        assert (first.model, second.model) == ("claude-opus-5-5", "claude-opus-5-5")
        # Straight to the fallback the second time: no call to the overloaded model.
        assert models(fake_api) == ["claude-sonnet-5-5", "claude-opus-5-5", "claude-opus-5-5"]
        note = model.failover.note()
        assert note is not None and "claude-opus-5-5" in note and "overloaded" in note
        model.failover._until = model.failover.monotonic()  # the while is over
        third = await model.complete("s", ASK, [], charge=CHAT)
        assert third.model == "claude-sonnet-5-5" and model.failover.note() is None


async def test_a_timeout_fails_over_to_another_endpoint_with_its_own_key(fake_api):
    other = FakeAnthropic(api_key="sk-other")
    await other.start()

    def slow(body: dict[str, Any]) -> Reply:
        return Reply("too late", delay=10)

    fake_api.brain = slow
    fallback = FallbackSettings(
        model="llama3.1:8b", base_url=other.base_url, api_key=Secret("sk-other")
    )
    try:
        async with llm(fake_api.base_url, fallback, timeout=3) as model:
            answer = await model.complete("s", ASK, [], charge=CHAT)
    finally:
        await other.close()
    assert answer.model == "llama3.1:8b"
    assert models(other) == ["llama3.1:8b"]
    assert "sk-other" in str(other.message_requests[0].headers)


async def test_a_refused_request_does_not_fail_over(fake_api):
    fake_api.enqueue(Fault(400, "invalid_request_error", "messages: bad"))
    async with llm(fake_api.base_url, FallbackSettings(model="claude-opus-5-5")) as model:
        with pytest.raises(LLMError) as refused:
            await model.complete("s", ASK, [], charge=CHAT)
    assert refused.value.kind == LLMErrorKind.BAD_REQUEST
    assert models(fake_api) == ["claude-sonnet-5-5"]


async def test_when_every_model_fails_the_last_error_is_raised(fake_api):
    fake_api.enqueue(Fault(529, "overloaded_error"), Fault(500, "api_error"))
    async with llm(fake_api.base_url, FallbackSettings(model="claude-opus-5-5")) as model:
        with pytest.raises(LLMError) as failed:
            await model.complete("s", ASK, [], charge=CHAT)
    assert failed.value.kind == LLMErrorKind.SERVER
    assert models(fake_api) == ["claude-sonnet-5-5", "claude-opus-5-5"]


async def test_each_silent_purpose_runs_on_the_background_model(fake_api):
    settings = LLMSettings(
        api_key=Secret("k"),
        base_url=fake_api.base_url,
        models={"chat": "claude-sonnet-5-5", "background": "claude-haiku-5-5"},
    )
    async with AnthropicLLM(settings) as model:
        for purpose in Purpose:
            if purpose in (Purpose.TRANSCRIPTION, Purpose.EMBEDDING, Purpose.WEB_SEARCH):
                continue
            answer = await model.complete("s", ASK, [], charge=Charge(purpose))
            wanted = "claude-haiku-5-5" if purpose.background else "claude-sonnet-5-5"
            assert answer.model == wanted, purpose
    assert models(fake_api).count("claude-haiku-5-5") == 6  # flush ... consolidation


async def test_only_calls_whose_cache_is_read_again_write_it(fake_api):
    settings = LLMSettings(api_key=Secret("k"), base_url=fake_api.base_url)
    tool = {"name": "memory_append", "description": "d", "input_schema": {"type": "object"}}
    async with AnthropicLLM(settings) as model:
        await model.complete("s", ASK, [], charge=Charge(Purpose.CHAT))
        await model.complete("s", ASK, [], charge=Charge(Purpose.COMPACTION))
        await model.complete("s", ASK, [tool], charge=Charge(Purpose.FLUSH))
        await model.complete("s", ASK, [], charge=Charge(Purpose.DIGEST))
        await model.complete("s", ASK, [tool], charge=Charge(Purpose.CONSOLIDATION))
    marked = ["cache_control" in r.raw for r in fake_api.message_requests]
    # The chat's next message reads its cache, and so may the flush's next call (it has tools);
    # a summary or a digest without tools is one call whose prompt is not sent again, and a
    # consolidation run nearly always is, though it is offered its search.
    assert marked == [True, False, True, False, False]
