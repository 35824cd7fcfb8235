"""``corvid doctor``'s Discord check: the token, and whether the Message Content intent is on."""

from __future__ import annotations

import asyncio

from gateway.contract.ports import Check, Status

MESSAGE_CONTENT_FIX = (
    "Developer Portal → your application → Bot → Privileged Gateway Intents → turn on "
    "Message Content Intent"
)


async def probe(
    token: str, api_base_url: str, gateway_url: str, *, limit: float, token_source: str
) -> Check:
    import aiohttp
    import discord

    from channels.discord.connection import UNTRUSTED, connector, quiet_voice_warnings

    name, where = "discord", api_base_url.rstrip("/")
    quiet_voice_warnings()
    client = discord.Client(
        intents=discord.Intents.none(), connector=connector(api_base_url, gateway_url)
    )
    try:
        async with asyncio.timeout(limit):
            await client.login(token)
    except discord.LoginFailure:
        return Check(
            Status.FAIL,
            name,
            f"{where} rejected the bot token (401)",
            "Developer Portal → your application → Bot → Reset Token, then put it in "
            f"{token_source}",
        )
    except TimeoutError:
        return Check.no_answer(name, where, limit)
    except aiohttp.ClientConnectorCertificateError:
        fix = "check channels.discord.api_base_url"
        return Check(Status.FAIL, name, f"{where} is not trusted: {UNTRUSTED}", fix)
    except (aiohttp.ClientError, OSError) as exc:
        return Check.unreachable(name, where, exc, "channels.discord.api_base_url")
    except discord.HTTPException as exc:
        return Check(
            Status.FAIL,
            name,
            f"{where} answered HTTP {exc.status} to the login",
            "check channels.discord.api_base_url and the token",
        )
    finally:
        await client.close()
    return _verdict(client)


def _verdict(client: object) -> Check:
    import discord

    assert isinstance(client, discord.Client)
    name, user = "discord", client.user
    who = f"{user.name} (id {user.id})" if user is not None else "the bot"
    app = client.application
    if app is None:
        return Check(Status.OK, name, f"logged in as {who}; the Message Content intent is unknown")
    flags = app.flags
    if not (flags.gateway_message_content or flags.gateway_message_content_limited):
        return Check(
            Status.FAIL,
            name,
            f"logged in as {who}, but the Message Content intent is off, "
            "so Discord will refuse the connection",
            MESSAGE_CONTENT_FIX,
        )
    return Check(Status.OK, name, f"logged in as {who}; Message Content intent on")
