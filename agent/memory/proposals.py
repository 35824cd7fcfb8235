"""Proposed changes to ``MEMORY.md`` that wait for the owner: kept, shown as a diff, applied."""

from __future__ import annotations

import difflib
import hashlib
import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import PurePosixPath
from typing import Any

from agent.memory.links import Offer, chosen
from agent.memory.sections import insert, kind_of, remove, tidy
from agent.workspace.audience import chat_of, is_guest, quotes_outside, untrusted
from gateway.contract.errors import ToolError
from gateway.contract.events import Audience

log = logging.getLogger(__name__)

OPS = ("add", "update", "merge", "drop", "place")  # place: a passage moved to a section
# An older entry of the owner's logs marked out of date by a new one: changes a log, not the
# proposal's file, and names only a pair of entries the run offered (``Offer``).
REPLACES = "replaces"
FROM_OUTSIDE = "Proposed from text written outside the owner's own chats, and approved"
PENDING, APPLIED, REJECTED, REFUSED = "pending", "applied", "rejected", "refused"


@dataclass(frozen=True)
class Item:
    op: str  # add, update, merge, drop
    text: str  # the new passage ("" for drop)
    old: tuple[str, ...]  # exact passages of MEMORY.md it replaces or drops
    reason: str
    sources: tuple[str, ...]  # "memory/2026-11-20.md:14"
    origin: str = ""  # who wrote what it comes from, when not the owner: "the chat x"
    status: str = PENDING
    section: str = ""  # the section of MEMORY.md its text goes to (``sections.KINDS``)
    # replaces: the older entry ("memory/2026-03-02.md:8") and its text; ``text`` is then the
    # new entry's, and ``sources`` names it.
    replaces: str = ""
    was: str = ""

    @property
    def passages(self) -> list[tuple[str, str]]:
        """What goes and what comes, each with its sign; a mark's two notes, both kept."""
        if self.op == REPLACES:
            return [("older, marked out of date:", self.was), ("newer:", self.text)]
        return [("-", old) for old in self.old] + ([("+", self.text)] if self.text else [])

    def describe(self, n: int) -> str:
        lines = [f"{n}. {self.op.upper()}: {self.reason}"]
        for sign, passage in self.passages:
            lines.append(f"   {sign} " + passage.replace("\n", "\n" + " " * (len(sign) + 4)))
        if self.replaces:
            lines.append(f"   marks {self.replaces} out of date")
        if self.section:
            lines.append(f"   → {self.section}")
        if self.sources:
            lines.append("   from " + ", ".join(self.sources))
        if self.origin:
            lines.append(f"   ⚠ written by {self.origin}, not by you")
        return "\n".join(lines)

    def markdown(self, n: int) -> str:
        """``describe`` for a chat, where Markdown is rendered: the passages in a diff block,
        so that what goes and what comes stay apart (as list items both would be bullets)."""
        lines = [f"**{n}. {self.op.upper()}**: {self.reason}"]
        if self.sources:
            lines[0] += " (from " + ", ".join(self.sources) + ")"
        if self.replaces:
            lines.append(f"marks {self.replaces} out of date")
        if self.section:
            lines.append(f"→ {self.section}")
        if self.origin:
            lines.append(f"⚠ written by {self.origin}, not by you")
        shown = "\n".join(f"{sign} {x}" for sign, text in self.passages for x in text.split("\n"))
        fence = "`" * max([3, *(len(run) + 1 for run in re.findall("`{3,}", shown))])
        kind = "text" if self.op == REPLACES else "diff"  # a mark takes nothing away
        return "\n".join(lines) + f"\n{fence}{kind}\n{shown}\n{fence}"


