"""Pictures of the control page for the manual, taken from a running Corvid.

Corvid runs in this process as `corvid run` builds it, its Telegram channel and its model on the
test suite's fake Bot API and Messages API (`tests/fakes/`), in a home made for the purpose and
filled with a few days of made-up use: a memory, logs, a group, a reminder, a stranger waiting
for a pairing code, a request to act. Debian's Chromium (`apt-get install chromium`, or
`CORVID_CHROMIUM=/path/to/chromium`), driven by Playwright, then photographs each page into
`docs/images/`. Run it from the checkout, with the dev extra installed:

    .venv/bin/python docs/tools/screenshots.py [--out docs/images]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import yaml

ROOT = Path(__file__).resolve().parents[2]
OWNER = 42
GROUP = -1001234567890
ZONE = ZoneInfo("Europe/Berlin")
WAIT_MS = 15_000  # every wait on the page is bounded by this
WAIT_S = 15.0
# Each picture: its name, the page's address and a text that shows the page is there.
PAGES = (
    ("overview", "", "Sessions ("),
    ("sessions", "sessions/view?key=telegram:private:42", "call the bank"),
    ("memory", "memory", "MEMORY.md"),
    ("jobs", "jobs", "daily-summary"),
    ("usage", "usage", "By purpose"),
    ("pairing", "pairing", "Eve"),
    ("actions", "actions", "Waiting for your answer"),
    ("chat", "chat", "two new notes"),
    ("config", "config", "telegram"),
)
MEMORY = """# Memory

## About the owner
- Ada Lovelace, works from home in Berlin; mornings are for writing. (learned {a}, memory/{a}.md:3)

## Preferences and feedback
- Prefers short answers with the one thing to do first. (learned {a}, memory/{a}.md:7)

## People
### Anna
- Who: my sister
- Moved to Lisbon in the spring.
- Last mentioned: {b}

## Projects
- The Engine notes: chapter 3 due to the publisher on Friday. (learned {b}, memory/{b}.md:5)
"""


def _chromium() -> str:
    found = os.environ.get("CORVID_CHROMIUM") or shutil.which("chromium")
    if not found:
        sys.exit("no Chromium: install Debian's (apt-get install chromium) or set CORVID_CHROMIUM")
    return found


def _seed(home: Path, telegram: Any, api_url: str) -> None:
    """A home on the fakes, with a memory and two days of logs written as the tools write."""
    telegram.write_corvid_config(home, api_url)
    config = yaml.safe_load((home / "config.yaml").read_text())
    config["timezone"] = "Europe/Berlin"
    config["channels"]["telegram"]["groups"] = [GROUP]
    config["web"]["port"] = 0  # a free port
    config["schedule"]["daily_summary"].update(enabled=True, target=f"telegram:private:{OWNER}")
    config["approvals"]["tools"] = {"web_fetch": "ask"}
    config["gateway"]["shutdown_grace"] = 2
    (home / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    today = datetime.now(ZONE).date()
    a, b = (today - timedelta(days=3)).isoformat(), (today - timedelta(days=1)).isoformat()
    workspace = home / "workspace"
    (workspace / "MEMORY.md").write_text(MEMORY.format(a=a, b=b))
    logs = {
        a: "## 08:40\nAda starts each day with an hour of writing; no messages before 9.\n",
        b: "## 18:05\nChapter 3 of the Engine notes is due on Friday; Ada wants a reminder "
        "on Thursday evening.\n\n## 21:00\nDaily summary sent.\n",
    }
    for day, text in logs.items():
        (workspace / "memory" / f"{day}.md").write_text(f"# {day}\n\n{text}")


async def _converse(telegram: Any, api: Any) -> None:
    """What the pictures show: the owner's chat, a group, a stranger and a request to act."""
    from tests.fakes.anthropic_api import Reply

    tomorrow = (datetime.now(ZONE) + timedelta(days=1)).strftime("%Y-%m-%d 09:00")
    reminder = {"at": tomorrow, "instruction": "Remind Ada to call the bank"}
    api.enqueue(
        Reply(
            "Here is the week:\n\n- **Friday**: chapter 3 of the Engine notes is due\n"
            "- Anna's birthday is on Sunday: she lives in Lisbon now\n\nWant a reminder?"
        ),
        Reply(tool_calls=[("schedule", reminder)]),
        Reply("Done: I'll remind you tomorrow at 9:00 to call the bank."),
    )
    telegram.text("What's on my plate this week?")
    await telegram.wait_sent(1, WAIT_S)
    telegram.text("Remind me tomorrow at 9 to call the bank")
    await telegram.wait_sent(2, WAIT_S)
    api.enqueue(Reply("Saturday at 10, at the café on the corner, as last time."))
    telegram.push(
        {
            "chat": {"id": GROUP, "type": "supergroup", "title": "Book club"},
            "from": {"id": OWNER, "is_bot": False, "first_name": "Ada"},
            "text": f"@{telegram.username} when do we meet next?",
            "entities": [{"type": "mention", "offset": 0, "length": len(telegram.username) + 1}],
        }
    )
    await telegram.wait_sent(3, WAIT_S)
    telegram.text("hi, may I talk to you?", user=77, first_name="Eve")
    await telegram.wait_for(lambda: any(m["chat_id"] == "77" for m in telegram.sent), WAIT_S)
    api.enqueue(Reply(tool_calls=[("web_fetch", {"url": "https://example.org/engine-notes"})]))
    telegram.text("Could you read https://example.org/engine-notes and summarise it?")
    await telegram.wait_for(lambda: any("Approve once" in str(m) for m in telegram.sent), WAIT_S)


