"""Splitting a reply into pieces under a platform's length limit, on its parsed structure."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from channels.markdown.cut import Measure, cut_paragraph, hard_cut
from channels.markdown.parse import parse_blocks, references, too_deep, utf16_len

if TYPE_CHECKING:
    from markdown_it.token import Token

# Fence info strings longer than this are cut to the language when a block is split, so that
# reopening the block in every piece stays cheap.
_MAX_INFO = 40
# The blocks split on their own structure when too big for a piece; any other (a rule, an
# HTML block, text between blocks) is cut as plain lines.
_STRUCTURED = frozenset(
    (
        "heading_open",
        "paragraph_open",
        "fence",
        "code_block",
        "bullet_list_open",
        "ordered_list_open",
        "list_item_open",
        "blockquote_open",
        "table_open",
    )
)
_ITEM = re.compile(r"^( {0,3})([-+*]|[0-9]{1,9}[.)])([ \t]*)")
_QUOTE = re.compile(r"^ {0,3}> ?")
_LABEL = re.compile(r"\[([^\[\]]{1,999})\]")
_DEFINITION = re.compile(r"^ {0,3}\[([^\[\]]{1,999})\]:", re.M)


@dataclass(frozen=True, slots=True)
class _Unit:
    start: int  # first source line
    end: int  # one past the last
    token: int | None  # index of the block's opening token; None for lines without one


def split_markdown(
    text: str, limit: int, measure: Measure = utf16_len, carry_references: bool = False
) -> list[str]:
    """Cut ``text`` into pieces each within ``limit`` (as measured) that render as what they
    were. With ``carry_references``, a piece that uses a reference-style link gets the link's
    definition appended, since the definition may be in another piece."""
    if limit < 100:
        raise ValueError("limit too small to split Markdown sensibly")
    text = text.replace("\r\n", "\n").replace("\r", "\n").strip("\n")
    if not text.strip():
        return []
    refs = references(text)
    env: dict[str, Any] = {"references": refs}
    if not (carry_references and refs):
        return [p.strip("\n") for p in _split(text, limit, measure, env) if p.strip()]
    # Each piece is measured with the definitions it will carry.
    carrying = _wrapped(measure, lambda piece: _with_definitions(piece, refs))
    pieces = _split(text, limit, carrying, env)
    # The definitions go with the pieces that use them: on their own they would be sent as
    # text, since they render to nothing.
    kept = [p.strip("\n") for p in pieces if p.strip() and not _only_definitions(p)]
    if not kept:  # nothing else: the definitions are the reply
        return [p.strip("\n") for p in pieces if p.strip()]
    return [_with_definitions(p, refs) for p in kept]


def _split(text: str, limit: int, measure: Measure, env: dict[str, Any]) -> list[str]:
    if measure(text) <= limit:
        return [text]
    tokens = parse_blocks(text, {"references": dict(env["references"])})
    lines = text.split("\n")
    if too_deep(tokens):  # the parse is missing part of it: cut as plain lines
        return _plain(lines, limit, measure)
    splitter = _Splitter(tokens, lines, limit, measure, env)
    return splitter.pack(_units(tokens, lines, 0))


def _units(tokens: Sequence[Token], lines: list[str], level: int) -> list[_Unit]:
    """The blocks at ``level`` with their source lines, and the lines between them that no
    block claims (link definitions) as units of their own."""
    units: list[_Unit] = []
    covered = 0
    for i, tok in enumerate(tokens):
        if tok.level != level or tok.nesting == -1 or tok.map is None:
            continue
        start, end = tok.map
        if start < covered:
            continue
        if any(line.strip() for line in lines[covered:start]):
            units.append(_Unit(covered, start, None))
        units.append(_Unit(start, end, i))
        covered = end
    if covered < len(lines) and any(line.strip() for line in lines[covered:]):
        units.append(_Unit(covered, len(lines), None))
    return units


class _Splitter:
    def __init__(
        self,
        tokens: Sequence[Token],
        lines: list[str],
        limit: int,
        measure: Measure,
        env: dict[str, Any],
    ) -> None:
        self.tokens = tokens
        self.lines = lines
        self.limit = limit
        self.measure = measure
        self.env = env

    def pack(self, units: list[_Unit], numbers: dict[int, int] | None = None) -> list[str]:
        """Units together while they fit; one too big alone split on its own structure, and
        nothing joined after the last part of a split list or quote (it may be contents now
        outside their list, which what follows would join).
        Blocks are joined by a blank line; list items (``numbers``: an ordered list's item
        numbers by first line) as they were, and a piece that starts with an ordered item
        starts at that item's number."""
        pieces: list[str] = []
        current: str | None = None
        last_end = 0
        for unit in units:
            body = self.body(unit)
            if current is not None:
                between = self.lines[last_end - 1 : unit.start + 1]
                loose = numbers is None or any(not line.strip() for line in between)
                joined = current + ("\n\n" if loose else "\n") + body
                if self.measure(joined) <= self.limit:
                    current, last_end = joined, unit.end
                    continue
                pieces.append(current)
            number = (numbers or {}).get(unit.start)
            if number is not None:
                body = _renumber(body, number)
            if self.measure(body) <= self.limit:
                current, last_end = body, unit.end
                continue
            parts = self.oversized(unit, body)
            if parts and number is not None:
                renumbered = _renumber(parts[0], number)  # a wider number may not fit
                parts[0] = renumbered if self.measure(renumbered) <= self.limit else parts[0]
            if self._leaf(unit) and parts:  # its last part is still a block of its own
                pieces.extend(parts[:-1])
                current, last_end = parts[-1], unit.end
            else:
                pieces.extend(parts)
                current = None
        if current is not None:
            pieces.append(current)
        return pieces

    def _leaf(self, unit: _Unit) -> bool:
        kind = self.tokens[unit.token].type if unit.token is not None else ""
        return kind in ("paragraph_open", "heading_open", "fence", "code_block", "table_open")

    def body(self, unit: _Unit) -> str:
        """The unit's text; a code fence left open is closed, as it was by the end of its list
        item or quote, so that what follows it in a piece is not taken into the code."""
        text = "\n".join(self.lines[unit.start : unit.end]).strip("\n")
        tok = self.tokens[unit.token] if unit.token is not None else None
        if tok is None or tok.type != "fence":
            return text
        last = self.lines[unit.end - 1].strip()
        closed = (
            unit.end - 1 > unit.start
            and last.startswith(tok.markup)
            and not last.strip(tok.markup[0])
        )
        return text if closed else text + "\n" + tok.markup

    def oversized(self, unit: _Unit, body: str) -> list[str]:
        lines = self.lines[unit.start : unit.end]
        tok = self.tokens[unit.token] if unit.token is not None else None
        kind = tok.type if tok is not None else ""
        if tok is None or kind not in _STRUCTURED:
            return _plain(lines, self.limit, self.measure)
        if kind == "heading_open" and tok.markup in ("=", "-"):
            # A setext heading: its underline stays with the last of its text.
            text, _, underline = body.rpartition("\n")
            under = _wrapped(self.measure, lambda piece: piece + "\n" + underline)
            parts = cut_paragraph(text, self.limit, under, self.env)
            return [*parts[:-1], parts[-1] + "\n" + underline] if parts else []
        if kind in ("paragraph_open", "heading_open"):
            return cut_paragraph(body, self.limit, self.measure, self.env)
        if kind in ("fence", "code_block"):
            return _code(tok, lines, self.limit, self.measure)
        if kind in ("bullet_list_open", "ordered_list_open"):
            assert unit.token is not None
            items = _units(self.tokens, self.lines, tok.level + 1)
            inside = [u for u in items if u.token is not None and unit.start <= u.start < unit.end]
            start = int(tok.attrs.get("start", 1)) if kind == "ordered_list_open" else None
            numbers = {u.start: (start or 0) + i for i, u in enumerate(inside)}
            return self.pack(inside, numbers if start is not None else {})
        if kind == "list_item_open":
            return _item(lines, self.limit, self.measure, self.env)
        if kind == "blockquote_open":
            return _quote(lines, self.limit, self.measure, self.env)
        return _table(lines, self.limit, self.measure)


