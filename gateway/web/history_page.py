"""A workspace file's history on the control page: each change, its diff, and putting it back."""

from __future__ import annotations

import asyncio
from urllib.parse import quote

from aiohttp import web

from agent.workspace.changes import Author, Change
from agent.workspace.history import History
from gateway.contract.errors import ToolError
from gateway.contract.events import OWNER
from gateway.infra.times import local_time
from gateway.web.html import esc, form, page
from gateway.web.respond import BACKEND, GUARD, flash, html_response, see_other

RESTORER = "the owner, on the control page"
SHOWN = 50


def routes(app: web.Application) -> None:
    app.router.add_get("/memory/history", history_page)
    app.router.add_post("/memory/restore", restore)


def link(rel: str) -> str:
    return f"/memory/history?path={quote(rel)}"


def _history(request: web.Request) -> History:
    history = request.app[BACKEND].history
    if history is None:
        raise web.HTTPNotFound(text="This gateway keeps no history.\n")
    return history


def _rows(history: History, changes: list[Change], csrf: str) -> str:
    out = []
    for change in changes:
        by = esc(change.who) + (f" <em>({esc(change.what)})</em>" if change.what else "")
        button = form(
            "/memory/restore",
            csrf,
            f"Restore #{change.id}",
            {"path": change.path, "at": str(change.id)},
        )
        diff = history.diff(change) or "(no difference in text)"
        out.append(
            f'<section class="change" id="change-{change.id}">'
            f"<h2>#{change.id} · {esc(local_time(change.at, history.tz, seconds=True))}</h2>"
            f"<p>{by}</p>{button}<pre>{esc(diff)}</pre></section>"
        )
    return "".join(out)


async def history_page(request: web.Request) -> web.StreamResponse:
    history, csrf = _history(request), request.app[GUARD].csrf
    rel = request.query.get("path", "").strip().lstrip("/")
    await asyncio.to_thread(history.look)
    changes = await asyncio.to_thread(history.changes, OWNER, rel or None, SHOWN)
    title = f"History of {rel}" if rel else "History"
    if not changes:
        body = '<p class="empty">No change has been recorded yet.</p>'
    else:
        body = await asyncio.to_thread(_rows, history, changes, csrf)
    return html_response(page(title, flash(request) + body, active="/memory", csrf=csrf))


async def restore(request: web.Request) -> web.StreamResponse:
    history = _history(request)
    form_data = await request.post()
    rel, at = str(form_data.get("path", "")), str(form_data.get("at", ""))
    try:
        change = await asyncio.to_thread(history.restore, OWNER, rel, at, Author(RESTORER))
    except ToolError as exc:
        return see_other(link(rel), problem=str(exc))
    request.app[BACKEND].edited(request.app[BACKEND].clock.now())
    return see_other(link(rel), ok=f"{rel} is back as it was after #{change.id}.")
