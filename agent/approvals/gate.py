"""The gate every tool call passes: it runs what the policy allows, refuses what it denies, and
for the rest asks the owner through the ``Asker`` the gateway gives, waiting a bounded time.

A turn that read text from outside the owner's chats is tainted (the model may follow orders
hidden in that text): it asks even for tools allowed "always", before a write to a place later
prompts read, and in private chats before a call that could carry data off the machine.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

from agent.approvals.audit import MAX_SHOWN, AuditLog, shown_arguments, whole_arguments
from agent.approvals.policy import Policy, chosen
from agent.approvals.shared_files import CHANGE_ARGUMENTS, prompt_write, proposed_diff
from agent.tools.context import TurnContext
from agent.tools.registry import EGRESS_RULE, Tool, ToolResult, egress
from gateway.contract.events import SessionKey

log = logging.getLogger(__name__)


class Answer(StrEnum):
    ONCE = "once"
    ALWAYS = "always"
    DENY = "deny"
    UNANSWERED = "unanswered"  # the wait ran out: no
    UNASKED = "unasked"  # there was no private chat of the owner's to ask in: no


ANSWERS = (Answer.ONCE, Answer.ALWAYS, Answer.DENY)


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """What the owner is shown: the exact call, which chat it came from, what untrusted text
    the turn had read, why it is asked, and for a place a later prompt reads the change it
    would make."""

    id: str
    tool: str
    arguments: str  # JSON, whole, nothing invisible (``audit.shown_arguments``)
    chat: SessionKey
    sources: tuple[str, ...] = ()
    diff: str = ""
    why: str = ""  # the rule that asks, when it is not the tool's own policy

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "tool": self.tool,
            "arguments": self.arguments,
            "chat": str(self.chat),
            "sources": list(self.sources),
            "diff": self.diff,
            "why": self.why,
        }


class Asker(Protocol):
    """Whoever can reach the owner (the gateway): tells them of ``request`` in their private
    chat and returns their answer, ``UNANSWERED`` when the wait runs out."""

    async def ask(self, request: ApprovalRequest) -> Answer: ...


@dataclass(frozen=True, slots=True)
class Review:
    """The gate's word on one call: run it (with ``ctx``) and tell the model ``note`` first,
    or refuse it with ``refusal``."""

    ctx: TurnContext
    refusal: str | None = None
    note: str = ""

    def result(self, out: ToolResult) -> ToolResult:
        if not self.note:
            return out
        return ToolResult(f"{self.note}\n{out.text}", out.is_error, out.blocks)


# Is this person (by platform and id) the owner?
IsOwner = Callable[[str, str], bool]


class Gate:
    def __init__(
        self,
        audit: AuditLog,
        asker: Asker | None = None,
        overrides: Mapping[str, str] | None = None,
        is_owner: IsOwner | None = None,
    ) -> None:
        self.audit = audit
        self.asker = asker
        self.overrides = dict(overrides or {})
        self.is_owner = is_owner or (lambda platform, user: False)

    def policy(self, tool: Tool) -> Policy:
        return chosen(tool.name, tool.policy, self.overrides, tool.server)

    async def review(self, tool: Tool | None, args: Any, ctx: TurnContext) -> Review:
        if tool is None or (tool.private_only and not ctx.private):
            return Review(ctx)  # the registry answers for a tool this chat is not offered
        if ctx.grant is not None and not ctx.grant.permits(tool.name):
            return Review(ctx)  # refused by the grant, in the registry's words
        policy = self.policy(tool)
        tainted = not ctx.exposure.clean
        place = prompt_write(ctx, tool.name, args)
        guarded = place is not None and ctx.private and tainted
        leak = egress(tool, args, ctx) if ctx.private and tainted else None
        chat = str(ctx.key)
        if policy is Policy.DENY:
            self.audit.record("blocked", tool.name, chat, arguments=whole_arguments(args))
            return Review(ctx, f"{tool.name} is turned off by the owner; it was not run.")
        if policy is Policy.ALLOW and not guarded and leak is None:
            return Review(ctx)
        # A shared chat's own messages are text from outside the owner's chats too.
        sources = (
            *(() if ctx.private else ("this shared chat's messages",)),
            *ctx.exposure.sources,
        )
        allowed = tool.allowed is not None and tool.allowed(args)
        if not sources and not guarded and (self.audit.always(tool.name) or allowed):
            return Review(ctx)
        # Only the owner's own messages can ask: a group member cannot make the owner's phone
        # ring.
        if not ctx.private and not self._owner_asked(ctx):
            return self._not_the_owners(tool, ctx, args, sources)
        request = self._request(tool, args, ctx, sources, (place if guarded else None, leak))
        if len(request.arguments) + len(request.diff) > MAX_SHOWN:
            return self._too_long(tool, ctx, args, sources, request)
        answer = await self._ask(request, args, sources)
        if answer is Answer.ALWAYS:
            self.audit.allow_always(tool.name)
        if answer in (Answer.ONCE, Answer.ALWAYS):
            cleared = replace(ctx, owner_approved=True) if guarded else ctx
            return Review(cleared, note="[The owner approved this call.]")
        if guarded:
            # Not approved: the tool refuses it itself, saying why the owner was asked.
            return Review(ctx)
        return Review(ctx, _REFUSALS[answer].format(tool=tool.name))

    def _request(
        self,
        tool: Tool,
        args: Any,
        ctx: TurnContext,
        sources: tuple[str, ...],
        why: tuple[Path | None, str | None],
    ) -> ApprovalRequest:
        """The request as the owner will see it: a change to a prompt place as its path and
        its diff (what will be written, quoting included), any other call whole; and the rule
        that asks, when one does."""
        place, leak = why
        shown, diff = shown_arguments(args), ""
        if place is not None and isinstance(args, dict):
            rest = {k: v for k, v in args.items() if k not in CHANGE_ARGUMENTS}
            shown, diff = shown_arguments(rest), proposed_diff(ctx, tool.name, args, place)
        rule = f"{EGRESS_RULE} Here: {leak}." if leak is not None else ""
        return ApprovalRequest(secrets.token_hex(4), tool.name, shown, ctx.key, sources, diff, rule)

    async def _ask(self, request: ApprovalRequest, args: Any, sources: tuple[str, ...]) -> Answer:
        chat, whole = str(request.chat), whole_arguments(args)
        self.audit.record(
            "asked", request.tool, chat, arguments=whole, sources=sources, request=request.id
        )
        answer = Answer.UNASKED if self.asker is None else await self.asker.ask(request)
        self.audit.record(
            _EVENTS[answer],
            request.tool,
            chat,
            arguments=whole,
            sources=sources,
            request=request.id,
        )
        log.info("%s: %s for %s: %s", request.chat, request.id, request.tool, answer)
        return answer

    def _too_long(
        self,
        tool: Tool,
        ctx: TurnContext,
        args: Any,
        sources: tuple[str, ...],
        request: ApprovalRequest,
    ) -> Review:
        """A call the owner could not be shown whole in a request: refused without asking."""
        size = len(request.arguments) + len(request.diff)
        self.audit.record(
            "refused",
            tool.name,
            str(ctx.key),
            arguments=whole_arguments(args),
            sources=sources,
            detail=f"too long to show the owner whole ({size} characters)",
        )
        return Review(
            ctx,
            f"{tool.name} needs the owner's approval, and the call is too long to show them "
            f"whole ({size} characters; at most {MAX_SHOWN}); it was not run. Make it shorter "
            "(a change in smaller steps), or ask the owner to do it by hand.",
        )

    def _not_the_owners(
        self, tool: Tool, ctx: TurnContext, args: Any, sources: tuple[str, ...]
    ) -> Review:
        """A shared chat's turn that someone other than the owner asked for: nobody is asked."""
        self.audit.record(
            "refused",
            tool.name,
            str(ctx.key),
            arguments=whole_arguments(args),
            sources=sources,
            detail="asked for by someone other than the owner",
        )
        return Review(
            ctx,
            f"{tool.name} needs the owner's approval, and only the owner's own requests can ask "
            "for it; it was not run.",
        )

    def _owner_asked(self, ctx: TurnContext) -> bool:
        """Did the owner write every message this shared chat's turn answers?"""
        return bool(ctx.senders) and all(
            self.is_owner(ctx.key.channel, sender) for sender in ctx.senders
        )


_EVENTS = {
    Answer.ONCE: "approved",
    Answer.ALWAYS: "always",
    Answer.DENY: "denied",
    Answer.UNANSWERED: "unanswered",
    Answer.UNASKED: "refused",
}
_REFUSALS = {
    Answer.DENY: "The owner declined {tool}; it was not run. Do not try it again another way.",
    Answer.UNANSWERED: "The owner did not answer the request to run {tool} in time, so it was "
    "not run.",
    Answer.UNASKED: "{tool} needs the owner's approval and there is no private chat to ask them "
    "in; it was not run.",
}