def _wrapped(measure: Measure, wrap: Callable[[str], str]) -> Measure:
    return lambda text: measure(wrap(text))


def _item(lines: list[str], limit: int, measure: Measure, env: dict[str, Any]) -> list[str]:
    """A list item too big for a piece: its contents split on their own. The first piece keeps
    the marker; the later ones are the contents as they would read outside the list, rather
    than indented lines that would turn into code."""
    lines = [_expand_indent(line) for line in lines]
    m = _ITEM.match(lines[0])
    if m is None:
        return _plain(lines, limit, measure)
    # Tabs after the marker as the spaces they stand for where they are (a tab's width
    # depends on its column), so that the contents start where CommonMark starts them.
    first = lines[0][: m.end()].expandtabs(4) + lines[0][m.end() :]
    m = _ITEM.match(first)
    assert m is not None  # the same marker, now followed by spaces only
    spaces = len(m.group(3))
    width = m.end(2) + 1 if spaces == 0 or spaces > 4 else m.end()
    pad = " " * width
    inner = [first[width:]] + [_dedent(line, width) for line in lines[1:]]

    def indent(text: str) -> str:
        return "\n".join(pad + line if line.strip() else line for line in text.split("\n"))

    parts = _split("\n".join(inner), limit, _wrapped(measure, indent), env)
    if not parts:
        return []
    return [first[:width].ljust(width) + indent(parts[0])[width:], *parts[1:]]


