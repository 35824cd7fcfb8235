"""Who may use the control page: the token, the cookie, the Host header, CSRF."""

from __future__ import annotations

import asyncio
import socket
import stat

import pytest
from yarl import URL

from gateway.config.loader import parse_config
from gateway.contract.errors import ConfigError
from gateway.web.guard import COOKIE
from tests.gateway.web.conftest import WEB, ControlClient

PAGES = ("/", "/memory", "/memory/file?path=MEMORY.md", "/jobs", "/pairing", "/config")


async def test_no_page_without_signing_in(control):
    app, _, signed_in = control
    stranger = ControlClient(app.web.url, "wrong")
    try:
        for path in PAGES:
            status, _, r = await stranger.get(path)
            assert (status, r.headers["Location"]) == (303, "/login"), path
        status, text, _ = await stranger.get("/events/overview")
        assert status == 401
        status, _, _ = await stranger.post("/pairing/approve", {"code": "X"}, csrf=False)
        assert status == 401
        status, text, _ = await stranger.get("/login", params={"token": "not-the-token"})
        assert status == 403 and "not right" in text
        assert not stranger.http.cookie_jar.filter_cookies(URL(app.web.url))
        # The same pages open once signed in.
        for path in PAGES:
            status, _, _ = await signed_in.get(path)
            assert status == 200, path
    finally:
        await stranger.close()


async def test_signing_in_sets_a_strict_http_only_cookie_and_drops_the_token(control):
    app, _, _ = control
    client = ControlClient(app.web.url, app.web.token)
    try:
        async with client.http.get(f"{client.base}/login", params={"token": app.web.token},
                                   allow_redirects=False) as r:  # fmt: skip
            assert r.status == 303 and r.headers["Location"] == "/"
            cookie = r.cookies[COOKIE]
        assert cookie["httponly"] and cookie["samesite"] == "Strict"
        assert app.web.token not in cookie.value  # derived, not the token itself
        # The login form takes the token too.
        other = ControlClient(app.web.url, app.web.token)
        status, _, r = await other.post("/login", {"token": app.web.token}, csrf=False)
        assert status == 303 and COOKIE in r.cookies
        await other.close()
    finally:
        await client.close()


async def test_the_token_is_private_and_survives_a_restart(home, start_gateway):
    app, _ = await start_gateway(web=WEB)
    path = home / "state" / "web_token"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text().strip() == app.web.token and len(app.web.token) >= 40
    await app.stop()
    again, _ = await start_gateway(web=WEB)
    assert again.web.token == app.web.token


async def test_another_host_name_is_refused(control):
    """DNS rebinding: a page on evil.example whose name now points at 127.0.0.1."""
    _, _, client = control
    status, _, _ = await client.get("/", headers={"Host": "evil.example"})
    assert status == 421
    status, _, _ = await client.get("/", headers={"Host": "localhost:1234"})
    assert status == 200


async def test_changes_need_the_csrf_token_and_our_origin(control):
    app, _, client = control
    store = app.web.backend.pairing
    req, _ = store.request("telegram", "777", "Mallory")
    assert req is not None
    status, _, _ = await client.post("/pairing/approve", {"code": req.code}, csrf=False)
    assert status == 403
    wrong = {"code": req.code, "csrf": "0" * 64}
    status, _, _ = await client.post("/pairing/approve", wrong, csrf=False)
    assert status == 403
    for headers in ({"Origin": "http://evil.example"}, {"Sec-Fetch-Site": "cross-site"}):
        status, text, _ = await client.post("/pairing/approve", {"code": req.code}, headers=headers)
        assert status == 403 and "another site" in text
    assert not store.is_approved("telegram", "777")
    status, _, _ = await client.post(
        "/pairing/approve", {"code": req.code}, headers={"Origin": client.base}
    )
    assert status == 303 and store.is_approved("telegram", "777")


async def test_every_answer_carries_the_security_headers(control):
    _, _, client = control
    for path in ("/", "/login", "/static/corvid.css"):
        _, _, r = await client.get(path)
        assert "frame-ancestors 'none'" in r.headers["Content-Security-Policy"], path
        assert r.headers["X-Frame-Options"] == "DENY"
        assert r.headers["Referrer-Policy"] == "same-origin"


async def test_a_busy_port_leaves_the_gateway_running(start_gateway, caplog):
    first, _ = await start_gateway(web=WEB)
    second, channel = await start_gateway(web={"enabled": True, "port": first.web.port})
    assert second.web is None
    assert "control page unavailable" in caplog.text and "web.port" in caplog.text
    channel.push("still here?")
    sent = await channel.wait_sent(1)
    assert sent[0].text == "echo: still here?"


@pytest.mark.parametrize(
    ("web", "key"),
    [
        ({"host": "0.0.0.0"}, "web.host"),
        ({"host": "192.168.1.5"}, "web.host"),
        ({"port": 70000}, "web.port"),
        ({"hostnames": ["bad/name"]}, "web.hostnames[0]"),
    ],
)
def test_config_refuses_an_exposed_or_malformed_page(tmp_path, web, key):
    with pytest.raises(ConfigError) as caught:
        parse_config({"web": web}, home=tmp_path, environ={})
    assert caught.value.key == key


