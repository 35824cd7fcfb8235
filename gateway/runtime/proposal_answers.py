"""``/memory apply|choose|reject ID``: the owner's answer to a memory proposal."""

from __future__ import annotations

from agent.memory.consolidation import Curator
from agent.memory.proposals import APPLIED, Proposal
from gateway.contract.errors import ToolError

Buttons = tuple[tuple[str, str], ...]
USAGE = "Which proposal? /memory apply ID [N ...], /memory choose ID or /memory reject ID."


def proposal_answer(curator: Curator | None, argument: str, who: str) -> tuple[str, Buttons]:
    """The answer to ``/memory ARGUMENT`` from ``who`` (the owner's session), with buttons
    when there is still something to choose."""
    if curator is None:
        return "Memory proposals are not kept here.", ()
    action, _, rest = argument.partition(" ")
    pid, *numbers = rest.split() or [""]
    if not pid or action not in ("apply", "choose", "reject"):
        return USAGE, ()
    try:
        if action == "choose":
            return _choices(curator, pid)
        if action == "reject":
            return rejected_text(curator.reject(pid, who)), ()
        chosen = [int(n) for n in numbers if n.isdigit()]
        done = curator.apply(pid, who, chosen or None)
    except ToolError as exc:
        return str(exc), ()
    left = done.proposal.pending()
    if left:
        return done.said() + " Still to decide:", _buttons(pid, left)
    return done.closing(), ()


def rejected_text(proposal: Proposal) -> str:
    """What a rejection did: nothing to the files, or nothing more than what was applied."""
    kept = [n for n, item in enumerate(proposal.items, 1) if item.status == APPLIED]
    if not kept:
        return f"Rejected memory proposal {proposal.id}; nothing was changed."
    which = ", ".join(map(str, kept))
    return (
        f"Rejected the rest of memory proposal {proposal.id}; the change(s) {which} applied "
        "before stay."
    )


def _choices(curator: Curator, pid: str) -> tuple[str, Buttons]:
    proposal = curator.store.get(pid)
    if proposal.status != "pending":
        raise ToolError(f"Memory proposal {pid} was {proposal.status} already.")
    body = "\n\n".join(proposal.items[n - 1].markdown(n) for n in proposal.pending())
    return f"Pick the changes to apply, one at a time:\n\n{body}", _buttons(pid, proposal.pending())


def _buttons(pid: str, numbers: list[int]) -> Buttons:
    return (
        *((f"Apply {n}", f"/memory apply {pid} {n}") for n in numbers),
        ("Reject the rest", f"/memory reject {pid}"),
    )
