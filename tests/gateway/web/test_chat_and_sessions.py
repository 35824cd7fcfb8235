"""The sessions page and the web chat, over HTTP."""

from __future__ import annotations

import asyncio
import json
import re
from urllib.parse import unquote

import aiohttp

from gateway.web.chat import WEB_CHAT
from gateway.web.guard import CSRF_HEADER
from tests.channels.telegram.test_channel import _png
from tests.conftest import PRIVATE
from tests.fakes.anthropic_api import Reply


class Events:
    """The chat page's event stream, read as the page's script reads it."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.response = response
        self.seen: list[tuple[str, str]] = []

    async def until(self, event: str, contains: str, timeout: float = 10.0) -> str:
        async with asyncio.timeout(timeout):
            name, data = "", []
            async for raw in self.response.content:
                line = raw.decode().rstrip("\n")
                if line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: "):
                    data.append(line[6:])
                elif not line and name:
                    self.seen.append((name, "\n".join(data)))
                    if name == event and contains in self.seen[-1][1]:
                        return self.seen[-1][1]
                    name, data = "", []
        raise AssertionError(f"the stream ended before {event} {contains!r}")


async def _open_events(client) -> tuple[aiohttp.ClientResponse, Events]:
    response = await client.http.get(client.base + "/events/chat")
    assert response.status == 200
    assert await response.content.readline() == b": open\n"  # listening from here on
    return response, Events(response)


async def test_a_chat_message_is_answered_on_the_page_as_it_is_written(control, fake_api):
    _, _, client = control
    status, text, _ = await client.get("/chat")
    assert status == 200 and 'data-chat="/events/chat"' in text
    hold = asyncio.Event()
    fake_api.enqueue(Reply("First part. Then **the rest**.", hold=hold, hold_after=11, chunk=4))
    response, events = await _open_events(client)
    try:
        status, _, _ = await client.post(
            "/chat", {"text": "hello <b>there</b>"}, headers={CSRF_HEADER: await client.csrf()}
        )
        assert status == 204
        mine = await events.until("message", "hello")
        assert "&lt;b&gt;there&lt;/b&gt;" in mine  # what the owner wrote, escaped
        draft = await events.until("draft", "First part")
        assert "the rest" not in draft  # shown while the model is still writing
        hold.set()
        final = await events.until("message", "the rest")
        assert "<strong>the rest</strong>" in final
        assert ("draft", "") in events.seen  # the draft bubble is cleared for the reply
    finally:
        response.close()
    request = fake_api.message_requests[-1].body
    assert "hello <b>there</b>" in json.dumps(request)
    # The web chat is the owner's private session: it reads MEMORY.md.
    assert WEB_CHAT.private


async def test_the_chat_works_without_javascript_and_keeps_its_history(control, fake_api):
    app, _, client = control
    status, _, r = await client.post("/chat", {"text": "plain form"})
    assert status == 303 and r.headers["Location"] == "/chat"
    await app.idle()
    _, text, _ = await client.get("/chat")
    assert "plain form" in text and "echo: plain form" in text


async def test_an_image_sent_on_the_page_reaches_the_model(control, fake_api):
    app, _, client = control
    form = aiohttp.FormData()
    form.add_field("csrf", await client.csrf())
    form.add_field("text", "what is this?")
    form.add_field("file", _png(), filename="pic.png", content_type="image/png")
    async with client.http.post(client.base + "/chat", data=form, allow_redirects=False) as r:
        assert r.status == 303
    await app.idle()
    content = fake_api.message_requests[-1].body["messages"][-1]["content"]
    assert [b["type"] for b in content] == ["image", "text"]
    assert content[0]["source"]["media_type"] == "image/png"


async def test_sessions_are_listed_and_a_transcript_pages(control, home):
    _, channel, client = control
    for n in range(3):
        channel.push(f"message {n}")
        await channel.wait_sent(n + 1)
    status, text, _ = await client.get("/sessions")
    assert status == 200 and str(PRIVATE) in text
    key = re.escape(str(PRIVATE))
    row = re.search(rf"<tr><td[^>]*><a[^>]*><b>You</b> <small><code>{key}</code>.*?</tr>", text)
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", row.group(0)) if row else []
    assert "private" in cells and "3" in cells
    # A long transcript: lines added by hand, a tool call and a compaction among them.
    path = home / "state" / "sessions" / f"{PRIVATE}.jsonl"
    lines = [
        {"t": "msg", "ts": "2026-11-22T10:00:00", "msg": {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a.md"}}]}},
        {"t": "compaction", "ts": "2026-11-22T10:01:00", "summary": "They talked of cats.",
         "keep": 0, "system": "s"},
    ] + [{"t": "msg", "ts": "2026-11-22T11:00:00", "msg": {"role": "user", "content": f"n{i}"}}
         for i in range(250)]  # fmt: skip
    with path.open("a") as f:
        f.writelines(json.dumps(line) + "\n" for line in lines)
    total = len(path.read_text().splitlines())
    key = str(PRIVATE)
    _, last, _ = await client.get("/sessions/view", params={"key": key})
    assert f"{total:,} lines, page 3 of 3" in last and ">n249<" in last and ">n0<" not in last
    _, first, _ = await client.get("/sessions/view", params={"key": key, "page": "1"})
    assert "Session started" in first and "message 0" in first
    assert "<details><summary>Tool: read_file</summary>" in first
    assert "<details><summary>Summary</summary>" in first and "They talked of cats." in first
    status, _, _ = await client.get("/sessions/view", params={"key": "no:such:key"})
    assert status == 404


async def test_a_session_is_started_afresh_from_the_page(control, home):
    app, channel, client = control
    channel.push("remember this conversation")
    await channel.wait_sent(1)
    # Not without a confirmation: the form sends to the page that asks for it.
    status, _, r = await client.post("/sessions/new", {"key": str(PRIVATE)})
    assert status == 303 and unquote(r.headers["Location"]) == f"/sessions/new?key={PRIVATE}"
    assert not list((home / "state" / "sessions").glob(f"{PRIVATE}.*.jsonl"))
    status, text, _ = await client.get("/sessions/new", params={"key": str(PRIVATE)})
    assert status == 200 and "Yes, start afresh" in text
    status, _, r = await client.post("/sessions/new", {"key": str(PRIVATE), "confirm": "1"})
    assert status == 303 and "started a fresh session" in await client.shown(r)
    await app.idle()
    assert channel.texts()[-1].startswith("Started a new session.")
    archived = list((home / "state" / "sessions").glob(f"{PRIVATE}.*.jsonl"))
    assert len(archived) == 1
    status, _, r = await client.post("/sessions/new", {"key": "discord:dm:5", "confirm": "1"})
    assert "not running here" in await client.shown(r)


async def test_a_summary_sent_while_no_page_is_open_is_there_when_one_opens(
    home, start_gateway, fake_api
):
    from tests.gateway.web.conftest import WEB, ControlClient

    app, _ = await start_gateway(
        web=WEB, schedule={"daily_summary": {"enabled": True, "target": str(WEB_CHAT)}}
    )
    client = ControlClient(app.web.url, app.web.token)
    await client.sign_in()
    try:
        await client.post("/chat", {"text": "good morning"})
        await app.idle()
        fake_api.enqueue(Reply("Your day: **three** meetings."))
        _, _, r = await client.post("/jobs/run", {"id": "daily-summary"})
        assert "daily-summary ran" in await client.shown(r)
        _, text, _ = await client.get("/chat")
    finally:
        await client.close()
    # In order of time, each once: the chat's turn from the transcript, the summary from the
    # outbox (it never entered the conversation).
    order = [
        text.index(s) for s in ("good morning", "echo: good morning", "<strong>three</strong>")
    ]
    assert order == sorted(order)
    assert text.count("echo: good morning") == 1


def test_a_group_message_is_shown_as_its_sender_wrote_it():
    from gateway.web.transcript_html import message_html

    text = (
        "[Earlier in this chat, not addressed to you]\nAda: lunch?\n\n"
        '[Mon 2026-11-23 12:00 CET · <i>Bob</i> (id 7)]\nsure [file received: "menu.pdf", '
        "saved at inbox/telegram-group-5/2026-11-23/menu.pdf]"
    )
    shown = message_html({"role": "user", "content": text}, "2026-11-23 12:00")
    assert "<b>&lt;i&gt;Bob&lt;/i&gt;</b> <time>2026-11-23 12:00</time>" in shown
    assert "<summary>Earlier in the chat</summary><pre>Ada: lunch?</pre>" in shown
    assert '<p class=pre>sure</p><p class="file">📎 menu.pdf</p>' in shown
    assert "2026-11-23 12:00 CET" not in shown and "saved at" not in shown


def test_only_real_images_become_pictures():
    from gateway.web.transcript_html import message_html

    def image(kind: str, data: str) -> str:
        source = {"type": "base64", "media_type": kind, "data": data}
        return message_html({"role": "user", "content": [{"type": "image", "source": source}]})

    assert 'src="data:image/png;base64,iVBORw0KGgo="' in image("image/png", "iVBORw0KGgo=")
    assert "<img" not in image("text/html", "PHNjcmlwdD4=")
    assert "<img" not in image("image/png", 'x" onerror="alert(1)')


def test_every_kind_of_chat_is_named():
    from gateway.chat_names import who_is
    from gateway.contract.events import SessionKey

    known = {"telegram": {"77": {"name": "Eve\x1b[31m"}}}
    names = {
        "telegram:private:42": "You",
        "web:private:owner": "You (this page's chat)",
        "terminal:private:local": "You (terminal)",
        "discord:dm:5": "You",
        "telegram:guest:77": "Eve\\x1b[31m (guest)",
        "telegram:guest:78": "A Telegram guest (id 78)",
        "telegram:group:-100:topic:7": "Telegram group, topic 7",
        "discord:thread:9": "Discord thread",
        "cron:private:daily-summary": "Scheduled job daily-summary",
    }
    assert {k: who_is(SessionKey.parse(k), known) for k in names} == names


async def test_every_file_corvid_makes_is_for_its_user_alone(control, fake_api, home):
    """The manual promises 0600 files in 0700 folders, whatever the umask."""
    app, channel, client = control
    assert (await client.post("/chat", {"text": "hello from the page"}))[0] == 303
    fake_api.enqueue(Reply(tool_calls=[("memory_search", {"query": "bank"})]), Reply("none"))
    channel.push("what about the bank?")
    await channel.wait_sent(1)
    await app.idle()
    made = [p for p in home.rglob("*") if p.is_file() or p.is_dir()]
    assert {p.name for p in made} >= {"web_chat.jsonl", "index.sqlite", "scheduler.sqlite"}
    loose = [f"{p.relative_to(home)} {p.stat().st_mode & 0o777:o}" for p in made
             if p.stat().st_mode & 0o077]  # fmt: skip
    assert loose == [], loose