def _dedent(line: str, width: int) -> str:
    # A line indented less than the contents is a lazy continuation of a paragraph.
    return line[width:] if not line[:width].strip() else _lazy(line.lstrip())


def _lazy(line: str) -> str:
    """A paragraph's lazy continuation line moved into a new context (out of its item, or
    into a ``>`` of its own) must not become a heading underline or a table row there."""
    return "\\" + line if line[:1] in ("=", "-", "|", ":") else line


def _expand_indent(line: str) -> str:
    """Tabs in a line's indentation (and quote markers) as the spaces they stand for, so that
    moving the line to another column keeps its meaning (CommonMark's tab stops are 4)."""
    lead = len(line) - len(line.lstrip(" \t>"))
    return line[:lead].expandtabs(4) + line[lead:] if "\t" in line[:lead] else line


def _renumber(body: str, number: int) -> str:
    """An ordered item made to start a piece at its number in the whole list (CommonMark
    numbers a list from its first item); continuation lines follow a wider or narrower
    marker."""
    first, _, rest = body.partition("\n")
    m = _ITEM.match(first)
    if m is None or not m.group(2)[:-1].isdigit():
        return body
    marker = f"{number}{m.group(2)[-1]}"
    shift = len(marker) - len(m.group(2))
    if shift == 0:
        return m.group(1) + marker + first[m.end(2) :] + ("\n" + rest if rest else "")
    moved = []
    for line in rest.split("\n") if rest else []:
        if shift > 0 and line.startswith(" "):
            line = " " * shift + line
        elif shift < 0 and line.startswith(" " * -shift):
            line = line[-shift:]
        moved.append(line)
    return "\n".join([m.group(1) + marker + first[m.end(2) :], *moved])


def _quote(lines: list[str], limit: int, measure: Measure, env: dict[str, Any]) -> list[str]:
    inner = [
        _QUOTE.sub("", line, count=1) if _QUOTE.match(line) else _lazy(line)
        for line in map(_expand_indent, lines)
    ]

    def quote(text: str) -> str:
        return "\n".join("> " + line if line else ">" for line in text.split("\n"))

    return [quote(p) for p in _split("\n".join(inner), limit, _wrapped(measure, quote), env)]


