"""The control page, served by a real gateway on a free loopback port, and an HTTP client."""

from __future__ import annotations

import html
import re
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

WEB = {"enabled": True, "port": 0}


class ControlClient:
    """Plain HTTP to the control page (no browser): redirects are not followed, so a test sees
    each answer as sent."""

    def __init__(self, base: str, token: str) -> None:
        self.base = base.rstrip("/")
        self.token = token
        # unsafe: keep cookies set by an IP address (127.0.0.1), as a browser does.
        self.http = aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))

    async def close(self) -> None:
        await self.http.close()

    async def sign_in(self) -> None:
        async with self.http.get(f"{self.base}/login", params={"token": self.token},
                                 allow_redirects=False) as r:  # fmt: skip
            assert r.status == 303, await r.text()

    async def get(self, path: str, **kw: Any) -> tuple[int, str, aiohttp.ClientResponse]:
        async with self.http.get(self.base + path, allow_redirects=False, **kw) as r:
            return r.status, await r.text(), r

    async def post(self, path: str, data: dict[str, str], *, csrf: bool = True, **kw: Any):
        if csrf:
            data = {**data, "csrf": await self.csrf()}
        async with self.http.post(self.base + path, data=data, allow_redirects=False, **kw) as r:
            return r.status, await r.text(), r

    async def shown(self, answer: aiohttp.ClientResponse) -> str:
        """The page a redirect leads to, as text: where the outcome of an action shows."""
        _, text, _ = await self.get(answer.headers["Location"])
        return html.unescape(text)

    async def csrf(self) -> str:
        _, text, _ = await self.get("/")
        found = re.search(r'<meta name="csrf" content="([0-9a-f]+)">', text)
        assert found, text
        return found.group(1)


@pytest.fixture
async def control(start_gateway) -> AsyncIterator[Any]:
    """A gateway with a RecordingChannel and the control page; a client signed in to it."""
    app, channel = await start_gateway(web=WEB)
    assert app.web is not None and app.web.port
    client = ControlClient(app.web.url, app.web.token)
    await client.sign_in()
    yield app, channel, client
    await client.close()
