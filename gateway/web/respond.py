"""What every page of the control page shares: the app's keys, and the answers a page gives."""

from __future__ import annotations

import asyncio
import json
from urllib.parse import quote, unquote

from aiohttp import web

from gateway.web.backend import Backend
from gateway.web.guard import Guard, Handler

BACKEND = web.AppKey("backend", Backend)
GUARD = web.AppKey("guard", Guard)
STOPPING = web.AppKey("stopping", asyncio.Event)
# The outcome of an action travels to the next page in a short-lived cookie, never in the
# address (a reload would show it again).
FLASH = "corvid_flash"
FLASH_SHOWN = web.RequestKey("flash_shown", bool)


def html_response(text: str, status: int = 200) -> web.Response:
    return web.Response(text=text, status=status, content_type="text/html", charset="utf-8")


def see_other(location: str, *, ok: str = "", problem: str = "") -> web.Response:
    """Sent on to ``location`` (after a change: post, redirect, get), with the outcome to show
    there once."""
    response = web.Response(status=303, headers={"Location": location})
    if ok or problem:
        said = quote(json.dumps({"ok": ok, "problem": problem}, ensure_ascii=False))
        response.set_cookie(FLASH, said, path="/", httponly=True, samesite="Strict", max_age=300)
    return response


def flash(request: web.Request) -> str:
    """The outcome of the action that led here, as a notice; shown once (the answer clears
    it)."""
    from gateway.web.html import outcome

    raw = request.cookies.get(FLASH)
    if raw is None:
        return ""
    request[FLASH_SHOWN] = True
    try:
        said = json.loads(unquote(raw))
        return outcome(str(said.get("ok", "")), str(said.get("problem", "")))
    except (ValueError, AttributeError):
        return ""


@web.middleware
async def flash_read(request: web.Request, handler: Handler) -> web.StreamResponse:
    """A page that showed the outcome clears it (in the answer's headers, so not in the
    response-prepare signal: aiohttp has written the cookies by then)."""
    response = await handler(request)
    if request.get(FLASH_SHOWN):
        response.del_cookie(FLASH, path="/")
    return response