def _table(lines: list[str], limit: int, measure: Measure) -> list[str]:
    """Rows packed into pieces, each piece with the header and delimiter rows again."""
    head = "\n".join(lines[:2])
    if len(lines) < 3 or measure(head) > limit // 2:
        return _plain(lines, limit, measure)
    pieces: list[str] = []
    current = head
    for row in lines[2:]:
        if measure(current + "\n" + row) <= limit:
            current += "\n" + row
            continue
        if current != head:
            pieces.append(current)
            current = head
        if measure(head + "\n" + row) <= limit:
            current = head + "\n" + row
        else:  # one row longer than a piece: it goes out as text
            if not pieces:  # no piece has shown the header yet: it goes first, on its own
                pieces.append(head)
            pieces.extend(hard_cut(row, limit, measure))
    if current != head:
        pieces.append(current)
    return pieces


def _code(tok: Token, lines: list[str], limit: int, measure: Measure) -> list[str]:
    """A code block split between lines (a line longer than a piece is wrapped), each piece
    a closed block with the same fence and language."""
    body = tok.content[:-1] if tok.content.endswith("\n") else tok.content
    info = tok.info.strip() if tok.type == "fence" else ""  # indented code becomes fenced
    if len(info) > _MAX_INFO:  # the language (its first word) is what renders
        info = info.split(maxsplit=1)[0]
    # The same fence, made longer than any run of its character that starts a line of the
    # code (an indented one did not close the block where it was, but would in a piece).
    mark = tok.markup[0] if tok.type == "fence" else "`"
    runs = [len(line.lstrip()) - len(line.lstrip().lstrip(mark)) for line in body.split("\n")]
    fence = mark * max(3, len(tok.markup) if tok.type == "fence" else 0, max(runs) + 1)
    opener = fence + info
    room = limit - measure(opener + "\n\n" + fence)
    if room < 20:  # a piece too narrow for the language: the code matters more
        opener = fence
        room = limit - measure(opener + "\n\n" + fence)
    if room < 20:
        return _plain(lines, limit, measure)
    chunks: list[str] = []
    for line in body.split("\n"):
        chunks.extend(hard_cut(line, room, measure) or [""])
    pieces: list[str] = []
    current: list[str] = []
    for chunk in chunks:
        if current and measure("\n".join([*current, chunk])) > room:
            pieces.append("\n".join(current))
            current = []
        current.append(chunk)
    if current:
        pieces.append("\n".join(current))
    return [f"{opener}\n{piece}\n{fence}" for piece in pieces]


def _plain(lines: list[str], limit: int, measure: Measure) -> list[str]:
    """Lines packed as they are, a line too long for a piece cut between characters."""
    pieces: list[str] = []
    current: str | None = None
    for line in lines:
        for part in hard_cut(line, limit, measure) or [""]:
            joined = part if current is None else current + "\n" + part
            if current is not None and measure(joined) > limit:
                pieces.append(current)
                joined = part
            current = joined
    if current is not None and current.strip():
        pieces.append(current)
    return pieces


def _only_definitions(piece: str) -> bool:
    env: dict[str, Any] = {}
    return not parse_blocks(piece, env) and bool(env.get("references"))


def _with_definitions(piece: str, refs: dict[str, dict[str, str]]) -> str:
    """``piece`` with the definitions of the reference links it uses that it lacks."""
    from markdown_it.common.utils import normalizeReference

    own = {normalizeReference(m.group(1)) for m in _DEFINITION.finditer(piece)}
    wanted: list[tuple[str, dict[str, str]]] = []
    for m in _LABEL.finditer(piece):
        label = normalizeReference(m.group(1))
        ref = refs.get(label)
        if ref is not None and label not in own and label not in {w[0] for w in wanted}:
            wanted.append((label, ref))
    if not wanted:
        return piece
    lines = []
    for label, ref in wanted:
        title = ref.get("title") or ""
        escaped = title.replace("\\", "\\\\").replace('"', '\\"')
        quoted = f' "{escaped}"' if title else ""
        lines.append(f"[{label}]: <{ref['href']}>{quoted}")
    return piece + "\n\n" + "\n".join(lines)