def test_listening_beyond_loopback_must_be_asked_for(tmp_path):
    config = parse_config(
        {"web": {"host": "0.0.0.0", "allow_remote": True}}, home=tmp_path, environ={}
    )
    assert config.web.host == "0.0.0.0"


async def test_corvid_web_prints_the_address_that_signs_in(home, start_gateway, capsys):
    from gateway.ops.cli import main

    app, _ = await start_gateway(web=WEB)
    assert await asyncio.to_thread(main, ["web", "--home", str(home)], {}) == 0
    url = capsys.readouterr().out.strip()
    assert url == f"{app.web.url}login?token={app.web.token}"
    client = ControlClient(app.web.url, "")
    try:
        async with client.http.get(url, allow_redirects=False) as r:
            assert r.status == 303 and COOKIE in r.cookies
    finally:
        await client.close()
    await app.stop()
    # Not running: the address the page will have, on a port free now (corvid web names no
    # port another program holds).
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (home / "config.yaml").write_text(f"web:\n  port: {port}\n")
    assert await asyncio.to_thread(main, ["web", "--home", str(home)], {}) == 0
    out, err = capsys.readouterr()
    assert out.strip() == f"http://127.0.0.1:{port}/login?token={app.web.token}"
    assert "not running" in err


@pytest.mark.parametrize(
    "host",
    ["127.evil.example", "127.0.0.1.nip.io", "[::1]x", "127.0.0.1:8787:9", "localhost:port",
     "evil.example:80", ""],
)  # fmt: skip
async def test_only_the_pages_own_names_pass_the_host_check(control, host):
    _, _, client = control
    status, _, r = await client.get("/login", headers={"Host": host})
    assert status == 421
    assert r.headers["X-Frame-Options"] == "DENY"  # refusals carry the headers too


@pytest.mark.parametrize("host", ["localhost.", "LOCALHOST:1", "127.0.0.2", "[::1]:80"])
async def test_loopback_names_in_any_spelling_pass(control, host):
    _, _, client = control
    status, _, _ = await client.get("/", headers={"Host": host})
    assert status == 200


async def test_signing_out_ends_the_session_on_the_server(control, home, start_gateway):
    app, _, client = control
    other = ControlClient(app.web.url, app.web.token)
    await other.sign_in()
    try:
        cookie = client.http.cookie_jar.filter_cookies(URL(app.web.url))[COOKIE].value
        status, _, r = await client.post("/logout", {})
        assert status == 303 and r.headers["Location"] == "/login"
        # Even a copy of the old cookie (one another service on this host was sent) is dead.
        status, _, _ = await client.get("/", cookies={COOKIE: cookie})
        assert status == 303
        assert (await other.get("/"))[0] == 200  # the other browser is still in
        # Asked first: without the confirmation, nobody is signed out.
        status, _, r = await other.post("/logout", {"everywhere": "1"})
        assert (status, r.headers["Location"]) == (303, "/logout/everywhere")
        assert (await other.get("/"))[0] == 200
        await other.post("/logout", {"everywhere": "1", "confirm": "1"})
        assert (await other.get("/"))[0] == 303
    finally:
        await other.close()


async def test_a_session_survives_a_restart(home, start_gateway):
    app, _ = await start_gateway(web=WEB)
    client = ControlClient(app.web.url, app.web.token)
    await client.sign_in()
    cookie = client.http.cookie_jar.filter_cookies(URL(app.web.url))[COOKIE].value
    await client.close()
    await app.stop()
    again, _ = await start_gateway(web=WEB)
    client = ControlClient(again.web.url, again.web.token)
    try:
        status, _, _ = await client.get("/", cookies={COOKIE: cookie})
        assert status == 200
        status, _, _ = await client.get("/", cookies={COOKIE: "made-up"})
        assert status == 303
    finally:
        await client.close()
    mode = (home / "state" / "web_sessions.json").stat().st_mode
    assert stat.S_IMODE(mode) == 0o600


async def test_errors_carry_the_security_headers_and_a_huge_sign_in_is_refused(control):
    app, _, client = control
    status, _, r = await client.get("/no/such/page")
    assert status == 404 and "frame-ancestors 'none'" in r.headers["Content-Security-Policy"]
    stranger = ControlClient(app.web.url, "")
    try:
        status, _, _ = await stranger.post("/login", {"token": "x" * 10_000}, csrf=False)
        assert status == 413
    finally:
        await stranger.close()


def test_a_wildcard_host_is_reached_on_loopback():
    from gateway.web.access import address

    assert address("0.0.0.0", 8787) == "http://127.0.0.1:8787/"
    assert address("::", 8787) == "http://[::1]:8787/"
    assert address("corvid.example", 443) == "http://corvid.example:443/"


def test_an_event_cannot_start_a_field_of_its_own():
    from gateway.web.overview import sse

    raw = sse("overview", "a.png\rretry: 1\revent: x\r\ndata: y\nz")
    assert raw == (
        b"event: overview\ndata: a.png\ndata: retry: 1\ndata: event: x\ndata: data: y\ndata: z\n\n"
    )
