"""The open loops on the control page's Memory page, with buttons to close one."""

from __future__ import annotations

from urllib.parse import quote

from aiohttp import web

from agent.loops.book import Book, State
from agent.loops.store import loops_path, open_loops
from agent.loops.views import describe
from gateway.contract.errors import ToolError
from gateway.contract.events import OWNER, Audience
from gateway.web.backend import Backend
from gateway.web.html import esc, form
from gateway.web.respond import BACKEND, see_other

SHOWN = 50


def routes(app: web.Application) -> None:
    app.router.add_post("/memory/loop", close)


def section(backend: Backend, csrf: str) -> str:
    """The Memory page's "Open loops" section."""
    now = backend.clock.now().astimezone(backend.config.tz)
    parts = ["<h2>Open loops</h2>"]
    shown = 0
    for audience, book in backend.loop_books():
        loops = open_loops(book)
        rel = loops_path(audience) or ""
        whose = "Yours" if audience.private else f"The chat {audience.chat}"
        link = f'<a href="/memory/file?path={quote(rel)}">{esc(rel)}</a>'
        if not loops and not book.problems:
            continue
        shown += 1
        rows = "".join(
            f"<li>{esc(describe(lp, now))} "
            + form("/memory/loop", csrf, "Done", _fields(audience, lp.id, State.DONE))
            + " "
            + form("/memory/loop", csrf, "Drop", _fields(audience, lp.id, State.DROPPED))
            + "</li>"
            for lp in loops[:SHOWN]
        )
        parts.append(f"<h3>{esc(whose)} ({link})</h3><ul>{rows}</ul>{_problems(book)}")
    if not shown:
        parts.append(
            '<p class="empty">No open loops. The assistant keeps them when something is '
            "promised or to be followed up.</p>"
        )
    return "".join(parts)


def _fields(audience: Audience, number: int | None, state: State) -> dict[str, str]:
    return {"chat": audience.chat or "", "id": str(number), "state": state.value}


def _problems(book: Book) -> str:
    if not book.problems:
        return ""
    items = "".join(f"<li>{esc(p)}</li>" for p in book.problems)
    return f"<p>Lines not read as loops (kept as they are):</p><ul>{items}</ul>"


async def close(request: web.Request) -> web.StreamResponse:
    backend = request.app[BACKEND]
    data = await request.post()
    chat, number = str(data.get("chat", "")), str(data.get("id", ""))
    try:
        state = State(str(data.get("state", "")))
    except ValueError:
        raise web.HTTPNotFound(text="No such loop.\n") from None
    audience = Audience(chat) if chat else OWNER
    if state == State.OPEN or not number.isdigit() or loops_path(audience) is None:
        raise web.HTTPNotFound(text="No such loop.\n")
    try:
        said = await backend.close_loop(audience, int(number), state)
    except ToolError as exc:
        return see_other("/memory", problem=str(exc))
    return see_other("/memory", ok=said)
