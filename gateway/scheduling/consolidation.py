"""The memory consolidation job: proposals for the owner's and guests' notes, sent or applied."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo

from agent.memory.consolidation import Curator
from agent.memory.proposals import REPLACES, Proposal
from agent.memory.replacing import UNDO
from agent.model.port import LLM
from gateway.contract.errors import DeliveryError
from gateway.contract.events import OWNER, OutboundMessage, SessionKey, job_key
from gateway.scheduling.host import JobHost
from gateway.scheduling.jobs import Job, Skip, run_origin, slot_time

log = logging.getLogger(__name__)

# What the message shows at most of the proposal's diff; the control page shows it all.
SHOWN_CHARS = 3000


def buttons(proposal: Proposal) -> tuple[tuple[str, str], ...]:
    return (
        ("Apply all", f"/memory apply {proposal.id}"),
        ("Choose", f"/memory choose {proposal.id}"),
        ("Reject", f"/memory reject {proposal.id}"),
    )


def message(proposal: Proposal, diff: str) -> str:
    shown = (
        diff
        if len(diff) <= SHOWN_CHARS
        else diff[:SHOWN_CHARS] + "\n[... the rest on the control page]\n"
    )
    marks = any(item.op == REPLACES for item in proposal.items)
    files = "The files" if marks else proposal.target
    return (
        f"{proposal.summary(markdown=True)}\n\n{files} would change so:\n"
        f"```diff\n{shown}```\n"
        "Nothing changes until you say so."
    )


@dataclass
class Consolidation:
    host: JobHost
    curator: Curator
    llm: LLM
    auto_apply: bool = False
    # One run at a time: a run started by hand during the nightly one would read the same new
    # entries (their marks are stored at the end) and propose them twice.
    running: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)

    async def __call__(self, job: Job, slot: str) -> None:
        async with self.running:
            await self._run(job, slot)

    async def _run(self, job: Job, slot: str) -> None:
        """A proposal for MEMORY.md from the owner's logs, and one for each shared chat's notes
        (a paired guest's, a group's) from that chat's own log; each sent to the owner's chat.
        One that fails fails the run, after the others are made and sent."""
        when = slot_time(slot, ZoneInfo(job.timezone))
        made: list[Proposal] = []
        failed: list[Exception] = []
        key = job_key(job.id, SessionKey.parse(job.target))
        for audience in (OWNER, *self.curator.chats()):
            try:
                outcome = await self.curator.propose(self.llm, when, audience, key)
            except Exception as exc:  # the others' proposals are made all the same
                log.warning("job %s: %s: no proposal: %s", job.id, audience, exc)
                failed.append(exc)  # its logs are read again by the next run
                continue
            if outcome.chars_in:
                log.info(
                    "job %s: %s: read %d characters; %d tokens in, %d out",
                    job.id,
                    audience,
                    outcome.chars_in,
                    outcome.usage.input + outcome.usage.cache_read + outcome.usage.cache_write,
                    outcome.usage.output,
                )
            if outcome.proposal is not None:
                made.append(outcome.proposal)
        if not made and not failed:
            raise Skip("nothing new in the logs, or nothing to change")
        origin = run_origin(job, slot)
        for n, proposal in enumerate(made, 1 if failed else 0):
            # The first message under the run's own name: a run repeated after a crash finds
            # it (the proposals themselves are kept already). Not when one failed: the retry
            # would find it and stop, and the failed one wait a day.
            await self._send(job, proposal, origin if n == 0 else f"{origin}#{n}")
        if failed:
            raise failed[0]  # the run failed, though what it made was sent

    async def _send(self, job: Job, proposal: Proposal, origin: str) -> None:
        target = SessionKey.parse(job.target)
        diff = self.curator.preview(proposal)
        if self.auto_apply:
            done = self.curator.apply(proposal.id, f"job {job.id} (auto_apply)")
            text = (
                f"On its own (memory.consolidation.auto_apply): {done.said()}"
                f"\n\n{proposal.summary(markdown=True)}\n\n```diff\n{diff[:SHOWN_CHARS]}```\n"
                + (UNDO if done.files else "")
            )
            out = OutboundMessage(target, text)
        else:
            out = OutboundMessage(target, message(proposal, diff), buttons=buttons(proposal))
        try:
            await self.host.deliver(out, origin)
        except DeliveryError as exc:
            # Kept all the same: the control page and the terminal show it.
            log.warning("job %s: proposal %s not sent: %s", job.id, proposal.id, exc)
