"""The Actions page: requests waiting for the owner, and the audit trail."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from agent.approvals.audit import always_allowed, recent
from gateway.infra.times import local_iso
from gateway.services.naming import Names, names
from gateway.web.html import esc, form, page, table
from gateway.web.respond import BACKEND, GUARD, flash, html_response, see_other

if TYPE_CHECKING:
    from agent.approvals.gate import ApprovalRequest

SHOWN = 200  # lines of the trail on the page
_ANSWERS = {"once": "Approve once", "always": "Always for this tool", "deny": "Deny"}


def routes(app: web.Application) -> None:
    app.router.add_get("/actions", actions_page)
    app.router.add_post("/actions/decide", decide)


def key_html_or_text(chat: str, named: Names) -> str:
    """A chat by name, its key beside it small (as the other pages show one)."""
    return f"<b>{esc(named.of_key(chat))}</b> <small><code>{esc(chat)}</code></small>"


def _waiting_row(req: ApprovalRequest, csrf: str, named: Names) -> tuple[str, ...]:
    """One request waiting for an answer: the call whole, its chat, what it read, the buttons."""
    buttons = " ".join(
        form("/actions/decide", csrf, label, {"id": req.id, "answer": answer})
        for answer, label in _ANSWERS.items()
    )
    what = f"<code>{esc(req.tool)}</code><pre>{esc(req.arguments)}</pre>"
    if req.why:
        what += f"<p>{esc(req.why)}</p>"
    if req.diff:
        what += f"<pre>{esc(req.diff)}</pre>"
    read = esc(", ".join(req.sources)) if req.sources else "nothing from outside"
    chat = key_html_or_text(str(req.chat), named)
    return (f"<code>{esc(req.id)}</code>", what, chat, read, buttons)


async def actions_page(request: web.Request) -> web.StreamResponse:
    backend, csrf = request.app[BACKEND], request.app[GUARD].csrf
    named = names(backend.config)
    waiting = [_waiting_row(req, csrf, named) for req in backend.approvals_waiting()]
    trail = [
        (
            esc(local_iso(a.at, backend.config.tz, seconds=True)),
            esc(a.event),
            f"<code>{esc(a.tool)}</code>",
            key_html_or_text(a.chat, named),
            f"<small>{esc(a.arguments)}</small>",
            esc(a.sources),
            esc(a.detail),
        )
        for a in recent(backend.config.layout.actions, SHOWN)
    ]
    allowed = always_allowed(backend.config.layout.actions)
    body = (
        flash(request)
        + "<h2>Waiting for your answer</h2>"
        + table(
            ("Request", "Call", "Chat", "Had read", ""),
            waiting,
            "No request is waiting for your answer.",
        )
        + "<h2>Recent actions</h2>"
        + table(
            ("When", "What", "Tool", "Chat", "Arguments", "Had read", "Note"),
            trail,
            "Nothing recorded yet: no approval was asked and no command was run.",
        )
        + "<h2>Allowed always</h2>"
        + (
            "<p>In conversations that read nothing from outside your own chats: "
            + ", ".join(f"<code>{esc(t)}</code>" for t in allowed)
            + "</p>"
            if allowed
            else '<p class="empty">No tool is allowed always.</p>'
        )
    )
    return html_response(page("Actions", body, active="/actions", csrf=csrf))


async def decide(request: web.Request) -> web.StreamResponse:
    backend = request.app[BACKEND]
    data = await request.post()
    request_id, answer = str(data.get("id", "")), str(data.get("answer", ""))
    problem = backend.decide_approval(request_id, answer)
    if problem is not None:
        return see_other("/actions", problem=f"Not taken: {problem}.")
    return see_other("/actions", ok=f"{_ANSWERS.get(answer, answer)}: request {request_id}.")
