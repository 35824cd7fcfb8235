"""The open loops on the control page's Memory page: listed by whose they are, the lines not
read as loops shown, and a loop closed by its button."""

from __future__ import annotations

from tests.gateway.web.conftest import WEB, ControlClient

OWNERS = "# Open loops\n\n## Open\n\n- [ ] #1 Call the landlord · due: 2026-03-13\n"
GROUPS = (
    "# Open loops of this chat\n\n## Open\n\n- [ ] #1 Bring the cake · who: Bob\n"
    "a note that is no loop\n"
)


async def test_the_memory_page_lists_loops_and_closes_one(home, start_gateway):
    workspace = home / "workspace"
    (workspace / "memory").mkdir(exist_ok=True)
    (workspace / "memory" / "LOOPS.md").write_text(OWNERS)
    chat = workspace / "memory" / "chats" / "telegram-group--100"
    chat.mkdir(parents=True)
    (chat / "LOOPS.md").write_text(GROUPS)
    app, _channel = await start_gateway(web=WEB)
    assert app.web is not None
    client = ControlClient(app.web.url, app.web.token)
    await client.sign_in()
    try:
        status, page, _ = await client.get("/memory")
        assert status == 200
        assert "<h2>Open loops</h2>" in page
        assert "#1 Call the landlord · due 2026-03-13" in page
        assert "The chat telegram-group--100" in page and "#1 Bring the cake" in page
        assert "line 6 is not a loop, kept as it is: a note that is no loop" in page
        status, _, answer = await client.post(
            "/memory/loop", {"chat": "", "id": "1", "state": "done"}
        )
        assert status == 303
        assert "Done: #1 Call the landlord." in await client.shown(answer)
        _, _, answer = await client.post("/memory/loop", {"chat": "", "id": "1", "state": "done"})
        assert "Loop #1 (Call the landlord) is done already." in await client.shown(answer)
        status, _, _ = await client.post(
            "/memory/loop", {"chat": "../x", "id": "1", "state": "done"}
        )
        assert status == 404
    finally:
        await client.close()
    text = (workspace / "memory" / "LOOPS.md").read_text()
    assert "- [x] #1 Call the landlord" in text and "by: the owner (control page)" in text
    assert (chat / "LOOPS.md").read_text() == GROUPS  # only the one closed was touched
