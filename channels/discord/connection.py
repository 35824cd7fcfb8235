"""How discord.py reaches the configured servers, and its voice warnings kept out of the log."""

from __future__ import annotations

import logging
import socket
import ssl
from collections.abc import Mapping
from urllib.parse import urlsplit

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

DISCORD_API = "https://discord.com/api/v10"
DISCORD_GATEWAY = "wss://gateway.discord.gg/"
# discord.py sends REST to DISCORD_API and first opens the gateway at DISCORD_GATEWAY, by name;
# only those two names, on the HTTPS port, are led elsewhere.
HTTPS_PORT = 443
# What discord.py logs when it makes a client without the voice libraries; Corvid has no voice.
VOICE_WARNINGS = frozenset(
    {
        "PyNaCl is not installed, voice will NOT be supported",
        "davey is not installed, voice will NOT be supported",
    }
)
VOICE_LOGGER = "discord.client"
# Said when a server's certificate fails: discord.py asks for Discord's names wherever it goes.
UNTRUSTED = (
    "its certificate is not one this machine trusts for discord.com and gateway.discord.gg "
    "(a server other than Discord's must have one, from an authority in the system's store "
    "or in the file SSL_CERT_FILE names)"
)

Target = tuple[str, int]


def _host_port(url: str) -> Target:
    parts = urlsplit(url)
    return (parts.hostname or ""), parts.port or HTTPS_PORT


def redirects(api_base_url: str, gateway_url: str) -> dict[str, Target]:
    """Where each of Discord's own host names leads, for the configured URLs that are not
    Discord's (the configuration has checked they are https:// and wss://)."""
    found = {}
    for default, configured in ((DISCORD_API, api_base_url), (DISCORD_GATEWAY, gateway_url)):
        name, target = _host_port(default)[0], _host_port(configured)
        if target != (name, HTTPS_PORT):
            found[name] = target
    return found


class Redirecting(AbstractResolver):
    """Resolves Discord's host names to the configured servers' addresses and ports, and any
    other name as ``fallback`` does. The connection keeps the name asked for: TLS checks the
    server's certificate against it."""

    def __init__(self, targets: Mapping[str, Target], fallback: AbstractResolver) -> None:
        self.targets = dict(targets)
        self.fallback = fallback

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        target = self.targets.get(host.rstrip(".").lower()) if port == HTTPS_PORT else None
        if target is None:
            return await self.fallback.resolve(host, port, family)
        found = await self.fallback.resolve(target[0], target[1], family)
        return [
            ResolveResult(
                hostname=host,
                host=r["host"],
                port=r["port"],
                family=r["family"],
                proto=r["proto"],
                flags=r["flags"],
            )
            for r in found
        ]

    async def close(self) -> None:
        await self.fallback.close()


def connector(api_base_url: str, gateway_url: str) -> aiohttp.TCPConnector | None:
    """A connector for ``discord.Client(connector=...)`` that reaches the configured servers,
    or None (discord.py's own) when they are Discord's."""
    targets = redirects(api_base_url, gateway_url)
    if not targets:
        return None
    # The resolver is not the connector's to close; the threaded one holds nothing to close.
    resolver = Redirecting(targets, aiohttp.ThreadedResolver())
    # limit=0 as discord.py's own connector; the default trust, so SSL_CERT_FILE is honoured.
    return aiohttp.TCPConnector(limit=0, resolver=resolver, ssl=ssl.create_default_context())


class _QuietVoice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() not in VOICE_WARNINGS


_QUIET_VOICE = _QuietVoice()


def quiet_voice_warnings() -> None:
    """Keep discord.py's warnings about the missing voice libraries out of the log (once: a
    logger holds a filter once however often it is added)."""
    logging.getLogger(VOICE_LOGGER).addFilter(_QUIET_VOICE)
