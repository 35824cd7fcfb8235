"""The control page in a real browser: headless Chromium (Debian's package) driven by
Playwright, against a real gateway whose Telegram channel talks to the fake Bot API.

Chromium is found as ``chromium`` on the PATH (or at ``$CORVID_CHROMIUM``); without it these
tests are skipped with a message saying how to install it (``.ci/run`` installs it). With
``CORVID_SCREENSHOTS=<folder>`` set, each page is photographed into that folder as the tests see
it (the manual's pictures come from ``docs/tools/screenshots.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from aiohttp import web

from gateway.app import build_app
from gateway.channel_setup import build_channels
from gateway.contract.events import SessionKey
from tests.conftest import OWNER, make_config
from tests.fakes.anthropic_api import FakeAnthropic, Reply
from tests.fakes.telegram_api import FakeTelegram

CHROMIUM = os.environ.get("CORVID_CHROMIUM") or shutil.which("chromium")
pytestmark = [
    pytest.mark.skipif(
        CHROMIUM is None,
        reason="no Chromium for the browser tests: install Debian's (apt-get install chromium) "
        "or set CORVID_CHROMIUM to a Chromium binary",
    ),
    # One event loop for the whole file, so that one Chromium serves every test: starting it
    # (and Playwright's driver) for each was most of the file's time. Each test still has its
    # own gateway, fakes and browser contexts.
    pytest.mark.asyncio(loop_scope="module"),
]
SHOTS = os.environ.get("CORVID_SCREENSHOTS")
WAIT_MS = 10_000  # every wait on the page is bounded by this


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def chromium() -> AsyncIterator[Any]:
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        # No sandbox: CI runs as root, where Chromium's sandbox cannot start.
        chromium = await pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        await chromium.close()


@pytest_asyncio.fixture(loop_scope="module")
async def browser(chromium) -> AsyncIterator[Any]:
    """The shared Chromium; each page a test opens is in a new context (cookies, storage)
    of its own, and every context is closed after the test."""
    yield chromium
    for context in chromium.contexts:
        await context.close()


# The fakes as conftest.py makes them, on the file's event loop.
@pytest_asyncio.fixture(loop_scope="module")
async def fake_api() -> AsyncIterator[FakeAnthropic]:
    api = FakeAnthropic()
    await api.start()
    yield api
    await api.close()


@pytest_asyncio.fixture(loop_scope="module")
async def fake_telegram() -> AsyncIterator[FakeTelegram]:
    api = FakeTelegram()
    await api.start()
    yield api
    await api.close()


@pytest_asyncio.fixture(loop_scope="module")
async def corvid(home, fake_api, fake_telegram) -> AsyncIterator[Any]:
    """``corvid run`` as built for real: Telegram (against the fake) and the control page."""
    tg = fake_telegram.channel_config(allow_from=[str(OWNER)], streaming=True)
    config = make_config(home, fake_api.base_url, channels={"telegram": tg},
                         web={"enabled": True, "port": 0})  # fmt: skip
    app = build_app(config, build_channels(config))
    await app.start()
    assert app.web is not None
    yield app
    await app.stop()


async def _signed_in(browser, app) -> Any:
    page = await browser.new_page(viewport={"width": 1100, "height": 760})
    page.set_default_timeout(WAIT_MS)
    await page.goto(f"{app.web.url}login?token={app.web.token}")
    await page.get_by_role("heading", name="Overview").wait_for()
    assert "token" not in page.url  # sent on, without the token in the address bar
    return page


def _shot_path(name: str) -> str:
    assert SHOTS
    Path(SHOTS).mkdir(parents=True, exist_ok=True)
    return str(Path(SHOTS) / f"control-{name}.png")


async def _shot(page, name: str) -> None:
    if SHOTS:
        await page.screenshot(path=_shot_path(name), full_page=True)


async def test_no_page_without_the_token_then_sign_in(browser, corvid):
    page = await browser.new_page()
    page.set_default_timeout(WAIT_MS)
    for path in ("", "memory", "pairing", "chat", "config"):
        await page.goto(corvid.web.url + path)
        await page.get_by_role("heading", name="Sign in").wait_for()
        assert page.url.endswith("/login")
    await page.get_by_label("Access token").fill("not the token")
    await page.get_by_role("button", name="Sign in").click()
    await page.get_by_text("That token is not right").wait_for()
    await page.get_by_label("Access token").fill(corvid.web.token)
    await page.get_by_role("button", name="Sign in").click()
    await page.get_by_role("heading", name="Overview").wait_for()
    await page.goto(corvid.web.url + "config")
    text = await page.content()
    assert corvid.config.channels.telegram.token.value not in text
    await _shot(page, "config")


async def test_a_telegram_message_shows_up_on_the_open_overview(browser, corvid, fake_telegram):
    page = await _signed_in(browser, corvid)
    await page.get_by_text("No conversations yet.").wait_for()
    fake_telegram.text("hello from Telegram")
    await fake_telegram.wait_sent(1)
    # No reload: the overview's event stream brings the new session in.
    await page.get_by_text(f"telegram:private:{OWNER}").first.wait_for()
    await page.get_by_text("Sessions (1)").wait_for()
    await page.get_by_role("row", name="telegram connected").wait_for()
    await _shot(page, "overview")
    await page.goto(corvid.web.url + "sessions")
    await page.get_by_role("link", name=f"telegram:private:{OWNER}").click()
    await page.get_by_text("echo: hello from Telegram").wait_for()
    await _shot(page, "sessions")


async def test_an_edit_on_the_memory_page_reaches_the_next_private_turn(
    browser, corvid, fake_telegram, fake_api, home
):
    fake_telegram.text("first message")
    await fake_telegram.wait_sent(1)
    page = await _signed_in(browser, corvid)
    await page.get_by_role("link", name="Memory").click()
    await page.get_by_role("link", name="MEMORY.md", exact=True).click()
    await page.get_by_role("link", name="Edit").click()
    editor = page.get_by_label("MEMORY.md")
    await editor.fill("# Memory\n\n- The owner's cat is called Miso.\n")
    await page.get_by_role("button", name="Save").click()
    await page.get_by_text("Saved.").wait_for()
    await page.get_by_text("The owner's cat is called Miso.").wait_for()
    await _shot(page, "memory")
    assert (home / "workspace" / "MEMORY.md").read_text().endswith("called Miso.\n")
    fake_telegram.text("what is my cat called?")
    await fake_telegram.wait_sent(2)
    system = fake_api.message_requests[-1].body["system"]
    assert "The owner's cat is called Miso." in "".join(b["text"] for b in system)


async def test_a_stale_edit_is_refused_and_the_text_kept(browser, corvid, home):
    memory = home / "workspace" / "MEMORY.md"
    memory.write_text("- before\n")
    page = await _signed_in(browser, corvid)
    await page.goto(corvid.web.url + "memory/edit?path=MEMORY.md")
    memory.write_text("- before\n- written by the assistant meanwhile\n")
    await page.get_by_label("MEMORY.md").fill("- before\n- my edit\n")
    await page.get_by_role("button", name="Save").click()
    await page.get_by_text("changed after you opened it").wait_for()
    assert await page.get_by_label("MEMORY.md").input_value() == "- before\n- my edit\n"
    assert memory.read_text() == "- before\n- written by the assistant meanwhile\n"


async def test_a_pairing_code_is_approved_and_the_stranger_served(browser, corvid, fake_telegram):
    fake_telegram.text("hi, may I talk to you?", user=77, first_name="Eve")
    await fake_telegram.wait_for(lambda: any(m["chat_id"] == "77" for m in fake_telegram.sent))
    told = next(m for m in fake_telegram.sent if m["chat_id"] == "77")
    code = re.search(r"pairing code: ([A-Z0-9]{8})", told["shown"]).group(1)
    page = await _signed_in(browser, corvid)
    await page.get_by_role("link", name="Pairing").click()
    await page.get_by_text(code).wait_for()
    await _shot(page, "pairing")
    await page.get_by_role("button", name="Approve").click()
    await page.get_by_text("Approved telegram user Eve").wait_for()
    # The owner's notice in Telegram says so now, without buttons; Eve is told she is in.
    notice = next(m for m in fake_telegram.sent if m["chat_id"] == str(OWNER))
    where = (OWNER, notice["message_id"])
    await fake_telegram.wait_for(lambda: fake_telegram.markup[where] is None)
    assert "Approved: they can talk to me now" in fake_telegram.chat[where]
    await fake_telegram.wait_for(
        lambda: any("my owner approved" in m["shown"] for m in fake_telegram.sent)
    )
    fake_telegram.text("thanks!", user=77, first_name="Eve")
    await fake_telegram.wait_for(
        lambda: any(
            m == {**m, "chat_id": "77", "shown": "echo: thanks!"} for m in fake_telegram.sent
        )
    )


async def test_chat_in_the_browser(browser, corvid, fake_api):
    fake_api.enqueue(Reply("Hello! Here is a **list**:\n\n- one\n- two"))
    page = await _signed_in(browser, corvid)
    await page.get_by_role("link", name="Chat").click()
    await page.get_by_label("Message").fill("hi from the browser")
    await page.get_by_label("Message").press("Enter")
    await page.get_by_text("hi from the browser").wait_for()
    await page.locator("#chat strong", has_text="list").wait_for()
    assert await page.get_by_label("Message").input_value() == ""
    await _shot(page, "chat")
    assert "hi from the browser" in fake_api.message_requests[-1].raw
    # The history is the session's: it is there after a reload.
    await page.reload()
    await page.locator("#chat strong", has_text="list").wait_for()


@contextlib.asynccontextmanager
async def _other_site(target: str, code: str) -> AsyncIterator[str]:
    """A page on another origin that posts a form to the control page as soon as it opens."""

    async def evil(request: web.Request) -> web.Response:
        return web.Response(
            content_type="text/html",
            text=f'<form id="f" method="post" action="{target}pairing/approve">'
            f'<input name="code" value="{code}"></form>'
            "<script>document.getElementById('f').submit()</script>",
        )

    app = web.Application()
    app.router.add_get("/", evil)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}/"
    finally:
        await runner.cleanup()


async def test_a_cross_site_post_is_refused(browser, corvid, fake_telegram):
    fake_telegram.text("let me in", user=78, first_name="Mallory")
    await fake_telegram.wait_sent(1)
    (pending,) = corvid.web.backend.pairing.pending()
    page = await _signed_in(browser, corvid)  # the cookie is there: only CSRF defences remain
    async with _other_site(corvid.web.url, pending.code) as evil:
        await page.goto(evil)
        await page.get_by_text("Refused").wait_for()
    assert not corvid.web.backend.pairing.is_approved("telegram", "78")
    assert [r.code for r in corvid.web.backend.pairing.pending()] == [pending.code]


async def test_screenshots_of_the_jobs_page(browser, corvid):
    page = await _signed_in(browser, corvid)
    await page.get_by_role("link", name="Jobs").click()
    await page.get_by_text("No scheduled jobs.").wait_for()
    await _shot(page, "jobs")


async def test_an_image_attached_in_the_browser_reaches_the_model(browser, corvid, fake_api):
    from tests.channels.telegram.test_channel import _png

    page = await _signed_in(browser, corvid)
    await page.goto(corvid.web.url + "chat")
    await page.get_by_label("Attach files").set_input_files(
        files=[{"name": "cat.png", "mimeType": "image/png", "buffer": _png()}]
    )
    await page.get_by_label("Message").fill("what is in this picture?")
    await page.get_by_role("button", name="Send").click()
    await page.get_by_text("echo: what is in this picture?").wait_for()
    content = fake_api.message_requests[-1].body["messages"][-1]["content"]
    assert [b["type"] for b in content] == ["image", "text"]


class _Watch(logging.Handler):
    """Sets ``seen`` when a record that ``wanted`` picks is logged (anywhere, any level)."""

    def __init__(self, wanted) -> None:
        super().__init__(logging.DEBUG)
        self.wanted = wanted
        self.seen = asyncio.Event()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        if self.wanted(record):
            self.seen.set()


async def test_closing_a_live_page_ends_its_stream_quietly(browser, corvid):
    logging.getLogger("gateway.web").setLevel(logging.DEBUG)
    watch = _Watch(lambda r: r.levelno >= logging.WARNING or r.getMessage() == "live page closed")
    logging.getLogger().addHandler(watch)
    try:
        page = await _signed_in(browser, corvid)
        live = page.locator("#live")
        first = await live.inner_text()
        # The uptime ticks each second: once the page changed, its stream is live.
        await page.wait_for_function(
            "t => document.getElementById('live').innerText !== t", arg=first
        )
        await page.close()
        # The server notices at its next write, a second later at most.
        await asyncio.wait_for(watch.seen.wait(), WAIT_MS / 1000)
    finally:
        logging.getLogger().removeHandler(watch)
    loud = [f"{r.levelname} {r.name}: {r.getMessage()}" for r in watch.records
            if r.levelno >= logging.WARNING]  # fmt: skip
    assert loud == []


SIZES = {"desktop": {"width": 1100, "height": 760}, "phone": {"width": 390, "height": 844}}


async def _signed_in_at(browser, app, size: str) -> Any:
    page = await browser.new_page(viewport=SIZES[size])
    page.set_default_timeout(WAIT_MS)
    await page.goto(f"{app.web.url}login?token={app.web.token}")
    await page.get_by_role("heading", name="Overview").wait_for()
    return page


@pytest.mark.parametrize("size", SIZES)
async def test_the_chat_opens_at_its_newest_message(browser, corvid, size):
    import json as json_

    # Forty reminders sent to the web chat while no page was open.
    outbox = corvid.config.state / "web_chat.jsonl"
    with outbox.open("w", encoding="utf-8") as f:
        for n in range(40):
            entry = {"ts": f"2026-11-22T10:{n:02d}:00+00:00", "text": f"reminder number {n}"}
            f.write(json_.dumps(entry) + "\n")
    page = await _signed_in_at(browser, corvid, size)
    await page.goto(corvid.web.url + "chat")
    newest = page.get_by_text("reminder number 39")
    await newest.wait_for()
    await page.wait_for_function(
        "() => { const c = document.getElementById('chat');"
        " return c.scrollTop > 0 && c.scrollTop + c.clientHeight >= c.scrollHeight - 2; }"
    )
    assert await newest.is_visible()
    box = await page.locator("#chat").bounding_box()
    shown = await newest.bounding_box()
    assert box["y"] <= shown["y"] and shown["y"] + shown["height"] <= box["y"] + box["height"] + 1


def _entry_look(entry) -> Any:
    """What a chat entry shows: its label, whether it has a time, its text and images."""
    return entry.evaluate(
        """e => ({
            label: e.querySelector('b')?.innerText,
            time: !!e.querySelector('time'),
            text: e.innerText.replace(e.querySelector('time')?.innerText ?? '', '').trim(),
            images: [...e.querySelectorAll('img')].map(i => i.naturalWidth > 0),
        })"""
    )


@pytest.mark.parametrize("size", SIZES)
async def test_a_message_with_files_looks_the_same_after_a_reload(browser, corvid, size):
    from tests.channels.telegram.test_channel import _png

    page = await _signed_in_at(browser, corvid, size)
    await page.goto(corvid.web.url + "chat")
    await page.get_by_label("Attach files").set_input_files(
        files=[
            {"name": "cat.png", "mimeType": "image/png", "buffer": _png()},
            {"name": "notes.txt", "mimeType": "text/plain", "buffer": b"milk, eggs\n"},
        ]
    )
    await page.get_by_label("Message").fill("what is in these?")
    await page.get_by_role("button", name="Send").click()
    await page.get_by_text("echo: what is in these?").wait_for()
    mine = page.locator("#chat .entry.user").last
    live = await _entry_look(mine)
    assert live["label"] == "You" and live["time"]
    assert "what is in these?" in live["text"] and "notes.txt" in live["text"]
    assert live["images"] == [True]
    await page.reload()
    await page.get_by_text("echo: what is in these?").wait_for()
    await page.locator("#chat .entry.user img").wait_for()
    after = await _entry_look(page.locator("#chat .entry.user").last)
    assert after == live
    assert "file received" not in after["text"] and "saved at" not in after["text"]
    await _shot(page, f"chat-files-{size}")


async def test_a_transcript_shows_who_wrote_and_when_without_the_models_prefix(
    browser, corvid, fake_telegram
):
    fake_telegram.text("hello from Telegram")
    await fake_telegram.wait_sent(1)
    page = await _signed_in(browser, corvid)
    await page.goto(corvid.web.url + f"sessions/view?key=telegram:private:{OWNER}")
    mine = page.locator(".entry.user").first
    await mine.wait_for()
    look = await _entry_look(mine)
    assert look["label"] == "You" and look["time"]
    assert look["text"] == "You\nhello from Telegram" or look["text"].endswith(
        "hello from Telegram"
    )
    assert not re.search(r"\[\w{3} \d{4}-\d\d-\d\d", await page.locator("main").inner_text())
    reply = await _entry_look(page.locator(".entry.assistant").first)
    assert reply["label"] == "Assistant" and reply["time"]


async def _a_guest_named_eve(corvid, fake_telegram) -> None:
    store = corvid.web.backend.pairing
    req, _ = store.request("telegram", "77", "Eve")
    store.approve(req.code)
    fake_telegram.text("hello, it's Eve", user=77, first_name="Eve")
    await fake_telegram.wait_for(
        lambda: any(m["shown"] == "echo: hello, it's Eve" for m in fake_telegram.sent)
    )


@pytest.mark.parametrize("size", SIZES)
async def test_session_lists_say_who_each_chat_is_with(browser, corvid, fake_telegram, size):
    await _a_guest_named_eve(corvid, fake_telegram)
    fake_telegram.text("and me")
    await fake_telegram.wait_for(
        lambda: any(m["shown"] == "echo: and me" for m in fake_telegram.sent)
    )
    page = await _signed_in_at(browser, corvid, size)
    overview = page.locator("#live")
    await overview.get_by_role("row", name="Eve (guest) telegram:guest:77").first.wait_for()
    await overview.get_by_role("row", name=f"You telegram:private:{OWNER}").first.wait_for()
    await page.goto(corvid.web.url + "sessions")
    await page.get_by_role("row", name="Eve (guest) telegram:guest:77").wait_for()
    await page.get_by_role("link", name="Eve (guest)").click()
    await page.get_by_role("heading", name="Eve (guest)").wait_for()
    await page.get_by_text("telegram:guest:77").first.wait_for()


@pytest.mark.parametrize("size", SIZES)
async def test_a_fresh_session_is_confirmed_first_and_the_old_one_stays_readable(
    browser, corvid, fake_telegram, size
):
    fake_telegram.text("the first conversation")
    await fake_telegram.wait_sent(1)
    key = f"telegram:private:{OWNER}"
    page = await _signed_in_at(browser, corvid, size)
    await page.goto(corvid.web.url + f"sessions/view?key={key}")
    await page.get_by_role("button", name="Start a fresh session").click()
    # Nothing has happened yet: the page asks first.
    await page.get_by_role("heading", name="Start a fresh session?").wait_for()
    assert corvid.gateway.agent.store.path(SessionKey.parse(key)).exists()
    await page.get_by_role("link", name="Keep the session").click()
    await page.get_by_text("the first conversation").first.wait_for()
    await page.get_by_role("button", name="Start a fresh session").click()
    await page.get_by_role("button", name="Yes, start afresh").click()
    await page.get_by_text("started a fresh session").wait_for()
    await fake_telegram.wait_for(lambda: len(fake_telegram.sent) >= 2)  # the chat is told
    # The old session is listed as an earlier one of that chat, and still readable.
    await page.get_by_role(
        "link", name=re.compile(r"^You, until \d{4}-\d\d-\d\d \d\d:\d\d [A-Z+0-9-]+$")
    ).click()
    await page.get_by_text("the first conversation").first.wait_for()
    await page.get_by_text("An earlier session of this chat").wait_for()
    assert await page.get_by_role("button", name="Start a fresh session").count() == 0


@pytest.mark.parametrize("size", SIZES)
async def test_an_outcome_is_shown_once_and_never_in_the_address(
    browser, corvid, fake_telegram, size
):
    fake_telegram.text("let me in", user=79, first_name="Zoe")
    await fake_telegram.wait_sent(1)
    page = await _signed_in_at(browser, corvid, size)
    await page.goto(corvid.web.url + "pairing")
    await page.get_by_role("button", name="Deny").click()
    await page.get_by_text("Denied telegram user Zoe").wait_for()
    assert page.url == corvid.web.url + "pairing"
    await page.reload()
    await page.get_by_role("heading", name="Pairing").wait_for()
    await page.get_by_text("Nobody is waiting").wait_for()
    assert await page.get_by_text("Denied telegram user Zoe").count() == 0


@pytest.mark.parametrize("size", SIZES)
async def test_the_sign_in_page_is_plain_and_named(browser, corvid, size):
    page = await browser.new_page(viewport=SIZES[size])
    page.set_default_timeout(WAIT_MS)
    asked: list[str] = []
    missing: list[str] = []
    page.on("request", lambda r: asked.append(r.url))
    page.on("response", lambda r: r.status == 404 and missing.append(r.url))
    await page.goto(corvid.web.url + "login")
    await page.get_by_role("heading", name="Sign in").wait_for()
    assert await page.locator("nav .brand").inner_text() == "Corvid"
    assert not [u for u in asked if u.endswith(".js")]  # nothing to run before signing in
    await page.get_by_label("Access token").fill("not the token")
    await page.get_by_role("button", name="Sign in").click()
    refusal = page.locator(".notice.error")
    await refusal.wait_for()
    assert "`" not in await refusal.inner_text()
    assert await refusal.locator("code").inner_text() == "corvid web"
    await page.get_by_label("Access token").fill(corvid.web.token)
    await page.get_by_role("button", name="Sign in").click()
    await page.get_by_role("heading", name="Overview").wait_for()
    icon = await page.request.get(corvid.web.url + "favicon.ico")
    assert icon.ok and icon.headers["content-type"].startswith("image/svg+xml")
    assert missing == []


async def test_signing_every_browser_out_asks_first(browser, corvid):
    page = await _signed_in(browser, corvid)
    other = await _signed_in(browser, corvid)  # another browser, with its own cookie
    await page.goto(corvid.web.url + "config")
    await page.get_by_role("link", name="Sign out every browser").click()
    await page.get_by_role("heading", name="Sign out every browser?").wait_for()
    await page.get_by_role("link", name="Cancel").click()
    await page.get_by_role("heading", name="Config").wait_for()
    await other.reload()
    await other.get_by_role("heading", name="Overview").wait_for()  # still signed in
    await page.get_by_role("link", name="Sign out every browser").click()
    await page.get_by_role("button", name="Sign out every browser").click()
    await page.get_by_role("heading", name="Sign in").wait_for()
    await other.reload()
    await other.get_by_role("heading", name="Sign in").wait_for()


async def test_a_new_token_from_the_page_retires_the_old_address(browser, corvid):
    old = corvid.web.token
    page = await _signed_in(browser, corvid)
    other = await _signed_in(browser, corvid)
    await page.goto(corvid.web.url + "config")
    await page.get_by_role("link", name="Make a new access token").click()
    await page.get_by_role("heading", name="Make a new access token?").wait_for()
    assert corvid.web.token == old  # nothing yet
    await page.get_by_role("button", name="Make a new token").click()
    await page.get_by_text("A new access token is in place").wait_for()
    new = (corvid.config.state / "web_token").read_text().strip()
    assert new != old and corvid.web.token == new
    await page.goto(corvid.web.url + "jobs")  # this browser goes on
    await page.get_by_role("heading", name="Jobs").wait_for()
    await other.reload()
    await other.get_by_role("heading", name="Sign in").wait_for()
    await other.goto(f"{corvid.web.url}login?token={old}")
    await other.get_by_text("That token is not right").wait_for()
    await other.goto(f"{corvid.web.url}login?token={new}")
    await other.get_by_role("heading", name="Overview").wait_for()


async def test_a_new_token_from_the_command_line(browser, corvid, capsys):
    from gateway.ops.cli import main

    old = corvid.web.token
    page = await _signed_in(browser, corvid)
    capsys.readouterr()
    home = str(corvid.config.home)
    assert await asyncio.to_thread(main, ["web", "--rotate-token", "--home", home], {}) == 0
    printed = capsys.readouterr().out.strip()
    assert printed.startswith(corvid.web.url + "login?token=") and old not in printed
    await page.reload()
    await page.get_by_role("heading", name="Sign in").wait_for()
    await page.goto(printed)
    await page.get_by_role("heading", name="Overview").wait_for()


@pytest.mark.parametrize("size", SIZES)
async def test_no_page_is_wider_than_the_screen(browser, corvid, fake_telegram, size):
    from datetime import UTC, datetime

    from gateway.scheduling.jobs import Job, JobKind
    from gateway.scheduling.reminders import JobStore

    await _a_guest_named_eve(corvid, fake_telegram)
    JobStore(corvid.config.state / "jobs.json").add(
        Job(
            id="job-0123456789ab",
            kind=JobKind.CRON,
            spec="0 9 * * 1-5",
            timezone="Europe/Berlin",
            target=f"telegram:private:{OWNER}",
            created=datetime.now(UTC),
            instruction="Tell me the weather in Berlin with a long, detailed instruction text",
        )
    )
    page = await _signed_in_at(browser, corvid, size)
    for path in ("", "sessions", "jobs", "pairing", "config", "chat", "memory"):
        await page.goto(corvid.web.url + path)
        await page.locator("main h1").wait_for()
        wide = await page.evaluate("document.documentElement.scrollWidth")
        assert wide <= SIZES[size]["width"], (path, wide)
    await page.goto(corvid.web.url + "jobs")
    run = page.get_by_role("button", name="Run now")
    await run.wait_for()
    box = await run.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= SIZES[size]["width"]
    await _shot(page, f"jobs-{size}")


async def test_the_usage_page_charts_the_days_cost_by_purpose(browser, corvid, fake_telegram):
    fake_telegram.text("hello, what does this cost?")
    await fake_telegram.wait_sent(1)
    page = await _signed_in(browser, corvid)
    await page.get_by_role("link", name="Usage").click()
    await page.get_by_role("heading", name="Usage", exact=True).wait_for()
    chart = page.get_by_role("img", name="Daily cost by purpose")
    await chart.wait_for()
    # One bar today, for the chat turn, drawn on the server: no script, nothing fetched.
    bars = chart.locator("rect title")
    assert await bars.count() == 1
    assert " chat: " in await bars.first.text_content()
    await page.get_by_role("cell", name="You (your private chats)").first.wait_for()
    await page.get_by_role("cell", name="chat", exact=True).wait_for()
    await _shot(page, "usage")


async def test_a_files_history_shows_each_change_and_restores_one(browser, corvid, home):
    memory = home / "workspace" / "MEMORY.md"
    memory.write_text("# Memory\n\n- lives in Porto\n")
    page = await _signed_in(browser, corvid)
    await page.goto(corvid.web.url + "memory/edit?path=MEMORY.md")
    await page.get_by_label("MEMORY.md").fill("# Memory\n\n- lives in Lisbon\n")
    await page.get_by_role("button", name="Save").click()
    await page.get_by_text("Saved.").wait_for()
    memory.write_text("# Memory\n\n- lives in Lisbon\n- edited by hand\n")
    await page.get_by_role("link", name="History").click()
    await page.get_by_role("heading", name="History of MEMORY.md").wait_for()
    # Newest first: the hand edit found on this look, then the editor's change with its diff.
    headings = await page.locator("section.change h2").all_inner_texts()
    assert [h.split(" ")[0] for h in headings] == ["#2", "#1"]
    first = page.locator("#change-1")
    assert "the control page's editor" in await first.inner_text()
    diff = await first.locator("pre").inner_text()
    assert "-- lives in Porto" in diff and "+- lives in Lisbon" in diff
    assert "hand edit" in await page.locator("#change-2").inner_text()
    await _shot(page, "history")
    await first.get_by_role("button", name="Restore #1").click()
    await page.get_by_text("MEMORY.md is back as it was after #1.").wait_for()
    assert memory.read_text() == "# Memory\n\n- lives in Lisbon\n"
    assert "restore to #1" in await page.locator("#change-3").inner_text()


async def test_table_columns_keep_their_words_whole(browser, corvid):
    """A short column beside a long one keeps its words ("approved", "WARNING"); what has no
    place to break (a key, a long argument) may break anywhere."""
    from agent.approvals.audit import AuditLog

    audit = AuditLog(corvid.config.state / "actions.sqlite")
    audit.record(
        "approved",
        "calendar__delete_calendar",
        f"telegram:private:{OWNER}",
        arguments='{"name": "' + "x" * 200 + '"}',
        sources=["a web page", "search results"],
        detail="the owner approved it once, from the button under the request " * 3,
    )
    audit.close()
    page = await _signed_in(browser, corvid)
    await page.goto(corvid.web.url + "actions")
    await page.locator("main h1").wait_for()
    lines = await page.evaluate(
        """() => {
            const cell = [...document.querySelectorAll("td")]
                .find(td => td.textContent.trim() === "approved");
            const range = document.createRange();
            range.selectNodeContents(cell);
            return range.getClientRects().length;
        }"""
    )
    assert lines == 1  # one line box: the word is not split
    wide = await page.evaluate("document.documentElement.scrollWidth")
    assert wide <= 1100
