"""Choosing what compaction keeps: recent messages within budget, tool pairs never split."""

from __future__ import annotations

from agent.sessions.compaction import FLUSH_PROMPT, choose_split, render, starts_exchange
from gateway.contract.events import NO_REPLY


def user(text):
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def tool_call(i):
    return {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": f"t{i}", "name": "x", "input": {}}],
    }


def tool_result(i, size=10):
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "r" * size}],
    }


def test_split_never_lands_between_a_tool_use_and_its_result():
    messages = [
        user("a" * 400),
        tool_call(1),
        tool_result(1),
        user("b" * 40),
        tool_call(2),
        tool_result(2, 200),
    ]
    for budget in range(1, 400, 7):
        split = choose_split(messages, budget)
        assert split == len(messages) or starts_exchange(messages[split])
        kept = messages[split:]
        ids_used = {b["id"] for m in kept for b in m["content"] if b["type"] == "tool_use"}
        ids_answered = {
            b["tool_use_id"] for m in kept for b in m["content"] if b["type"] == "tool_result"
        }
        assert ids_used == ids_answered


def test_split_keeps_what_fits_and_summarises_the_rest():
    messages = [user("old " * 500), user("recent question"), tool_call(1), tool_result(1)]
    assert choose_split(messages, 100) == 1
    assert choose_split(messages, 10_000) == 0  # everything fits: nothing to summarise
    assert choose_split(messages, 1) == len(messages)  # nothing fits: summarise it all


def test_render_for_the_summariser_keeps_the_newest_part():
    messages = [user("first " * 100), tool_call(1), tool_result(1), user("last words")]
    text = render(messages, 10_000)
    assert text.startswith("User: first") and "Assistant used x({})" in text
    assert "Tool result: rrrrrrrrrr" in text and text.endswith("User: last words")
    short = render(messages, 50)
    assert short.startswith("[the oldest part is left out]") and short.endswith("last words")


def test_render_leaves_out_the_silent_flush_exchange():
    messages = [
        user("real talk"),
        user(FLUSH_PROMPT),
        {"role": "assistant", "content": [{"type": "text", "text": NO_REPLY}]},
    ]
    assert render(messages, 10_000) == "User: real talk"


# -- Maintenance on a scripted model ------------------------------------------------------------


def _agent(tmp_path, model, tools=(), **compaction):
    from zoneinfo import ZoneInfo

    from agent.loop import Agent
    from agent.sessions.transcript import SessionStore
    from agent.settings import AgentSettings, CompactionSettings
    from agent.tools.registry import ToolRegistry
    from tests.fakes.clock import FakeClock

    return Agent(
        llm=model,
        tools=ToolRegistry(tools),
        store=SessionStore(tmp_path / "sessions"),
        settings=AgentSettings(),
        compaction=CompactionSettings(**compaction),
        workspace=tmp_path,
        tz=ZoneInfo("UTC"),
        clock=FakeClock(),
    )


async def test_the_flush_runs_once_per_cycle_at_the_soft_threshold(tmp_path):
    from agent.sessions.compaction import FLUSH_NOTE
    from agent.sessions.state import Usage
    from gateway.contract.events import InboundMessage, SessionKey
    from tests.fakes.scripted_model import ScriptedModel, text

    key = SessionKey("test", "private", "1")
    model = ScriptedModel(context_window=10_000)
    agent = _agent(tmp_path, model, reserve_tokens=2000, soft_threshold_tokens=1000)
    # soft = 10000 - 2000 - 1000 = 7000 tokens of context; hard = 8000. Two messages of
    # about 2,000 tokens each: compacting would replace the first with a shorter summary.
    model.enqueue(text("short", Usage(6000, 0, 0, 10)))
    await agent.run_turn(key, [InboundMessage(key, "hi " + "a" * 8000, "1")])
    await agent.maintenance.after_turn(key)
    assert len(model.calls) == 1  # below the soft threshold: nothing
    model.enqueue(text("longer", Usage(7100, 0, 0, 10)))
    await agent.run_turn(key, [InboundMessage(key, "more " + "b" * 8000, "1")])
    model.enqueue(text("NO_REPLY", Usage(7200, 0, 0, 5)))
    await agent.maintenance.after_turn(key)
    assert [c.system_note for c in model.calls[2:]] == [FLUSH_NOTE]
    model.enqueue(text("again", Usage(7300, 0, 0, 10)))
    await agent.run_turn(key, [InboundMessage(key, "still", "1")])
    await agent.maintenance.after_turn(key)
    assert len(model.calls) == 4  # flushed already in this cycle: no second flush


