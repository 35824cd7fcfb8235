"""The model writes Markdown; chat platforms want it in their own shape and size.

``split_markdown`` cuts a reply into pieces under a platform's length limit, preferring paragraph,
then line, then sentence, then word boundaries, and never leaves a code fence open: a code block
that is itself too long is closed at the cut and reopened, with its language, in the next piece.

``to_telegram_html`` renders one piece as the HTML subset Telegram accepts. It parses with
markdown-it-py (CommonMark, plus tables and strikethrough) rather than with regular expressions,
treats raw HTML in the model's text as text, and only emits tags in combinations Telegram allows.
"""

from __future__ import annotations

import html
import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

MAX_INDENT_LEVELS = 3


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


def _cut(text: str, limit: int, measure: Callable[[str], int]) -> tuple[str, str]:
    window = _window(text, limit, measure)
    floor = int(window * _MIN_SHARE)
    lines = _scan(text[: window + 1])
    # Candidate cuts at line starts: (position, opener to reopen in the next piece or None).
    para: list[tuple[int, str | None]] = []
    line_out: list[tuple[int, str | None]] = []
    line_in: list[tuple[int, str | None]] = []
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
            # Inside a code block: close it here and reopen it at the top of the next piece.
            line_in.append((p, line.opener))

    def split_at(p: int, opener: str | None) -> tuple[str, str]:
        if opener is None:
            return text[:p].rstrip(), text[p:]
        fence = _fence(opener)
        assert fence is not None
        return text[:p].rstrip("\n") + "\n" + fence[0].closer(), opener + "\n" + text[p:]

    for candidates in (para, line_out, line_in):
        if candidates and candidates[-1][0] >= floor:
            return split_at(*candidates[-1])

    # No good line boundary: cut inside the line that crosses the window.
    last = next(line for line in reversed(lines) if line.start < window)
    if last.inside is not None and not last.closes and last.opener is not None:
        # A hard cut in the code, leaving room for the closing fence; it may fall in an
        # earlier line of the same block, never in the opening line.
        cut = window - len(last.inside.closer()) - 1
        at = next(line for line in reversed(lines) if line.start <= cut)
        if at.inside is last.inside and at.opener == last.opener and cut > at.start:
            return text[:cut] + "\n" + last.inside.closer(), last.opener + "\n" + text[cut:]
    elif not last.opens:
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
    # Any earlier boundary beats cutting a word in half.
    earlier = sorted([*para, *line_out, *line_in])
    if earlier and earlier[-1][0] > 0:
        return split_at(*earlier[-1])
    if last.inside is not None and last.opener is not None:
        cut = max(last.start + 1, window - len(last.inside.closer()) - 1)
        return text[:cut] + "\n" + last.inside.closer(), last.opener + "\n" + text[cut:]
    return text[:window], text[window:]


# -- Telegram HTML ------------------------------------------------------------------------------

_SAFE_SCHEMES = ("http://", "https://", "tg://", "mailto:")
_LANG = re.compile(r"^[A-Za-z0-9_+#.-]{1,32}$")
_INLINE_TAGS = {"strong": "b", "em": "i", "s": "s"}


@cache
def _parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])


def _esc(text: str) -> str:
    return html.escape(text, quote=False)


