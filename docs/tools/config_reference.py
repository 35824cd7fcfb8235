"""The manual's configuration reference, made from the template `corvid init` writes as config.yaml.

Every option, its default and its comment come from `gateway/config/template.yaml` itself, so the
page cannot say what the file does not. `python docs/tools/config_reference.py` prints the page; the
manual's build makes it with the MkDocs hook in `docs/tools/mkdocs_hooks.py`.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from agent.settings import DEFAULT_MODEL

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "gateway" / "config" / "template.yaml"
PAGE = "reference/options.md"
# What `corvid init` puts in place of the template's two placeholders.
PLACEHOLDERS = {
    "@TIMEZONE@": "the machine's time zone, as `corvid init` finds it",
    "@MODEL@": f"`{DEFAULT_MODEL}`, the default model",
}
_KEY = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z_][A-Za-z0-9_]*):(?P<rest>.*)$")
_COMMENT = re.compile(r"^(?P<indent> *)#(?P<text>.*)$")


@dataclass(frozen=True, slots=True)
class Option:
    """One option the template sets: its dotted name, its value as written, what it says."""

    name: str
    default: str
    comment: str


@dataclass(slots=True)
class Section:
    """A mapping of the template (`llm`, `memory.embeddings`) with what it says and holds."""

    name: str
    comment: str
    options: list[Option] = field(default_factory=list)
    example: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Template:
    header: str
    sections: list[Section]


def _split_inline(rest: str) -> tuple[str, str]:
    """A value and its trailing comment: the first `#` after a blank, outside quotes."""
    quote = ""
    for i, ch in enumerate(rest):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or rest[i - 1] in " \t"):
            return rest[:i].strip(), rest[i + 1 :].strip()
    return rest.strip(), ""


def _prose(lines: list[str]) -> str:
    return " ".join(" ".join(line.split()) for line in lines if line.strip())


def _is_mapping(lines: list[str], at: int, indent: int) -> bool:
    """Whether the key on line `at` opens a mapping: its next line of YAML is indented more."""
    for line in lines[at + 1 :]:
        if line.strip() and not _COMMENT.match(line):
            key = _KEY.match(line)
            return key is not None and len(key["indent"]) > indent
    return False


def parse(text: str) -> Template:
    """The template's sections and options, each with the comment written above it."""
    lines = text.splitlines()
    header: list[str] = []
    comment: list[str] = []
    top = Section("", "")
    sections = [top]
    stack: list[tuple[int, Section]] = []
    last: Section = top
    seen_key = False
    for at, line in enumerate(lines):
        if not line.strip():
            if comment and not seen_key:
                header += comment
            elif comment:  # a comment block that no option follows: an example for the last one
                last.example += [c.removeprefix(" ") for c in comment]
            comment = []
            continue
        if found := _COMMENT.match(line):
            comment.append(found["text"])
            continue
        key = _KEY.match(line)
        if key is None:
            raise ValueError(f"template line {at + 1} is neither an option nor a comment: {line}")
        seen_key = True
        indent = len(key["indent"])
        while stack and stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1] if stack else top
        name = f"{parent.name}.{key['key']}" if parent.name else key["key"]
        value, inline = _split_inline(key["rest"])
        if not value and _is_mapping(lines, at, indent):
            section = Section(name, _prose(comment))
            sections.append(section)
            stack.append((indent, section))
            last = section
        else:
            parent.options.append(Option(name, value, _prose([*comment, inline])))
            last = parent
        comment = []
    return Template(_prose(header), [s for s in sections if s.options or s.comment])


def _default(value: str) -> str:
    for placeholder, meaning in PLACEHOLDERS.items():
        if value == placeholder:
            return meaning
    if value in ("", '""'):
        return "empty"
    return f"`{value}`"


def _groups(options: list[Option]) -> list[list[Option]]:
    """Options in rows: a comment speaks for the options under it until the next comment."""
    groups: list[list[Option]] = []
    for option in options:
        if not groups or option.comment:
            groups.append([option])
        else:
            groups[-1].append(option)
    return groups


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _text(prose: str) -> str:
    """A comment as Markdown: its `code` kept, and outside it nothing read as markup."""
    parts = prose.split("`")
    for i in range(0, len(parts), 2):
        parts[i] = re.sub(r"([\\*_\[\]])", r"\\\1", parts[i])
        parts[i] = parts[i].replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(parts)


def render(text: str) -> str:
    """The reference page, in Markdown, for the template `text`."""
    template = parse(text)
    out = [
        "# Every option",
        "",
        "This page is made from the template that `corvid init` writes as `config.yaml`",
        "(`gateway/config/template.yaml`) each time the manual is built, so it lists exactly the",
        "options Corvid knows, at their defaults, with the comments the file itself carries. How",
        "the file is read, checked and applied while Corvid runs is on the",
        "[Configuration](configuration.md) page.",
        "",
        f"> {_text(template.header)}",
        "",
    ]
    for section in template.sections:
        title = f"`{section.name}`" if section.name else "Top level"
        out += [f"## {title}", ""]
        if section.comment:
            out += [_text(section.comment), ""]
        if section.options:
            out += ["| option | default | what it is |", "|---|---|---|"]
            for group in _groups(section.options):
                row = (
                    "<br>".join(f"`{option.name}`" for option in group),
                    "<br>".join(_default(option.default) for option in group),
                    _text(group[0].comment) or "(what the section says, above)",
                )
                out.append("| " + " | ".join(_cell(c) for c in row) + " |")
            out.append("")
        if section.example:
            out += ["For example:", "", "```yaml", *section.example, "```", ""]
    out += [
        "## The file as `corvid init` writes it",
        "",
        "```yaml",
        *text.splitlines(),
        "```",
        "",
        "In it, `corvid init` writes "
        + " and ".join(f"{meaning} for `{name}`" for name, meaning in PLACEHOLDERS.items())
        + ".",
        "",
    ]
    return "\n".join(out)


def main() -> int:
    sys.stdout.write(render(TEMPLATE.read_text(encoding="utf-8")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
