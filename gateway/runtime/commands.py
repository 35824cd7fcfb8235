"""Chat commands, answered by the gateway before the agent: one table of name → handler."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, tzinfo
from typing import NamedTuple, Protocol

from agent.loop import Agent
from agent.memory.consolidation import Curator
from agent.sessions.state import SessionState
from channels.pairing import PairingError, PairingStore
from gateway.contract.commands import HELP
from gateway.contract.errors import LLMError
from gateway.contract.events import TERMINAL, InboundMessage, SessionKey
from gateway.infra.times import local_iso
from gateway.runtime.loop_answers import LoopAnswers
from gateway.runtime.pairing_notices import who
from gateway.runtime.proposal_answers import proposal_answer
from gateway.runtime.router import Router
from gateway.runtime.undo_answers import undo_answer
from gateway.usage.commands import UsageCommands

log = logging.getLogger(__name__)


class WithButtons(NamedTuple):
    """An answer with buttons under it, as (label, chat command) pairs."""

    text: str
    buttons: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class ChatCommand:
    name: str
    ordered: bool  # waits for its turn in the session's queue
    run: Callable[[InboundMessage], Awaitable[str | WithButtons]]  # returns the answer


class Decider(Protocol):
    """Takes the owner's answer to a request to act (``gateway/runtime/approvals.py``)."""

    def decide(self, request_id: str, answer: str) -> str | None: ...


