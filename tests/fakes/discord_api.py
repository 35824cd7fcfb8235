"""A fake Discord REST API and Gateway on 127.0.0.1 for the real discord.py client to talk to."""

from __future__ import annotations

import asyncio
import contextlib
import http
import itertools
import json
import ssl
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from aiohttp import BodyPartReader, WSMsgType, web

from tests.fakes.observed import Observed
from tests.fakes.tls import authority

TOKEN = "fake-discord-token"
BOT_ID = 1000
APP_ID = 1000
BOT_NAME = "Corvid"
GUILD_ID = 2000
CHANNEL_ID = 3000
OTHER_CHANNEL_ID = 3001
THREAD_ID = 4000
OWNER_ID = 42
ROLE_ID = 5000
DM_CHANNEL_BASE = 6000  # the DM channel with user N is DM_CHANNEL_BASE + N

API = "/api/v10"
MAX_CONTENT = 2000
DISCORD_EPOCH_MS = 1420070400000

# Gateway intents the fake enforces the way Discord does.
GUILD_MESSAGES = 1 << 9
DIRECT_MESSAGES = 1 << 12
MESSAGE_CONTENT = 1 << 15
# Application flag: the Message Content intent is enabled (for bots in under 100 servers).
GATEWAY_MESSAGE_CONTENT_LIMITED = 1 << 19

_PERMISSION_BITS = {
    "create_instant_invite": 1 << 0,
    "add_reactions": 1 << 6,
    "view_channel": 1 << 10,
    "send_messages": 1 << 11,
    "manage_messages": 1 << 13,
    "embed_links": 1 << 14,
    "attach_files": 1 << 15,
    "read_message_history": 1 << 16,
    "mention_everyone": 1 << 17,
    "use_external_emojis": 1 << 18,
    "change_nickname": 1 << 26,
    "use_application_commands": 1 << 31,
    "create_public_threads": 1 << 35,
    "send_messages_in_threads": 1 << 38,
}
EVERYONE_PERMISSIONS = sum(
    v for k, v in _PERMISSION_BITS.items() if k not in ("manage_messages", "mention_everyone")
)
BOT_PERMISSIONS = (
    EVERYONE_PERMISSIONS
    | _PERMISSION_BITS["manage_messages"]
    | _PERMISSION_BITS["mention_everyone"]
)


@dataclass
class Call:
    method: str
    path: str  # without the /api/v10 prefix
    json: Any
    at: float
    query: dict[str, str] = field(default_factory=dict)


@dataclass
class Fault:
    status: int
    body: dict[str, Any] | None = None
    retry_after: float | None = None


# Each REST request's parsed body, read once by the middleware for recording and the handler.
_BODY: web.RequestKey[Any] = web.RequestKey("body", object)
_FILES = web.RequestKey("files", list)


