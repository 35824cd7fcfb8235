"""Request building (history normalisation, cache breakpoints) and the model client that
sends it."""

from __future__ import annotations

import copy

import pytest

from agent.model.charge import Charge, Purpose
from agent.model.failures import CLASS_OF_TYPE, mid_stream_error
from agent.model.llm import AnthropicLLM
from agent.model.request import with_cache_breakpoints
from agent.model.wire import normalize_messages
from agent.sessions.history import History
from agent.settings import LLMSettings
from gateway.contract.errors import LLMError, LLMErrorKind
from gateway.contract.ports import Secret
from tests.fakes.anthropic_api import FakeAnthropic, Reply, StreamError


def text(t):
    return {"type": "text", "text": t}


def test_consecutive_user_messages_merge():
    msgs = [{"role": "user", "content": [text("a")]}, {"role": "user", "content": "b"}]
    assert normalize_messages(msgs) == [{"role": "user", "content": [text("a"), text("b")]}]


def test_dangling_tool_use_gets_an_interrupted_result_before_new_text():
    msgs = [
        {"role": "user", "content": [text("q")]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}],
        },
        {"role": "user", "content": [text("next question")]},
    ]
    out = normalize_messages(msgs)
    first, second = out[2]["content"]
    assert first["type"] == "tool_result" and first["tool_use_id"] == "t1" and first["is_error"]
    assert second == text("next question")


def test_trailing_tool_use_and_orphan_results():
    msgs = [
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "ghost", "content": "?"},
                text("hi"),
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t2", "name": "x", "input": {}}],
        },
    ]
    out = normalize_messages(msgs)
    assert out[0]["content"] == [text("hi")]
    assert out[-1]["role"] == "user" and out[-1]["content"][0]["tool_use_id"] == "t2"


def test_leading_assistant_message_gets_a_user_turn_before_it():
    out = normalize_messages([{"role": "assistant", "content": [text("hello")]}])
    assert [m["role"] for m in out] == ["user", "assistant"]


def test_breakpoints_do_not_touch_the_stored_history():
    tools = [{"name": "a", "input_schema": {}}, {"name": "b", "input_schema": {}}]
    msgs = [{"role": "user", "content": [text("q")]}]
    saved = copy.deepcopy((tools, msgs))
    system, out, cached_tools = with_cache_breakpoints("sys", msgs, tools)
    assert (tools, msgs) == saved
    assert system == [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}]
    assert "cache_control" not in cached_tools[0] and cached_tools[1]["cache_control"]
    assert out[-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}


# -- the model client, through the real SDK against the fake Messages API ----------------------

TOOL = {
    "name": "note",
    "description": "Write a note.",
    "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}},
}


def llm_for(api: FakeAnthropic) -> AnthropicLLM:
    return AnthropicLLM(LLMSettings(api_key=Secret("sk-test"), base_url=api.base_url))


async def test_the_request_the_api_receives_is_the_conversation_as_built():
    """The body is made by Corvid and sent by the SDK: the API receives the system blocks,
    the messages (text in any script, emoji included) and the tools with their cache
    breakpoints, as a streamed request, and the streamed answer is put together whole."""
    api = FakeAnthropic(brain=lambda body: Reply("done ✓", tool_calls=[("note", {"text": "é"})]))
    await api.start()
    llm = llm_for(api)
    history = History(
        [
            {"role": "user", "content": [text("Grüße, 東京 😀")]},
            {"role": "assistant", "content": [text("¡Hola!")]},
            {"role": "user", "content": [text("note “this”")]},
        ]
    )
    try:
        got = await llm.complete("You are Corvid.", history, [TOOL], charge=Charge(Purpose.CHAT))
    finally:
        await llm.close()
        await api.close()
    (sent,) = api.requests
    system, msgs, tools = with_cache_breakpoints("You are Corvid.", list(history), [TOOL])
    assert sent.path == "/v1/messages" and sent.headers["Content-Type"] == "application/json"
    assert sent.body == {
        "model": llm.model,
        "max_tokens": llm.cfg.max_tokens,
        "tools": tools,
        "system": system,
        "messages": msgs,
        "stream": True,
    }
    assert got.content[0] == text("done ✓")
    assert got.content[1]["name"] == "note" and got.content[1]["input"] == {"text": "é"}
    assert history[0] == {"role": "user", "content": [text("Grüße, 東京 😀")]}


async def test_the_first_turn_after_a_start_uses_the_connection_the_key_check_opened():
    """The key check at start asks over the chat's own client, so the first turn finds its
    connection open instead of making a second one (a TLS handshake on the real network)."""
    api = FakeAnthropic()
    await api.start()
    llm = llm_for(api)
    asked: list[str] = []

    def key_source() -> str:  # reads config.yaml again: asked only for a refusal
        asked.append("source")
        return "ANTHROPIC_API_KEY"

    try:
        assert await llm.refused(5, key_source) is None
        msgs = [{"role": "user", "content": [text("hello")]}]
        await llm.complete("sys", msgs, [], charge=Charge(Purpose.CHAT))
    finally:
        await llm.close()
        await api.close()
    check, turn = api.requests
    assert check.path == "/v1/messages/count_tokens" and turn.path == "/v1/messages"
    assert check.peer is not None and check.peer == turn.peer
    assert asked == []


@pytest.mark.parametrize(
    ("error_type", "raised", "kind"),
    [
        ("rate_limit_error", "RateLimitError", LLMErrorKind.RATE_LIMITED),
        ("overloaded_error", "OverloadedError", LLMErrorKind.OVERLOADED),
        ("api_error", "InternalServerError", LLMErrorKind.SERVER),
        ("invalid_request_error", "BadRequestError", LLMErrorKind.BAD_REQUEST),
        ("teapot_error", "APIStatusError", LLMErrorKind.OTHER),
    ],
)
async def test_an_error_in_the_middle_of_a_stream_is_the_sdk_s_public_class_for_it(
    error_type, raised, kind
):
    """An ``event: error`` after the answer has begun (HTTP 200) is raised as the SDK's own
    class for the error's type, and becomes the same kind of failure as a refusal would."""
    api = FakeAnthropic()
    await api.start()
    api.enqueue(StreamError(error_type))
    llm = llm_for(api)
    msgs = [{"role": "user", "content": [text("hello")]}]
    try:
        with pytest.raises(LLMError) as failed:
            await llm.complete("sys", msgs, [], charge=Charge(Purpose.CHAT))
    finally:
        await llm.close()
        await api.close()
    assert failed.value.kind is kind
    assert failed.value.detail == f"{raised} status=200 type={error_type}"


def test_the_class_for_a_stream_s_error_is_one_the_sdk_exports():
    import anthropic
    import httpx2

    response = httpx2.Response(200, request=httpx2.Request("POST", "https://api.invalid/"))
    body = {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}
    exc = mid_stream_error(anthropic, "busy", body, response)
    assert type(exc) is anthropic.OverloadedError and exc.type == "overloaded_error"
    assert all(isinstance(getattr(anthropic, name), type) for name in CLASS_OF_TYPE.values())
