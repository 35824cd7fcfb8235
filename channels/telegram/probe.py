"""``corvid doctor``'s Telegram check: ``getMe`` through python-telegram-bot, nothing received."""

from __future__ import annotations

import asyncio
import re

from gateway.contract.ports import Check, Status


def origin(url: str) -> str:
    """Scheme and host of a URL: where a request went, without the token in its path."""
    m = re.match(r"^([a-z][a-z0-9+.-]*://[^/]+)", url, re.IGNORECASE)
    return m[1] if m else url


async def probe(
    token: str,
    base_url: str,
    base_file_url: str,
    *,
    has_groups: bool,
    limit: float,
    token_source: str,
) -> Check:
    from telegram import Bot
    from telegram.error import InvalidToken, NetworkError, TelegramError, TimedOut
    from telegram.request import HTTPXRequest

    name, t = "telegram", limit
    requests = [
        HTTPXRequest(1, read_timeout=t, write_timeout=t, connect_timeout=t, pool_timeout=t)
        for _ in range(2)
    ]
    bot = Bot(
        token,
        base_url=base_url,
        base_file_url=base_file_url,
        request=requests[0],
        get_updates_request=requests[1],
    )
    where = origin(base_url)
    try:
        async with asyncio.timeout(t):
            await bot.initialize()  # getMe
    except InvalidToken:
        # PTB's message for this quotes the token: say it ourselves.
        return Check(
            Status.FAIL,
            name,
            f"{where} rejected the bot token (revoked or mistyped)",
            f"copy the current token from @BotFather (/mybots → API Token) into {token_source}",
        )
    except (TimedOut, TimeoutError):
        return Check.no_answer(name, where, t)
    except NetworkError as exc:
        return Check.unreachable(name, where, exc, "channels.telegram.base_url")
    except TelegramError as exc:
        return Check(
            Status.FAIL,
            name,
            f"{where} refused getMe: {exc.message}",
            "check channels.telegram.base_url and the token",
        )
    finally:
        await asyncio.gather(*(r.shutdown() for r in requests))
    me = bot.bot
    note = ""
    if has_groups and not me.can_read_all_group_messages:
        note = " (privacy mode is on: in groups it sees only messages addressed to it)"
    return Check(Status.OK, name, f"token accepted: @{me.username} (id {me.id}){note}")