class _HTMLWriter:
    def __init__(self) -> None:
        self.out: list[str] = []
        self.pending = ""  # separator owed before the next block's content
        self.fresh = True  # right after a container's opening: no separator needed
        self.quote_depth = 0
        self.lists: list[list[int | None]] = []  # per open list: [next number] or [None]
        self.inline: list[tuple[str, str]] = []  # open inline tags: (name, opening text)
        self.cells = 0
        self.suspended = False  # inline tags closed around a code span, to reopen lazily

    # blocks
    def request(self, sep: str) -> None:
        if not self.fresh and len(sep) > len(self.pending):
            self.pending = sep

    def emit(self, text: str) -> None:
        if self.pending and self.out:
            self.out.append(self.pending)
        self.pending = ""
        self.fresh = False
        self.out.append(text)

    def block(self, tok: Token) -> None:
        t = tok.type
        if t == "paragraph_open":
            self.request("\n" if tok.hidden else "\n\n")
        elif t == "heading_open":
            self.request("\n\n")
        elif t in ("bullet_list_open", "ordered_list_open"):
            self.request("\n")
            start = int(tok.attrs.get("start", 1) or 1) if t == "ordered_list_open" else None
            self.lists.append([start])
        elif t in ("bullet_list_close", "ordered_list_close"):
            self.lists.pop()
            self.request("\n\n")
        elif t == "list_item_open":
            self.request("\n")
            counter = self.lists[-1] if self.lists else [None]
            if counter[0] is None:
                bullet = "•"
            else:
                bullet = f"{counter[0]}."
                counter[0] += 1
            # Indented up to three levels: deeper nesting would grow the text with the square
            # of its depth (a line of "- - - - ..." is one list inside another).
            self.emit("  " * min(len(self.lists) - 1, MAX_INDENT_LEVELS) + bullet + " ")
            self.fresh = True
        elif t == "blockquote_open":
            self.request("\n\n")
            if self.quote_depth == 0:  # Telegram does not nest quotes
                self.emit("<blockquote>")
                self.fresh = True
            self.quote_depth += 1
        elif t == "blockquote_close":
            self.quote_depth -= 1
            if self.quote_depth == 0:
                self.out.append("</blockquote>")
                self.pending = ""
                self.request("\n\n")
        elif t in ("fence", "code_block"):
            self.request("\n\n")
            code = tok.content.rstrip("\n")
            if not code.strip():
                return
            lang = tok.info.strip().split(maxsplit=1)[0] if tok.info.strip() else ""
            if _LANG.match(lang):
                self.emit(f'<pre><code class="language-{lang}">{_esc(code)}</code></pre>')
            else:
                self.emit(f"<pre>{_esc(code)}</pre>")
        elif t == "hr":
            self.request("\n\n")
            self.emit("———")
        elif t == "tr_open":
            self.request("\n")
            self.cells = 0
        elif t in ("th_open", "td_open"):
            if self.cells:
                self.emit(" | ")
            self.cells += 1
        elif t == "table_open":
            self.request("\n\n")
        elif t == "html_block":  # only if raw HTML were enabled; shown as text
            self.request("\n\n")
            self.emit(_esc(tok.content.rstrip("\n")))

    # inline
    def text(self, text: str) -> None:
        if self.suspended:
            self.suspended = False
            for _, opening in self.inline:
                self.emit(opening)
        self.emit(text)

    def open_tag(self, name: str, opening: str) -> None:
        self.inline.append((name, opening))
        if not self.suspended:
            self.emit(opening)

    def close_all(self) -> None:
        if not self.suspended:
            for n, _ in reversed(self.inline):
                self.emit(f"</{n}>")

    def close_tag(self, name: str) -> None:
        for i in range(len(self.inline) - 1, -1, -1):
            if self.inline[i][0] == name:
                # Close down to it and reopen what was inside, so tags always nest properly.
                inner = self.inline[i + 1 :]
                if not self.suspended:
                    for n, _ in reversed(self.inline[i:]):
                        self.emit(f"</{n}>")
                del self.inline[i:]
                for n, o in inner:
                    self.open_tag(n, o)
                return

    def code(self, content: str) -> None:
        # Telegram's code entities cannot sit inside bold, italic or links: step out, and back in
        # only if more text follows.
        self.close_all()
        self.suspended = bool(self.inline)
        self.emit(f"<code>{_esc(content)}</code>")

    def inline_tokens(self, children: Sequence[Token], header: bool) -> None:
        if header:
            self.open_tag("b", "<b>")
        link_stack: list[str | None] = []
        for tok in children:
            t = tok.type
            if t == "text":
                if tok.content:
                    self.text(_esc(tok.content))
            elif t in ("softbreak", "hardbreak"):
                self.text("\n")
            elif t == "code_inline":
                self.code(tok.content)
            elif t.endswith("_open") and t[:-5] in _INLINE_TAGS:
                name = _INLINE_TAGS[t[:-5]]
                self.open_tag(name, f"<{name}>")
            elif t.endswith("_close") and t[:-6] in _INLINE_TAGS:
                self.close_tag(_INLINE_TAGS[t[:-6]])
            elif t == "link_open":
                href = str(tok.attrs.get("href", ""))
                if href.startswith(_SAFE_SCHEMES) and not any(n == "a" for n, _ in self.inline):
                    self.open_tag("a", f'<a href="{html.escape(href, quote=True)}">')
                    link_stack.append(None)
                else:
                    link_stack.append(href)
            elif t == "link_close":
                shown = link_stack.pop() if link_stack else None
                if shown is None:
                    self.close_tag("a")
                elif shown:
                    self.text(_esc(f" ({shown})"))
            elif t == "image":
                alt = tok.content or "image"
                src = str(tok.attrs.get("src", ""))
                if src.startswith(_SAFE_SCHEMES) and not any(n == "a" for n, _ in self.inline):
                    self.text(f'<a href="{html.escape(src, quote=True)}">{_esc(alt)}</a>')
                else:
                    self.text(_esc(alt))
            elif t == "html_inline":
                self.text(_esc(tok.content))
        self.close_all()
        self.inline.clear()
        self.suspended = False

    def render(self, tokens: Sequence[Token]) -> str:
        bold = False  # headings and table headers are shown in bold
        for tok in tokens:
            if tok.type == "inline":
                self.inline_tokens(tok.children or [], header=bold)
            else:
                if tok.type in ("th_open", "heading_open"):
                    bold = True
                elif tok.type in ("th_close", "heading_close"):
                    bold = False
                self.block(tok)
        if self.quote_depth:
            self.out.append("</blockquote>")
        return "".join(self.out).strip("\n")


def to_telegram_html(markdown: str) -> str:
    """Render Markdown as Telegram's HTML subset; ``<``, ``>`` and ``&`` always escaped."""
    return _HTMLWriter().render(_parser().parse(markdown))


_TAG = re.compile(r"<[^>]*>")


def visible_text(telegram_html: str) -> str:
    """What a reader sees of ``telegram_html`` (what Telegram's length limit counts)."""
    return html.unescape(_TAG.sub("", telegram_html))
