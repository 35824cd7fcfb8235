"""How discord.py reaches the configured servers: Discord's own host names led to them, over
TLS checked against those names, and discord.py's voice warnings kept out of the log."""

from __future__ import annotations

import socket
from pathlib import Path

import aiohttp
import pytest
from aiohttp.abc import AbstractResolver, ResolveResult

from channels.base import ChannelStartError
from channels.discord.connection import (
    DISCORD_API,
    DISCORD_GATEWAY,
    VOICE_WARNINGS,
    Redirecting,
    connector,
    redirects,
)
from channels.discord.probe import probe
from gateway.contract.ports import Status
from tests.fakes.process import probe as run_script


def test_discord_s_own_servers_keep_discord_py_s_own_connector():
    assert redirects(DISCORD_API, DISCORD_GATEWAY) == {}
    assert redirects("https://discord.com:443/api/v10/", "wss://gateway.discord.gg") == {}
    assert connector(DISCORD_API, DISCORD_GATEWAY) is None


def test_other_servers_are_named_by_their_host_and_port():
    assert redirects("https://127.0.0.1:8443/api/v10", "wss://relay.example/") == {
        "discord.com": ("127.0.0.1", 8443),
        "gateway.discord.gg": ("relay.example", 443),
    }
    assert redirects(DISCORD_API, "wss://[::1]:9") == {"gateway.discord.gg": ("::1", 9)}


class Recording(AbstractResolver):
    """A resolver that answers every name with 192.0.2.1 and the port asked, and says what it
    was asked."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, int]] = []

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        self.asked.append((host, port))
        return [
            ResolveResult(
                hostname=host, host="192.0.2.1", port=port, family=family, proto=0, flags=0
            )
        ]

    async def close(self) -> None:
        pass


async def test_discord_s_names_on_the_https_port_are_led_to_the_configured_servers():
    fallback = Recording()
    targets = {"discord.com": ("127.0.0.1", 8443), "gateway.discord.gg": ("relay.example", 9)}
    resolver = Redirecting(targets, fallback)
    [api] = await resolver.resolve("discord.com", 443)
    [gateway] = await resolver.resolve("gateway.discord.gg.", 443)
    # The address and port are the target's; the name stays the one asked for.
    assert (api["hostname"], api["port"]) == ("discord.com", 8443)
    assert (gateway["hostname"], gateway["port"]) == ("gateway.discord.gg.", 9)
    assert fallback.asked == [("127.0.0.1", 8443), ("relay.example", 9)]
    # Any other name, and Discord's on another port, are resolved as asked.
    await resolver.resolve("cdn.discordapp.com", 443)
    await resolver.resolve("discord.com", 80)
    assert fallback.asked[2:] == [("cdn.discordapp.com", 443), ("discord.com", 80)]


async def test_an_unknown_name_resolves_as_aiohttp_s_own_resolver_resolves_it():
    threaded = aiohttp.ThreadedResolver()
    resolver = Redirecting({"discord.com": ("127.0.0.1", 8443)}, threaded)
    found = await resolver.resolve("localhost", 8080, socket.AF_INET)
    assert found == await threaded.resolve("localhost", 8080, socket.AF_INET)
    assert found and all(r["port"] == 8080 for r in found)
    [led] = await resolver.resolve("discord.com", 443, socket.AF_INET)
    assert (led["hostname"], led["host"], led["port"]) == ("discord.com", "127.0.0.1", 8443)


async def test_the_channel_asks_for_discord_s_names_over_tls_and_resumes_where_ready_says(
    discord_gateway, fake_discord
):
    await discord_gateway()
    assert fake_discord.base_url.startswith("https://127.0.0.1:")
    # The connections went to the fake's port, and asked for Discord's names in their TLS
    # hello: the certificate was checked against those.
    assert {"discord.com", "gateway.discord.gg"} <= set(fake_discord.server_names)
    assert fake_discord.gateway_paths == ["/"]
    assert await fake_discord.disconnect(4000)
    await fake_discord.wait_for(lambda: fake_discord.resumes == 1)
    assert fake_discord.gateway_paths == ["/", "/gateway"]  # READY's resume_gateway_url


async def test_a_server_whose_certificate_is_not_trusted_stops_start_up_clearly(
    discord_gateway, fake_discord, monkeypatch, tmp_path: Path
):
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "no-authority.pem"))
    with pytest.raises(ChannelStartError) as err:
        await discord_gateway()
    assert str(err.value).startswith(
        f"could not reach Discord at {fake_discord.base_url}/api/v10: its certificate is not "
        "one this machine trusts for discord.com and gateway.discord.gg"
    )
    assert fake_discord.calls == []  # nothing was sent to a server that could not be checked


async def test_doctor_says_when_the_certificate_is_not_trusted(
    fake_discord, monkeypatch, tmp_path: Path
):
    api = f"{fake_discord.base_url}/api/v10"
    ok = await probe(fake_discord.token, api, fake_discord.gateway_url, limit=10, token_source="x")
    assert ok.status == Status.OK, ok
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "no-authority.pem"))
    check = await probe(
        fake_discord.token, api, fake_discord.gateway_url, limit=10, token_source="x"
    )
    assert check.status == Status.FAIL
    assert check.message.startswith(f"{api} is not trusted: its certificate is not one")
    assert "channels.discord.api_base_url" in check.fix


VOICE = """
import asyncio, json, logging, sys, tempfile
from pathlib import Path

import discord

heard = []


class Keep(logging.Handler):
    def emit(self, record):
        heard.append(record.getMessage())


logging.getLogger("discord").addHandler(Keep())
how = sys.argv[1]
missing = [discord.VoiceClient.warn_nacl, discord.VoiceClient.warn_dave]


async def main():
    if how == "plain":
        await discord.Client(intents=discord.Intents.none()).close()
        return
    from gateway.channel_setup import build_channels
    from gateway.config.loader import parse_config

    closed = "127.0.0.1:9"  # the discard port: nothing listens there
    raw = {"channels": {"discord": {
        "enabled": True, "token": "t", "api_base_url": f"https://{closed}/api/v10",
        "gateway_url": f"wss://{closed}/",
    }}}
    config = parse_config(raw, home=Path(tempfile.mkdtemp()), environ={})
    [channel] = build_channels(config)
    if how == "probe":
        await channel.probe(10, "x")
    else:
        try:
            await channel.start()
        except Exception:
            pass


asyncio.run(main())
print(json.dumps({"missing": missing, "heard": heard}))
"""


@pytest.mark.parametrize("how", ["plain", "channel", "probe"])
def test_discord_py_s_voice_warnings_are_kept_out_of_the_log(how):
    """In a fresh process each (discord.py warns once per process): a plain client warns about
    each voice library it lacks; a client made by the channel or by doctor's check does not."""
    run = run_script(VOICE, how)
    assert run["missing"] == [True, True], "the voice libraries are installed here"
    warned = VOICE_WARNINGS & set(run["heard"])
    assert warned == (VOICE_WARNINGS if how == "plain" else set())
