"""The workspace's history through the real chat path: what the model writes is recorded with
its session and tool, ``corvid memory history`` shows it, ``undo`` and ``restore`` go back."""

from __future__ import annotations

import asyncio

from gateway.ops.cli import main
from tests.conftest import GROUP, PRIVATE
from tests.fakes.anthropic_api import Reply, last_user_text, tool_results


def scripted(calls: dict[str, list[tuple[str, dict]]]):
    def brain(body):
        if tool_results(body):
            return Reply("done")
        return Reply(tool_calls=calls[last_user_text(body).splitlines()[-1].strip()])

    return brain


async def test_model_writes_are_recorded_and_undone_from_the_terminal(
    start_gateway, fake_api, home, capsys
):
    memory = home / "workspace" / "MEMORY.md"
    memory.write_text("# Memory\n\n- likes tea\n")
    fake_api.brain = scripted(
        {
            "remember coffee": [
                ("memory_update", {"action": "replace", "old_text": "tea", "text": "coffee"})
            ],
            "group note": [("memory_append", {"text": "group's plan"})],
        }
    )
    _app, chan = await start_gateway()
    await asyncio.wait_for(chan.push("remember coffee", key=PRIVATE), 10)
    await asyncio.wait_for(chan.push("group note", key=GROUP), 10)
    assert "coffee" in memory.read_text()

    capsys.readouterr()
    home_arg = ["--home", str(home)]
    assert (
        await asyncio.to_thread(main, ["memory", "history", "--diff", *home_arg], environ={}) == 0
    )
    out = capsys.readouterr().out
    assert f"MEMORY.md  {PRIVATE} (memory_update)" in out
    assert "-- likes tea" in out and "+- likes coffee" in out
    assert f".md  {GROUP} (memory_append)" in out

    # The newest change is the group's log entry; then the owner's memory.
    assert await asyncio.to_thread(main, ["memory", "undo", *home_arg], environ={}) == 0
    assert await asyncio.to_thread(main, ["memory", "undo", *home_arg], environ={}) == 0
    assert memory.read_text() == "# Memory\n\n- likes tea\n"
    assert (
        await asyncio.to_thread(
            main, ["memory", "restore", "MEMORY.md", "1", *home_arg], environ={}
        )
        == 0
    )
    assert "coffee" in memory.read_text()
    capsys.readouterr()
    assert (
        await asyncio.to_thread(
            main, ["memory", "restore", "MEMORY.md", "77", *home_arg], environ={}
        )
        == 1
    )
    assert "no change #77 of MEMORY.md" in capsys.readouterr().out

    # The gateway finds what the terminal changed as the files are, and records on top.
    fake_api.brain = scripted(
        {"again": [("memory_update", {"action": "append", "text": "- reads novels"})]}
    )
    await asyncio.wait_for(chan.push("again", key=PRIVATE), 10)
    assert memory.read_text().endswith("- reads novels\n") and "coffee" in memory.read_text()


async def test_the_owner_undoes_the_newest_change_from_the_chat_with_a_button(
    start_gateway, fake_api, home
):
    memory = home / "workspace" / "MEMORY.md"
    memory.write_text("# Memory\n\n- likes tea\n")
    fake_api.brain = scripted(
        {
            "remember coffee": [
                ("memory_update", {"action": "replace", "old_text": "tea", "text": "coffee"})
            ],
            "remember milk": [("memory_update", {"action": "append", "text": "- with milk"})],
        }
    )
    _app, chan = await start_gateway()
    await asyncio.wait_for(chan.push("remember coffee", key=PRIVATE), 10)
    assert "coffee" in memory.read_text()

    # A group cannot; the owner sees the change first, with a button.
    await asyncio.wait_for(chan.push("/undo", key=GROUP), 10)
    assert chan.texts(GROUP)[-1] == "Only my owner can undo a change, in a private chat with me."
    await asyncio.wait_for(chan.push("/undo", key=PRIVATE), 10)
    shown = chan.sent[-1]
    assert f"MEMORY.md  {PRIVATE} (memory_update)" in shown.text
    assert "-- likes tea" in shown.text and "+- likes coffee" in shown.text
    assert "coffee" in memory.read_text()  # nothing changes before the button
    buttons = dict(shown.buttons)
    assert buttons["Keep it"] == "/undo keep"
    await asyncio.wait_for(chan.push(buttons["Undo it"], key=PRIVATE), 10)
    assert chan.texts(PRIVATE)[-1].startswith("Undid #")
    assert memory.read_text() == "# Memory\n\n- likes tea\n"
    await asyncio.wait_for(chan.push(buttons["Undo it"], key=PRIVATE), 10)
    assert chan.texts(PRIVATE)[-1] == "There is nothing to undo."  # an undo is not undone

    # A button pressed after a newer change takes nothing back.
    await asyncio.wait_for(chan.push("remember coffee", key=PRIVATE), 10)
    await asyncio.wait_for(chan.push("/undo", key=PRIVATE), 10)
    stale = dict(chan.sent[-1].buttons)["Undo it"]
    await asyncio.wait_for(chan.push("remember milk", key=PRIVATE), 10)
    calls = len(fake_api.message_requests)
    await asyncio.wait_for(chan.push(stale, key=PRIVATE), 10)
    assert "is no longer the newest change" in chan.texts(PRIVATE)[-1]
    assert memory.read_text().endswith("- likes coffee\n\n- with milk\n")
    await asyncio.wait_for(chan.push("/undo keep", key=PRIVATE), 10)
    assert chan.texts(PRIVATE)[-1] == "Nothing was undone."
    assert len(fake_api.message_requests) == calls  # commands: no model call
