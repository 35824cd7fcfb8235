"""Consolidation's proposals for MEMORY.md by kind: notes dated and placed, a move accounted for."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

from agent.memory.proposal_store import Store
from agent.memory.proposals import PENDING, REJECTED, Item, enclosing
from agent.memory.sections import UNSORTED, dated, learned_on, outside

LEFT_OVER = (
    "Not placed by the proposal: kept under 'Not sorted yet' so that nothing is lost; move it "
    "by hand, or the next consolidation proposes where it goes"
)


def wants_move(current: str, store: Store) -> bool:
    """Should this run propose moving what of MEMORY.md is in no section into sections? Not
    while such a proposal waits for the owner, and not again once they rejected one."""
    if not outside(current):
        return False
    for proposal in store.all():
        moving = proposal.target == "MEMORY.md" and any(i.op == "place" for i in proposal.items)
        if moving and proposal.status in (PENDING, REJECTED):
            return False
    return True


def placed(items: list[Item], today: date, *, by_kind: bool) -> list[Item]:
    """``items`` with their new notes dated (when learned, from where); with ``by_kind``, a
    new note given no section goes under 'Not sorted yet' rather than at the file's end."""
    out = []
    for item in items:
        if item.op in ("add", "update", "merge") and item.text and (by_kind or item.section):
            source = item.sources[0] if item.sources else ""
            text = dated(item.text, learned_on(item.sources, today), source)
            section = item.section or (UNSORTED if item.op == "add" else "")
            item = replace(item, text=text, section=section)
        out.append(item)
    return out


def rest_of_move(current: str, items: list[Item]) -> list[Item]:
    """A "place" under 'Not sorted yet' for each line of ``current`` that no item takes
    (moves, changes or drops): with them, the proposal accounts for every line."""
    covered: set[int] = set()
    for item in items:
        for passage in item.old:
            at = current.find(passage)
            if at >= 0:
                first = current.count("\n", 0, at) + 1
                covered.update(range(first, first + passage.count("\n") + 1))
    passages: list[tuple[int, str]] = []
    for number, line in outside(current):
        if number in covered:
            continue
        if passages and line[:1] in (" ", "\t") and passages[-1][0] == number - 1:
            passages[-1] = (number, passages[-1][1] + "\n" + line)  # a list item's next line
        else:
            passages.append((number, line))
    rest = []
    for _, passage in passages:
        if current.count(passage) != 1:
            continue  # the same lines again elsewhere: they cannot be named apart, and stay
        origin = enclosing(current, passage)
        rest.append(Item("place", passage, (passage,), LEFT_OVER, (), origin, section=UNSORTED))
    return rest
