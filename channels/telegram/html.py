"""The model's Markdown as the HTML subset Telegram accepts."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from channels.markdown import parse, too_deep

if TYPE_CHECKING:
    from markdown_it.token import Token

MAX_INDENT_LEVELS = 3

_SAFE_SCHEMES = ("http://", "https://", "tg://", "mailto:")
_LANG = re.compile(r"^[A-Za-z0-9_+#.-]{1,32}$")
_INLINE_TAGS = {"strong": "b", "em": "i", "s": "s"}
# Escapes that are LaTeX rather than Markdown (``\(x\)``, ``\{``): shown with their backslash.
_KEPT_ESCAPES = frozenset({"\\(", "\\)", "\\{", "\\}"})


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
        elif t in ("heading_open", "table_open"):
            self.request("\n\n")
        elif t in ("bullet_list_open", "ordered_list_open"):
            self.request("\n")
            start = int(tok.attrs.get("start", 1)) if t == "ordered_list_open" else None
            self.lists.append([start])
        elif t in ("bullet_list_close", "ordered_list_close"):
            self.lists.pop()
            self.request("\n\n")
        elif t == "list_item_open":
            self.list_item()
        elif t in ("blockquote_open", "blockquote_close"):
            self.quote(opening=t == "blockquote_open")
        elif t in ("fence", "code_block"):
            self.code_block(tok)
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
        elif t == "html_block":  # only if raw HTML were enabled; shown as text
            self.request("\n\n")
            self.emit(_esc(tok.content.rstrip("\n")))

    def list_item(self) -> None:
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

    def quote(self, opening: bool) -> None:
        if opening:
            self.request("\n\n")
            if self.quote_depth == 0:  # Telegram does not nest quotes
                self.emit("<blockquote>")
                self.fresh = True
            self.quote_depth += 1
            return
        self.quote_depth -= 1
        if self.quote_depth == 0:
            self.out.append("</blockquote>")
            self.pending = ""
            self.request("\n\n")

    def code_block(self, tok: Token) -> None:
        self.request("\n\n")
        code = tok.content.rstrip("\n")
        if not code.strip():
            return
        lang = tok.info.strip().split(maxsplit=1)[0] if tok.info.strip() else ""
        if _LANG.match(lang):
            self.emit(f'<pre><code class="language-{lang}">{_esc(code)}</code></pre>')
        else:
            self.emit(f"<pre>{_esc(code)}</pre>")

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
        if any(n == "a" for n, _ in self.inline):
            # Telegram's links cannot hold code: inside link text it is shown as text, so the
            # link keeps its target.
            self.text(_esc(content))
            return
        # Telegram's code entities cannot sit inside bold or italic: step out, and back in only
        # if more text follows.
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
            elif t == "text_special":  # an escape or an entity
                kept = tok.info == "escape" and tok.markup in _KEPT_ESCAPES
                self.text(_esc(tok.markup if kept else tok.content))
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
                alt = "".join(c.content for c in tok.children or ()) or "image"
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
    """Render Markdown as Telegram's HTML subset; ``<``, ``>`` and ``&`` always escaped.
    Text nested deeper than the parser follows is sent as it was written, not cut short."""
    tokens = parse(markdown)
    if too_deep(tokens):
        return _esc(markdown.strip("\n"))
    return _HTMLWriter().render(tokens)


_TAG = re.compile(r"<[^>]*>")


def visible_text(telegram_html: str) -> str:
    """What a reader sees of ``telegram_html`` (what Telegram's length limit counts)."""
    return html.unescape(_TAG.sub("", telegram_html))
