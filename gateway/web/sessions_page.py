"""The sessions page: every conversation, a transcript viewer, and a fresh start for a session."""

from __future__ import annotations

import math
from urllib.parse import quote

from aiohttp import web

from gateway.chat_names import read_titles, who_is
from gateway.contract.events import InboundMessage, SessionKey, parse_command
from gateway.infra.times import local_stamp
from gateway.web.html import esc, form, page, table
from gateway.web.people import all_earlier, earlier, ended, guests, key_html
from gateway.web.respond import BACKEND, GUARD, flash, html_response, see_other
from gateway.web.transcript_html import entry_html, when_shown

PAGE_LINES = 100  # transcript lines per page


def routes(app: web.Application) -> None:
    app.router.add_get("/sessions", sessions_page)
    app.router.add_get("/sessions/view", transcript_page)
    app.router.add_get("/sessions/new", confirm_fresh)
    app.router.add_post("/sessions/new", fresh_session)


def scope_of(key: SessionKey) -> str:
    if key.job:
        return "job"
    if key.topic is not None:
        return "topic"
    return str(key.scope)


async def sessions_page(request: web.Request) -> web.StreamResponse:
    backend, csrf = request.app[BACKEND], request.app[GUARD].csrf
    window = backend.config.llm.context_window
    rows = []
    known, titles = guests(backend.pairing), read_titles(backend.config.layout.chat_names)
    for s in backend.sessions():
        who = key_html(s.key, known, titles)
        link = f'<a href="/sessions/view?key={quote(str(s.key))}">{who}</a>'
        now = "answering" if backend.busy(s.key) else ""
        if queued := backend.queued(s.key):
            now += f", {queued} queued"
        cache = "—" if s.cache_share is None else f"{100 * s.cache_share:.0f}%"
        when = local_stamp(s.last_active, backend.config.tz)
        rows.append(
            (
                link,
                esc(scope_of(s.key)),
                esc(when),
                f"{s.context_tokens:,} ({100 * s.context_tokens / window:.0f}%)",
                str(s.turns),
                cache,
                esc(now),
            )
        )
    body = flash(request) + table(
        ("Session", "Scope", "Last active", "Context (of window)", "Turns", "From cache", "Now"),
        rows,
        "No conversations yet.",
    )
    tz = backend.config.tz
    past = table(
        ("Chat", "Ended"),
        (
            (_past_link(key, stamp, who_is(key, known, titles), when_shown(when, tz)), esc(key))
            for key, stamp, when in all_earlier(backend.transcripts())
        ),
        "None yet: Start a fresh session (or /new in a chat) keeps the old one here.",
    )
    body += f"<h2>Earlier sessions</h2>{past}"
    return html_response(page("Sessions", body, active="/sessions", csrf=csrf))


def _past_link(key: SessionKey, stamp: str, who: str, when: str) -> str:
    where = f"/sessions/view?key={quote(str(key))}&amp;until={stamp}"
    return f'<a href="{where}">{esc(who)}, until {esc(when)}</a>'


def _key(raw: str) -> SessionKey:
    try:
        return SessionKey.parse(raw)
    except ValueError:
        raise web.HTTPNotFound(text="No such session.\n") from None