@asynccontextmanager
async def _corvid(home: Path) -> AsyncIterator[tuple[Any, Any, Any]]:
    """`corvid run` as built for real, on the fakes, and the fakes to drive it with."""
    from gateway.app import build_app
    from gateway.channel_setup import build_channels
    from gateway.config.loader import load_config
    from tests.fakes.anthropic_api import FakeAnthropic
    from tests.fakes.telegram_api import FakeTelegram

    api, telegram = FakeAnthropic(), FakeTelegram()
    await api.start()
    await telegram.start()
    _seed(home, telegram, api.base_url)
    environ = {"ANTHROPIC_API_KEY": "sk-ant-screenshots", "TELEGRAM_BOT_TOKEN": telegram.token}
    config = load_config(home, environ)
    app = build_app(config, build_channels(config))
    await app.start()
    try:
        yield app, telegram, api
    finally:
        await app.stop()
        await telegram.close()
        await api.close()


async def _photograph(app: Any, api: Any, out: Path) -> list[Path]:
    from playwright.async_api import async_playwright

    from tests.fakes.anthropic_api import Reply

    taken = []
    async with async_playwright() as pw:
        # No sandbox: as root, Chromium's own sandbox cannot start.
        browser = await pw.chromium.launch(executable_path=_chromium(), args=["--no-sandbox"])
        page = await browser.new_page(viewport={"width": 1100, "height": 760})
        page.set_default_timeout(WAIT_MS)
        await page.goto(f"{app.web.url}login?token={app.web.token}")
        await page.get_by_role("heading", name="Overview").wait_for()
        for name, path, shows in PAGES:
            await page.goto(app.web.url + path)
            if name == "chat":
                api.enqueue(Reply("Yes: two new notes since yesterday, both about chapter 3."))
                await page.get_by_label("Message").fill("Anything new in my notes?")
                await page.get_by_label("Message").press("Enter")
            await page.get_by_text(shows).first.wait_for()
            target = out / f"control-{name}.png"
            await page.screenshot(path=str(target), full_page=True)
            taken.append(target)
        await browser.close()
    return taken


async def run(out: Path) -> list[Path]:
    with tempfile.TemporaryDirectory(prefix="corvid-screenshots-") as tmp:
        async with _corvid(Path(tmp) / "home") as (app, telegram, api):
            await _converse(telegram, api)
            return await _photograph(app, api, out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))  # the fakes live in the test suite
    for path in asyncio.run(run(args.out)):
        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
