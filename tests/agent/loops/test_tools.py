"""The loop tools on their own: whose loops a chat keeps, the log line a loop points at, what a
turn that read text from outside writes, and what a shared chat may not do."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from agent.loops.book import Loop
from agent.loops.store import Loops
from agent.loops.tools import loop_tools
from agent.memory.index import MemoryIndex
from agent.memory.store import Memory
from agent.settings import MemorySettings
from agent.tools.context import TurnContext
from agent.tools.exposure import Exposure
from agent.tools.registry import ToolRegistry
from agent.workspace.audience import in_prompts, quotes_outside
from gateway.contract.events import SessionKey

BERLIN = ZoneInfo("Europe/Berlin")
NOW = datetime(2026, 3, 12, 18, 0, tzinfo=BERLIN)
OWNER_KEY = SessionKey("telegram", "private", "42")
GROUP_KEY = SessionKey("telegram", "group", "-100")


class Follow:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, int | None]] = []

    def opened(self, ctx: TurnContext, loop: Loop) -> str:
        self.events.append(("opened", str(ctx.audience), loop.id))
        return "A nudge is planned."

    def closed(self, audience, loop: Loop) -> None:
        self.events.append(("closed", str(audience), loop.id))


@pytest.fixture
def kit(tmp_path: Path):
    workspace = tmp_path.resolve()
    index = MemoryIndex(tmp_path / "index.sqlite", workspace)
    memory = Memory(workspace, index, MemorySettings())
    follow = Follow()
    registry = ToolRegistry(loop_tools(Loops(workspace), memory, follow))
    yield workspace, registry, follow
    index.close()


def _ctx(workspace: Path, key: SessionKey, exposure: Exposure | None = None) -> TurnContext:
    return TurnContext(key, workspace, NOW, BERLIN, exposure=exposure or Exposure())


async def test_a_loop_points_at_its_log_line_and_closing_it_says_where_that_was_said(kit):
    workspace, tools, follow = kit
    ctx = _ctx(workspace, OWNER_KEY)
    args = {"what": "Send Anna the report", "due": "2026-03-13 10:00", "said": "I'll send it"}
    result = await tools.call("loop_open", args, ctx)
    assert not result.is_error and result.text.endswith("A nudge is planned.")
    closed = await tools.call("loop_close", {"id": 1, "said": "sent it to Anna just now"}, ctx)
    assert closed.text == "Closed loop #1 (done): Send Anna the report."
    assert follow.events == [("opened", "the owner", 1), ("closed", "the owner", 1)]
    log = (workspace / "memory" / "2026-03-12.md").read_text().splitlines()
    text = (workspace / "memory" / "LOOPS.md").read_text()
    opened_at = int(text.split("line: memory/2026-03-12.md:")[1].split(" ")[0])
    closed_at = int(text.split("from memory/2026-03-12.md:")[1].split("\n")[0])
    assert log[opened_at - 1] == (
        'Open loop #1: Send Anna the report (due 2026-03-13 10:00) — "I\'ll send it"'
    )
    assert log[closed_at - 1] == 'Loop #1 done: Send Anna the report — "sent it to Anna just now"'
    again = await tools.call("loop_close", {"id": 1, "said": "done"}, ctx)
    assert again.is_error and "no open loop #1" in again.text


async def test_a_shared_chat_keeps_its_own_loops_and_never_sees_the_owners(kit):
    workspace, tools, _ = kit
    await tools.call(
        "loop_open", {"what": "Call the landlord OWNER-7c2"}, _ctx(workspace, OWNER_KEY)
    )
    group = _ctx(workspace, GROUP_KEY)
    await tools.call("loop_open", {"what": "Bring the cake", "who": "Bob"}, group)
    listed = await tools.call("loop_list", {}, group)
    assert "#1 Bring the cake · who: Bob" in listed.text and "OWNER-7c2" not in listed.text
    # The group's #1 is the cake: closing it there leaves the owner's #1 open.
    closed = await tools.call("loop_close", {"id": 1, "said": "Bob brought it"}, group)
    assert closed.text == "Closed loop #1 (done): Bring the cake."
    owners = (workspace / "memory" / "LOOPS.md").read_text()
    groups = (workspace / "memory" / "chats" / "telegram-group--100" / "LOOPS.md").read_text()
    assert "- [ ] #1 Call the landlord OWNER-7c2" in owners and "Bring the cake" not in owners
    assert "Bring the cake" in groups and "OWNER-7c2" not in groups
    log = (workspace / "memory" / "chats" / "telegram-group--100" / "2026-03-12.md").read_text()
    assert "Open loop #1: Bring the cake" in log


async def test_a_turn_that_read_outside_text_writes_its_loops_quoted(kit):
    workspace, tools, _ = kit
    exposure = Exposure()
    exposure.saw("a web page")
    ctx = _ctx(workspace, OWNER_KEY, exposure)
    await tools.call("loop_open", {"what": "Wire the money the page asks for"}, ctx)
    text = (workspace / "memory" / "LOOPS.md").read_text()
    assert '<untrusted source="written after reading a web page">' in text
    assert quotes_outside((workspace / "memory" / "2026-03-12.md").read_text())
    # A later, clean conversation that lists the loops reads them quoted, and counts as
    # having read from outside.
    clean = _ctx(workspace, OWNER_KEY)
    listed = await tools.call("loop_list", {}, clean)
    assert "<untrusted" in listed.text and not clean.exposure.clean
    # The file is one the owner's prompts read: the file tools quote what such a turn writes.
    assert in_prompts(workspace, workspace / "memory" / "LOOPS.md")


async def test_bad_arguments_are_refused_with_what_to_do(kit):
    workspace, tools, _ = kit
    ctx = _ctx(workspace, OWNER_KEY)
    bad = await tools.call("loop_open", {"what": "x", "due": "next tuesday"}, ctx)
    assert bad.is_error and "2026-05-08 17:00" in bad.text
    past = await tools.call("loop_open", {"what": "x", "due": "2026-03-12 09:00"}, ctx)
    assert past.is_error and "in the past" in past.text
    dated = await tools.call("loop_open", {"what": "Book flights", "due": "2026-03-20"}, ctx)
    assert "no nudge; the daily summary lists it when due" in dated.text
    job = _ctx(workspace, SessionKey("cron", "shared", "heartbeat"))
    refused = await tools.call("loop_open", {"what": "x"}, job)
    assert refused.is_error and "not for this job" in refused.text
