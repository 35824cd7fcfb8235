"""The model's Markdown as a terminal shows it (``corvid chat``), control characters spelled out."""

from __future__ import annotations

from typing import TYPE_CHECKING

from channels.markdown.parse import parse

if TYPE_CHECKING:
    from markdown_it.tree import SyntaxTreeNode

# Style on, style off: each off undoes only its own on, so styles nest.
_STYLES = {
    "strong": ("\x1b[1m", "\x1b[22m"),
    "em": ("\x1b[3m", "\x1b[23m"),
    "s": ("\x1b[9m", "\x1b[29m"),
    "code": ("\x1b[36m", "\x1b[39m"),
    "dim": ("\x1b[2m", "\x1b[22m"),
    "heading": ("\x1b[1;4m", "\x1b[22;24m"),
}


def to_terminal(text: str, *, color: bool = True) -> str:
    """``text`` (Markdown) rendered for a terminal, without a trailing newline."""
    from markdown_it.tree import SyntaxTreeNode

    return "\n".join(_Render(color).blocks(SyntaxTreeNode(parse(text)).children))


def safe(text: str) -> str:
    """Control characters (escape sequences, carriage returns) shown, not obeyed."""
    return "".join(
        c if c in "\n\t" or (c.isprintable() or c == " ") else f"\\x{ord(c):02x}" for c in text
    )


class _Render:
    def __init__(self, color: bool) -> None:
        self.color = color

    def style(self, name: str, text: str) -> str:
        if not self.color:
            return f"`{text}`" if name == "code" else text
        on, off = _STYLES[name]
        return on + text + off

    def blocks(self, nodes: list[SyntaxTreeNode], *, tight: bool = False) -> list[str]:
        lines: list[str] = []
        for node in nodes:
            if lines and not tight:
                lines.append("")
            lines += self.block(node)
        return lines

    def block(self, node: SyntaxTreeNode) -> list[str]:
        kind = node.type
        if kind == "paragraph":
            return self.inline(node.children).split("\n")
        if kind == "heading":
            return [self.style("heading", line) for line in self.inline(node.children).split("\n")]
        if kind in ("bullet_list", "ordered_list"):
            return self.items(node)
        if kind == "blockquote":
            return [self.style("dim", "│ ") + line for line in self.blocks(node.children)]
        if kind in ("fence", "code_block"):
            code = safe(node.content.rstrip("\n")).split("\n")
            if not self.color:
                return ["    " + line for line in code]
            return ["  " + self.style("code", line) for line in code]
        if kind == "hr":
            return [self.style("dim", "─" * 20)]
        if kind == "table":
            return self.table(node)
        if kind == "inline":
            return self.inline([node]).split("\n")
        if node.children:
            return self.blocks(node.children)
        return safe(node.content.rstrip("\n")).split("\n")

    def items(self, node: SyntaxTreeNode) -> list[str]:
        lines: list[str] = []
        number = int(str(node.attrs.get("start", 1))) if node.type == "ordered_list" else 0
        for item in node.children:
            mark = f"{number}. " if node.type == "ordered_list" else "• "
            number += 1
            # A tight list (no blank lines between items) stays tight.
            tight = all(c.type != "paragraph" or c.hidden for c in item.children)
            inner = self.blocks(item.children, tight=tight) or [""]
            lines.append(mark + inner[0])
            lines += [" " * len(mark) + line if line else "" for line in inner[1:]]
        return lines

    def table(self, node: SyntaxTreeNode) -> list[str]:
        lines = []
        for part in node.children:  # thead, tbody
            for row in part.children:
                cells = [self.inline(cell.children) for cell in row.children]
                if part.type == "thead":
                    cells = [self.style("strong", cell) for cell in cells]
                lines.append(" │ ".join(cells))
        return lines

    def inline(self, nodes: list[SyntaxTreeNode]) -> str:
        out = []
        for node in nodes:
            kind = node.type
            if kind in ("text", "text_special", "html_inline"):
                out.append(safe(node.content))
            elif kind in ("softbreak", "hardbreak"):
                out.append("\n")
            elif kind == "code_inline":
                out.append(self.style("code", safe(node.content)))
            elif kind in ("strong", "em", "s"):
                out.append(self.style(kind, self.inline(node.children)))
            elif kind == "link":
                label = self.inline(node.children)
                href = safe(str(node.attrs.get("href", "")))
                shown = label if not href or href in (label, f"mailto:{label}") else None
                out.append(shown or f"{label} {self.style('dim', f'({href})')}")
            elif kind == "image":
                alt = self.inline(node.children) or "image"
                out.append(f"[{alt}]")
            else:  # inline, and anything new: its words
                out.append(self.inline(node.children) if node.children else safe(node.content))
        return "".join(out)
