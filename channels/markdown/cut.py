"""Cutting inside one block: a paragraph too long for a message, or a line of code."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator
from typing import Any

from channels.markdown.parse import Styled, paragraph_chars, parse

Measure = Callable[[str], int]

# Prefer a cut that leaves at least this share of the limit in the piece before it.
MIN_SHARE = 0.4
# Candidate cuts of each kind tried against the parser before settling for a plain one.
_TRIES = 32
_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_OPENING = 400
_SENTENCE_END = re.compile(r"[.!?…。！？][\"')\]»”’]*$")


def window(text: str, limit: int, measure: Measure) -> int:
    """The length of the longest prefix of ``text`` that measures within ``limit``."""
    lo, hi = 0, min(len(text), limit)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if measure(text[:mid]) <= limit:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _joined(text: str, i: int) -> bool:
    """Do ``text[i - 1]`` and ``text[i]`` belong to one character as a reader sees it?"""
    ch, prev = text[i], text[i - 1]
    if ch == "\u200d" or prev == "\u200d" or unicodedata.category(ch) in ("Mn", "Mc", "Me"):
        return True
    code = ord(ch)
    if (
        0xFE00 <= code <= 0xFE0F  # variation selectors
        or 0x1F3FB <= code <= 0x1F3FF  # skin tones
        or 0xE0020 <= code <= 0xE007F  # tag sequences (subdivision flags)
        or 0xE0100 <= code <= 0xE01EF
    ):
        return True
    if _regional(ch) and _regional(prev):
        run = 0  # flags are pairs of regional indicators: cut between pairs only
        while i - run - 1 >= 0 and _regional(text[i - run - 1]):
            run += 1
        return run % 2 == 1
    return False


def _regional(ch: str) -> bool:
    return 0x1F1E6 <= ord(ch) <= 0x1F1FF


def boundary(text: str, i: int) -> int:
    """The nearest place at or before ``i`` that does not cut a character in two (``i``
    itself if the text there is one endless cluster)."""
    j = i
    while 0 < j < len(text) and _joined(text, j):
        j -= 1
    return j if j > 0 else i


def hard_cut(text: str, limit: int, measure: Measure) -> list[str]:
    """``text`` in pieces within ``limit``, cut anywhere but inside a character."""
    pieces: list[str] = []
    rest = text
    while measure(rest) > limit:
        n = max(1, boundary(rest, window(rest, limit, measure)))
        pieces.append(rest[:n])
        rest = rest[n:]
    if rest:
        pieces.append(rest)
    return pieces


def cut_paragraph(text: str, limit: int, measure: Measure, env: dict[str, Any]) -> list[str]:
    """A paragraph (or heading) in pieces within ``limit`` that each read as their part of it."""
    pieces: list[str] = []
    rest = text
    # What the rest shows, parsed once: after a clean cut it is what the whole showed from
    # there on (each cut is checked against it), so a long paragraph is not parsed again.
    shown = paragraph_chars(rest, env)
    while measure(rest) > limit:
        head, rest, taken = _cut_once(rest, limit, measure, env, shown)
        pieces.append(head)
        if shown is not None:
            shown = shown[taken:] if taken is not None else paragraph_chars(rest, env)
    if rest.strip():
        pieces.append(rest)
    return pieces


def _cut_once(
    text: str, limit: int, measure: Measure, env: dict[str, Any], whole: list[Styled] | None
) -> tuple[str, str, int | None]:
    """The piece, the rest, and how many of ``whole``'s characters the piece shows (None for
    a cut that was not clean)."""
    end = window(text, limit, measure)
    for i in _candidates(text, end):
        head, tail = text[:i].rstrip(), text[i:].lstrip()
        taken = _clean(head, tail, whole, env) if head and tail else None
        if taken is not None:
            return head, tail, taken
    # No clean place (formatting that runs longer than a piece, a word longer than one): the
    # last whitespace in reach, else between characters.
    space = next((i for i in range(end, 0, -1) if text[i].isspace() and text[:i].strip()), None)
    if space is not None and space >= end * MIN_SHARE:
        head, tail = text[:space].rstrip(), text[space:].lstrip()
        if _odd_backslashes(head):  # a hard line break: the piece ends there anyway
            head = head[:-1]
    else:
        n = max(1, boundary(text, end))
        head, tail = text[:n], text[n:]
        if _odd_backslashes(head) and n > 1:  # an escape stays with what it escapes
            head, tail = head[:-1], "\\" + tail
    tail = _as_paragraph(tail, env)
    return head, tail, _clean(head, tail, whole, env)


def _odd_backslashes(text: str) -> bool:
    return (len(text) - len(text.rstrip("\\"))) % 2 == 1


def _as_paragraph(tail: str, env: dict[str, Any]) -> str:
    """``tail`` kept from starting a block of another kind (a quote, a list item, a heading)
    by escaping the character that would start it."""
    if _opens_paragraph(tail, env):
        return tail
    m = re.match(r"[0-9]{1,9}(?=[.)])", tail)
    if m is not None:
        return tail[: m.end()] + "\\" + tail[m.end() :]
    return "\\" + tail if tail[:1] in _PUNCTUATION else tail


def _opens_paragraph(tail: str, env: dict[str, Any]) -> bool:
    """Do the first lines of ``tail`` still read as a paragraph? (Their starts are enough, and
    a long tail is not parsed whole.)"""
    opening = "\n".join(line[:_OPENING] for line in tail.split("\n", 2)[:2])
    tokens = parse(opening, {"references": dict(env.get("references", {}))})
    return bool(tokens) and tokens[0].type == "paragraph_open"


def _candidates(text: str, end: int) -> Iterator[int]:
    """Places to cut (whitespace at or before ``end``), best first: after a sentence, at a line
    break, between words, within the preferred share of the limit; then earlier spaces, a
    sample of them spread over the whole piece (formatting may run for most of it)."""
    floor = int(end * MIN_SHARE)
    spaces = [i for i in range(min(end, len(text) - 1), 0, -1) if text[i].isspace()]
    near = [i for i in spaces if i >= floor]
    sentences = [i for i in near if _SENTENCE_END.search(text[max(0, i - 4) : i])]
    lines = [i for i in near if text[i] == "\n"]
    spread = spaces[:: max(1, len(spaces) // _TRIES)]
    seen: set[int] = set()
    for group in (sentences[:_TRIES], lines[:_TRIES], near[:_TRIES], spread):
        for i in group:
            if i not in seen:
                seen.add(i)
                yield i


def _clean(head: str, tail: str, whole: list[Styled] | None, env: dict[str, Any]) -> int | None:
    """How many characters ``head`` shows if cutting there is clean, else None."""
    if whole is None:  # not one paragraph to begin with: any cut at whitespace will do
        return 0
    # The head, parsed alone, must show what the whole showed at its start: no ``**``, link
    # text, code span or entity cut in two.
    shown = paragraph_chars(head, env)
    if shown is None or shown != whole[: len(shown)]:
        return None
    # The rest must stay a paragraph: not become a list item, heading, quote or code.
    return len(shown) if _opens_paragraph(tail, env) else None