async def test_the_flush_sees_its_sessions_tools_but_may_only_write_memory(tmp_path):
    """Its request keeps the session's tool list (the prompt cache), but for a tool the API
    would run itself; any call beyond memory writes is refused in code."""
    from agent.sessions.state import Usage
    from agent.tools.files import FILE_TOOLS
    from agent.web.search import server_search_tool
    from gateway.contract.events import InboundMessage, SessionKey
    from tests.fakes.scripted_model import ScriptedModel, text, tool_use

    key = SessionKey("test", "private", "1")
    (tmp_path / "notes.md").write_text("the owner's notes")
    model = ScriptedModel(context_window=10_000)
    agent = _agent(tmp_path, model, FILE_TOOLS, reserve_tokens=2000, soft_threshold_tokens=1000)
    state = agent.sessions.get(key)
    agent.store.append_message(state, user("earlier " + "a" * 8000))  # worth compacting
    agent.store.append_message(state, {"role": "assistant", "content": "ok"})
    model.enqueue(text("long", Usage(7500, 0, 0, 10)))
    await agent.run_turn(key, [InboundMessage(key, "hi", "1")])
    model.enqueue(
        tool_use("read_file", {"path": "notes.md"}),
        tool_use("write_file", {"path": "x.md", "content": "y"}, "t2"),
        text("NO_REPLY", Usage(7600, 0, 0, 5)),
    )
    await agent.maintenance.after_turn(key)
    turn, *flush = model.calls
    assert [c.tools for c in flush] == [turn.tools] * 3
    results = [c.messages[-1]["content"][0] for c in flush[1:]]
    assert [(r["content"], r.get("is_error")) for r in results] == [
        ("read_file cannot be used in the memory flush.", True),
        ("write_file cannot be used in the memory flush.", True),
    ]
    assert not (tmp_path / "x.md").exists()

    searching = ScriptedModel(context_window=10_000)
    tools = (*FILE_TOOLS, server_search_tool(3))
    limits = {"reserve_tokens": 2000, "soft_threshold_tokens": 1000}
    other = _agent(tmp_path / "b", searching, tools, **limits)
    state = other.sessions.get(key)
    other.store.append_message(state, user("earlier " + "a" * 8000))
    other.store.append_message(state, {"role": "assistant", "content": "ok"})
    searching.enqueue(text("long", Usage(7500, 0, 0, 10)), text("NO_REPLY"))
    await other.run_turn(key, [InboundMessage(key, "hi", "1")])
    await other.maintenance.after_turn(key)
    turn, flush_call = searching.calls
    assert [t["name"] for t in turn.tools][-1] == "web_search"
    assert flush_call.tools == turn.tools[:-1]  # no search run by the API, unasked


async def test_compaction_keeps_exactly_the_recent_messages_it_reports(tmp_path):
    import json

    from agent.sessions.state import SUMMARY_PREFIX
    from gateway.contract.events import SessionKey
    from tests.fakes.scripted_model import ScriptedModel, text

    key = SessionKey("test", "private", "1")
    model = ScriptedModel(text("the gist"))
    agent = _agent(tmp_path, model, keep_recent_tokens=500)
    state = agent.sessions.get(key)
    for i in range(6):
        agent.store.append_message(state, user(f"question {i} " + "q" * 800))
        agent.store.append_message(
            state, {"role": "assistant", "content": [{"type": "text", "text": f"answer {i}"}]}
        )
    before = [json.dumps(m) for m in state.messages]
    split = choose_split(state.messages, 500)
    assert split == 8  # two exchanges of ~220 tokens fit in 500; a third would not
    done = await agent.maintenance.compact(state, agent.context(key), flush_first=False)
    assert done is not None and (done.summarised, done.kept) == (split, len(before) - split)
    assert state.messages[0]["content"][0]["text"] == SUMMARY_PREFIX + "the gist"
    assert [json.dumps(m) for m in state.messages[1:]] == before[split:]
    # The boundary message is the first kept one, a user message that starts an exchange.
    assert starts_exchange(state.messages[1]) and "question 4" in json.dumps(state.messages[1])
    reloaded = agent.store.load(key)
    assert reloaded is not None
    assert [json.dumps(m) for m in reloaded.messages[1:]] == before[split:]