async def transcript_page(request: web.Request) -> web.StreamResponse:
    backend, csrf = request.app[BACKEND], request.app[GUARD].csrf
    key = _key(request.query.get("key", ""))
    tz, known = backend.config.tz, guests(backend.pairing)
    titles = read_titles(backend.config.layout.chat_names)
    folder = backend.transcripts()
    until = request.query.get("until")  # an earlier session of the chat, by when it ended
    if until is not None and ended(until) is None:
        raise web.HTTPNotFound(text="No such session.\n")
    path = backend.transcript(key) if until is None else folder / f"{key}.{until}.jsonl"
    past = earlier(folder, key)
    try:
        lines = path.read_bytes().splitlines()
    except FileNotFoundError:
        if until is not None or not past:
            raise web.HTTPNotFound(text="No such session.\n") from None
        lines = []  # started afresh, and nothing said since
    pages = max(1, math.ceil(len(lines) / PAGE_LINES))
    try:
        number = min(max(1, int(request.query.get("page", pages))), pages)
    except ValueError:
        number = pages
    shown = lines[(number - 1) * PAGE_LINES : number * PAGE_LINES]
    who = "Scheduled job" if key.channel == "cron" else None
    entries = "".join(entry_html(raw, tz, who) for raw in shown)
    nav = _pager(key, number, pages, until)
    if until is not None:
        what = f"An earlier session of this chat, ended {when_shown(ended(until), tz)}."
    elif lines:
        what = (
            f'<form method="get" action="/sessions/new" class="inline">'
            f'<input type="hidden" name="key" value="{esc(key)}">'
            "<button>Start a fresh session</button></form>"
        )
    else:
        what = "Nothing said since the last fresh start."
    listed = "".join(
        f"<li>{_past_link(key, stamp, who_is(key, known, titles), when_shown(when, tz))}</li>"
        for stamp, when in past
        if stamp != until
    )
    if until is not None:
        current = f'<li><a href="/sessions/view?key={quote(str(key))}">The current one</a></li>'
        listed = current + listed
    others = f"<h2>Other sessions of this chat</h2><ul>{listed}</ul>" if listed else ""
    body = (
        f"<p><code>{esc(key)}</code> · {len(lines):,} lines, page {number} of {pages} (newest "
        f'last). {what}</p>{nav}<div class="transcript">{entries}</div>{nav}{others}'
    )
    return html_response(page(who_is(key, known, titles), body, active="/sessions", csrf=csrf))


async def confirm_fresh(request: web.Request) -> web.StreamResponse:
    """Ask before a fresh start: the conversation so far leaves the model's context."""
    backend, csrf = request.app[BACKEND], request.app[GUARD].csrf
    key = _key(request.query.get("key", ""))
    who = who_is(key, guests(backend.pairing), read_titles(backend.config.layout.chat_names))
    back = f"/sessions/view?key={quote(str(key))}"
    body = (
        f"<p>{esc(who)} (<code>{esc(key)}</code>): the conversation so far is summarised into "
        "the log, the chat is told, and the next message starts a new session. The old one "
        "stays readable under Earlier sessions.</p><p>"
        + form("/sessions/new", csrf, "Yes, start afresh", {"key": str(key), "confirm": "1"})
        + f' <a class="button" href="{esc(back)}">Keep the session</a></p>'
    )
    return html_response(page("Start a fresh session?", body, active="/sessions", csrf=csrf))


def _pager(key: SessionKey, number: int, pages: int, until: str | None = None) -> str:
    also = f"&amp;until={until}" if until else ""

    def link(n: int, label: str) -> str:
        return f'<a href="/sessions/view?key={quote(str(key))}{also}&amp;page={n}">{label}</a>'

    parts = []
    if number > 1:
        parts += [link(1, "« oldest"), link(number - 1, "‹ older")]
    if number < pages:
        parts += [link(number + 1, "newer ›"), link(pages, "newest »")]
    return f'<p class="pager">{" · ".join(parts)}</p>' if parts else ""


async def fresh_session(request: web.Request) -> web.StreamResponse:
    backend, form_data = request.app[BACKEND], await request.post()
    key = _key(str(form_data.get("key", "")))
    if form_data.get("confirm") != "1":
        return see_other(f"/sessions/new?key={quote(str(key))}")
    if not backend.serves(key.channel):
        problem = f"{key.channel} is not running here, so this session cannot be restarted now."
        return see_other("/sessions", problem=problem)
    # The same /new the chat has: it waits for its turn behind the session's messages, saves
    # a summary of the old session to the log, and tells the chat it started afresh.
    new = InboundMessage(
        key, "/new", sender_id="owner", sender_name="control page", command=parse_command("/new")
    )
    await backend.handle(new)
    return see_other("/sessions", ok=f"{key}: started a fresh session.")
