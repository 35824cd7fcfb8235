"""The one Markdown parser that splitting and Telegram's rendering share, and what a parse tells."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

# markdown-it drops blocks nested deeper than its limit (20 by default, so a list ten levels
# deep lost its last levels). Past this much nesting a text is treated as plain text instead.
MAX_NESTING = 100

# A styled character: the character and the inline formatting around it (emphasis, links with
# their targets, code).
Styled = tuple[str, tuple[tuple[str, str], ...]]


def utf16_len(text: str) -> int:
    """Length as Telegram and Discord count it (UTF-16 code units)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


@cache
def parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "maxNesting": MAX_NESTING})
    md.enable(["table", "strikethrough"])
    # Backslash escapes stay tokens of their own (``text_special``), so the renderer can tell
    # ``\(`` written for LaTeX from plain text.
    md.disable("text_join")
    return md


@cache
def _block_parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "maxNesting": MAX_NESTING})
    md.enable(["table", "strikethrough"])
    md.disable(["inline", "text_join"])
    return md


def parse(text: str, env: dict[str, Any] | None = None) -> list[Token]:
    return parser().parse(text, {} if env is None else env)


def parse_blocks(text: str, env: dict[str, Any]) -> list[Token]:
    """The block structure of ``text`` without parsing inside paragraphs (which is most of the
    work); link definitions are collected into ``env``."""
    return _block_parser().parse(text, env)


def references(text: str) -> dict[str, dict[str, str]]:
    """The link reference definitions of ``text``, by normalised label."""
    if "]:" not in text:  # a definition's label is followed by its colon: none to find
        return {}
    env: dict[str, Any] = {}
    parse_blocks(text, env)
    return dict(env.get("references", {}))


def too_deep(tokens: Sequence[Token]) -> bool:
    """Was the text nested deeper than the parser follows (so part of it is missing)?"""
    return any(t.level >= MAX_NESTING - 1 for t in tokens)


def styled(children: Sequence[Token]) -> list[Styled]:
    """The visible characters of an inline parse with their formatting; whitespace left out
    (a cut may turn a space into a line break, and that is all it may change)."""
    out: list[Styled] = []
    stack: list[tuple[str, str]] = []

    def add(text: str, *extra: tuple[str, str]) -> None:
        marks = (*stack, *extra)
        out.extend((ch, marks) for ch in text if not ch.isspace())

    for tok in children:
        kind = tok.type
        if kind in ("text", "text_special"):
            add(tok.content)
        elif kind == "code_inline":
            add(tok.content, ("code", ""))
        elif kind == "image":
            add("".join(c.content for c in tok.children or ()), ("img", str(tok.attrs["src"])))
        elif tok.nesting == 1:
            stack.append((kind[: -len("_open")], str(tok.attrs.get("href", ""))))
        elif tok.nesting == -1 and stack:
            stack.pop()
    return out


def paragraph_chars(text: str, env: dict[str, Any]) -> list[Styled] | None:
    """What ``text`` shows if it parses as one paragraph or heading; None otherwise."""
    tokens = parse(text, {"references": dict(env.get("references", {}))})
    inlines = [t for t in tokens if t.type == "inline"]
    if len(inlines) != 1 or tokens[0].type not in ("paragraph_open", "heading_open"):
        return None
    return styled(inlines[0].children or ())
