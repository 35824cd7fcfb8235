"""Consolidation's proposals on the Memory page: shown with their sources and diff, applied or
rejected with a button; and a file's history over HTTP, for the owner only."""

from __future__ import annotations

from agent.memory.proposal_store import Store
from agent.memory.proposals import Item, Proposal, digest
from gateway.web.memory_page import version


def version_of(home) -> str:
    return version((home / "workspace" / "MEMORY.md").read_bytes())


MEMORY = "# Memory\n\n- Anna lives in Porto.\n"


def propose(home, pid: str) -> None:
    item = Item("update", "- Anna lives in Lisbon.", ("- Anna lives in Porto.",), "she moved",
                ("memory/2026-03-12.md:9",), origin="the chat telegram-group--5")  # fmt: skip
    proposal = Proposal(pid, "2026-03-12T22:00:00+01:00", digest(MEMORY), (item,), {})
    Store(home / "state" / "proposals.json").add(proposal, {})


async def test_a_proposal_is_shown_then_applied_from_the_memory_page(control, home):
    _, _, client = control
    (home / "workspace" / "MEMORY.md").write_text(MEMORY)
    propose(home, "abc123")
    status, text, _ = await client.get("/memory")
    assert status == 200 and "<h2>Proposals</h2>" in text
    assert "she moved" in text and "from memory/2026-03-12.md:9" in text
    assert "written by the chat telegram-group--5, not by you" in text
    assert "-- Anna lives in Porto." in text and "+&lt;untrusted" in text
    status, _, answer = await client.post("/memory/proposal", {"id": "abc123", "action": "apply"})
    assert status == 303
    assert "of memory proposal abc123 to MEMORY.md." in await client.shown(answer)
    assert "Lisbon" in (home / "workspace" / "MEMORY.md").read_text()
    _, text, _ = await client.get("/memory")
    assert "<h2>Proposals</h2>" not in text
    status, _, answer = await client.post("/memory/proposal", {"id": "abc123", "action": "apply"})
    assert "was applied already" in await client.shown(answer)


async def test_a_proposal_is_rejected_and_a_post_without_the_token_refused(control, home):
    _, _, client = control
    (home / "workspace" / "MEMORY.md").write_text(MEMORY)
    propose(home, "def456")
    status, _, _ = await client.post(
        "/memory/proposal", {"id": "def456", "action": "apply"}, csrf=False
    )
    assert status == 403 and "Porto" in (home / "workspace" / "MEMORY.md").read_text()
    status, _, answer = await client.post("/memory/proposal", {"id": "def456", "action": "reject"})
    assert "Rejected memory proposal def456" in await client.shown(answer)
    assert (home / "workspace" / "MEMORY.md").read_text() == MEMORY


async def test_the_whole_workspaces_history_is_one_link_away(control, home):
    _, channel, client = control
    channel.push("hello")  # nothing written: no history yet
    await channel.wait_sent(1)
    status, text, _ = await client.get("/memory")
    assert '<a href="/memory/history">Every change to the workspace</a>' in text
    status, text, _ = await client.get("/memory/history")
    assert status == 200 and "No change has been recorded yet." in text
    (home / "workspace" / "MEMORY.md").write_text(MEMORY)
    status, _, _ = await client.post(
        "/memory/edit",
        {"path": "MEMORY.md", "text": MEMORY + "- more\n", "version": version_of(home)},
    )
    assert status == 303
    status, text, _ = await client.get("/memory/history")
    assert "MEMORY.md" in text and "the control page&#x27;s editor" in text