class ChatCommands:
    def __init__(self, agent: Agent, router: Router, pairing: PairingStore | None = None) -> None:
        self.agent = agent
        self.router = router
        self.pairing = pairing
        self.approvals: Decider | None = None
        self.table = {
            c.name: c
            for c in (
                ChatCommand("new", True, self._new),
                ChatCommand("reset", True, self._new),
                ChatCommand("compact", True, self._compact),
                ChatCommand("status", False, self._status),
                ChatCommand("help", False, self._help),
                ChatCommand("start", False, self._help),  # what Telegram sends first
                ChatCommand("stop", False, self._stop),
                ChatCommand("approve", False, self._approve),
                ChatCommand("deny", False, self._deny),
                ChatCommand("revoke", False, self._revoke),
                ChatCommand("usage", False, self._usage),
                ChatCommand("budget", False, self._budget),
                ChatCommand("memory", False, self._memory),
                ChatCommand("undo", False, self._undo),
                ChatCommand("approval", False, self._approval),
                ChatCommand("done", False, self._done),
            )
        }
        # /usage and /budget, once the app has a usage ledger (``gateway/usage/commands.py``).
        self.usage: UsageCommands | None = None
        # /done, once the app keeps loops (``gateway/runtime/loop_answers.py``).
        self.loops: LoopAnswers | None = None
        # Makes the message whose button sent a command read how it ended, its buttons gone
        # (a memory proposal's); False when no channel knows the message.
        self.settle: Callable[[str, str], Awaitable[bool]] | None = None

    def get(self, name: str) -> ChatCommand | None:
        return self.table.get(name)

    async def _help(self, msg: InboundMessage) -> str:
        if msg.key == TERMINAL:  # the one chat that can be left
            return HELP.replace(
                "/help — this list\n", "/help — this list\n/quit — leave (Ctrl-D too)\n"
            )
        return HELP

    async def _usage(self, msg: InboundMessage) -> str:
        if self.usage is None:
            return "Usage is not recorded here."
        return self.usage.usage(msg)

    async def _budget(self, msg: InboundMessage) -> str:
        if self.usage is None:
            return "There is no budget here."
        return self.usage.budget(msg)

    async def _stop(self, msg: InboundMessage) -> str:
        return "Stopped." if self.router.stop_turn(msg.key) else "Nothing is running."

    async def _status(self, msg: InboundMessage) -> str:
        key = msg.key
        failover = getattr(self.agent.llm, "failover", None)
        note = failover.note() if failover is not None else None
        return (f"Answering {note}.\n" if note else "") + status_text(
            model=self.agent.llm.model,
            context_window=self.agent.llm.context_window,
            state=self.agent.sessions.peek(key),
            key=key,
            running=self.router.busy(key),
            queued=self.router.queued(key),
            tz=self.agent.tz,
        )

    async def _new(self, msg: InboundMessage) -> str:
        key = msg.key
        note = ""
        try:
            if await self.agent.maintenance.end_session(key):
                note = " A summary of it is in today's log."
        except LLMError as exc:
            log.warning("%s: could not summarise the ending session: %s", key, exc)
            note = " (I couldn't save a summary of it to the log this time.)"
        archived = self.agent.sessions.reset(key)
        kept = " The previous conversation is kept on disk." if archived else ""
        return "Started a new session." + kept + note

    # -- pairing, from the owner's private chat -----------------------------------------------

    def _owners_pairing(self, msg: InboundMessage) -> PairingStore | str:
        if not msg.key.private:
            return "Only my owner can answer pairing requests, in a private chat with me."
        if self.pairing is None:
            return "Pairing is not available here."
        return self.pairing

    async def _approve(self, msg: InboundMessage) -> str:
        store, code = self._owners_pairing(msg), _argument(msg)
        if isinstance(store, str):
            return store
        if not code:
            return "Which code? /approve CODE (the code is in the request I sent you)."
        try:
            req = store.approve(code)
        except PairingError as exc:
            return f"Not approved: {exc}."
        return (
            f"Approved {who(req)}: their next message will be answered, in a chat of their own "
            f"that does not see your private memory. To undo it: /revoke {req.channel} "
            f"{req.user_id}"
        )

    async def _deny(self, msg: InboundMessage) -> str:
        store, code = self._owners_pairing(msg), _argument(msg)
        if isinstance(store, str):
            return store
        try:
            req = store.deny(code)
        except PairingError as exc:
            return f"Nothing to deny: {exc}."
        return f"Denied {who(req)}; their code no longer works."

    async def _revoke(self, msg: InboundMessage) -> str:
        store = self._owners_pairing(msg)
        if isinstance(store, str):
            return store
        platform, _, user_id = _argument(msg).partition(" ")
        if not user_id.strip():
            return "Whose approval? /revoke PLATFORM USER_ID (e.g. /revoke telegram 123456)."
        try:
            removed = store.revoke(platform.lower(), user_id.strip())
        except PairingError as exc:
            return f"Not revoked: {exc}."
        if not removed:
            return f"{platform} user {user_id.strip()} was not approved by pairing."
        return f"Revoked {platform} user {user_id.strip()}: I no longer answer them."

    async def _memory(self, msg: InboundMessage) -> str | WithButtons:
        """The owner's answer to a memory proposal (its buttons send these)."""
        if not msg.key.private:
            return "Only my owner can answer a memory proposal, in a private chat with me."
        answer = WithButtons(
            *proposal_answer(Curator.of(self.agent.memory), _argument(msg), str(msg.key))
        )
        if self.settle is not None:
            # The buttons that asked are answered now, whichever way it went.
            try:
                await self.settle(msg.text.strip(), answer.text.removesuffix(" Still to decide:"))
            except Exception as exc:  # the answer goes out all the same
                log.warning("%s: could not update the proposal's message: %s", msg.key, exc)
        return answer

    async def _undo(self, msg: InboundMessage) -> str | WithButtons:
        """The owner takes back the newest change to the workspace (``undo_answers.py``)."""
        if not msg.key.private:
            return "Only my owner can undo a change, in a private chat with me."
        memory = self.agent.memory
        if memory is None or memory.history is None:
            return "Changes to the workspace are not kept here."
        answer = await asyncio.to_thread(undo_answer, memory.history, _argument(msg), str(msg.key))
        return WithButtons(*answer)

    async def _done(self, msg: InboundMessage) -> str | WithButtons:
        """Close one of this chat's loops, or list them."""
        if self.loops is None:
            return "Loops are not kept here."
        return WithButtons(*await self.loops.answer(msg))

    async def _approval(self, msg: InboundMessage) -> str:
        if not msg.key.private:
            return "Only my owner can answer a request to act, in a private chat with me."
        if self.approvals is None:
            return "Nothing here asks for approvals."
        request_id, _, answer = _argument(msg).partition(" ")
        if not request_id or not answer:
            return "Which request, and what answer? /approval ID once|always|deny"
        problem = self.approvals.decide(request_id, answer.strip().lower())
        if problem is not None:
            return f"Not taken: {problem}."
        return {
            "once": "Approved once.",
            "always": "Approved; allowed from now on.",
            "deny": "Denied.",
        }[answer.strip().lower()]

    async def _compact(self, msg: InboundMessage) -> str:
        key = msg.key
        state = self.agent.sessions.peek(key)
        if state is None:
            return "Nothing to compact yet."
        try:
            done = await self.agent.maintenance.compact(state, self.agent.context(key), True)
        except LLMError as exc:
            if exc.kind.refuses_the_turn:  # its words are about a message, not the summary
                return "Compaction failed: the AI service refused the request for a summary."
            return "Compaction failed: " + exc.user_message()
        if done is None:
            return "Nothing to compact yet: the conversation is all recent."
        return (
            f"Compacted: {done.summarised} older messages replaced by a summary, "
            f"{done.kept} recent ones kept. Context ~{done.tokens_before:,} → "
            f"~{done.tokens_after:,} tokens."
        )


def _argument(msg: InboundMessage) -> str:
    """What follows the command's name, on one line."""
    return " ".join(msg.text.split()[1:])


def status_text(
    *,
    model: str,
    context_window: int,
    state: SessionState | None,
    key: SessionKey,
    running: bool,
    queued: int,
    tz: tzinfo = UTC,
) -> str:
    kind = "private" if key.private else "shared"
    lines = [f"Model: {model}", f"Session: {key} ({kind})"]
    if state is None:
        lines.append("No conversation yet in this session.")
        return "\n".join(lines)
    used = state.context_tokens
    pct = 100 * used / context_window if context_window else 0
    lines.append(f"Context: {used:,} / {context_window:,} tokens ({pct:.0f}%)")
    lines.append(f"Turns: {state.turns} since {local_iso(state.created, tz)}")
    u = state.usage_total
    total_in = u.input + u.cache_read + u.cache_write
    if total_in:
        lines.append(
            f"Tokens used: {total_in:,} in ({100 * u.cache_read / total_in:.0f}% from cache), "
            f"{u.output:,} out"
        )
    lines.append(
        "Now: " + ("answering" if running else "idle") + (f", {queued} queued" if queued else "")
    )
    return "\n".join(lines)
