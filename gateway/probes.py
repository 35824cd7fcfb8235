"""The network probes of ``corvid doctor``: the model API, each chat platform, a running gateway.

Each probe makes one cheap, read-only call with the real client library, the way ``corvid run``
would, bounded by the caller's limit, and turns the outcome into a ``Check``: one line saying what
is wrong and how to fix it. No probe puts a secret in its line (the report masks them anyway).
"""

from __future__ import annotations

import asyncio
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gateway.config import ENV_REF, Config

OK, WARN, FAIL = "ok", "warn", "FAIL"


@dataclass(frozen=True)
class Check:
    """One line of the report: how it went, what was checked, what is wrong, how to fix it."""

    status: str  # OK, WARN or FAIL
    name: str
    message: str
    fix: str = ""
    details: tuple[str, ...] = ()

    def lines(self) -> list[str]:
        head = f"{self.status:<4}  {self.name}: {self.message}"
        if self.fix:
            head += f" — fix: {self.fix}"
        return [head, *(f"        {line}" for line in self.details)]


@dataclass(frozen=True)
class Context:
    """What the probes share: the home, its loaded configuration, and the limit per probe."""

    home: Path
    config: Config
    raw: Mapping[str, Any]  # config.yaml as written, before ${VAR} substitution
    timeout: float


def env_ref(value: Any) -> str | None:
    """The variable name if ``value`` is exactly ``${VAR}``."""
    m = ENV_REF.fullmatch(value.strip()) if isinstance(value, str) else None
    return m[1] if m else None


def lookup(raw: Mapping[str, Any], key: str) -> Any:
    """The value at a dotted key of the YAML as written, or None."""
    node: Any = raw
    for part in key.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def q(path: Path | str) -> str:
    """A path quoted for a shell command in a fix."""
    return shlex.quote(str(path))


# -- probes ---------------------------------------------------------------------------------------


def preload(config: Config) -> None:
    """The client libraries, imported before any probe starts its clock (anthropic alone
    takes over a second)."""
    import anthropic  # noqa: F401

    if config.channels.telegram.enabled:
        import telegram  # noqa: F401
    if config.channels.discord.enabled:
        import discord  # noqa: F401


def _source(ctx: Context, key: str) -> str:
    var = env_ref(lookup(ctx.raw, key))
    return f"{key} (the environment variable {var})" if var else key


def _origin(url: str) -> str:
    m = re.match(r"^([a-z][a-z0-9+.-]*://[^/]+)", url, re.IGNORECASE)
    return m[1] if m else url


def _no_answer(name: str, where: str, limit: float) -> Check:
    return Check(
        FAIL,
        name,
        f"no answer from {where} within {limit:g} s",
        "check the network (a proxy or firewall?) and the base URL",
    )


def _unreachable(name: str, where: str, exc: BaseException, key: str) -> Check:
    return Check(
        FAIL, name, f"cannot reach {where} ({type(exc).__name__})", f"check the network, and {key}"
    )


async def check_anthropic(ctx: Context) -> Check:
    """A free, authenticated call: counting the tokens of one word for the configured model
    proves the key, the base URL and the model id at once."""
    import anthropic

    llm, name = ctx.config.llm, "anthropic"
    if llm.api_key is None:
        return Check(FAIL, name, ctx.config.missing("llm.api_key", "your Anthropic API key"))
    client = anthropic.AsyncAnthropic(
        api_key=llm.api_key.value,
        base_url=llm.base_url or None,
        timeout=ctx.timeout,
        max_retries=0,
    )
    where = str(client.base_url).rstrip("/")
    key = _source(ctx, "llm.api_key")
    try:
        async with asyncio.timeout(ctx.timeout):
            await client.messages.count_tokens(
                model=llm.model, messages=[{"role": "user", "content": "ping"}]
            )
    except anthropic.AuthenticationError:
        return Check(
            FAIL,
            name,
            f"API key rejected by {where} (401)",
            f"check {key}; keys are made at https://console.anthropic.com/settings/keys",
        )
    except anthropic.PermissionDeniedError:
        return Check(
            FAIL,
            name,
            f"API key not allowed to use {where} (403)",
            f"check the key's workspace and permissions, or {key}",
        )
    except anthropic.NotFoundError:
        return Check(
            FAIL,
            name,
            f"{where} does not know the model {llm.model!r} (404)",
            "check llm.model (and llm.base_url, if it is not Anthropic's API)",
        )
    except (anthropic.RateLimitError, anthropic.InternalServerError) as exc:
        return Check(
            WARN,
            name,
            f"{where} is busy right now (HTTP {exc.status_code}); the key could not be checked",
            "run corvid doctor again in a minute",
        )
    except (anthropic.APITimeoutError, TimeoutError):
        return _no_answer(name, where, ctx.timeout)
    except anthropic.APIConnectionError as exc:
        return _unreachable(name, where, exc, "llm.base_url (or ANTHROPIC_BASE_URL)")
    except anthropic.APIStatusError as exc:
        return Check(
            FAIL,
            name,
            f"{where} answered HTTP {exc.status_code} to an authenticated request",
            "check llm.base_url and llm.api_key",
        )
    finally:
        await client.close()
    return Check(OK, name, f"API key accepted by {where}; model {llm.model}")