@dataclass(frozen=True)
class Proposal:
    id: str
    made: str  # ISO time
    base: str  # digest of MEMORY.md it was made from (and applied items since)
    items: tuple[Item, ...]
    marks_before: dict[str, int]  # where it started reading each log: read again if refused
    status: str = PENDING
    note: str = ""  # why refused, who applied
    target: str = "MEMORY.md"  # the file it changes (a shared chat's notes: memory/chats/<chat>/)

    def pending(self) -> list[int]:
        return [i for i, item in enumerate(self.items, 1) if item.status == PENDING]

    def summary(self, markdown: bool = False) -> str:
        """The proposal as the owner reads it: each item, its reason, source and diff
        (``markdown``: for a chat, see ``Item.markdown``)."""
        marks = sum(1 for item in self.items if item.op == REPLACES)
        head = f"Memory proposal {self.id}: "
        if len(self.items) > marks:
            head += f"{len(self.items) - marks} change(s) to {self.target}"
        if marks:
            head += (", and " if len(self.items) > marks else "") + (
                f"{marks} older note(s) of the logs to mark out of date"
            )
        chat = chat_of(PurePosixPath(self.target))
        if chat is not None and is_guest(Audience(chat)):
            head += " (a paired guest's notes, from their own chat's log: their words)"
        elif chat is not None:
            head += f" (the notes of the shared chat {chat}, from its own log: its members' words)"
        body = "\n\n".join(
            item.markdown(n) if markdown else item.describe(n)
            for n, item in enumerate(self.items, 1)
            if item.status == PENDING
        )
        return f"{head}\n\n{body}"


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


_UNTRUSTED = re.compile(r'<untrusted source="([^"]*)">(.*?)</untrusted>', re.S | re.I)


def origins(text: str) -> list[tuple[int, int, str]]:
    """(first line, last line, source) of each passage of ``text`` quoted as untrusted."""
    found = []
    for m in _UNTRUSTED.finditer(text):
        first = text.count("\n", 0, m.start()) + 1
        last = text.count("\n", 0, m.end()) + 1
        found.append((first, last, m.group(1)))
    return found


def parse(
    answer: str,
    current: str,
    logs: dict[str, str],
    first_lines: dict[str, int],
    offers: Sequence[Offer] = (),
) -> list[Item]:
    """The items of the model's answer that can be applied to ``current``: each ``old``
    found exactly once, each op known; the rest are left out, and logged. ``logs``: the text
    of each log read, for the sources' origins; ``first_lines``: the first line of it read;
    ``offers``: the pairs of entries a ``replaces`` item may name."""
    start, end = answer.find("{"), answer.rfind("}")
    try:
        data = json.loads(answer[start : end + 1]) if start >= 0 else {}
    except ValueError as exc:
        raise ToolError(f"the proposal is not JSON: {exc}") from None
    raw = data.get("changes") if isinstance(data, dict) else None
    if not isinstance(raw, list):
        raise ToolError('the proposal has no "changes" list.')
    marks = {rel: origins(text) for rel, text in logs.items()}
    items: list[Item] = []
    for entry in raw:
        if isinstance(entry, dict) and entry.get("op") == REPLACES:
            offer = chosen(entry, offers)
            if offer is not None and all(offer.older != i.replaces for i in items):
                reason, was = str(entry.get("reason") or ""), offer.older_text
                mark = Item(REPLACES, offer.newer_text, (), reason, (offer.newer,))
                items.append(replace(mark, replaces=offer.older, was=was))
            continue
        item = _item(entry, current, marks, first_lines)
        if item is not None:
            items.append(item)
    return items


