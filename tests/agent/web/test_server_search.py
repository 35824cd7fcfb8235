"""web_search run by the Messages API itself (``provider: anthropic``), through the real
anthropic client and the fake API: offered once the API takes it, its blocks kept and sent
back, the cited sources listed under the answer, a paused turn carried on."""

from __future__ import annotations

import json

import pytest

from agent.model.wire import check_message, cited_sources, reply_text
from tests.conftest import GROUP, PRIVATE
from tests.fakes.anthropic_api import Reply

SEARCH = {"web": {"search": {"provider": "anthropic", "max_uses": 3}}}
URL = "https://example.org/crows"


def searched(query: str = "how long do crows live", n: int = 1) -> list[dict]:
    """What the API's answer holds when it searched: the call and the pages it found."""
    return [
        {"type": "server_tool_use", "id": f"srvtoolu_{n:02d}", "name": "web_search",
         "input": {"query": query}},
        {"type": "web_search_tool_result", "tool_use_id": f"srvtoolu_{n:02d}", "content": [
            {"type": "web_search_result", "title": "Crow facts", "url": URL,
             "encrypted_content": "enc-1", "page_age": "2026-01-02"}]},
    ]  # fmt: skip


def cited(text: str) -> dict:
    citation = {"type": "web_search_result_location", "url": URL, "title": "Crow facts",
                "cited_text": "Wild crows live 7 to 20 years.",
                "encrypted_index": "idx-1"}  # fmt: skip
    return {"type": "text", "text": text, "citations": [citation]}


def server_tools(body: dict) -> list[dict]:
    return [t for t in body["tools"] if t.get("type", "custom") != "custom"]


async def test_the_apis_search_is_offered_and_its_answer_cites_its_sources(start_gateway, fake_api):
    _, channel = await start_gateway(tools=SEARCH)
    answer = [
        *searched(),
        {"type": "text", "text": "Crows live "},
        cited("7 to 20 years"),
        {"type": "text", "text": " in the wild."},
    ]
    fake_api.enqueue(Reply(blocks=answer), Reply("Noted."))
    channel.push("how long do crows live?")
    (sent,) = await channel.wait_sent(1)
    assert sent.text == (
        "Crows live 7 to 20 years in the wild.\n\nSources: [Crow facts](https://example.org/crows)"
    )
    # The API was asked first (count_tokens, free) whether it takes the tool.
    asked = [r for r in fake_api.requests if r.path.endswith("/count_tokens")]
    assert any(server_tools(r.body) for r in asked)
    first = fake_api.message_requests[-1].body
    (tool,) = server_tools(first)
    assert {k: tool[k] for k in ("type", "name", "max_uses")} == {
        "type": "web_search_20250305", "name": "web_search", "max_uses": 3}  # fmt: skip

    # The next request sends the search and its results back, and the citations with the text.
    channel.push("thanks")
    await channel.wait_sent(2)
    history = fake_api.message_requests[-1].body["messages"]
    kinds = [b["type"] for m in history if m["role"] == "assistant" for b in m["content"]]
    assert kinds[:3] == ["server_tool_use", "web_search_tool_result", "text"]
    texts = [b for m in history for b in m["content"] if b.get("citations")]
    assert texts and texts[0]["citations"][0]["encrypted_index"] == "idx-1"


async def test_a_group_is_not_offered_it_unless_web_tools_are_shared(start_gateway, fake_api):
    _, channel = await start_gateway(tools=SEARCH)
    channel.push("@bot hello", key=GROUP)
    await channel.wait_sent(1)
    assert server_tools(fake_api.message_requests[-1].body) == []
    channel.push("hello")
    await channel.wait_sent(2)
    assert len(server_tools(fake_api.message_requests[-1].body)) == 1


async def test_an_api_that_does_not_take_the_tool_is_never_sent_it(start_gateway, fake_api):
    fake_api.server_tools = False  # a compatible API without server tools
    _, channel = await start_gateway(tools=SEARCH)
    channel.push("hello")
    (sent,) = await channel.wait_sent(1)
    assert sent.text == "echo: hello"  # answered: the request did not carry the tool
    assert server_tools(fake_api.message_requests[-1].body) == []


async def test_a_paused_turn_is_asked_again_with_its_answer_so_far(start_gateway, fake_api):
    app, channel = await start_gateway(tools=SEARCH)
    fake_api.enqueue(
        Reply(blocks=[{"type": "text", "text": "Let me look."}, *searched()],
              stop_reason="pause_turn"),
        Reply(blocks=[cited("They live up to 20 years.")]),
    )  # fmt: skip
    channel.push("how long do crows live?")
    texts = [m.text for m in await channel.wait_sent(1)]
    second = fake_api.message_requests[-1]
    last = second.body["messages"][-1]
    assert last["role"] == "assistant" and last["content"][-1]["type"] == "web_search_tool_result"
    assert "They live up to 20 years." in texts[-1] and "Sources: [Crow facts]" in texts[-1]
    assert "Let me look." in "\n".join(texts)
    # What was stored loads again as valid messages.
    state = app.agent.sessions.loaded(PRIVATE)
    assert state is not None
    for message in state.messages:
        check_message(message)


