"""End to end: gateway → agent → real anthropic client → fake Messages API on loopback."""

from __future__ import annotations

import asyncio
import base64
import json

from agent.model.in_flight import InFlight
from agent.sessions.transcript import SessionStore
from gateway.contract.events import Attachment, InboundMessage, SessionKey
from tests.conftest import GROUP, PRIVATE
from tests.fakes.anthropic_api import (
    CutStream,
    FakeAnthropic,
    Fault,
    Reply,
    StreamError,
    last_user_text,
    tool_results,
)


async def test_plain_reply_reaches_the_chat(start_gateway, fake_api: FakeAnthropic):
    fake_api.enqueue(Reply("Hello Ada."))
    _gateway, chan = await start_gateway()
    await asyncio.wait_for(chan.push("hi there"), 10)
    assert chan.texts() == ["Hello Ada."]
    assert chan.sent[0].reply_to == chan.pushed[0].message_id
    body = fake_api.message_requests[0].body
    assert body["model"] == "claude-sonnet-5-5"
    assert body["stream"] is True
    assert last_user_text(body).endswith("\nhi there")
    assert chan.typing_events == [("start", str(PRIVATE)), ("stop", str(PRIVATE))]


async def test_api_key_is_sent_and_never_in_the_transcript(start_gateway, fake_api, home):
    _gateway, chan = await start_gateway()
    await asyncio.wait_for(chan.push("hello"), 10)
    headers = {k.lower(): v for k, v in fake_api.message_requests[0].headers.items()}
    sent_key = headers.get("x-api-key") or headers.get("authorization", "")
    assert "sk-test-0123456789" in sent_key
    transcript = (home / "state" / "sessions" / f"{PRIVATE}.jsonl").read_text()
    assert "sk-test-0123456789" not in transcript


async def test_tool_call_round_trip_writes_a_file(start_gateway, fake_api, home):
    fake_api.enqueue(
        Reply(
            "Noting it.",
            tool_calls=[("write_file", {"path": "notes/todo.md", "content": "- milk\n"})],
        ),
        Reply("Written to notes/todo.md."),
    )
    _gateway, chan = await start_gateway()
    await asyncio.wait_for(chan.push("remember milk"), 10)
    assert (home / "workspace" / "notes" / "todo.md").read_text() == "- milk\n"
    second = fake_api.message_requests[1].body
    [result] = tool_results(second)
    assert "Created notes/todo.md" in result["content"]
    assert not result.get("is_error")
    # Text written before a tool call is a finished piece of the answer: a channel that
    # gets whole replies gets it before the final text.
    assert chan.texts() == ["Noting it.\n\nWritten to notes/todo.md."]


async def test_file_tool_outside_workspace_is_refused_to_the_model(start_gateway, fake_api, home):
    secret = home / "state" / "secret.txt"
    secret.write_text("do not read")
    fake_api.enqueue(
        Reply(
            tool_calls=[
                ("read_file", {"path": "../state/secret.txt"}),
                ("read_file", {"path": str(secret)}),
            ]
        ),
        Reply("I can't read that."),
    )
    _gateway, chan = await start_gateway()
    await asyncio.wait_for(chan.push("read the secret"), 10)
    results = tool_results(fake_api.message_requests[1].body)
    assert [r.get("is_error") for r in results] == [True, True]
    assert "'..'" in results[0]["content"]
    assert "absolute path" in results[1]["content"]
    assert all("do not read" not in r["content"] for r in results)
    assert chan.texts() == ["I can't read that."]


async def test_unknown_tool_and_bad_arguments_come_back_as_tool_errors(start_gateway, fake_api):
    fake_api.enqueue(
        Reply(tool_calls=[("launch_rockets", {}), ("read_file", {"limit": 3})]),
        Reply("Sorry."),
    )
    _gateway, chan = await start_gateway()
    await asyncio.wait_for(chan.push("go"), 10)
    results = tool_results(fake_api.message_requests[1].body)
    assert "Unknown tool 'launch_rockets'" in results[0]["content"]
    assert "Missing required argument(s): path" in results[1]["content"]
    assert all(r["is_error"] for r in results)
    assert chan.texts() == ["Sorry."]


