"""Chat commands, handled by the gateway before the agent (through the real client and fake API)."""

from __future__ import annotations

import asyncio
import json
import sqlite3

import pytest

from gateway.contract.events import Command, parse_command
from gateway.runtime import commands
from tests.conftest import PRIVATE
from tests.fakes.anthropic_api import Reply, echo_brain, last_user_text, request_kind


def test_parse_command():
    assert parse_command("/new") is not None
    cmd = parse_command("/Status@corvid_bot  now")
    assert cmd is not None and (cmd.name, cmd.args) == ("status", "now")
    assert parse_command("/") is None
    assert parse_command("/ 1") is None
    assert parse_command("a /new") is None
    assert parse_command("/1abc") is None
    assert parse_command("/etc/hosts is broken") is None
    assert parse_command("/new@other_bot") == Command("new", "", "other_bot")
    assert parse_command("/status\nsecond line") == Command("status", "second line")


async def test_help_and_unknown_command(start_gateway, fake_api):
    _gateway, chan = await start_gateway()
    await asyncio.wait_for(chan.push("/help"), 5)
    await asyncio.wait_for(chan.push("/frobnicate"), 5)
    assert "/new or /reset" in chan.texts()[0] and "/stop" in chan.texts()[0]
    assert chan.texts()[1] == "Unknown command /frobnicate. Send /help for the list."
    assert fake_api.message_requests == []


async def test_status_reports_model_session_context_and_turns(start_gateway, fake_api):
    gateway, chan = await start_gateway(llm={"context_window": 100000})
    await asyncio.wait_for(chan.push("/status"), 5)
    assert "No conversation yet" in chan.texts()[0]
    await asyncio.wait_for(chan.push("hello"), 5)
    await asyncio.wait_for(chan.push("/status"), 5)
    status = chan.texts()[-1]
    state = gateway.agent.sessions.peek(PRIVATE)
    assert state is not None and state.context_tokens > 0
    assert "Model: claude-sonnet-5-5" in status
    assert f"Session: {PRIVATE} (private)" in status
    assert f"Context: {state.context_tokens:,} / 100,000 tokens" in status
    assert "Turns: 1 " in status


async def test_new_archives_the_transcript_and_starts_fresh(start_gateway, fake_api, home):
    def brain(body):
        if request_kind(body) == "summary":
            return Reply("Talked about the password hint.")
        return echo_brain(body)

    fake_api.brain = brain
    _gateway, chan = await start_gateway()
    await asyncio.wait_for(chan.push("the password hint is 'blue'"), 5)
    await asyncio.wait_for(chan.push("/new"), 5)
    assert chan.texts()[-1] == (
        "Started a new session. The previous conversation is kept on disk. "
        "A summary of it is in today's log."
    )
    summary_request = fake_api.message_requests[-1].body
    assert "tools" not in summary_request
    assert "the password hint is 'blue'" in last_user_text(summary_request)
    [log] = (home / "workspace" / "memory").glob("*.md")
    assert "Talked about the password hint." in log.read_text()
    assert "session summary" in log.read_text()
    await asyncio.wait_for(chan.push("what was the hint?"), 5)
    last = fake_api.message_requests[-1].body
    assert "blue" not in json.dumps(last["messages"])
    sessions = home / "state" / "sessions"
    archived = [p for p in sessions.iterdir() if p.name != f"{PRIVATE}.jsonl"]
    assert len(archived) == 1 and "blue" in archived[0].read_text()
    await asyncio.wait_for(chan.push("/reset"), 5)
    assert len(list(sessions.iterdir())) == 2


async def test_new_waits_for_the_running_turn(start_gateway, fake_api):
    release = asyncio.Event()

    async def brain(body):
        await release.wait()
        return Reply("first answer")

    fake_api.brain = brain
    _gateway, chan = await start_gateway()
    first = chan.push("long question")
    await fake_api.wait_for_requests(1)
    reset = chan.push("/new")
    release.set()
    await asyncio.wait_for(asyncio.gather(first, reset), 5)
    assert chan.texts()[0] == "first answer"
    assert chan.texts()[1].startswith("Started a new session.")


