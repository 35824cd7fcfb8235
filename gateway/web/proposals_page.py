"""Consolidation's proposals on the Memory page: changes, sources, diff, apply or reject."""

from __future__ import annotations

import asyncio

from aiohttp import web

from agent.memory.consolidation import Curator
from gateway.contract.errors import ToolError
from gateway.web.html import esc, form
from gateway.web.respond import BACKEND, see_other

ANSWERER = "the owner, on the control page"


def routes(app: web.Application) -> None:
    app.router.add_post("/memory/proposal", answer)


def section(curator: Curator | None, csrf: str) -> str:
    """The Memory page's "Proposals" section ("" when none waits)."""
    if curator is None:
        return ""
    pending = curator.pending()
    if not pending:
        return ""
    parts = ["<h2>Proposals</h2>"]
    for proposal in pending:
        buttons = form(
            "/memory/proposal", csrf, "Apply all", {"id": proposal.id, "action": "apply"}
        ) + form("/memory/proposal", csrf, "Reject", {"id": proposal.id, "action": "reject"})
        parts.append(
            f'<section class="proposal" id="proposal-{esc(proposal.id)}">'
            f"<pre>{esc(proposal.summary())}</pre>"
            f"<pre>{esc(curator.preview(proposal))}</pre><p>{buttons}</p></section>"
        )
    return "".join(parts)


async def answer(request: web.Request) -> web.StreamResponse:
    backend = request.app[BACKEND]
    curator = backend.curator
    data = await request.post()
    pid, action = str(data.get("id", "")), str(data.get("action", ""))
    if curator is None or action not in ("apply", "reject"):
        raise web.HTTPNotFound(text="No such proposal.\n")
    try:
        if action == "apply":
            done = await asyncio.to_thread(curator.apply, pid, ANSWERER)
            backend.edited(backend.clock.now())
            if not done.done:
                return see_other("/memory", problem=done.said())
            return see_other("/memory", ok=done.said())
        await asyncio.to_thread(curator.reject, pid, ANSWERER)
    except ToolError as exc:
        return see_other("/memory", problem=str(exc))
    return see_other("/memory", ok=f"Rejected memory proposal {pid}.")
