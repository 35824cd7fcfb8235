"""Asking the owner before an action: the request in their private chat, and their answer."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any

from agent.approvals.gate import ANSWERS, Answer, ApprovalRequest
from gateway.contract.events import OutboundMessage, SessionKey

log = logging.getLogger(__name__)

Send = Callable[[OutboundMessage], Coroutine[Any, Any, Any]]
# Replaces the text of the message carrying a button for a command, its buttons gone.
Settle = Callable[[str, str], Awaitable[bool]]

_SAID = {
    Answer.ONCE: "Approved once.",
    Answer.ALWAYS: "Approved, and allowed from now on (never for a conversation that read text "
    "from outside your own chats).",
    Answer.DENY: "Denied: it was not run.",
    Answer.UNANSWERED: "Not answered in time: it was not run.",
}


@dataclass(slots=True)
class _Pending:
    request: ApprovalRequest
    answer: asyncio.Future[Answer]


class OwnerApprovals:
    """The gateway's ``Asker``: where the owner is asked, and the requests still waiting."""

    def __init__(
        self,
        send: Send,
        owners: Mapping[str, SessionKey],
        timeout: float,
        settle: Settle | None = None,
    ) -> None:
        self._send = send
        self._owners = dict(owners)  # platform → the owner's private chat there
        self.timeout = timeout
        self._settle = settle
        self._pending: dict[str, _Pending] = {}

    def set_owners(self, owners: Mapping[str, SessionKey]) -> None:
        self._owners = dict(owners)

    def where(self, chat: SessionKey) -> SessionKey | None:
        """The owner's private chat to ask in: the asking chat itself when it is one, else the
        owner's on the same platform, else on any."""
        if chat.private and not chat.job:
            return chat
        return self._owners.get(chat.channel) or next(iter(self._owners.values()), None)

    async def ask(self, request: ApprovalRequest) -> Answer:
        target = self.where(request.chat)
        if target is None:
            log.warning(
                "%s: no private chat of the owner's to ask about %s", request.chat, request.tool
            )
            return Answer.UNASKED
        pending = _Pending(request, asyncio.get_running_loop().create_future())
        self._pending[request.id] = pending
        answer = Answer.UNANSWERED
        said = _SAID[answer]
        try:
            await self._send(message(request, target, self.timeout))
            with contextlib.suppress(TimeoutError):
                answer = await asyncio.wait_for(asyncio.shield(pending.answer), self.timeout)
            said = _SAID[answer]
        except asyncio.CancelledError:
            said = "Stopped before an answer: it was not run."
            raise
        finally:
            self._pending.pop(request.id, None)
            await self._settled(request, said)
        return answer

    def decide(self, request_id: str, answer: str) -> str | None:
        """The owner's answer to a waiting request; why it could not be taken, or None."""
        try:
            chosen = Answer(answer)
        except ValueError:
            return f"unknown answer {answer!r} (once, always or deny)"
        if chosen not in ANSWERS:
            return f"unknown answer {answer!r} (once, always or deny)"
        pending = self._pending.get(request_id)
        if pending is None or pending.answer.done():
            return f"no request {request_id!r} is waiting (answered, timed out or never made)"
        pending.answer.set_result(chosen)
        return None

    def waiting(self) -> list[ApprovalRequest]:
        return [p.request for p in self._pending.values() if not p.answer.done()]

    async def _settled(self, request: ApprovalRequest, said: str) -> None:
        if self._settle is None:
            return
        text = f"{request.tool} from {request.chat} (request {request.id}): {said}"
        try:
            await self._settle(command(request.id, Answer.ONCE), text)
        except Exception as exc:  # the turn goes on all the same
            log.warning("could not update the approval request %s: %s", request.id, exc)


def command(request_id: str, answer: Answer) -> str:
    return f"/approval {request_id} {answer.value}"


def message(request: ApprovalRequest, target: SessionKey, timeout: float) -> OutboundMessage:
    """The request as the owner reads it: the exact call in a code block, which chat asked,
    why it is asked when a rule asks, what untrusted text the turn had read, and the change
    to a place later prompts read."""
    where = "this chat" if request.chat == target else f"the chat {request.chat}"
    lines = [f"Approval needed: {where} wants to run {request.tool} (request {request.id}).", ""]
    lines += [fenced(request.arguments, "json"), ""]
    if request.why:
        lines += [request.why, ""]
    if request.sources:
        lines += [
            "This conversation has read text from outside your own chats ("
            + ", ".join(request.sources)
            + "), which may carry instructions. Approving always will not skip this question "
            "for such a conversation.",
            "",
        ]
    if request.diff:
        lines += [
            "It would change a file your later conversations read as instructions (what it "
            "writes stays quoted as outside text):",
            fenced(request.diff, "diff"),
            "",
        ]
    minutes = max(1, round(timeout / 60))
    lines += [
        f"Approve once: {command(request.id, Answer.ONCE)}",
        f"Always for {request.tool}: {command(request.id, Answer.ALWAYS)}",
        f"Deny: {command(request.id, Answer.DENY)}",
        f"No answer within {minutes} minute{'s' if minutes != 1 else ''} means no.",
    ]
    buttons = (
        ("Approve once", command(request.id, Answer.ONCE)),
        ("Always for this tool", command(request.id, Answer.ALWAYS)),
        ("Deny", command(request.id, Answer.DENY)),
    )
    return OutboundMessage(target, "\n".join(lines), buttons=buttons)


def fenced(text: str, lang: str) -> str:
    """``text`` in a code block whose fence no run of backticks inside can close."""
    run, longest = 0, 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text.rstrip()}\n{fence}"