def _item(
    entry: Any,
    current: str,
    marks: dict[str, list[tuple[int, int, str]]],
    first_lines: dict[str, int],
) -> Item | None:
    if not isinstance(entry, dict) or entry.get("op") not in OPS:
        log.info("consolidation: an item without a known op left out: %.200r", entry)
        return None
    old = entry.get("old") or []
    old = (old,) if isinstance(old, str) else tuple(str(p) for p in old if str(p).strip())
    text = str(entry.get("text") or "").strip()
    op = str(entry["op"])
    section = kind_of(str(entry.get("section") or "")) or ""
    if op == "place":  # moved as it is: one passage, to a section
        if len(old) != 1 or not section:
            log.info("consolidation: a place item without one passage and a section: %.200r", entry)
            return None
        text = old[0]
    # add: new text alone; update and merge: passages and their new text; drop: passages alone
    if bool(old) != (op != "add") or bool(text) != (op != "drop"):
        log.info("consolidation: an item whose parts do not fit its op left out: %.200r", entry)
        return None
    for passage in old:
        if current.count(passage) != 1:
            log.info("consolidation: a passage not found once in MEMORY.md: %.200r", passage)
            return None
    sources = tuple(str(s) for s in entry.get("sources") or [])
    origin = _origin(sources, marks, first_lines) if op != "place" else ""
    if not origin and op != "place" and any(quotes_outside(p) for p in old):
        origin = "text quoted in MEMORY.md"  # it stays quoted when rewritten
    if section:  # moved out of a quoted block, it stays quoted
        origin = origin or next(filter(None, (enclosing(current, p) for p in old)), "")
    reason = str(entry.get("reason") or "")
    return Item(op, text, old, reason, sources, origin, section=section)


def enclosing(current: str, passage: str) -> str:
    """The source of the quoted block of ``current`` that ``passage`` (found once) is inside,
    so that moved out of it, it stays quoted; "" when it is in none."""
    at = current.find(passage)
    line = current.count("\n", 0, at) + 1
    last = line + passage.count("\n")
    for first, end, source in origins(current):
        if first < line and last < end:
            return source
    return ""


def _origin(
    sources: tuple[str, ...],
    marks: dict[str, list[tuple[int, int, str]]],
    first_lines: dict[str, int],
) -> str:
    """Who wrote the lines an item comes from, when not the owner. Deny by default: when
    what was read quotes anyone else, an item that names no line it can be traced to is from
    "an unnamed source"."""
    if not any(marks.values()):
        return ""  # nothing read was written by anyone but the owner
    named = []
    for source in sources:
        rel, _, line = source.rpartition(":")
        if rel not in marks or not line.isdigit():
            return "an unnamed source"
        n = int(line) - first_lines.get(rel, 1) + 1  # the line within the part read
        for first, last, who in marks[rel]:
            if first <= n <= last and who not in named:
                named.append(who)
    if not sources:
        return "an unnamed source"
    return ", ".join(named)


def applied(current: str, items: list[Item]) -> str:
    """``current`` with ``items`` applied in order (each ``old`` must still be there once)."""
    text = current
    moved = False
    for item in items:
        if item.op == REPLACES:  # a mark in a log (``Curator.apply``)
            continue
        new = item.text
        if item.origin and new:
            new = untrusted(item.origin, new, FROM_OUTSIDE)
        for passage in item.old:
            if text.count(passage) != 1:
                raise ToolError("a passage it changes is no longer there as it was.")
        if item.section:  # taken from where it was, put in its section
            for passage in item.old:
                text = remove(text, passage)
            text = insert(text, item.section, new) if new else text
            moved = moved or bool(item.old)
            continue
        if item.op == "add":
            text = text.rstrip("\n") + ("\n\n" if text.strip() else "") + new + "\n"
            continue
        first, *rest = item.old
        text = text.replace(first, new, 1)
        for passage in rest:
            text = text.replace(passage, "", 1)
        text = re.sub(r"\n{3,}", "\n\n", text)
    return tidy(text) if moved else text


def diff(before: str, after: str, name: str = "MEMORY.md") -> str:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        f"{name} now",
        f"{name} proposed",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def with_status(proposal: Proposal, numbers: list[int], status: str) -> Proposal:
    items = tuple(
        replace(item, status=status) if n in numbers else item
        for n, item in enumerate(proposal.items, 1)
    )
    return replace(proposal, items=items)
