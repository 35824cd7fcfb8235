"""The manual's configuration reference says what the config template says: every option once,
at the template's default, with the template's own comments, and the file whole."""

from __future__ import annotations

import re
from typing import Any

import yaml

from agent.settings import DEFAULT_MODEL
from docs.tools.config_reference import PLACEHOLDERS, TEMPLATE, parse, render


def _leaves(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Each option of a loaded template by its dotted name (an empty mapping is an option)."""
    found: dict[str, Any] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            found |= _leaves(value, f"{name}.")
        else:
            found[name] = value
    return found


def _rows(page: str) -> dict[str, str]:
    """Each option the page's tables list, with the default shown for it."""
    rows: dict[str, str] = {}
    for line in page.splitlines():
        if not line.startswith("| `"):
            continue
        cells = re.split(r"(?<!\\)\|", line)[1:-1]
        names = [n.strip().strip("`") for n in cells[0].split("<br>")]
        defaults = [d.strip() for d in cells[1].split("<br>")]
        assert len(names) == len(defaults), line
        for name, default in zip(names, defaults, strict=True):
            assert name not in rows, f"{name} listed twice"
            rows[name] = default
    return rows


def _shown(default: str) -> Any:
    """What a default cell says, as YAML would read it."""
    if default == "empty":
        return None
    for placeholder, meaning in PLACEHOLDERS.items():
        if default == meaning:
            return placeholder
    assert default.startswith("`") and default.endswith("`"), default
    return yaml.safe_load(default[1:-1])


def test_every_option_of_the_template_is_on_the_page_at_its_default():
    text = TEMPLATE.read_text(encoding="utf-8")
    options = _leaves(yaml.safe_load(text.replace("@", "")))
    rows = _rows(render(text))
    assert set(rows) == set(options)
    for name, value in options.items():
        shown = _shown(rows[name])
        if isinstance(shown, str) and shown.startswith("@"):
            continue  # a placeholder: corvid init fills it in, and the page says with what
        assert shown == value or (shown is None and value == ""), name
    assert rows["timezone"] == PLACEHOLDERS["@TIMEZONE@"]
    assert rows["llm.model"] == PLACEHOLDERS["@MODEL@"]
    assert DEFAULT_MODEL in PLACEHOLDERS["@MODEL@"]


def test_every_comment_of_the_template_is_on_the_page():
    text = TEMPLATE.read_text(encoding="utf-8")
    page = render(text)
    before_the_file = page.split("## The file as `corvid init` writes it")[0]
    plain = " ".join(re.sub(r"\\(.)", r"\1", before_the_file).replace("&lt;", "<").split())
    plain = plain.replace("&gt;", ">")
    for line in text.splitlines():
        comment = line.partition("#")[2].strip() if "#" in line else ""
        if comment and not line.lstrip().startswith("#   "):
            assert " ".join(comment.split()) in plain, comment


def test_the_page_ends_with_the_template_whole():
    text = TEMPLATE.read_text(encoding="utf-8")
    page = render(text)
    assert f"```yaml\n{text.rstrip()}\n```" in page


def test_a_comment_speaks_for_the_options_under_it_until_the_next():
    template = parse(
        "# The header.\n\nsection:\n  # What a and b are.\n  a: 1\n  b: 2\n  # What c is.\n"
        "  c: ''   # and more\n  # An example:\n  #   d: 4\n\nother: x\n"
    )
    (top, section) = template.sections
    assert template.header == "The header."
    assert [o.name for o in top.options] == ["other"]
    assert [(o.name, o.default, o.comment) for o in section.options] == [
        ("section.a", "1", "What a and b are."),
        ("section.b", "2", ""),
        ("section.c", "''", "What c is. and more"),
    ]
    assert section.example == ["An example:", "  d: 4"]
    page = render("# The header.\n\nsection:\n  # What a and b are.\n  a: 1\n  b: 2\n")
    assert "| `section.a`<br>`section.b` | `1`<br>`2` | What a and b are. |" in page
