"""The memory consolidation job: a proposal for ``MEMORY.md`` from the owner's new log
entries (``agent.memory.consolidation``), sent to the owner's chat with buttons to apply all,
choose or reject; with ``auto_apply`` applied at once, and reported."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from agent.memory.consolidation import Curator
from agent.memory.proposals import Proposal
from agent.model.port import LLM
from gateway.contract.errors import DeliveryError
from gateway.contract.events import OutboundMessage, SessionKey
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
    return (
        f"{proposal.summary()}\n\nMEMORY.md would change so:\n```diff\n{shown}```\n"
        "Nothing changes until you say so."
    )


@dataclass
class Consolidation:
    host: JobHost
    curator: Curator
    llm: LLM
    auto_apply: bool = False

    async def __call__(self, job: Job, slot: str) -> None:
        origin = run_origin(job, slot)
        when = slot_time(slot, ZoneInfo(job.timezone))
        outcome = await self.curator.propose(self.llm, when)
        log.info(
            "job %s: read %d characters; %d tokens in, %d out",
            job.id,
            outcome.chars_in,
            outcome.usage.input + outcome.usage.cache_read + outcome.usage.cache_write,
            outcome.usage.output,
        )
        proposal = outcome.proposal
        if proposal is None:
            raise Skip("nothing new in the logs" if not outcome.chars_in else "nothing to change")
        target = SessionKey.parse(job.target)
        diff = self.curator.preview(proposal)
        if self.auto_apply:
            self.curator.apply(proposal.id, f"job {job.id} (auto_apply)")
            text = (
                "Applied to MEMORY.md on its own (memory.consolidation.auto_apply):\n\n"
                f"{proposal.summary()}\n\n```diff\n{diff[:SHOWN_CHARS]}```\n"
                "To take it back: corvid memory undo"
            )
            out = OutboundMessage(target, text)
        else:
            out = OutboundMessage(target, message(proposal, diff), buttons=buttons(proposal))
        try:
            await self.host.deliver(out, origin)
        except DeliveryError as exc:
            # Kept all the same: the control page and the terminal show it.
            log.warning("job %s: proposal %s not sent: %s", job.id, proposal.id, exc)
