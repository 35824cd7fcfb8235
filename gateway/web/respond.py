"""What every page of the control page shares: where the backend and the guard are kept on the
aiohttp app, and the two answers a page gives (a page of HTML, a redirect after a post)."""

from __future__ import annotations

import asyncio

from aiohttp import web

from gateway.web.backend import Backend
from gateway.web.guard import Guard

BACKEND = web.AppKey("backend", Backend)
GUARD = web.AppKey("guard", Guard)
STOPPING = web.AppKey("stopping", asyncio.Event)


def html_response(text: str, status: int = 200) -> web.Response:
    return web.Response(text=text, status=status, content_type="text/html", charset="utf-8")


def see_other(location: str) -> web.Response:
    return web.Response(status=303, headers={"Location": location})
