"""MEMORY.md by kind: its sections, a note put in its section, and a free-form file's move."""

from __future__ import annotations

import re
from datetime import date

# A note is a list item ending with when it was learned and where from; a person who recurs
# has a card under People (a "### Name" heading and its items), which search takes as one note.
KINDS = ("About the owner", "Preferences and feedback", "People", "Projects", "References")
UNSORTED = "Not sorted yet"
WHAT_GOES = {
    "About the owner": "who the owner is: work, home, health, important dates",
    "Preferences and feedback": (
        "how the owner wants things done: likes and dislikes, and corrections to how you work, "
        "each with why"
    ),
    "People": (
        "the people in the owner's life; someone who comes up again and again gets a card: "
        "'### Name', then '- Who: <who they are to the owner>', a line per fact, and "
        "'- Last mentioned: YYYY-MM-DD'"
    ),
    "Projects": "ongoing work, plans and decisions, with where they stand",
    "References": "where things are: accounts, documents, links, numbers to look up",
}
# Words a section's name may be given by (the model's "section" field).
_ALIASES = (
    ("about", "About the owner"),
    ("owner", "About the owner"),
    ("prefer", "Preferences and feedback"),
    ("feedback", "Preferences and feedback"),
    ("people", "People"),
    ("person", "People"),
    ("project", "Projects"),
    ("reference", "References"),
    ("sorted", UNSORTED),
)
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)[\s#]*$")
_LEARNED = re.compile(r"\(learned \d{4}-\d\d-\d\d", re.IGNORECASE)
_DAY = re.compile(r"(\d{4}-\d\d-\d\d)\.md")
# A quoted block left with nothing in it, and the note under it.
_EMPTY_QUOTE = re.compile(
    r'<untrusted source="[^"]*">\n\s*</untrusted>\n(?:\([^\n]*\)(?:\n|$))?', re.IGNORECASE
)
_QUOTING = re.compile(r"^\s*(?:<untrusted source=.*>|</untrusted>)\s*$", re.IGNORECASE)


def kind_of(label: str) -> str | None:
    """The section a name means ("people", "Preferences"), or None."""
    folded = label.casefold().strip()
    for kind in (*KINDS, UNSORTED):
        if folded == kind.casefold():
            return kind
    return next((kind for word, kind in _ALIASES if word in folded), None)


def _heading(line: str) -> tuple[int, str] | None:
    m = _HEADING.match(line)
    return (len(m.group(1)), m.group(2)) if m else None


def _kind_at(line: str) -> str | None:
    """The section a ``## `` heading opens (by its exact name), else None."""
    h = _heading(line)
    if h is None or h[0] != 2:
        return None
    return next((k for k in (*KINDS, UNSORTED) if h[1].casefold() == k.casefold()), None)


def sectioned(text: str) -> bool:
    """Does the file keep sections by kind?"""
    return any(_kind_at(line) in KINDS for line in text.splitlines())


def facts(text: str) -> list[tuple[int, str]]:
    """The lines (numbered from 1) a move into sections must account for: every line but
    blanks, headings, and the paragraph right under a leading ``# `` title (what the file
    is)."""
    lines = text.splitlines()
    skip: set[int] = set()
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and lines[first].startswith("# "):
        i = first + 1
        while i < len(lines) and not lines[i].strip():
            i += 1
        while i < len(lines) and lines[i].strip() and not _list_or_heading(lines[i]):
            skip.add(i)
            i += 1
    for i, line in enumerate(lines):
        if _QUOTING.match(line):
            skip.add(i)
            if line.strip().startswith("</") and i + 1 < len(lines):
                skip.add(i + 1)  # the note under a quoted block
    return [
        (i + 1, line)
        for i, line in enumerate(lines)
        if line.strip() and i not in skip and _heading(line) is None
    ]


def outside(text: str) -> list[tuple[int, str]]:
    """The ``facts`` of ``text`` that are in no section (above them, or under a heading of the
    file's own): what a move into sections is about."""
    lines = text.splitlines()
    inside: set[int] = set()
    current = False
    for i, line in enumerate(lines):
        h = _heading(line)
        if h is not None and h[0] <= 2:
            current = _kind_at(line) is not None
        elif current:
            inside.add(i + 1)
    return [(n, line) for n, line in facts(text) if n not in inside]


def _list_or_heading(line: str) -> bool:
    return _heading(line) is not None or line.lstrip().startswith(("- ", "* ", "+ "))


def learned_on(sources: tuple[str, ...], today: date) -> str:
    """When a note was learned: the day of the first log it comes from, else ``today``."""
    for source in sources:
        if m := _DAY.search(source):
            return m.group(1)
    return today.isoformat()


def dated(passage: str, learned: str, source: str) -> str:
    """A note with when it was learned and where from (a card: when last mentioned), unless
    it says so already."""
    if passage.lstrip().startswith("###"):
        if "last mentioned" in passage.casefold():
            return passage
        return passage.rstrip("\n") + f"\n- Last mentioned: {learned}"
    if _LEARNED.search(passage):
        return passage
    first, nl, rest = passage.partition("\n")
    where = f", {source}" if source else ""
    return f"{first.rstrip()} (learned {learned}{where}){nl}{rest}"


def insert(text: str, kind: str, passage: str) -> str:
    """``text`` with ``passage`` at the end of its ``kind`` section (the section made, in its
    place among the others, when missing)."""
    lines = text.rstrip("\n").split("\n") if text.strip() else []
    start = next((i for i, line in enumerate(lines) if _kind_at(line) == kind), None)
    if start is None:
        at = _new_section_at(lines, kind)
        block = ["", f"## {kind}", ""] if at > 0 else [f"## {kind}", ""]
        lines[at:at] = block
        start = at + len(block) - 2
    end = start + 1
    while end < len(lines) and not ((h := _heading(lines[end])) is not None and h[0] <= 2):
        end += 1
    last = end
    while last > start + 1 and not lines[last - 1].strip():
        last -= 1
    new = passage.strip("\n").split("\n")
    bullet = new[0].startswith("- ") and len(new) == 1
    follows_bullet = last > start + 1 and lines[last - 1].lstrip().startswith("- ")
    before = [] if (bullet and follows_bullet) else [""]
    after = [""] if last < len(lines) else []
    if last < len(lines) and not lines[last].strip():
        after = []
    lines[last:last] = before + new + after
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n") + "\n"


def _new_section_at(lines: list[str], kind: str) -> int:
    """Where a missing section goes: before the first section that comes after it in
    ``KINDS`` (``UNSORTED`` last), else at the end."""
    order = [*KINDS, UNSORTED]
    later = order[order.index(kind) + 1 :]
    for i, line in enumerate(lines):
        if _kind_at(line) in later:
            while i > 0 and not lines[i - 1].strip():
                i -= 1
            return i
    return len(lines)


def remove(text: str, passage: str) -> str:
    """``text`` without ``passage`` (found once), and without the blank lines it leaves."""
    return re.sub(r"\n{3,}", "\n\n", text.replace(passage, "", 1))


def tidy(text: str) -> str:
    """Headings other than the sections' left with nothing under them (a free-form file's own,
    once their lines moved) are taken out."""
    lines = text.split("\n")
    kept: list[str] = []
    for i, line in enumerate(lines):
        h = _heading(line)
        if h is not None and h[0] >= 2 and _kind_at(line) is None:
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            nxt = _heading(lines[j]) if j < len(lines) else (0, "")
            if nxt is not None and nxt[0] <= h[0]:
                continue  # empty: nothing under it before the next heading of its rank
        kept.append(line)
    return re.sub(r"\n{3,}", "\n\n", _EMPTY_QUOTE.sub("", "\n".join(kept)))


def prompt_part(text: str, *, move: bool) -> str:
    """What the consolidation's model is told about the sections of MEMORY.md ``text``."""
    kinds = "\n".join(f"- {kind}: {WHAT_GOES[kind]}" for kind in KINDS)
    part = (
        "\n\nMEMORY.md keeps its notes in sections by kind:\n"
        f'{kinds}\nGive every add, update and merge a "section" (one of those names) and a '
        "reason that says why it belongs there. A note is one list item; code adds when it "
        "was learned and its source. Lines under 'Not sorted yet' may be moved with "
        '{"op": "place", "old": "exact line", "section": "...", "reason": "..."}.'
    )
    if move:
        part += (
            "\n\nSome of MEMORY.md is in no section yet. Propose the move too: a 'place' "
            'change for every such line below its title, copied exactly as "old", with its '
            "section and why (a stale or duplicate line may be dropped instead, saying why). "
            "Lines are moved as they are; any you leave out go under 'Not sorted yet', so "
            "nothing is lost."
        )
    return part