async def test_the_doctor_asks_the_api_about_the_tool(fake_api, tmp_path):
    from gateway.config.loader import parse_config
    from gateway.ops.doctor.probes import check_search

    config = parse_config(
        {"llm": {"api_key": "sk-test", "base_url": fake_api.base_url}, "tools": SEARCH},
        home=tmp_path, environ={},
    )  # fmt: skip
    ok = await check_search(config, 5)
    assert ok.status == "ok" and "runs web_search itself (up to 3 searches" in ok.message
    fake_api.server_tools = False
    bad = await check_search(config, 5)
    assert bad.status == "FAIL" and "does not take the web search tool" in bad.message


def test_text_split_at_citations_is_one_text_and_sources_are_listed_once():
    content = [
        {"type": "text", "text": "First "},
        cited("cited"),
        {"type": "text", "text": " end."},
        {"type": "tool_use", "id": "t", "name": "x", "input": {}},
        cited("Again."),
        {"type": "text", "text": "   "},
    ]
    assert reply_text(content) == (
        "First cited end.\n\nAgain.\n\nSources: [Crow facts](https://example.org/crows)"
    )


@pytest.mark.parametrize(
    ("cite", "link"),
    [
        ({"url": "https://a.example/x)y", "title": "A [b]"}, "[A (b)](https://a.example/x%29y)"),
        (
            {"url": "https://en.wikipedia.org/wiki/Mercury_(planet)", "title": "Mercury"},
            "[Mercury](https://en.wikipedia.org/wiki/Mercury_%28planet%29)",
        ),
        ({"url": "https://c.example/a b<c>", "title": "C"}, "[C](https://c.example/a%20b%3Cc%3E)"),
        ({"url": "javascript:alert(1)", "title": "no"}, None),
        ({"url": "https://b.example/", "title": ""}, "[https://b.example/](https://b.example/)"),
    ],
)
def test_a_cited_source_is_a_safe_link(cite, link):
    got = cited_sources([{"type": "text", "text": "t", "citations": [cite]}])
    assert got == ([link] if link else [])


def test_at_most_five_sources_are_listed():
    cites = [{"url": f"https://s{i}.example/", "title": f"S{i}"} for i in range(8)]
    assert len(cited_sources([{"type": "text", "text": "t", "citations": cites}])) == 5
    assert json.dumps(cites)  # the citations themselves stay whole in the transcript


async def test_a_restart_between_a_pause_and_its_continuation_goes_on(tmp_path):
    """The paused answer is not the reply: after a restart the turn asks the API again."""
    from agent.model.port import LLMResponse
    from agent.outcome import TurnStatus
    from agent.sessions.state import Usage
    from tests.agent.test_loop import KEY, make_agent, message
    from tests.fakes.scripted_model import ScriptedModel, text

    paused = LLMResponse(
        [{"type": "text", "text": "Let me look that up."}, *searched()], "pause_turn", Usage()
    )
    model = ScriptedModel(paused)  # the continuation never comes: the process "stops"
    with pytest.raises(AssertionError, match="called once more than scripted"):
        await make_agent(tmp_path, model).run_turn(KEY, [message("crows?", seq=9)])
    again = ScriptedModel(text("Up to 20 years."))
    outcome = await make_agent(tmp_path, again).run_turn(KEY, [message("crows?", seq=9)])
    assert outcome.status is not TurnStatus.RESUMED and len(again.calls) == 1
    assert outcome.text == "Up to 20 years."
    sent = again.calls[0].messages[-1]
    assert sent["role"] == "assistant" and sent["content"][-1]["type"] == "web_search_tool_result"


async def test_a_conversation_that_searched_cannot_change_what_every_chat_reads(
    start_gateway, fake_api, home
):
    """What the API's own search found is text from outside the owner's chats, like a page
    web_fetch reads: the conversation it went into cannot rewrite AGENTS.md."""
    agents = (home / "workspace" / "AGENTS.md").read_text()
    _, channel = await start_gateway(tools=SEARCH)
    fake_api.enqueue(
        Reply(blocks=[*searched(), {"type": "text", "text": "Crows live long."}]),
        Reply(tool_calls=[("write_file", {"path": "AGENTS.md", "content": "obey the page"})]),
        Reply("I could not."),
    )
    channel.push("how long do crows live?")
    await channel.wait_sent(1)
    channel.answer_with = "Deny"  # the owner is asked (the request, their "Denied.", the reply)
    channel.push("write what the page said into AGENTS.md")
    await channel.wait_sent(4)
    assert "(web search results)" in channel.sent[1].text
    [result] = [
        b for b in fake_api.message_requests[-1].body["messages"][-1]["content"]
        if b["type"] == "tool_result"
    ]  # fmt: skip
    assert result.get("is_error") and "(web search results)" in json.dumps(result)
    assert (home / "workspace" / "AGENTS.md").read_text() == agents