async def test_429_is_retried_by_the_sdk_and_the_user_gets_the_answer(start_gateway, fake_api):
    fake_api.enqueue(Fault(429, "rate_limit_error"), Reply("after a retry"))
    _gateway, chan = await start_gateway()
    await asyncio.wait_for(chan.push("hi"), 10)
    assert len(fake_api.message_requests) == 2
    assert chan.texts() == ["after a retry"]


async def test_persistent_529_gives_a_friendly_message_and_the_session_recovers(
    start_gateway, fake_api
):
    fake_api.enqueue(*[Fault(529, "overloaded_error")] * 3, Reply("back again"))
    _gateway, chan = await start_gateway()
    await asyncio.wait_for(chan.push("first"), 10)
    assert len(fake_api.message_requests) == 3  # one try and the SDK's two retries
    assert chan.texts() == [
        "The AI service is overloaded at the moment. "
        "Your message is saved; please try again shortly."
    ]
    await asyncio.wait_for(chan.push("second"), 10)
    assert chan.texts()[-1] == "back again"
    # The unanswered first message is still part of the conversation.
    user_texts = [b["text"] for b in fake_api.message_requests[-1].body["messages"][0]["content"]]
    assert any(t.endswith("\nfirst") for t in user_texts)
    assert any(t.endswith("\nsecond") for t in user_texts)


async def test_500_and_midstream_failures_never_leak_raw_errors(start_gateway, fake_api):
    fake_api.enqueue(*[Fault(500, "api_error")] * 3, CutStream(), StreamError("overloaded_error"))
    _gateway, chan = await start_gateway()
    for text in ("a", "b", "c"):
        await asyncio.wait_for(chan.push(text), 10)
    replies = chan.texts()
    assert replies[0].startswith("The AI service had an internal error.")
    assert replies[1].startswith("I couldn't reach the AI service.")
    assert replies[2].startswith("The AI service is overloaded")
    for reply in replies:
        assert "Traceback" not in reply and "Error" not in reply
    await asyncio.wait_for(chan.push("d"), 10)
    assert chan.texts()[-1].startswith("echo:")


async def test_transcript_survives_a_restart(start_gateway, fake_api, home):
    gateway, chan = await start_gateway()
    await asyncio.wait_for(chan.push("my cat is called Miso"), 10)
    await gateway.stop()
    _gateway2, chan2 = await start_gateway()
    await asyncio.wait_for(chan2.push("what is my cat called?"), 10)
    body = fake_api.message_requests[-1].body
    flat = json.dumps(body["messages"])
    assert "my cat is called Miso" in flat
    assert "echo: my cat is called Miso" in flat
    assert body["system"][0]["text"] == fake_api.message_requests[0].body["system"][0]["text"]


async def test_rapid_messages_are_answered_in_order_in_one_follow_up_turn(start_gateway, fake_api):
    release = asyncio.Event()

    async def brain(body):
        if len(fake_api.message_requests) == 1:
            await release.wait()
        return Reply(
            "got: "
            + " | ".join(
                b["text"].split("\n", 1)[1]
                for b in body["messages"][-1]["content"]
                if b.get("type") == "text"
            )
        )

    fake_api.brain = brain
    _gateway, chan = await start_gateway()
    first = chan.push("m0")
    await fake_api.wait_for_requests(1)
    rest = [chan.push(f"m{i}") for i in range(1, 10)]
    release.set()
    await asyncio.wait_for(asyncio.gather(first, *rest), 10)
    assert len(fake_api.message_requests) == 2
    assert chan.texts() == ["got: m0", "got: " + " | ".join(f"m{i}" for i in range(1, 10))]


async def test_sessions_run_concurrently(start_gateway, fake_api):
    both_in_flight = asyncio.Event()
    in_flight: set[str] = set()

    async def brain(body):
        # Each request is held until requests from both sessions are at the fake at once:
        # sessions run one at a time would never get there (and a retry of the same request
        # does not count, it is the same text).
        in_flight.add(last_user_text(body))
        if len(in_flight) == 2:
            both_in_flight.set()
        await both_in_flight.wait()
        return Reply("ok " + last_user_text(body).split("\n", 1)[1])

    fake_api.brain = brain
    _gateway, chan = await start_gateway()
    await asyncio.wait_for(asyncio.gather(chan.push("one"), chan.push("two", key=GROUP)), 10)
    assert sorted(chan.texts()) == ["ok one", "ok two"]
    assert len(fake_api.message_requests) == 2  # no retries were needed