async def check_telegram(ctx: Context) -> Check:
    """``getMe`` through python-telegram-bot, as ``corvid run`` starts (nothing is received, so a
    running gateway's polling is not disturbed)."""
    from telegram import Bot
    from telegram.error import InvalidToken, NetworkError, TelegramError, TimedOut
    from telegram.request import HTTPXRequest

    tg, name = ctx.config.channels.telegram, "telegram"
    if tg.token is None:
        return Check(FAIL, name, ctx.config.missing("channels.telegram.token", "the bot token"))
    t = ctx.timeout
    requests = [
        HTTPXRequest(
            connection_pool_size=1,
            read_timeout=t,
            write_timeout=t,
            connect_timeout=t,
            pool_timeout=t,
        )
        for _ in range(2)
    ]
    bot = Bot(
        tg.token.value,
        base_url=tg.base_url,
        base_file_url=tg.base_file_url,
        request=requests[0],
        get_updates_request=requests[1],
    )
    where = _origin(tg.base_url)
    try:
        async with asyncio.timeout(t):
            await bot.initialize()  # getMe
    except InvalidToken:
        # PTB's message for this quotes the token: say it ourselves.
        return Check(
            FAIL,
            name,
            f"{where} rejected the bot token (revoked or mistyped)",
            f"copy the current token from @BotFather (/mybots → API Token) into "
            f"{_source(ctx, 'channels.telegram.token')}",
        )
    except (TimedOut, TimeoutError):
        return _no_answer(name, where, t)
    except NetworkError as exc:
        return _unreachable(name, where, exc, "channels.telegram.base_url")
    except TelegramError as exc:
        return Check(
            FAIL,
            name,
            f"{where} refused getMe: {exc.message}",
            "check channels.telegram.base_url and the token",
        )
    finally:
        await asyncio.gather(*(r.shutdown() for r in requests))
    me = bot.bot
    note = ""
    if tg.groups and not me.can_read_all_group_messages:
        note = " (privacy mode is on: in groups it sees only messages addressed to it)"
    return Check(OK, name, f"token accepted: @{me.username} (id {me.id}){note}")


MESSAGE_CONTENT_FIX = (
    "Developer Portal → your application → Bot → Privileged Gateway Intents → turn on "
    "Message Content Intent"
)


async def check_discord(ctx: Context) -> Check:
    """``Client.login``: ``GET /users/@me`` and the application, whose flags say whether the
    Message Content intent is on (without it Discord closes the gateway with 4014)."""
    import aiohttp
    import discord

    dc, name = ctx.config.channels.discord, "discord"
    if dc.token is None:
        return Check(FAIL, name, ctx.config.missing("channels.discord.token", "the bot token"))
    where = dc.api_base_url.rstrip("/")
    # discord.py has no per-client base URL (see channels/discord.py); put it back afterwards.
    saved = discord.http.Route.BASE
    discord.http.Route.BASE = where
    discord.VoiceClient.warn_nacl = False
    discord.VoiceClient.warn_dave = False
    client = discord.Client(intents=discord.Intents.none())
    try:
        async with asyncio.timeout(ctx.timeout):
            await client.login(dc.token.value)
    except discord.LoginFailure:
        return Check(
            FAIL,
            name,
            f"{where} rejected the bot token (401)",
            "Developer Portal → your application → Bot → Reset Token, then put it in "
            f"{_source(ctx, 'channels.discord.token')}",
        )
    except TimeoutError:
        return _no_answer(name, where, ctx.timeout)
    except (aiohttp.ClientError, OSError) as exc:
        return _unreachable(name, where, exc, "channels.discord.api_base_url")
    except discord.HTTPException as exc:
        return Check(
            FAIL,
            name,
            f"{where} answered HTTP {exc.status} to the login",
            "check channels.discord.api_base_url and the token",
        )
    finally:
        await client.close()
        discord.http.Route.BASE = saved
    user = client.user
    who = f"{user.name} (id {user.id})" if user is not None else "the bot"
    app = client.application
    if app is None:
        return Check(OK, name, f"logged in as {who}; the Message Content intent is unknown")
    flags = app.flags
    if not (flags.gateway_message_content or flags.gateway_message_content_limited):
        return Check(
            FAIL,
            name,
            f"logged in as {who}, but the Message Content intent is off, "
            "so Discord will refuse the connection",
            MESSAGE_CONTENT_FIX,
        )
    return Check(OK, name, f"logged in as {who}; Message Content intent on")


async def check_gateway(home: Path, limit: float, *, required: bool = False) -> Check:
    """Whether a gateway runs for this home: its control socket answers a ping. Not running is
    only a warning, unless ``required`` (``--alive``, for health checks)."""
    from gateway.control import ask

    sock = home / "state" / "control.sock"
    name = "gateway"
    down = FAIL if required else WARN
    try:
        async with asyncio.timeout(limit):
            answer = await ask(sock, {"cmd": "ping"})
    except ConnectionError:
        stale = " (a control.sock left by a process that was killed)" if sock.exists() else ""
        return Check(
            down,
            name,
            f"not running: nothing answers on {sock}{stale}",
            "start it with corvid run (or your service manager)",
        )
    except TimeoutError:
        return Check(
            FAIL,
            name,
            f"{sock} took a connection but gave no answer within "
            f"{limit:g} s: the gateway may be stuck",
            "restart it",
        )
    except (OSError, ValueError) as exc:
        return Check(
            down,
            name,
            f"cannot ask {sock}: {type(exc).__name__}: {exc}",
            "run corvid doctor as the user that runs Corvid",
        )
    pid = answer.get("pid")
    return Check(OK, name, "running" + (f" (pid {pid})" if pid else "") + f"; {sock} answers")