async def test_stop_cancels_the_running_turn_and_the_session_goes_on(start_gateway, fake_api, home):
    never = asyncio.Event()

    async def brain(body):
        await never.wait()
        return Reply("too late")

    fake_api.brain = brain
    _gateway, chan = await start_gateway()
    turn = chan.push("write me an essay")
    await fake_api.wait_for_requests(1)
    await asyncio.wait_for(chan.push("/stop"), 5)
    await asyncio.wait_for(turn, 5)
    assert chan.texts() == ["Stopped."]
    await asyncio.wait_for(chan.push("/stop"), 5)
    assert chan.texts()[-1] == "Nothing is running."
    lines = (home / "state" / "sessions" / f"{PRIVATE}.jsonl").read_text().splitlines()
    ended, withdrawn = (json.loads(line) for line in lines[-2:])
    assert (ended["t"], ended["status"]) == ("turn", "cancelled")
    assert (withdrawn["t"], withdrawn["count"]) == ("withdrawn", 1)  # the stopped request
    fake_api.brain = lambda body: Reply("here again")
    await asyncio.wait_for(chan.push("hello?"), 5)
    assert chan.texts()[-1] == "here again"
    # The stopped request is not asked again with the next message.
    sent = json.dumps(fake_api.message_requests[-1].body["messages"])
    assert "write me an essay" not in sent and "hello?" in sent


async def test_over_long_message_is_refused_without_a_model_call(start_gateway, fake_api):
    _gateway, chan = await start_gateway(agent={"max_input_chars": 100})
    await asyncio.wait_for(chan.push("x" * 101), 5)
    assert chan.texts() == [
        "That message is too long for me (101 characters; the limit is 100). "
        "Send it in parts, or as a file."
    ]
    assert fake_api.message_requests == []


async def test_a_message_of_exactly_the_limit_is_answered(start_gateway, fake_api):
    _gateway, chan = await start_gateway(agent={"max_input_chars": 100})
    await asyncio.wait_for(chan.push("x" * 100), 5)
    assert chan.texts() == ["echo: " + "x" * 100]


async def test_commands_for_another_bot_are_ignored(start_gateway, fake_api):
    _gateway, chan = await start_gateway()
    chan.bot_username = "corvid_bot"
    await asyncio.wait_for(chan.push("/status@other_bot"), 5)
    assert chan.texts() == []
    await asyncio.wait_for(chan.push("/status@Corvid_Bot"), 5)
    assert chan.texts()[0].startswith("Model: ")


async def test_every_advertised_command_is_handled(start_gateway):
    from gateway.contract.commands import CHAT_COMMANDS

    app, _chan = await start_gateway()
    for name, description in CHAT_COMMANDS:
        assert app.gateway.commands.get(name) is not None, name
        assert f"/{name}" in commands.HELP
        assert 0 < len(description) <= 256


async def test_the_table_answers_exactly_the_listed_commands(start_gateway):
    from gateway.contract.commands import COMMAND_NAMES, OWNER_COMMANDS

    app, _chan = await start_gateway()
    assert set(app.gateway.commands.table) == COMMAND_NAMES
    assert {name for name, _ in OWNER_COMMANDS} == {"approve", "deny", "revoke", "undo"}
    assert commands.HELP.startswith("Commands:\n/new or /reset — start a fresh session")
    assert commands.HELP.endswith(
        "/help — this list\n/approve CODE, /deny CODE — answer a pairing "
        "request (the owner, in a private chat)\n/revoke PLATFORM USER_ID"
        " — take an approval back\n/undo — show the newest change to the workspace and take "
        "it back (the owner, in a private chat)\n\nAnything else you write goes to the "
        "assistant."
    )


async def test_a_message_whose_journal_commit_fails_is_not_answered_until_it_comes_again(
    start_gateway, fake_api
):
    """An unknown command is answered here, not by the agent. If the commit that marks it seen
    fails, nothing answers it (its redelivery will); once the journal works, it is answered."""
    import gc
    import warnings

    from tests.gateway.runtime.test_journal import deny_commit

    app, chan = await start_gateway()
    journal = app.gateway.delivery.journal
    deny_commit(journal.db)
    started = set(app.gateway._side_tasks)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(sqlite3.DatabaseError):
            chan.push("/frobnicate")
        gc.collect()
    assert set(app.gateway._side_tasks) <= started and not journal.db.in_transaction
    assert not [w for w in caught if "never awaited" in str(w.message)]
    journal.db.set_authorizer(None)
    await asyncio.wait_for(chan.push("/frobnicate"), 5)
    assert chan.texts() == ["Unknown command /frobnicate. Send /help for the list."]
