"""The Actions page in a real browser (headless Chromium): a request to act waiting for the
owner, answered on the page, and the trail it leaves."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gateway.app import build_app
from tests.conftest import RecordingChannel, make_config
from tests.gateway.web.test_browser import CHROMIUM, WAIT_MS
from tests.test_approvals import CALENDAR, answer, asked, calendar_log, obedient

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium for the browser tests")


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        # No sandbox: CI runs as root, where Chromium's sandbox cannot start.
        chromium = await pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        await chromium.close()


@pytest.fixture
async def corvid(home, fake_api, tmp_path) -> AsyncIterator[tuple[Any, RecordingChannel]]:
    fake_api.brain = obedient
    server = {
        "command": sys.executable,
        "args": [CALENDAR],
        "env": {"CAL_LOG": str(tmp_path / "calendar.log")},
    }
    config = make_config(
        home,
        fake_api.base_url,
        web={"enabled": True, "port": 0},
        mcp={"servers": {"cal": server}},
    )
    channel = RecordingChannel()
    app = build_app(config, [channel])
    await app.start()
    assert app.web is not None
    yield app, channel
    await app.stop()


async def test_a_request_is_denied_on_the_actions_page_and_the_trail_shows_it(
    browser,
    corvid,
    tmp_path,
):
    app, channel = corvid
    turn = channel.push("DO cal__delete_calendar name=work")
    request = await asked(channel, 0)
    request_id = answer(request, "Deny").split()[1]
    page = await browser.new_page(viewport={"width": 1100, "height": 760})
    page.set_default_timeout(WAIT_MS)
    await page.goto(f"{app.web.url}login?token={app.web.token}")
    await page.get_by_role("link", name="Actions").click()
    await page.get_by_role("heading", name="Waiting for your answer").wait_for()
    row = page.get_by_role("row").filter(has_text=request_id)
    assert '"name": "work"' in await row.inner_text()
    await row.get_by_role("button", name="Deny").click()
    await page.get_by_text(f"Deny: request {request_id}.").wait_for()
    await asyncio.wait_for(turn, 30)
    assert calendar_log(tmp_path / "calendar.log") == []
    await page.reload()
    await page.get_by_text("No request is waiting for your answer.").wait_for()
    trail = await page.get_by_role("table").inner_text()
    assert "asked" in trail and "denied" in trail and "cal__delete_calendar" in trail
    # A request already answered cannot be answered again from a page left open.
    assert app.web.backend.decide_approval(request_id, "once") is not None