def dm_channel_id(user: int) -> int:
    return DM_CHANNEL_BASE + user


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _json(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    # discord.py parses a body only when Content-Type is exactly "application/json";
    # web.json_response appends "; charset=utf-8" and would make every answer a plain string.
    return web.Response(
        body=json.dumps(body).encode(),
        status=status,
        content_type="application/json",
        headers=headers,
    )


def _error(status: int, message: str, code: int = 0, **extra: Any) -> web.Response:
    return _json({"message": message, "code": code, **extra}, status)


def _form_error(field_name: str, code: str, message: str) -> web.Response:
    errors = {field_name: {"_errors": [{"code": code, "message": message}]}}
    return _error(400, "Invalid Form Body", 50035, errors=errors)


def _no_content() -> web.Response:
    return web.Response(status=204)


class FakeDiscord(Observed):
    def __init__(self, token: str = TOKEN, *, missing_intent: bool = False) -> None:
        super().__init__()
        self.token = token
        # Close with 4014 after IDENTIFY, as Discord does when the portal's intent box is unticked.
        self.missing_intent = missing_intent
        self.echo_own_messages = True  # Discord sends the bot its own messages as MESSAGE_CREATE
        self.heartbeat_interval = 45000
        self.base_url = ""
        self.gateway_url = ""
        self.resume_gateway_url = ""
        # The server names clients asked for in their TLS hello (SNI), in order.
        self.server_names: list[str] = []
        self.calls: list[Call] = []
        # self.sent (from Observed): accepted POST /channels/{id}/messages
        self.edits: list[dict[str, Any]] = []  # accepted message edits, with their bodies
        self.interaction_responses: list[dict[str, Any]] = []
        self.followups: list[dict[str, Any]] = []
        self.typing: list[int] = []
        self.commands_synced: list[Any] = []
        self.identify: dict[str, Any] | None = None
        self.presence: dict[str, Any] | None = None
        self.dispatched: list[tuple[str, dict[str, Any]]] = []  # what went down the socket
        self.connections = 0
        self.gateway_paths: list[str] = []  # the path of each gateway connection, in order
        self.resumes = 0
        self._nonces: dict[tuple[int, str], dict[str, Any]] = {}
        self.deduplicated = 0  # sends answered with an earlier message of the same nonce
        self.ready = False
        self.session_id: str | None = None
        self.users: dict[int, dict[str, Any]] = {
            BOT_ID: self.bot_user(),
            OWNER_ID: _user(OWNER_ID, "Ada"),
        }
        self.messages: dict[int, dict[str, Any]] = {}
        self.files: dict[int, tuple[str, bytes, str]] = {}
        self._commands: dict[str, dict[str, Any]] = {}
        self._interactions: dict[int, dict[str, Any]] = {}
        self._faults: list[tuple[str, str, deque[Fault]]] = []
        self._outbox: deque[tuple[str, dict[str, Any]]] = deque()
        self._seq = 0
        self._live: web.WebSocketResponse | None = None  # the socket with a READY/RESUMED session
        self._sockets: set[web.WebSocketResponse] = set()
        self._wake = asyncio.Event()
        self._pump_task: asyncio.Task[None] | None = None
        self._last_snowflake = 0
        self._tokens = itertools.count(1)
        self._runner: web.AppRunner | None = None

    # -- server ---------------------------------------------------------------------------------

    def channel_config(self, **extra: Any) -> dict[str, Any]:
        """The ``channels.discord`` config section that points Corvid at this fake."""
        return {
            "enabled": True,
            "token": self.token,
            "allow_from": [str(OWNER_ID)],
            "groups": [str(CHANNEL_ID)],
            "api_base_url": f"{self.base_url}/api/v10",
            "gateway_url": self.gateway_url,
            # Whole replies unless a test is about streaming: then it passes streaming=True.
            "streaming": False,
            **extra,
        }

    async def start(self) -> str:
        app = web.Application(client_max_size=64 * 1024 * 1024, middlewares=[self._middleware])
        # discord.py opens the gateway at "/"; the READY's resume_gateway_url names "/gateway".
        app.router.add_get("/", self._gateway)
        app.router.add_get("/gateway", self._gateway)
        app.router.add_get("/attachments/{id}/{filename}", self._attachment)
        routes: list[tuple[str, str, Callable[[web.Request], Any]]] = [
            ("GET", "/users/@me", self._get_me),
            ("GET", "/users/@me/guilds", self._get_my_guilds),
            ("POST", "/users/@me/channels", self._create_dm),
            ("GET", "/users/{user_id}", self._get_user),
            ("GET", "/gateway", self._get_gateway),
            ("GET", "/gateway/bot", self._get_gateway),
            ("GET", "/applications/@me", self._get_application),
            ("GET", "/oauth2/applications/@me", self._get_application),
            ("GET", "/applications/{app_id}/commands", self._get_commands),
            ("PUT", "/applications/{app_id}/commands", self._put_commands),
            ("PUT", "/applications/{app_id}/guilds/{guild_id}/commands", self._put_commands),
            ("GET", "/channels/{channel_id}", self._get_channel),
            ("POST", "/channels/{channel_id}/messages", self._post_message),
            ("GET", "/channels/{channel_id}/messages/{message_id}", self._get_message),
            ("PATCH", "/channels/{channel_id}/messages/{message_id}", self._edit_message),
            ("DELETE", "/channels/{channel_id}/messages/{message_id}", self._delete_message),
            ("POST", "/channels/{channel_id}/typing", self._post_typing),
            ("POST", "/interactions/{interaction_id}/{token}/callback", self._callback),
            ("POST", "/webhooks/{app_id}/{token}", self._followup),
            ("GET", "/webhooks/{app_id}/{token}/messages/{message_id}", self._webhook_message),
            ("PATCH", "/webhooks/{app_id}/{token}/messages/{message_id}", self._webhook_message),
            ("DELETE", "/webhooks/{app_id}/{token}/messages/{message_id}", self._webhook_message),
        ]
        for method, path, handler in routes:
            app.router.add_route(method, API + path, handler)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        # TLS as Discord's own servers: a certificate for discord.com, gateway.discord.gg and
        # loopback, from the test authority a client trusts through SSL_CERT_FILE (ca_file).
        tls = authority().server_context()
        tls.sni_callback = self._asked_for
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=tls)
        await site.start()
        port = self._runner.addresses[0][1]
        self.base_url = f"https://127.0.0.1:{port}"
        self.gateway_url = f"wss://127.0.0.1:{port}/"
        self.resume_gateway_url = f"wss://127.0.0.1:{port}/gateway"
        self._pump_task = asyncio.get_running_loop().create_task(self._pump())
        return self.base_url

    @property
    def ca_file(self) -> str:
        """The authority that issued this fake's certificate, for a client's SSL_CERT_FILE."""
        return str(authority().ca_file)

    def _asked_for(self, conn: ssl.SSLObject, name: str | None, context: ssl.SSLContext) -> None:
        if name is not None:
            self.server_names.append(name)

    async def close(self) -> None:
        if self._pump_task is not None:
            self._pump_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._pump_task
        self._live = None
        # Close each socket ourselves (the client answers the close frame) so discord.py sees a
        # going-away close rather than a reset, and aiohttp's shutdown finds nothing to kill.
        for ws in list(self._sockets):
            with contextlib.suppress(Exception):
                async with asyncio.timeout(5):
                    await ws.close(code=1001, message=b"server shutting down")
        if self._runner is not None:
            await self._runner.cleanup()
        async with self._changed:
            self._changed.notify_all()
        # Socket handlers notify as they finish; let those tasks end before the loop does.
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    # -- scripting ------------------------------------------------------------------------------

    def fail(self, method: str, path_prefix: str, *faults: Fault) -> None:
        """Answer the next requests matching ``method`` and ``path_prefix`` with ``faults``."""
        self._faults.append((method.upper(), path_prefix, deque(faults)))

    def bot_user(self) -> dict[str, Any]:
        user = _user(BOT_ID, BOT_NAME, bot=True)
        user.update(global_name=None, verified=True, mfa_enabled=False, flags=0)
        return user

    def user(self, user_id: int, name: str | None = None, *, bot: bool = False) -> dict[str, Any]:
        """The user object for ``user_id``, registered so REST look-ups find it."""
        if user_id not in self.users or name is not None:
            self.users[user_id] = _user(user_id, name or f"user{user_id}", bot=bot)
        return self.users[user_id]

    def attachment(self, filename: str, data: bytes, content_type: str) -> dict[str, Any]:
        """Register ``data`` for download and return the attachment object pointing at it."""
        attachment_id = self._snowflake()
        self.files[attachment_id] = (filename, data, content_type)
        url = f"{self.base_url}/attachments/{attachment_id}/{quote(filename)}"
        return {
            "id": str(attachment_id),
            "filename": filename,
            "size": len(data),
            "url": url,
            "proxy_url": url,
            "content_type": content_type,
        }

    def message(
        self,
        content: str,
        *,
        author: int = OWNER_ID,
        author_name: str = "Ada",
        channel: int = CHANNEL_ID,
        guild: bool = True,
        bot: bool = False,
        mentions_bot: bool = False,
        mention_roles: Iterable[int] = (),
        mention_everyone: bool = False,
        reply_to: dict[str, Any] | None = None,
        attachments: Iterable[dict[str, Any]] = (),
        message_id: int | None = None,
        flags: int = 0,
    ) -> dict[str, Any]:
        """Queue a MESSAGE_CREATE from ``author`` (a DM when ``guild`` is false); ``flags``
        8192 makes it a voice message.

        Delivered as soon as the client has a session, so it may be called before connecting.
        Mentions are written into the content the way the Discord client does.
        """
        user = self.user(author, author_name, bot=bot)
        roles = [int(r) for r in mention_roles]
        if mentions_bot and f"<@{BOT_ID}>" not in content and f"<@!{BOT_ID}>" not in content:
            content = f"<@{BOT_ID}> {content}"
        for role in roles:
            if f"<@&{role}>" not in content:
                content = f"<@&{role}> {content}"
        if mention_everyone and "@everyone" not in content and "@here" not in content:
            content = f"@everyone {content}"
        channel_id = channel if guild else dm_channel_id(author)
        msg = self._build_message(
            channel_id,
            user,
            content,
            guild=guild,
            message_id=message_id,
            attachments=list(attachments),
            reply_to=reply_to,
        )
        if guild:
            mentioned = {**self.bot_user(), "member": self._member(BOT_ID, with_user=False)}
        else:
            msg["channel_type"] = 1
            mentioned = self.bot_user()
        msg["mentions"] = [mentioned] if mentions_bot else []
        msg["mention_roles"] = [str(r) for r in roles] if guild else []
        msg["mention_everyone"] = mention_everyone and guild
        if flags:
            msg["flags"] = flags
        self._push("MESSAGE_CREATE", msg)
        return msg

    def interaction(
        self,
        name: str,
        *,
        user: int = OWNER_ID,
        user_name: str = "Ada",
        channel: int = CHANNEL_ID,
        guild: bool = True,
        options: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """Queue an INTERACTION_CREATE for the slash command ``name``; tests need its id/token."""
        invoker = self.user(user, user_name)
        interaction_id = self._snowflake()
        token = f"interaction-token-{next(self._tokens)}"
        command = self._commands.get(name)
        data: dict[str, Any] = {
            "id": command["id"] if command else str(self._snowflake()),
            "name": name,
            "type": 1,
        }
        if options:
            data["options"] = options
        channel_id = channel if guild else dm_channel_id(user)
        payload: dict[str, Any] = {
            "id": str(interaction_id),
            "application_id": str(APP_ID),
            "type": 2,
            "data": data,
            "token": token,
            "version": 1,
            "channel_id": str(channel_id),
            "channel": {
                **(self._channel(channel_id) or {}),
                "permissions": str(EVERYONE_PERMISSIONS),
            },
            "app_permissions": str(BOT_PERMISSIONS),
            "entitlements": [],
            "locale": "en-US",
            "attachment_size_limit": 10 * 1024 * 1024,
        }
        if guild:
            payload.update(
                guild_id=str(GUILD_ID),
                guild_locale="en-US",
                guild={"id": str(GUILD_ID), "locale": "en-US", "features": []},
                member={**self._member(user), "permissions": str(EVERYONE_PERMISSIONS)},
                authorizing_integration_owners={"0": str(GUILD_ID)},
                context=0,
            )
        else:
            payload.update(user=invoker, authorizing_integration_owners={"0": "0"}, context=1)
        self._interactions[interaction_id] = {
            "token": token,
            "channel_id": channel_id,
            "guild": guild,
            "acknowledged": False,
            "original": None,
        }
        self._push("INTERACTION_CREATE", payload)
        return payload

    def press(self, sent: dict[str, Any], label: str, *, user: int = OWNER_ID) -> dict[str, Any]:
        """Press the button ``label`` under a message the bot sent in a DM (``sent``, from
        ``self.sent``): an INTERACTION_CREATE for that message component."""
        button = next(
            c for row in sent.get("components") or [] for c in row["components"]
            if c.get("label") == label
        )  # fmt: skip
        interaction_id = self._snowflake()
        token = f"interaction-token-{next(self._tokens)}"
        channel_id = int(sent["channel_id"])
        payload: dict[str, Any] = {
            "id": str(interaction_id),
            "application_id": str(APP_ID),
            "type": 3,
            "data": {"custom_id": button["custom_id"], "component_type": 2},
            "token": token,
            "version": 1,
            "channel_id": str(channel_id),
            "channel": {**(self._channel(channel_id) or {}), "permissions": "0"},
            "message": self.messages[int(sent["message_id"])],
            "app_permissions": str(BOT_PERMISSIONS),
            "entitlements": [],
            "locale": "en-US",
            "user": self.user(user, "Ada"),
            "authorizing_integration_owners": {"0": "0"},
            "context": 1,
            "attachment_size_limit": 10 * 1024 * 1024,
        }
        self._interactions[interaction_id] = {
            "token": token, "channel_id": channel_id, "guild": False, "acknowledged": False,
            "original": None,
        }  # fmt: skip
        self._push("INTERACTION_CREATE", payload)
        return payload

    async def disconnect(self, code: int = 4000) -> bool:
        """Close the live gateway socket with ``code`` (discord.py then reconnects and RESUMEs)."""
        ws, self._live = self._live, None
        if ws is None:
            return False
        await ws.close(code=code, message=b"closed by the test")
        return True

    @property
    def pending(self) -> int:
        """Events pushed but not yet sent down a socket."""
        return len(self._outbox)

    async def wait_ready(self, timeout: float = 10.0) -> None:
        await self.wait_for(lambda: self.ready, timeout)

    def calls_to(self, method: str, path_prefix: str = "") -> list[Call]:
        method = method.upper()
        return [c for c in self.calls if c.method == method and c.path.startswith(path_prefix)]

    def _snowflake(self) -> int:
        # Real, time-based snowflakes: discord.py derives created_at (and interaction expiry)
        # from the id, so a small counter would make every interaction look years old.
        value = (int(time.time() * 1000) - DISCORD_EPOCH_MS) << 22
        self._last_snowflake = max(value, self._last_snowflake + 1)
        return self._last_snowflake

    # -- payloads -------------------------------------------------------------------------------

    def _member(self, user_id: int, *, with_user: bool = True) -> dict[str, Any]:
        member: dict[str, Any] = {
            "roles": [str(ROLE_ID)] if user_id == BOT_ID else [],
            "nick": None,
            "avatar": None,
            "joined_at": "2024-01-01T00:00:00+00:00",
            "premium_since": None,
            "deaf": False,
            "mute": False,
            "pending": False,
            "flags": 0,  # discord.py indexes data["flags"]
        }
        if with_user:
            member["user"] = self.users[user_id] if user_id in self.users else self.user(user_id)
        return member

    def _text_channel(self, channel_id: int, name: str, position: int) -> dict[str, Any]:
        return {
            "id": str(channel_id),
            "type": 0,
            "guild_id": str(GUILD_ID),
            "name": name,
            "position": position,
            "permission_overwrites": [],
            "topic": None,
            "nsfw": False,
            "last_message_id": None,
            "rate_limit_per_user": 0,
            "parent_id": None,
            "default_auto_archive_duration": 1440,
            "flags": 0,
        }

    def _thread(self) -> dict[str, Any]:
        return {
            "id": str(THREAD_ID),
            "type": 11,
            "guild_id": str(GUILD_ID),
            "parent_id": str(CHANNEL_ID),
            "owner_id": str(OWNER_ID),
            "name": "a-thread",
            "last_message_id": None,
            "message_count": 0,
            "member_count": 1,
            "total_message_sent": 0,
            "rate_limit_per_user": 0,
            "flags": 0,
            "thread_metadata": {
                "archived": False,
                "auto_archive_duration": 1440,
                "archive_timestamp": "2024-01-01T00:00:00+00:00",
                "locked": False,
                "create_timestamp": "2024-01-01T00:00:00+00:00",
            },
        }

    def _dm_channel(self, channel_id: int) -> dict[str, Any]:
        return {
            "id": str(channel_id),
            "type": 1,
            "last_message_id": None,
            "flags": 0,
            "recipients": [self.user(channel_id - DM_CHANNEL_BASE)],
        }

    def _channel(self, channel_id: int) -> dict[str, Any] | None:
        if channel_id == CHANNEL_ID:
            return self._text_channel(CHANNEL_ID, "general", 0)
        if channel_id == OTHER_CHANNEL_ID:
            return self._text_channel(OTHER_CHANNEL_ID, "random", 1)
        if channel_id == THREAD_ID:
            return self._thread()
        if DM_CHANNEL_BASE < channel_id < DM_CHANNEL_BASE + 1_000_000_000:
            return self._dm_channel(channel_id)
        return None

    def _guild(self) -> dict[str, Any]:
        role_common = {
            "color": 0,
            "colors": {"primary_color": 0, "secondary_color": None, "tertiary_color": None},
            "hoist": False,
            "icon": None,
            "unicode_emoji": None,
            "mentionable": False,
            "flags": 0,
        }
        return {
            "id": str(GUILD_ID),
            "name": "Test guild",
            "icon": None,
            "splash": None,
            "discovery_splash": None,
            "banner": None,
            "description": None,
            "owner_id": str(OWNER_ID),
            "afk_channel_id": None,
            "afk_timeout": 300,
            "verification_level": 0,
            "default_message_notifications": 0,
            "explicit_content_filter": 0,
            "mfa_level": 0,
            "nsfw_level": 0,
            "premium_tier": 0,
            "premium_subscription_count": 0,
            "premium_progress_bar_enabled": False,
            "preferred_locale": "en-US",
            "system_channel_id": None,
            "system_channel_flags": 0,
            "rules_channel_id": None,
            "public_updates_channel_id": None,
            "safety_alerts_channel_id": None,
            "application_id": None,
            "vanity_url_code": None,
            "max_members": 500000,
            "features": [],
            "emojis": [],
            "stickers": [],
            "roles": [
                {
                    **role_common,
                    "id": str(GUILD_ID),  # @everyone shares the guild's id
                    "name": "@everyone",
                    "position": 0,
                    "permissions": str(EVERYONE_PERMISSIONS),
                    "managed": False,
                },
                {
                    **role_common,
                    "id": str(ROLE_ID),
                    "name": BOT_NAME,
                    "position": 1,
                    "permissions": str(BOT_PERMISSIONS),
                    "managed": True,
                    "tags": {"bot_id": str(BOT_ID)},
                },
            ],
            "joined_at": "2024-01-01T00:00:00+00:00",
            "large": False,
            "unavailable": False,
            "member_count": 2,
            "members": [self._member(BOT_ID)],
            "channels": [
                self._text_channel(CHANNEL_ID, "general", 0),
                self._text_channel(OTHER_CHANNEL_ID, "random", 1),
            ],
            "threads": [self._thread()],
            "presences": [],
            "voice_states": [],
            "stage_instances": [],
            "guild_scheduled_events": [],
            "soundboard_sounds": [],
        }

    def _build_message(
        self,
        channel_id: int,
        author: dict[str, Any],
        content: str,
        *,
        guild: bool,
        message_id: int | None = None,
        attachments: list[dict[str, Any]] | None = None,
        reply_to: dict[str, Any] | None = None,
        reference: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        mid = message_id if message_id is not None else self._snowflake()
        msg: dict[str, Any] = {
            "id": str(mid),
            "type": 0,
            "channel_id": str(channel_id),
            "author": author,
            "content": content,
            "timestamp": _now(),
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": [],
            "mention_roles": [],
            "attachments": attachments or [],
            "embeds": [],
            "components": [],
            "pinned": False,
            "flags": 0,
        }
        if guild:
            msg["guild_id"] = str(GUILD_ID)
            msg["member"] = self._member(int(author["id"]), with_user=False)
        if reply_to is not None and reference is None:
            reference = {"message_id": reply_to["id"], "channel_id": reply_to["channel_id"]}
            if guild:
                reference["guild_id"] = str(GUILD_ID)
        if reference is not None:
            msg["type"] = 19  # REPLY
            msg["message_reference"] = {"type": 0, **reference}
            if reply_to is None:
                reply_to = self.messages.get(int(reference["message_id"]))
            msg["referenced_message"] = reply_to
        self.messages[mid] = msg
        return msg

    def _bot_message(
        self, channel_id: int, body: dict[str, Any], files: list[dict[str, Any]], **extra: Any
    ) -> dict[str, Any]:
        channel = self._channel(channel_id) or {}
        attachments = [self.attachment(f["filename"], f["data"], f["content_type"]) for f in files]
        msg = self._build_message(
            channel_id,
            self.bot_user(),
            str(body.get("content") or ""),
            guild="guild_id" in channel,
            attachments=attachments,
            reference=body.get("message_reference"),
        )
        msg["embeds"] = body.get("embeds") or []
        msg["components"] = body.get("components") or []
        msg["flags"] = int(body.get("flags") or 0)
        msg.update(extra)
        if self.echo_own_messages:
            self._push("MESSAGE_CREATE", msg)
        return msg

    def _check_content(
        self, body: dict[str, Any], files: list[dict[str, Any]]
    ) -> web.Response | None:
        content = body.get("content")
        if content is not None and any(0xD800 <= ord(ch) <= 0xDFFF for ch in str(content)):
            return _form_error("content", "STRING_TYPE_INVALID", "Invalid UTF-8 string.")
        if content is not None and len(str(content)) > MAX_CONTENT:
            return _form_error(
                "content", "BASE_TYPE_MAX_LENGTH", f"Must be {MAX_CONTENT} or fewer in length."
            )
        substance = ("embeds", "sticker_ids", "components", "poll", "attachments")
        if not str(content or "").strip() and not files and not any(body.get(k) for k in substance):
            return _error(400, "Cannot send an empty message", 50006)
        return None

    # -- gateway --------------------------------------------------------------------------------

    def _push(self, event: str, data: dict[str, Any]) -> None:
        self._outbox.append((event, data))
        self._wake.set()

    async def _pump(self) -> None:
        """Send queued events, in order, whenever there is a live session to send them on."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._outbox and self._live is not None:
                ws = self._live
                event, data = self._outbox[0]
                try:
                    if self._deliverable(event, data):
                        await self._dispatch(ws, event, self._as_delivered(event, data))
                except (ConnectionResetError, RuntimeError):
                    # The socket went away mid-send; keep the event for the next session.
                    if self._live is ws:
                        self._live = None
                    break
                self._outbox.popleft()
                self._notify()

    def _intents(self) -> int:
        return int((self.identify or {}).get("intents", 0))

    def _deliverable(self, event: str, data: dict[str, Any]) -> bool:
        # Discord sends MESSAGE_CREATE only to clients that asked for the matching intent.
        if event != "MESSAGE_CREATE":
            return True
        needed = GUILD_MESSAGES if "guild_id" in data else DIRECT_MESSAGES
        return bool(self._intents() & needed)

    def _as_delivered(self, event: str, data: dict[str, Any]) -> dict[str, Any]:
        # Without the Message Content intent, guild messages that neither mention the bot nor
        # come from it arrive with their content, attachments and embeds blanked.
        if event != "MESSAGE_CREATE" or self._intents() & MESSAGE_CONTENT:
            return data
        if "guild_id" not in data or data["author"]["id"] == str(BOT_ID):
            return data
        if any(m["id"] == str(BOT_ID) for m in data.get("mentions", [])):
            return data
        return {**data, "content": "", "attachments": [], "embeds": [], "components": []}

    async def _dispatch(self, ws: web.WebSocketResponse, event: str, data: dict[str, Any]) -> None:
        self._seq += 1
        await ws.send_str(json.dumps({"op": 0, "t": event, "s": self._seq, "d": data}))
        self.dispatched.append((event, data))

    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=0)
        await ws.prepare(request)
        self._sockets.add(ws)
        self.connections += 1
        self.gateway_paths.append(request.path)
        try:
            # Plain TEXT frames: discord.py decompresses only binary frames, so the
            # compress=zlib-stream it asks for in the query can be ignored.
            await ws.send_str(
                json.dumps({"op": 10, "d": {"heartbeat_interval": self.heartbeat_interval}})
            )
            async for msg in ws:
                if msg.type is not WSMsgType.TEXT:
                    continue
                payload = json.loads(msg.data)
                await self._on_op(ws, payload.get("op"), payload.get("d"))
        finally:
            self._sockets.discard(ws)
            if self._live is ws:
                self._live = None
            self._notify()
        return ws

    async def _on_op(self, ws: web.WebSocketResponse, op: int | None, d: Any) -> None:
        if op == 1:  # HEARTBEAT
            await ws.send_str(json.dumps({"op": 11}))
        elif op == 2:  # IDENTIFY
            await self._on_identify(ws, d)
        elif op == 6:  # RESUME
            await self._on_resume(ws, d)
        elif op == 3:  # PRESENCE_UPDATE
            self.presence = d
        elif op == 8:  # REQUEST_GUILD_MEMBERS
            chunk = {
                "guild_id": str(GUILD_ID),
                "members": [self._member(BOT_ID)],
                "chunk_index": 0,
                "chunk_count": 1,
                "not_found": [],
            }
            if d.get("nonce"):
                chunk["nonce"] = d["nonce"]
            await self._dispatch(ws, "GUILD_MEMBERS_CHUNK", chunk)

    async def _on_identify(self, ws: web.WebSocketResponse, d: dict[str, Any]) -> None:
        self.identify = d
        self._notify()
        if d.get("token") != self.token:
            await ws.close(code=4004, message=b"Authentication failed.")
            return
        if self.missing_intent:
            await ws.close(code=4014, message=b"Disallowed intent(s).")
            return
        self.session_id = uuid.uuid4().hex
        self._seq = 0
        ready = {
            "v": 10,
            "user": self.bot_user(),
            "guilds": [{"id": str(GUILD_ID), "unavailable": True}],
            "session_id": self.session_id,
            "session_type": "normal",
            "resume_gateway_url": self.resume_gateway_url,
            "application": {"id": str(APP_ID), "flags": 0},
            "private_channels": [],
            "relationships": [],
            "presences": [],
            "user_settings": {},
            "guild_join_requests": [],
            "geo_ordered_rtc_regions": [],
            "_trace": ["fake-discord"],
        }
        if "shard" in d:
            ready["shard"] = d["shard"]
        await self._dispatch(ws, "READY", ready)
        await self._dispatch(ws, "GUILD_CREATE", self._guild())
        self._go_live(ws)

    async def _on_resume(self, ws: web.WebSocketResponse, d: dict[str, Any]) -> None:
        if d.get("token") != self.token:
            await ws.close(code=4004, message=b"Authentication failed.")
            return
        if self.session_id is None or d.get("session_id") != self.session_id:
            # Invalid session, not resumable: discord.py then IDENTIFYs afresh.
            await ws.send_str(json.dumps({"op": 9, "d": False}))
            return
        self.resumes += 1
        # Nothing is lost while disconnected: undelivered events wait in the outbox and go out
        # after RESUMED, which is what Discord's replay amounts to.
        await self._dispatch(ws, "RESUMED", {"_trace": ["fake-discord"]})
        self._go_live(ws)

    def _go_live(self, ws: web.WebSocketResponse) -> None:
        self._live = ws
        self.ready = True
        self._wake.set()
        self._notify()

    # -- REST -----------------------------------------------------------------------------------

    @web.middleware
    async def _middleware(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        if request.path in ("/", "/gateway"):
            return await handler(request)
        path = request.path.removeprefix(API)
        body, files = await _read_body(request)
        request[_BODY], request[_FILES] = body, files
        self.calls.append(Call(request.method, path, body, time.monotonic(), dict(request.query)))
        self._notify()
        # Interaction callbacks, webhooks and CDN downloads are authorised by their URL alone.
        open_route = path.startswith(("/interactions/", "/webhooks/", "/attachments/"))
        if not open_route and request.headers.get("Authorization") != f"Bot {self.token}":
            return _error(401, "401: Unauthorized")
        fault = self._take_fault(request.method, path)
        if fault is not None:
            return _fault_response(fault)
        try:
            return await handler(request)
        except web.HTTPNotFound:
            return _error(404, "404: Not Found")
        except web.HTTPMethodNotAllowed:
            return _error(405, "405: Method Not Allowed")

    def _take_fault(self, method: str, path: str) -> Fault | None:
        for fault_method, prefix, faults in self._faults:
            if faults and fault_method == method and path.startswith(prefix):
                return faults.popleft()
        return None

    async def _attachment(self, request: web.Request) -> web.Response:
        entry = self.files.get(int(request.match_info["id"]))
        if entry is None:
            return web.Response(status=404)
        _, data, content_type = entry
        return web.Response(body=data, content_type=content_type)

    async def _get_me(self, request: web.Request) -> web.Response:
        return _json(self.bot_user())

    async def _get_my_guilds(self, request: web.Request) -> web.Response:
        """The servers the bot is in (partial guild objects): the one test guild."""
        return _json([{"id": str(GUILD_ID), "name": "Test guild", "icon": None, "owner": False}])

    async def _get_user(self, request: web.Request) -> web.Response:
        user = self.users.get(int(request.match_info["user_id"]))
        if user is None:
            return _error(404, "Unknown User", 10013)
        return _json(user)

    async def _create_dm(self, request: web.Request) -> web.Response:
        recipient = int(request[_BODY]["recipient_id"])
        return _json(self._dm_channel(dm_channel_id(recipient)))

    async def _get_gateway(self, request: web.Request) -> web.Response:
        return _json(
            {
                "url": self.gateway_url,
                "shards": 1,
                "session_start_limit": {
                    "total": 1000,
                    "remaining": 1000,
                    "reset_after": 0,
                    "max_concurrency": 1,
                },
            }
        )

    async def _get_application(self, request: web.Request) -> web.Response:
        return _json(
            {
                "id": str(APP_ID),
                "name": BOT_NAME,
                "icon": None,
                "description": "",
                "summary": "",
                "bot_public": True,
                "bot_require_code_grant": False,
                "verify_key": "0" * 64,
                "owner": self.users[OWNER_ID],
                "team": None,
                # The portal's Message Content switch, as an unverified bot's application flag.
                "flags": 0 if self.missing_intent else GATEWAY_MESSAGE_CONTENT_LIMITED,
                "bot": self.bot_user(),
                "tags": [],
                "redirect_uris": [],
                "interactions_endpoint_url": None,  # set, it would divert interactions away
            }
        )

    async def _get_commands(self, request: web.Request) -> web.Response:
        return _json(list(self._commands.values()))

    async def _put_commands(self, request: web.Request) -> web.Response:
        body = request[_BODY] or []
        self.commands_synced.append(body)
        guild_id = request.match_info.get("guild_id")
        answer = []
        for command in body:
            previous = self._commands.get(command["name"])
            registered = {
                "id": previous["id"] if previous else str(self._snowflake()),
                "application_id": str(APP_ID),
                "version": str(self._snowflake()),
                "type": 1,
                "description": "",
                "options": [],
                "default_member_permissions": None,
                "nsfw": False,
                **command,
            }
            if guild_id is not None:
                registered["guild_id"] = guild_id
            self._commands[command["name"]] = registered
            answer.append(registered)
        self._notify()
        return _json(answer)

    async def _get_channel(self, request: web.Request) -> web.Response:
        channel = self._channel(int(request.match_info["channel_id"]))
        if channel is None:
            return _error(404, "Unknown Channel", 10003)
        return _json(channel)

    async def _post_message(self, request: web.Request) -> web.Response:
        channel_id = int(request.match_info["channel_id"])
        if self._channel(channel_id) is None:
            return _error(404, "Unknown Channel", 10003)
        body: dict[str, Any] = request[_BODY] or {}
        files: list[dict[str, Any]] = request[_FILES]
        problem = self._check_content(body, files)
        if problem is not None:
            return problem
        reference = body.get("message_reference")
        if reference and int(reference["message_id"]) not in self.messages:
            if reference.get("fail_if_not_exists", True):
                return _form_error(
                    "message_reference", "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "Unknown message"
                )
            body = {k: v for k, v in body.items() if k != "message_reference"}
        nonce = (channel_id, str(body.get("nonce")))
        if body.get("enforce_nonce") and nonce in self._nonces:
            # Discord: the same author and nonce within minutes returns the first message.
            self.deduplicated += 1
            self._notify()
            return _json(self._nonces[nonce])
        msg = self._bot_message(channel_id, body, files)
        if body.get("enforce_nonce"):
            self._nonces[nonce] = msg
        self.sent.append(
            {
                **body,
                "channel_id": channel_id,
                "content": body.get("content") or "",
                "message_reference": body.get("message_reference"),
                "allowed_mentions": body.get("allowed_mentions"),
                "files": [f["filename"] for f in files],
                "message_id": int(msg["id"]),
            }
        )
        self._notify()
        return _json(msg)

    def _find_message(self, request: web.Request) -> dict[str, Any] | None:
        msg = self.messages.get(int(request.match_info["message_id"]))
        if msg is None or msg["channel_id"] != request.match_info["channel_id"]:
            return None
        return msg

    async def _get_message(self, request: web.Request) -> web.Response:
        msg = self._find_message(request)
        if msg is None:
            return _error(404, "Unknown Message", 10008)
        return _json(msg)

    async def _edit_message(self, request: web.Request) -> web.Response:
        msg = self._find_message(request)
        if msg is None:
            return _error(404, "Unknown Message", 10008)
        if msg["author"]["id"] != str(BOT_ID):
            return _error(403, "Cannot edit a message authored by another user", 50005)
        body: dict[str, Any] = request[_BODY] or {}
        content = body.get("content")
        if content is not None and any(0xD800 <= ord(ch) <= 0xDFFF for ch in str(content)):
            return _form_error("content", "STRING_TYPE_INVALID", "Invalid UTF-8 string.")
        if content is not None and len(str(content)) > MAX_CONTENT:
            return _form_error(
                "content", "BASE_TYPE_MAX_LENGTH", f"Must be {MAX_CONTENT} or fewer in length."
            )
        kept = ("content", "embeds", "flags", "components")
        msg.update({k: v for k, v in body.items() if k in kept})
        self.edits.append({**body, "message_id": int(msg["id"])})
        msg["edited_timestamp"] = _now()
        self._notify()
        return _json(msg)

    async def _delete_message(self, request: web.Request) -> web.Response:
        msg = self._find_message(request)
        if msg is None:
            return _error(404, "Unknown Message", 10008)
        del self.messages[int(msg["id"])]
        return _no_content()

    async def _post_typing(self, request: web.Request) -> web.Response:
        channel_id = int(request.match_info["channel_id"])
        if self._channel(channel_id) is None:
            return _error(404, "Unknown Channel", 10003)
        self.typing.append(channel_id)
        self._notify()
        return _no_content()

    async def _callback(self, request: web.Request) -> web.Response:
        interaction_id = int(request.match_info["interaction_id"])
        token = request.match_info["token"]
        state = self._interactions.get(interaction_id)
        if state is None or state["token"] != token:
            return _error(404, "Unknown interaction", 10062)
        if state["acknowledged"]:
            return _error(400, "Interaction has already been acknowledged.", 40060)
        body: dict[str, Any] = request[_BODY] or {}
        files: list[dict[str, Any]] = request[_FILES]
        kind = int(body.get("type", 0))
        data: dict[str, Any] = body.get("data") or {}
        if kind == 4:
            problem = self._check_content(data, files)
            if problem is not None:
                return problem
        state["acknowledged"] = True
        self.interaction_responses.append({**body, "interaction_id": interaction_id})
        msg = None
        if kind in (4, 5):
            flags = int(data.get("flags") or 0)
            if kind == 5:
                flags |= 1 << 7  # LOADING: the "Corvid is thinking..." placeholder
            msg = self._bot_message(
                state["channel_id"],
                {**data, "content": data.get("content", "") if kind == 4 else "", "flags": flags},
                files,
                type=20,
                webhook_id=str(APP_ID),
                application_id=str(APP_ID),
            )
            state["original"] = msg
        self._notify()
        if request.query.get("with_response") not in ("1", "true", "True"):
            return _no_content()
        # discord.py 2.7 always asks with_response=1 and requires the "interaction" key.
        answer: dict[str, Any] = {
            "interaction": {
                "id": str(interaction_id),
                "type": 2,
                "response_message_loading": kind == 5,
                "response_message_ephemeral": bool(int(data.get("flags") or 0) & 64),
            },
            "resource": {"type": kind},
        }
        if msg is not None:
            answer["interaction"]["response_message_id"] = msg["id"]
            answer["resource"]["message"] = msg
        return _json(answer)

    def _webhook_state(self, request: web.Request) -> dict[str, Any] | None:
        if request.match_info["app_id"] != str(APP_ID):
            return None
        token = request.match_info["token"]
        for interaction_id, state in self._interactions.items():
            if state["token"] == token:
                return {**state, "interaction_id": interaction_id}
        return None

    async def _followup(self, request: web.Request) -> web.Response:
        state = self._webhook_state(request)
        # Discord knows an interaction's webhook only once the interaction has been answered.
        if state is None or not state["acknowledged"]:
            return _error(404, "Unknown Webhook", 10015)
        body: dict[str, Any] = request[_BODY] or {}
        files: list[dict[str, Any]] = request[_FILES]
        problem = self._check_content(body, files)
        if problem is not None:
            return problem
        original = state["original"]
        interaction = self._interactions[state["interaction_id"]]
        if original is not None and int(original["flags"]) & (1 << 7):
            # The first followup after a thinking defer replaces the placeholder message.
            original.update(content=body.get("content") or "", flags=int(body.get("flags") or 0))
            original["embeds"] = body.get("embeds") or []
            msg = original
        else:
            msg = self._bot_message(
                state["channel_id"],
                body,
                files,
                webhook_id=str(APP_ID),
                application_id=str(APP_ID),
            )
            if original is None:
                interaction["original"] = msg
        self.followups.append(
            {
                **body,
                "method": "POST",
                "interaction_id": state["interaction_id"],
                "token": state["token"],
                "message_id": int(msg["id"]),
            }
        )
        self._notify()
        if request.query.get("wait") in ("1", "true", "True"):
            return _json(msg)
        return _no_content()

    async def _webhook_message(self, request: web.Request) -> web.Response:
        state = self._webhook_state(request)
        if state is None or not state["acknowledged"]:
            return _error(404, "Unknown Webhook", 10015)
        target = request.match_info["message_id"]
        if target == "@original":
            msg = state["original"]
        else:
            msg = self.messages.get(int(target))
            if msg is not None and msg.get("webhook_id") != str(APP_ID):
                msg = None
        if msg is None:
            return _error(404, "Unknown Message", 10008)
        if request.method == "GET":
            return _json(msg)
        if request.method == "DELETE":
            self.messages.pop(int(msg["id"]), None)
            return _no_content()
        body: dict[str, Any] = request[_BODY] or {}
        content = body.get("content")
        if content is not None and any(0xD800 <= ord(ch) <= 0xDFFF for ch in str(content)):
            return _form_error("content", "STRING_TYPE_INVALID", "Invalid UTF-8 string.")
        if content is not None and len(str(content)) > MAX_CONTENT:
            return _form_error(
                "content", "BASE_TYPE_MAX_LENGTH", f"Must be {MAX_CONTENT} or fewer in length."
            )
        msg.update({k: v for k, v in body.items() if k in ("content", "embeds")})
        msg["flags"] = int(msg["flags"]) & ~(1 << 7)  # an edit ends the thinking state
        msg["edited_timestamp"] = _now()
        self.followups.append(
            {
                **body,
                "method": "PATCH",
                "target": target,
                "interaction_id": state["interaction_id"],
                "token": state["token"],
                "message_id": int(msg["id"]),
            }
        )
        self._notify()
        return _json(msg)


def _user(user_id: int, name: str, *, bot: bool = False) -> dict[str, Any]:
    user: dict[str, Any] = {
        "id": str(user_id),
        "username": name.lower(),
        "global_name": name,
        "discriminator": "0",
        "avatar": None,
        "public_flags": 0,
    }
    if bot:
        user["bot"] = True
        user["username"] = name
    return user


async def _read_body(request: web.Request) -> tuple[Any, list[dict[str, Any]]]:
    """The JSON body (or a multipart ``payload_json``) and any uploaded files."""
    files: list[dict[str, Any]] = []
    if request.content_type == "multipart/form-data":
        payload: Any = None
        async for part in await request.multipart():
            if not isinstance(part, BodyPartReader):
                continue  # a nested multipart: not something Discord's clients send
            data = await part.read()
            if part.name == "payload_json":
                payload = json.loads(data)
            elif part.filename:
                ctype = part.headers.get("Content-Type", "application/octet-stream")
                files.append(
                    {"filename": part.filename, "data": bytes(data), "content_type": ctype}
                )
        return payload, files
    if request.can_read_body:
        text = await request.text()
        return (json.loads(text) if text else None), files
    return None, files


def _fault_response(fault: Fault) -> web.Response:
    if fault.status == 429:
        retry_after = fault.retry_after if fault.retry_after is not None else 0.0
        body = fault.body or {
            "message": "You are being rate limited.",
            "retry_after": retry_after,
            "global": False,
        }
        # Without "Via" discord.py takes a 429 for a Cloudflare ban and gives up at once.
        headers = {
            "Via": "1.1 google",
            "Retry-After": str(max(1, round(retry_after))),
            "X-RateLimit-Limit": "5",
            "X-RateLimit-Remaining": "0",
            "X-RateLimit-Reset-After": str(retry_after),
            "X-RateLimit-Bucket": "fake-bucket",
            "X-RateLimit-Scope": "user",
        }
        return _json(body, 429, headers)
    phrase = http.HTTPStatus(fault.status).phrase
    body = fault.body or {"message": f"{fault.status}: {phrase}", "code": 0}
    return _json(body, fault.status)
