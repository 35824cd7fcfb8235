"""Telling the owner, in their private chat, that someone new wants to talk to the bot."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any

from channels.live import escape_markdown
from channels.pairing import PairingRequest
from gateway.contract.events import OutboundMessage, SessionKey, discord_dm, telegram_private
from gateway.contract.ports import Clock
from gateway.infra.tasks import settle

log = logging.getLogger(__name__)

# A flood of strangers never floods the owner: past BURST, the rest come as one digest.
PER_PERSON = 3600.0  # seconds between two notices about the same person
BURST = 3  # notices within WINDOW seconds before the rest wait for the digest
WINDOW = 60.0
NAME_CHARS = 64

Send = Callable[[OutboundMessage], Coroutine[Any, Any, Any]]
# Replaces the text of the message that carries a button for a command, its buttons gone;
# False when no channel knows such a message (sent before a restart, or in a digest).
Settle = Callable[[str, str], Awaitable[bool]]
# Where someone who asked on a platform is written to.
PRIVATE_CHAT = {"telegram": telegram_private, "discord": discord_dm}
WELCOME = (
    "Good news: my owner approved your request, so you can talk to me now. Write whenever you like."
)


class PairingNotices:
    def __init__(
        self,
        send: Send,
        owners: Mapping[str, SessionKey],
        clock: Clock,
        settle: Settle | None = None,
    ) -> None:
        self._send = send
        self._settle = settle
        self._owners = dict(owners)  # platform → the owner's private chat there
        self._clock = clock
        self._told: dict[tuple[str, str], float] = {}
        self._recent: deque[float] = deque()
        self._held: list[PairingRequest] = []
        self._digest: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def set_owners(self, owners: Mapping[str, SessionKey]) -> None:
        """Where notices go from now on (a reload changed ``allow_from``)."""
        self._owners = dict(owners)

    def owner_chat(self, platform: str) -> SessionKey | None:
        return self._owners.get(platform) or next(iter(self._owners.values()), None)

    def requested(self, req: PairingRequest) -> None:
        """A new request (called by the access policy): tell the owner, now or in a digest."""
        owner = self.owner_chat(req.channel)
        if owner is None:
            log.info(
                "pairing request from %s user %s; no owner chat to tell", req.channel, req.user_id
            )
            return
        now = self._clock.monotonic()
        last = self._told.get((req.channel, req.user_id))
        if last is not None and now - last < PER_PERSON:
            return
        self._told[(req.channel, req.user_id)] = now
        while self._recent and now - self._recent[0] >= WINDOW:
            self._recent.popleft()
        if len(self._recent) >= BURST:
            self._held.append(req)
            if self._digest is None:
                self._digest = self._spawn(self._send_digest(owner))
            return
        self._recent.append(now)
        self._spawn(self._send(notice(req, owner)))

    def handled(self, req: PairingRequest, approved: bool) -> None:
        """A request was answered: its notice says so, without buttons; someone approved is
        told they are in."""
        self._spawn(self._answered(req, approved))

    async def _answered(self, req: PairingRequest, approved: bool) -> None:
        if self._settle is not None:
            try:
                text = answered(req, approved)
                if not await self._settle(f"/approve {req.code}", text):
                    await self._settle(f"/deny {req.code}", text)  # known by a press of Deny
            except Exception as exc:  # the person is told all the same
                log.warning(
                    "could not update the pairing notice for %s user %s: %s",
                    req.channel,
                    req.user_id,
                    exc,
                )
        chat = PRIVATE_CHAT.get(req.channel)
        if approved and chat is not None:
            await self._send(OutboundMessage(chat(req.user_id), WELCOME))

    async def _send_digest(self, owner: SessionKey) -> None:
        await self._clock.sleep(WINDOW)
        held, self._held, self._digest = self._held, [], None
        lines = [f"{len(held)} more people asked to talk to me in the last minute:"]
        lines += [f"- {who(r)}: code {r.code}" for r in held]
        lines.append("Approve one with /approve CODE, or see them all on the control page.")
        await self._send(OutboundMessage(owner, "\n".join(lines)))

    def _spawn(self, work: Coroutine[Any, Any, Any]) -> asyncio.Task[None]:
        async def run() -> None:
            try:
                await work
            except Exception:
                log.exception("could not tell the owner about a pairing request")

        task = asyncio.create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def close(self) -> None:
        await settle(self._tasks, 5, cancel=True)


def who(req: PairingRequest) -> str:
    """A stranger as the owner is told of them: the name they chose (printable, not too
    long), the platform and their id."""
    name = "".join(c for c in req.name if c.isprintable())[:NAME_CHARS].strip()
    # The name is the stranger's words: shown as text, never as a link or formatting.
    name = escape_markdown(name)
    platform = req.channel.capitalize()
    return f"{name} ({platform} id {req.user_id})" if name else f"{platform} user {req.user_id}"


def notice(req: PairingRequest, owner: SessionKey) -> OutboundMessage:
    text = (
        f"{who(req)} wants to talk to me. Their pairing code is {req.code}.\n\n"
        f"Approve: /approve {req.code}\nDeny: /deny {req.code}\n\n"
        "Approved, they get a chat of their own that does not see your private memory."
    )
    buttons = (("Approve", f"/approve {req.code}"), ("Deny", f"/deny {req.code}"))
    return OutboundMessage(owner, text, buttons=buttons)


def answered(req: PairingRequest, approved: bool) -> str:
    """A notice once its request was answered: what happened, and no buttons left to press."""
    if approved:
        return (
            f"{who(req)} asked to talk to me (code {req.code}). Approved: they can talk to me "
            "now, in a chat of their own that does not see your private memory. To undo it: "
            f"/revoke {req.channel} {req.user_id}"
        )
    return f"{who(req)} asked to talk to me (code {req.code}). Denied: their code no longer works."
