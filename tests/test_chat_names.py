"""A group is named by its title, not its key: the title comes with its messages and is kept,
and corvid status, usage and actions, the overview and the sessions page show it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agent.approvals.audit import AuditLog
from gateway.chat_names import read_titles
from gateway.ops.cli import main
from gateway.web.overview import fragment
from tests.conftest import OWNER, TG_GROUP
from tests.fakes.telegram_api import BOT_USERNAME, FakeTelegram

GROUP_KEY = f"telegram:group:{TG_GROUP}"
NAMED = "“Test group”, Telegram group"


async def test_groups_are_named_by_their_title_everywhere(
    home: Path, telegram_gateway, fake_telegram: FakeTelegram, capsys
):
    app = await telegram_gateway()
    fake_telegram.text(f"@{BOT_USERNAME} hello", chat=TG_GROUP, chat_type="supergroup")
    fake_telegram.text("hi")
    await fake_telegram.wait_sent(2, timeout=30)
    await app.idle()
    audit = AuditLog(home / "state" / "actions.sqlite")
    audit.record("asked", "web_fetch", GROUP_KEY)
    audit.close()
    report = app._status()
    capsys.readouterr()
    for argv in (["status"], ["usage", "--by", "chat"], ["actions"]):
        assert await asyncio.to_thread(main, [*argv, "--home", str(home)], {}) == 0
    out = capsys.readouterr().out
    assert f"{NAMED} ({GROUP_KEY}): context" in out
    assert f"You (telegram:private:{OWNER}): context" in out
    usage = out[out.index("by chat:") :].splitlines()
    assert any(line.strip().startswith(NAMED) for line in usage), usage
    assert any(line.strip().startswith("You (your private chats)") for line in usage), usage
    assert f"web_fetch  in {NAMED}" in out
    assert "telegram-group-" not in out  # the ledger's own name for it is not shown
    kept = read_titles(home / "state" / "chat_names.json")
    assert kept == {GROUP_KEY: "Test group"}  # the owner's private chat needs no title
    assert NAMED in fragment(report, titles=kept)  # the overview
    assert report["sessions"][0]["name"] in (NAMED, "You")
    assert {s["name"] for s in report["sessions"]} == {NAMED, "You"}
