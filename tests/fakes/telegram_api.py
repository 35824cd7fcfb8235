"""A fake Telegram Bot API on 127.0.0.1 for the real python-telegram-bot client to talk to.

It speaks the wire format PTB uses (form-encoded or multipart bodies, nested objects as JSON
strings, JSON answers with ``ok``), serves long-poll ``getUpdates`` with offsets and file
downloads, records every call, and refuses what Telegram refuses: text over 4096 characters
(counted after entity parsing, in UTF-16 units), empty text, and HTML it cannot parse. Faults
(429 with ``retry_after``, 502, 409) are injected per method.
"""

from __future__ import annotations

import asyncio
import html
import itertools
import json
import re
import time
import unicodedata
from collections import Counter, deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

from tests.fakes.observed import Observed

TOKEN = "123456:TEST-token-for-the-fake"
BOT_ID = 999
BOT_USERNAME = "corvid_test_bot"

# Telegram's HTML subset.
_ALLOWED = {
    "b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "a", "code", "pre",
    "blockquote", "tg-spoiler", "span", "tg-emoji",
}  # fmt: skip
_FORMATTING = {"b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "tg-spoiler", "span"}
_TOKEN = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9-]*)((?:\s[^<>]*)?)>|<|&(#\d+|#x[0-9A-Fa-f]+|\w+);|&")
_NAMED_ENTITIES = {"lt", "gt", "amp", "quot"}


def check_telegram_html(text: str) -> str | None:
    """None if Telegram would accept ``text`` with parse_mode HTML, else its complaint."""
    stack: list[str] = []
    for m in _TOKEN.finditer(text):
        offset = len(text[: m.start()].encode())
        whole = m.group(0)
        if whole == "<":
            return f'Unsupported start tag "" at byte offset {offset}'
        if whole == "&":
            return f"Character '&' is reserved and must be escaped at byte offset {offset}"
        if whole.startswith("&"):
            name = m.group(4)
            if not name.startswith("#") and name not in _NAMED_ENTITIES:
                return f'Unsupported HTML entity "&{name};" at byte offset {offset}'
            continue
        closing, tag = m.group(1) == "/", m.group(2).lower()
        if tag not in _ALLOWED:
            kind = "end" if closing else "start"
            return f'Unsupported {kind} tag "{tag}" at byte offset {offset}'
        if closing:
            if not stack or stack[-1] != tag:
                return f'Unmatched end tag at byte offset {offset}, expected "</{stack[-1] if stack else ""}>", found "</{tag}>"'  # noqa: E501
            stack.pop()
            continue
        if stack and stack[-1] in ("code", "pre") and not (stack[-1] == "pre" and tag == "code"):
            return f'Can\'t use tag "{tag}" inside "{stack[-1]}" at byte offset {offset}'
        if tag in ("code", "pre") and any(t in _FORMATTING or t == "a" for t in stack):
            return f'Entity "{tag}" can\'t be nested at byte offset {offset}'
        if tag == "a" and "a" in stack:
            return f"Nested links at byte offset {offset}"
        if tag == "blockquote" and "blockquote" in stack:
            return f"Blockquote can't be nested at byte offset {offset}"
        stack.append(tag)
    if stack:
        return f'Can\'t find end tag corresponding to start tag "{stack[-1]}"'
    return None


def visible(text: str, parse_mode: str | None) -> str:
    if parse_mode != "HTML":
        return text
    return html.unescape(re.sub(r"<[^<>]*>", "", text))


def utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    at: float
    user_agent: str = ""


@dataclass
class Fault:
    status: int
    description: str
    retry_after: int | None = None


class FakeTelegram(Observed):
    def __init__(self, token: str = TOKEN, username: str = BOT_USERNAME) -> None:
        super().__init__()
        self.token = token
        self.username = username
        self.calls: list[Call] = []
        self._closing = False
        # self.sent (from Observed): accepted sendMessage calls, with message_id
        self.files: dict[str, bytes] = {}
        self.chat: dict[tuple[int, int], str] = {}  # (chat, message id) → what it shows now
        # (chat, message id) → its inline keyboard now (JSON), None without one; an edit that
        # leaves out reply_markup removes the keyboard, as Telegram does.
        self.markup: dict[tuple[int, int], str | None] = {}
        self.edits: list[dict[str, Any]] = []  # accepted editMessageText calls
        # (chat, message id) of people's messages deleted since: a reply to one is refused
        # unless it allows sending without the reply, as Telegram does.
        self.deleted: set[tuple[int, int]] = set()
        self.drafts: list[dict[str, Any]] = []  # accepted sendMessageDraft calls
        self.answered: list[dict[str, Any]] = []  # answerCallbackQuery calls
        self._held: dict[str, asyncio.Event] = {}
        self.webhook_url = ""
        self._faults: dict[str, deque[Fault]] = {}
        self._holds: dict[str, asyncio.Event] = {}
        self.latency: dict[str, float] = {}  # seconds a method takes to answer (a busy server)
        # Unreachable: every request's connection is dropped unanswered (an outage).
        self.down = False
        self.dropped: Counter[str] = Counter()  # requests dropped while down, by method
        self._last_update_id = 0
        self._updates: list[dict[str, Any]] = []
        self._update_ids = itertools.count(1)
        self._message_ids = itertools.count(1000)
        self._file_ids = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    # -- server ---------------------------------------------------------------------------------

    async def start(self) -> str:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/bot{token}/{method}", self._method)
        app.router.add_get("/file/bot{token}/{path:.+}", self._file)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.base_url = f"http://127.0.0.1:{port}"
        return self.base_url

    async def close(self) -> None:
        async with self._changed:
            self._closing = True  # long polls still open end now, not at their timeout
            self._changed.notify_all()
        if self._runner is not None:
            await self._runner.cleanup()

    def write_corvid_config(self, home: Path, llm_base_url: str, **telegram: Any) -> None:
        """Set up a Corvid home whose config points at this fake and at ``llm_base_url``
        (for running ``corvid run`` as a process; tokens come from the environment)."""
        from gateway.config.home import init_home

        init_home(home, {})
        config = yaml.safe_load((home / "config.yaml").read_text())
        config["llm"]["base_url"] = llm_base_url
        config["memory"]["embeddings"]["provider"] = "none"  # no real embedding model
        # The control page on a free port: tests running at once (and any Corvid on this
        # machine) would otherwise all want 8787.
        config["web"]["port"] = 0
        section = {k: v for k, v in self.channel_config(**telegram).items() if k != "token"}
        config["channels"]["telegram"].update(allow_from=[42], **section)
        (home / "config.yaml").write_text(yaml.safe_dump(config))

    def channel_config(self, **extra: Any) -> dict[str, Any]:
        """The ``channels.telegram`` config section that points Corvid at this fake."""
        return {
            "enabled": True,
            "token": self.token,
            "base_url": f"{self.base_url}/bot",
            "base_file_url": f"{self.base_url}/file/bot",
            "poll_timeout": 1,
            # Whole replies unless a test is about streaming: then it passes streaming=True.
            "streaming": False,
            **extra,
        }

    # -- scripting ------------------------------------------------------------------------------

    def fail(self, method: str, *faults: Fault) -> None:
        self._faults.setdefault(method, deque()).extend(faults)

    def last_update_id(self) -> int:
        """The id of the newest update queued so far (0 before any)."""
        return self._last_update_id

    def hold(self, method: str) -> asyncio.Event:
        """The next call of ``method`` is carried out (a message counts as sent) but its answer
        waits until the returned event is set: a client killed meanwhile never hears back."""
        release = self._holds[method] = asyncio.Event()
        return release

    def add_file(self, data: bytes) -> tuple[str, str]:
        n = next(self._file_ids)
        file_id = f"file-{n}"
        self.files[file_id] = data
        return file_id, f"unique-{n}"

    def hold_file(self, file_id: str, release: asyncio.Event) -> None:
        """Make downloads of ``file_id`` wait until ``release`` is set (a slow download)."""
        self._held[file_id] = release

    def push(self, message: dict[str, Any], kind: str = "message") -> dict[str, Any]:
        """Queue an update carrying ``message`` (filled in with ids and a date)."""
        message.setdefault("message_id", next(self._message_ids))
        message.setdefault("date", int(time.time()))
        update_id = next(self._update_ids)
        update = {"update_id": update_id, kind: message}
        self._last_update_id = update_id
        self._updates.append(update)
        self._notify()
        return message

    def text(
        self,
        text: str,
        *,
        user: int = 42,
        first_name: str = "Ada",
        chat: int | None = None,
        chat_type: str = "private",
        thread: int | None = None,
        reply_to: dict[str, Any] | None = None,
        is_bot: bool = False,
        entities: list[dict[str, Any]] | None = None,
        **fields: Any,
    ) -> dict[str, Any]:
        """Push a text message from ``user``; commands and @mentions get their entities."""
        chat_id = user if chat is None else chat
        chat_obj: dict[str, Any] = {"id": chat_id, "type": chat_type}
        if chat_type == "private":
            chat_obj["first_name"] = first_name
        else:
            chat_obj["title"] = "Test group"
            if thread is not None:
                chat_obj["is_forum"] = True
        msg: dict[str, Any] = {
            "chat": chat_obj,
            "from": {"id": user, "is_bot": is_bot, "first_name": first_name},
            **fields,
        }
        if text:
            msg["text"] = text
            msg["entities"] = entities if entities is not None else auto_entities(text)
        if thread is not None:
            msg["message_thread_id"] = thread
            msg["is_topic_message"] = True
        if reply_to is not None:
            msg["reply_to_message"] = reply_to
        return self.push(msg)

    def press(self, sent: dict[str, Any], label: str, *, user: int = 42) -> dict[str, Any]:
        """Press the button ``label`` under a message the bot sent (``sent``, from
        ``self.sent``): a callback_query update with that button's data."""
        markup = sent.get("reply_markup")
        rows = json.loads(markup)["inline_keyboard"] if isinstance(markup, str) else []
        data = next(b["callback_data"] for row in rows for b in row if b["text"] == label)
        chat_id = int(sent["chat_id"])
        query = {
            "id": str(10_000 + next(self._update_ids)),
            "from": {"id": user, "is_bot": False, "first_name": "Ada"},
            "chat_instance": str(chat_id),
            "data": data,
            "message": {
                "message_id": sent["message_id"],
                "date": int(time.time()),
                "chat": {"id": chat_id, "type": "private" if chat_id > 0 else "supergroup"},
                "from": {"id": BOT_ID, "is_bot": True, "first_name": "Corvid"},
                "text": sent["shown"],
            },
        }
        update_id = next(self._update_ids)
        update = {"update_id": update_id, "callback_query": query}
        self._last_update_id = update_id
        self._updates.append(update)
        self._notify()
        return query

    def calls_to(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]

    # -- Bot API --------------------------------------------------------------------------------

    async def _params(self, request: web.Request) -> dict[str, Any]:
        params: dict[str, Any] = dict(request.query)
        ctype = request.content_type
        if ctype == "application/json":
            params.update(await request.json())
        elif ctype == "multipart/form-data":
            async for part in await request.multipart():
                data = await part.read()  # type: ignore[union-attr]
                params[part.name or ""] = data if part.filename else data.decode()  # type: ignore[union-attr]
        elif request.can_read_body:
            params.update(await request.post())
        for key in ("reply_parameters", "commands", "allowed_updates", "link_preview_options"):
            if isinstance(params.get(key), str):
                params[key] = json.loads(params[key])
        return params

    async def _method(self, request: web.Request) -> web.Response:
        if self.down:
            self.dropped[request.match_info["method"]] += 1
            self._notify()
            assert request.transport is not None
            request.transport.abort()  # the client sees the connection drop, no answer
            raise asyncio.CancelledError
        method = request.match_info["method"]
        params = await self._params(request)
        agent = request.headers.get("User-Agent", "")
        self.calls.append(Call(method, params, time.monotonic(), agent))
        self._notify()
        if request.match_info["token"] != self.token:
            return _error(401, "Unauthorized")
        faults = self._faults.get(method)
        if faults:
            fault = faults.popleft()
            extra = {"retry_after": fault.retry_after} if fault.retry_after is not None else None
            return _error(fault.status, fault.description, extra)
        handler = getattr(self, f"_m_{method}", None)
        if handler is None:
            return _error(404, "Not Found: method not found")
        if method in self.latency:
            await asyncio.sleep(self.latency[method])  # the server's own time, not a test's wait
        response: web.Response = await handler(params)
        release = self._holds.pop(method, None)
        if release is not None:
            await release.wait()
        return response

    async def _m_getMe(self, params: dict[str, Any]) -> web.Response:
        return _ok(
            {
                "id": BOT_ID,
                "is_bot": True,
                "first_name": "Corvid",
                "username": self.username,
                "can_join_groups": True,
                "can_read_all_group_messages": False,
                "supports_inline_queries": False,
            }
        )

    async def _m_setMyCommands(self, params: dict[str, Any]) -> web.Response:
        return _ok(True)

    async def _m_deleteWebhook(self, params: dict[str, Any]) -> web.Response:
        self.webhook_url = ""
        return _ok(True)

    async def _m_setWebhook(self, params: dict[str, Any]) -> web.Response:
        self.webhook_url = params.get("url", "")
        return _ok(True)

    async def _m_sendChatAction(self, params: dict[str, Any]) -> web.Response:
        return _ok(True)

    async def _m_getUpdates(self, params: dict[str, Any]) -> web.Response:
        offset = int(params.get("offset") or 0)
        timeout = float(params.get("timeout") or 0)
        self._updates = [u for u in self._updates if u["update_id"] >= offset]
        if not self._updates and timeout > 0:
            try:
                async with asyncio.timeout(timeout):
                    async with self._changed:
                        await self._changed.wait_for(lambda: bool(self._updates) or self._closing)
            except TimeoutError:
                pass
        return _ok(list(self._updates[:100]))

    def _check_text(self, params: dict[str, Any]) -> web.Response | str:
        """What a message with these parameters shows, or Telegram's refusal."""
        text = str(params.get("text", ""))
        mode = params.get("parse_mode")
        if mode == "HTML":
            problem = check_telegram_html(text)
            if problem is not None:
                return _error(400, f"Bad Request: can't parse entities: {problem}")
        if re.search("[\ud800-\udfff]", text):
            return _error(400, "Bad Request: text must be encoded in UTF-8")
        shown = visible(text, mode)
        if all(ch.isspace() or unicodedata.category(ch) == "Cf" for ch in shown):
            # Zero-width characters alone count as empty, as they do on Telegram.
            return _error(400, "Bad Request: message text is empty")
        if utf16(shown) > 4096:
            return _error(400, "Bad Request: message is too long")
        return shown

    async def _m_sendMessage(self, params: dict[str, Any]) -> web.Response:
        shown = self._check_text(params)
        if isinstance(shown, web.Response):
            return shown
        chat_id = int(params["chat_id"])
        reply = params.get("reply_parameters") or {}
        gone = (chat_id, int(reply.get("message_id", 0))) in self.deleted
        if gone and not reply.get("allow_sending_without_reply"):
            return _error(400, "Bad Request: message to be replied not found")
        message_id = next(self._message_ids)
        message = {
            "message_id": message_id,
            "date": int(time.time()),
            "chat": {"id": chat_id, "type": "private" if chat_id > 0 else "supergroup"},
            "from": {"id": BOT_ID, "is_bot": True, "first_name": "Corvid"},
            "text": shown,
        }
        self.sent.append({**params, "message_id": message_id, "shown": shown})
        self.chat[(chat_id, message_id)] = shown
        self.markup[(chat_id, message_id)] = params.get("reply_markup")
        self._notify()
        return _ok(message)

    async def _m_editMessageText(self, params: dict[str, Any]) -> web.Response:
        where = (int(params["chat_id"]), int(params["message_id"]))
        if where not in self.chat:
            return _error(400, "Bad Request: message to edit not found")
        shown = self._check_text(params)
        if isinstance(shown, web.Response):
            return shown
        if self.chat[where] == shown:
            return _error(
                400,
                "Bad Request: message is not modified: specified new message content and reply "
                "markup are exactly the same as a current content and reply markup of the message",
            )
        self.chat[where] = shown
        self.markup[where] = params.get("reply_markup")
        self.edits.append({**params, "shown": shown})
        self._notify()
        chat = {"id": where[0], "type": "private" if where[0] > 0 else "supergroup"}
        bot = {"id": BOT_ID, "is_bot": True, "first_name": "Corvid"}
        edited = {"message_id": where[1], "chat": chat, "from": bot, "date": 0, "text": shown}
        return _ok({**edited, "edit_date": int(time.time())})

    async def _m_answerCallbackQuery(self, params: dict[str, Any]) -> web.Response:
        self.answered.append(params)
        self._notify()
        return _ok(True)

    async def _m_deleteMessage(self, params: dict[str, Any]) -> web.Response:
        where = (int(params["chat_id"]), int(params["message_id"]))
        if self.chat.pop(where, None) is None:
            return _error(400, "Bad Request: message to delete not found")
        self._notify()
        return _ok(True)

    async def _m_sendMessageDraft(self, params: dict[str, Any]) -> web.Response:
        if int(params["chat_id"]) < 0:
            return _error(400, "Bad Request: drafts can be sent only to private chats")
        if not int(params.get("draft_id") or 0):
            return _error(400, "Bad Request: draft_id must be non-zero")
        shown = self._check_text(params)
        if isinstance(shown, web.Response):
            return shown
        self.drafts.append({**params, "shown": shown})
        self._notify()
        return _ok(True)

    def shows(self, chat_id: int) -> list[str]:
        """What the chat shows of the bot's messages now, oldest first (edits applied,
        deleted ones gone)."""
        return [text for (chat, _), text in sorted(self.chat.items()) if chat == chat_id]

    async def _m_getFile(self, params: dict[str, Any]) -> web.Response:
        file_id = params.get("file_id", "")
        if file_id not in self.files:
            return _error(400, "Bad Request: invalid file_id")
        return _ok(
            {
                "file_id": file_id,
                "file_unique_id": "u" + file_id,
                "file_size": len(self.files[file_id]),
                "file_path": f"files/{file_id}.bin",
            }
        )

    async def _file(self, request: web.Request) -> web.Response:
        if request.match_info["token"] != self.token:
            return web.Response(status=401)
        name = request.match_info["path"].removeprefix("files/").removesuffix(".bin")
        if name not in self.files:
            return web.Response(status=404)
        if name in self._held:
            await self._held[name].wait()
        return web.Response(body=self.files[name])


def auto_entities(text: str) -> list[dict[str, Any]]:
    """The entities Telegram attaches: a leading /command and every @mention."""
    entities: list[dict[str, Any]] = []
    m = re.match(r"/[A-Za-z0-9_]+(@[A-Za-z0-9_]+)?", text)
    if m:
        entities.append({"type": "bot_command", "offset": 0, "length": utf16(m.group(0))})
    for m in re.finditer(r"(?<![A-Za-z0-9_/])@[A-Za-z0-9_]{5,32}", text):
        entities.append(
            {"type": "mention", "offset": utf16(text[: m.start()]), "length": utf16(m.group(0))}
        )
    return entities


def _ok(result: Any) -> web.Response:
    return web.json_response({"ok": True, "result": result})


def _error(status: int, description: str, parameters: dict[str, Any] | None = None) -> web.Response:
    body: dict[str, Any] = {"ok": False, "error_code": status, "description": description}
    if parameters:
        body["parameters"] = parameters
    return web.json_response(body, status=status)
