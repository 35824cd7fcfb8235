"""The model writes Markdown; chat platforms want it in pieces under their length limits.

``split_markdown`` cuts a reply into pieces under a platform's length limit, preferring paragraph,
then line, then sentence, then word boundaries, and never leaves a code fence open: a code block
that is itself too long is closed at the cut and reopened, with its language, in the next piece.
Telegram's rendering of a piece is in ``channels/telegram/html.py``.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass


def utf16_len(text: str) -> int:
    """Length as Telegram and Discord count it (UTF-16 code units)."""
    return len(text.encode("utf-16-le")) // 2


# -- splitting ---------------------------------------------------------------------------------

_FENCE = re.compile(r"^((?:[ \t]*>)*[ \t]*)(`{3,}|~{3,})(.*)$")
_SENTENCE_END = re.compile(r"[.!?…。！？][\"')\]]*\s+")
# Prefer a cut that leaves at least this share of the limit in the piece before it.
_MIN_SHARE = 0.4
# Fence opening lines longer than this are shortened to marker and language before splitting,
# so that reopening a block in every piece stays cheap.
_MAX_OPENER = 60


@dataclass(frozen=True, slots=True)
class _Fence:
    prefix: str  # indentation and blockquote markers before the fence
    marker: str  # ``` or ~~~ (or longer)

    def closer(self) -> str:
        return self.prefix + self.marker


@dataclass(slots=True)
class _Line:
    start: int
    end: int  # index of the "\n" ending the line, or len(text)
    inside: _Fence | None  # the code block this line is in (body or closing line)
    opener: str | None  # for lines inside a block: the block's opening line
    opens: bool = False  # this line opens a code block
    closes: bool = False  # this line closes the code block it is in


def _fence(line: str) -> tuple[_Fence, str] | None:
    m = _FENCE.match(line)
    if m is None:
        return None
    return _Fence(m.group(1), m.group(2)), m.group(3)


def _scan(text: str) -> list[_Line]:
    lines: list[_Line] = []
    pos = 0
    block: _Fence | None = None
    opener = ""
    for raw in text.split("\n"):
        start, end = pos, pos + len(raw)
        pos = end + 1
        found = _fence(raw)
        if block is None:
            # A backtick fence whose info string has a backtick is not a fence (CommonMark).
            opens = found is not None and not (found[0].marker[0] == "`" and "`" in found[1])
            lines.append(_Line(start, end, None, None, opens=opens))
            if opens and found is not None:
                block, opener = found[0], raw
        else:
            closes = bool(
                found
                and found[0].marker[0] == block.marker[0]
                and len(found[0].marker) >= len(block.marker)
                and not found[1].strip()
            )
            lines.append(_Line(start, end, block, opener, closes=closes))
            if closes:
                block = None
    return lines


def _short_openers(text: str) -> str:
    out = []
    for line in _scan(text):
        raw = text[line.start : line.end]
        if line.opens and len(raw) > _MAX_OPENER:
            found = _fence(raw)
            assert found is not None
            fence, info = found
            lang = info.strip().split(maxsplit=1)[0][:32] if info.strip() else ""
            raw = fence.prefix + fence.marker + lang
        out.append(raw)
    return "\n".join(out)


def _window(text: str, limit: int, measure: Callable[[str], int]) -> int:
    """The longest prefix length (in characters) whose measured size is within ``limit``."""
    end = min(len(text), limit)
    while end > 0 and measure(text[:end]) > limit:
        end -= max(1, (measure(text[:end]) - limit) // 2)
    return max(end, 1)


def split_markdown(text: str, limit: int, measure: Callable[[str], int] = utf16_len) -> list[str]:
    """Cut ``text`` into pieces each within ``limit`` (as measured), code fences kept whole."""
    if limit < 100:
        raise ValueError("limit too small to split Markdown sensibly")
    pieces: list[str] = []
    rest = text.replace("\r\n", "\n").strip("\n")
    if measure(rest) > limit:
        rest = _short_openers(rest)
    while rest and measure(rest) > limit:
        head, rest = _cut(rest, limit, measure)
        if head.strip():
            pieces.append(head)
        rest = rest.strip("\n")
    if rest.strip():
        pieces.append(rest)
    return pieces


def _starts_fence(text: str, p: int) -> bool:
    """Would a piece starting at ``p`` open a code block it did not mean to?"""
    end = text.find("\n", p)
    return _fence(text[p : end if end >= 0 else len(text)].lstrip()) is not None


Candidate = tuple[int, str | None]  # a cut at a line start, and the fence to reopen after it


def _candidates(
    text: str, lines: list[_Line], window: int
) -> tuple[list[Candidate], list[Candidate], list[Candidate]]:
    """Cuts at line starts within the window: between paragraphs, between lines outside code,
    and between lines inside a code block (closed at the cut and reopened after it)."""
    para: list[Candidate] = []
    line_out: list[Candidate] = []
    line_in: list[Candidate] = []
    for prev, line in itertools.pairwise(lines):
        p = line.start
        if p - 1 > window:
            break
        if line.inside is None or prev.closes:
            if prev.inside is None and not text[prev.start : prev.end].strip():
                para.append((p, None))
            elif not prev.opens:
                line_out.append((p, None))
        elif (
            not prev.opens
            and not line.closes
            and line.opener is not None
            and p + len(line.inside.closer()) <= window
        ):
            line_in.append((p, line.opener))
    return para, line_out, line_in


def _split_at(text: str, p: int, opener: str | None) -> tuple[str, str]:
    if opener is None:
        return text[:p].rstrip(), text[p:]
    fence = _fence(opener)
    assert fence is not None
    return text[:p].rstrip("\n") + "\n" + fence[0].closer(), opener + "\n" + text[p:]


def _cut(text: str, limit: int, measure: Callable[[str], int]) -> tuple[str, str]:
    window = _window(text, limit, measure)
    floor = int(window * _MIN_SHARE)
    lines = _scan(text[: window + 1])
    para, line_out, line_in = _candidates(text, lines, window)
    for candidates in (para, line_out, line_in):
        if candidates and candidates[-1][0] >= floor:
            return _split_at(text, *candidates[-1])
    # No good line boundary: cut inside the line that crosses the window.
    last = next(line for line in reversed(lines) if line.start < window)
    inside = _cut_inside(text, lines, last, window, floor)
    if inside is not None:
        return inside
    # Any earlier boundary beats cutting a word in half.
    earlier = sorted([*para, *line_out, *line_in])
    if earlier and earlier[-1][0] > 0:
        return _split_at(text, *earlier[-1])
    if last.inside is not None and last.opener is not None:
        cut = max(last.start + 1, window - len(last.inside.closer()) - 1)
        return text[:cut] + "\n" + last.inside.closer(), last.opener + "\n" + text[cut:]
    return text[:window], text[window:]


def _cut_inside(
    text: str, lines: list[_Line], last: _Line, window: int, floor: int
) -> tuple[str, str] | None:
    """A cut within the line ``last`` that crosses the window: in code, leaving room for the
    closing fence; in prose, at a sentence end or else a space."""
    if last.inside is not None and not last.closes and last.opener is not None:
        # A hard cut in the code; it may fall in an earlier line of the same block, never in
        # the opening line.
        cut = window - len(last.inside.closer()) - 1
        at = next(line for line in reversed(lines) if line.start <= cut)
        if at.inside is last.inside and at.opener == last.opener and cut > at.start:
            return text[:cut] + "\n" + last.inside.closer(), last.opener + "\n" + text[cut:]
        return None
    if last.opens:
        return None
    segment = text[:window]
    ends = [
        m.end()
        for m in _SENTENCE_END.finditer(segment, last.start)
        if not _starts_fence(text, m.end())
    ]
    if ends and ends[-1] >= floor:
        return text[: ends[-1]].rstrip(), text[ends[-1] :]
    space = next(
        (
            i
            for i in range(window - 1, max(last.start, floor) - 1, -1)
            if segment[i] in " \t" and not _starts_fence(text, i + 1)
        ),
        None,
    )
    if space is not None:
        return text[:space].rstrip(), text[space + 1 :]
    return None