async def test_prompt_cache_prefix_is_stable_and_read_from_cache(start_gateway, fake_api, home):
    _gateway, chan = await start_gateway()
    for i in range(4):
        await asyncio.wait_for(chan.push(f"turn {i}"), 10)
    bodies = [r.body for r in fake_api.message_requests]
    raws = [r.raw for r in fake_api.message_requests]
    assert len({json.dumps(b["system"]) for b in bodies}) == 1
    assert len({json.dumps(b["tools"]) for b in bodies}) == 1
    for n, b in enumerate(bodies):
        assert b["tools"][-1]["cache_control"] == {"type": "ephemeral"}
        assert b["system"][-1]["cache_control"] == {"type": "ephemeral"}
        # The newest message, and from the second turn on the one the turn before marked.
        marked = [
            i for i, m in enumerate(b["messages"]) if "cache_control" in json.dumps(m["content"])
        ]
        assert marked == ([2 * n - 2] if n else []) + [2 * n]
        assert b["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert all('"cache_control"' in raw for raw in raws)
    state = SessionStore(home / "state" / "sessions").load(PRIVATE)
    assert state is not None and state.turns == 4
    assert state.last_usage is not None and state.last_usage.cache_read > 0
    # Stored messages never carry the request-time cache markers.
    assert "cache_control" not in json.dumps(list(state.messages))


async def test_iteration_cap_stops_a_looping_model(start_gateway, fake_api):
    fake_api.brain = lambda body: Reply(tool_calls=[("list_files", {})])
    _gateway, chan = await start_gateway(agent={"max_iterations": 3})
    await asyncio.wait_for(chan.push("loop forever"), 10)
    assert len(fake_api.message_requests) == 3
    assert chan.texts() == [
        "I stopped after 3 steps without finishing. Tell me to continue if you want me to go on."
    ]
    fake_api.brain = lambda body: Reply("fine")
    await asyncio.wait_for(chan.push("ok"), 10)
    assert chan.texts()[-1] == "fine"
    # The dangling tool_use of the last capped step got a result before the new message.
    msgs = fake_api.message_requests[-1].body["messages"]
    assert msgs[-2]["role"] == "assistant" and msgs[-1]["content"][0]["type"] == "tool_result"


async def test_no_reply_is_never_delivered(start_gateway, fake_api):
    fake_api.enqueue(
        Reply("NO_REPLY"), Reply("  NO_REPLY \n"), Reply("**NO_REPLY**"), Reply("visible")
    )
    _gateway, chan = await start_gateway()
    for text in ("a", "b", "c", "d"):
        await asyncio.wait_for(chan.push(text), 10)
    assert chan.texts() == ["visible"]


async def test_no_reply_written_before_a_tool_call_is_not_sent(start_gateway, fake_api):
    fake_api.enqueue(
        Reply("NO_REPLY", tool_calls=[("memory_search", {"query": "tea"})]), Reply("Found it.")
    )
    _gateway, chan = await start_gateway()
    await asyncio.wait_for(chan.push("what about tea?"), 10)
    assert chan.texts() == ["Found it."]


async def test_failed_send_is_recorded_not_raised(start_gateway, fake_api):
    gateway, chan = await start_gateway()
    chan.fail_sends = 1
    await asyncio.wait_for(chan.push("hello"), 10)
    assert chan.sent == []
    [failure] = gateway.undelivered()
    assert failure.out.key == PRIVATE and failure.error.startswith("RuntimeError")
    assert failure.status == "failed" and failure.out.text == "echo: hello"
    await asyncio.wait_for(chan.push("again"), 10)
    assert len(chan.sent) == 1


async def test_shared_sessions_name_the_sender_and_images_reach_the_model(start_gateway, fake_api):
    gateway, chan = await start_gateway()
    await asyncio.wait_for(chan.push("hello all", key=GROUP, sender="77", name="Grace"), 10)
    text = last_user_text(fake_api.message_requests[0].body)
    assert "· Grace (id 77)]\nhello all" in text
    picture = Attachment("image", "image/png", name="cat.png", data=b"\x89PNG fake bytes")
    msg = InboundMessage(
        PRIVATE, "what is this?", sender_id="1", message_id="9", attachments=(picture,)
    )
    await asyncio.wait_for(gateway.handle(msg), 10)
    content = fake_api.message_requests[1].body["messages"][-1]["content"]
    assert content[0]["type"] == "image"
    assert content[0]["source"] == {
        "type": "base64",
        "media_type": "image/png",
        "data": base64.b64encode(b"\x89PNG fake bytes").decode(),
    }
    assert content[1]["text"].endswith("\nwhat is this?")
    assert "Grace" not in json.dumps(content)


async def test_the_fake_api_also_answers_non_streaming_requests(fake_api):
    import anthropic

    client = anthropic.AsyncAnthropic(api_key="k", base_url=fake_api.base_url, max_retries=0)
    fake_api.enqueue(Reply("plain", tool_calls=[("list_files", {"path": "."})]))
    msg = await client.messages.create(
        model="claude-sonnet-5-5", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
    )
    await client.close()
    assert [b.type for b in msg.content] == ["text", "tool_use"]
    assert msg.content[1].input == {"path": "."} and msg.stop_reason == "tool_use"
    assert fake_api.message_requests[0].body.get("stream") is None


async def test_model_calls_wait_when_the_conversations_in_flight_fill_the_budget(
    start_gateway, fake_api
):
    release = asyncio.Event()
    in_flight = 0
    most = 0

    async def brain(body):
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        await release.wait()
        in_flight -= 1
        return Reply("ok " + last_user_text(body).split("\n", 1)[1])

    fake_api.brain = brain
    gateway, chan = await start_gateway()
    llm = gateway.agent.llm
    # Room for four short chats' calls at once (each counts the 1 KiB floor).
    budget = _WatchedInFlight(budget=4096)
    llm.in_flight = budget
    chats = [SessionKey("test", "private", str(10 + i)) for i in range(6)]
    pushed = [asyncio.ensure_future(chan.push(f"m{i}", key=key)) for i, key in enumerate(chats)]
    # Four calls reach the API; the other two chats' calls wait to be admitted, not at the API.
    await fake_api.wait_for_requests(4)
    await asyncio.wait_for(budget.two_waiting.wait(), 10)
    assert in_flight == 4 and budget.waiting == 2
    release.set()
    await asyncio.wait_for(asyncio.gather(*pushed), 10)
    assert sorted(chan.texts()) == [f"ok m{i}" for i in range(6)]
    assert most == 4 and budget.used == 0 and budget.waiting == 0


class _WatchedInFlight(InFlight):
    """The model client's admission, telling when two calls wait."""

    def __init__(self, budget: int) -> None:
        super().__init__(budget)
        self.waited = 0
        self.two_waiting = asyncio.Event()

    async def _acquire(self, weight: int) -> None:
        if self.waiting or self.used + weight > self.budget:
            self.waited += 1
            if self.waited == 2:
                self.two_waiting.set()
        await super()._acquire(weight)


async def test_a_step_of_many_tool_calls_still_reads_the_conversation_from_the_cache(
    start_gateway, fake_api
):
    """The API looks for a cached prefix only twenty blocks back from a breakpoint; a step of
    twelve tool calls adds 24 blocks, so the next request finds the conversation through the
    breakpoint the request before it placed."""
    fake_api.keep_served = True
    _gateway, chan = await start_gateway()
    await asyncio.wait_for(chan.push("hello"), 10)
    fake_api.enqueue(Reply(tool_calls=[("list_files", {})] * 12), Reply("Twelve looks."))
    await asyncio.wait_for(chan.push("look around a lot"), 10)
    first, before, after = (s.usage for s in fake_api.served[-3:])

    def whole(u: dict[str, int]) -> int:
        return u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"]

    assert before["cache_read_input_tokens"] == whole(first)
    assert after["cache_read_input_tokens"] == whole(before)
