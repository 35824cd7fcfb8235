"""The control page's address held from the start, its server started by the first connection
(``gateway/web/listener.py``)."""

from __future__ import annotations

import asyncio
import logging

import aiohttp
import pytest

from gateway.web import listener
from gateway.web.access import SignedIn, load_token
from tests.gateway.web.conftest import WEB, ControlClient


async def test_the_first_connection_starts_the_server_and_is_served(start_gateway):
    app, _ = await start_gateway(web=WEB)
    assert app.web is not None and app.web.server is None  # listening, nothing imported yet
    # Several browsers at once while the server is still being started: each is served.
    clients = [ControlClient(app.web.url, app.web.token) for _ in range(3)]
    try:
        answers = await asyncio.gather(*(c.get("/login") for c in clients))
        assert [status for status, _, _ in answers] == [200, 200, 200]
        assert all("Sign in" in text for _, text, _ in answers)
        assert app.web.server is not None and app.web.server.port == app.web.port
        await clients[0].sign_in()
        status, _, _ = await clients[0].get("/")
        assert status == 200
    finally:
        for client in clients:
            await client.close()


async def test_a_token_made_before_the_server_starts_is_the_one_it_takes(home, start_gateway):
    app, _ = await start_gateway(web=WEB)
    assert app.web is not None
    old = app.web.token
    signed_in = SignedIn(home / "state" / "web_sessions.json")
    signed_in.new()
    assert app.web.rotate_token()
    assert app.web.server is None
    assert app.web.token != old and load_token(home / "state" / "web_token") == app.web.token
    assert SignedIn(home / "state" / "web_sessions.json")._ids == {}  # every browser out
    refused = ControlClient(app.web.url, old)
    taken = ControlClient(app.web.url, app.web.token)
    try:
        status, text, _ = await refused.get("/login", params={"token": old})
        assert status == 403 and "not right" in text
        await taken.sign_in()
    finally:
        await refused.close()
        await taken.close()


async def test_stopped_before_anyone_came_the_port_is_let_go(start_gateway):
    app, _ = await start_gateway(web=WEB)
    assert app.web is not None
    port = app.web.port
    await app.stop()
    with pytest.raises(OSError):
        await asyncio.open_connection("127.0.0.1", port)
    again, _ = await start_gateway(web={"enabled": True, "port": port})  # free to take again
    assert again.web is not None and again.web.port == port


async def test_a_server_that_cannot_start_is_said_and_the_chats_go_on(
    start_gateway, monkeypatch, caplog
):
    def broken() -> None:
        raise ImportError("aiohttp is damaged")

    monkeypatch.setattr(listener, "import_server", broken)
    app, channel = await start_gateway(web=WEB)
    assert app.web is not None
    url = app.web.url
    with caplog.at_level(logging.ERROR, logger="gateway.web.listener"):
        async with aiohttp.ClientSession() as http:
            with pytest.raises(aiohttp.ClientError):
                async with http.get(url + "login") as response:
                    await response.read()
    assert "control page unavailable: its server could not start" in caplog.text
    assert "aiohttp is damaged" in caplog.text
    channel.push("still here?")
    assert (await channel.wait_sent(1))[0].text == "echo: still here?"
