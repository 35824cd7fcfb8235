"""Server-side HTML for the control page: a layout, escaping, and Markdown rendered safely."""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

NAV = (
    ("/", "Overview"),
    ("/sessions", "Sessions"),
    ("/memory", "Memory"),
    ("/jobs", "Jobs"),
    ("/usage", "Usage"),
    ("/pairing", "Pairing"),
    ("/actions", "Actions"),
    ("/chat", "Chat"),
    ("/config", "Config"),
)


# Every value that reaches a page goes through here (or ``markdown``): names strangers chose,
# file contents, log lines.
def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def page(title: str, body: str, *, active: str = "", csrf: str = "", signed_in: bool = True) -> str:
    """A whole page: the navigation, ``body``, and the CSRF token for the scripts."""
    nav = ""
    if signed_in:
        links = "".join(
            f'<a href="{href}"{" aria-current=page" if href == active else ""}>{esc(name)}</a>'
            for href, name in NAV
        )
        out = (
            f'<form method="post" action="/logout" class="inline signout">'
            f'<input type="hidden" name="csrf" value="{esc(csrf)}"><button>Sign out</button></form>'
        )
        nav = f'<nav><span class="brand">Corvid</span>{links}{out}</nav>'
    else:  # the sign-in page: no links (they all lead back here), and no script to load
        nav = '<nav><span class="brand">Corvid</span></nav>'
    meta = f'<meta name="csrf" content="{esc(csrf)}">' if csrf else ""
    script = '<script src="/static/corvid.js" defer></script>' if signed_in else ""
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"{meta}<title>{esc(title)} · Corvid</title>"
        '<link rel="icon" href="/static/corvid.svg" type="image/svg+xml">'
        f'<link rel="stylesheet" href="/static/corvid.css">{script}</head>'
        f"<body>{nav}<main><h1>{esc(title)}</h1>{body}</main></body></html>\n"
    )


def form(action: str, csrf: str, button: str, fields: dict[str, str] | None = None) -> str:
    """A one-button POST form (approve, cancel, run now) with its hidden fields."""
    hidden = "".join(
        f'<input type="hidden" name="{esc(k)}" value="{esc(v)}">'
        for k, v in {**(fields or {}), "csrf": csrf}.items()
    )
    return (
        f'<form method="post" action="{esc(action)}" class="inline">{hidden}'
        f"<button>{esc(button)}</button></form>"
    )


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], empty: str) -> str:
    """A table of already-escaped cells, or ``empty`` (plain text) when there are no rows.
    Each cell carries its column's name: on a narrow screen a row is shown as a card."""
    labels = [f' data-label="{esc(h)}"' if h else "" for h in headers]
    body = "".join(
        "<tr>"
        + "".join(f"<td{label}>{c}</td>" for label, c in zip(labels, row, strict=False))
        + "</tr>"
        for row in rows
    )
    if not body:
        return f'<p class="empty">{esc(empty)}</p>'
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def outcome(ok: str, problem: str) -> str:
    """The outcome of the last action: what went well, or the problem."""
    return notice(ok) + notice(problem, "error")


def notice(text: str, kind: str = "ok") -> str:
    return f'<p class="notice {esc(kind)}" role="status">{esc(text)}</p>' if text else ""


@cache
def _renderer() -> MarkdownIt:
    from markdown_it import MarkdownIt

    # Raw HTML in a memory file is shown as text, never run; links keep their targets but
    # markdown-it refuses javascript: and similar schemes.
    return MarkdownIt("commonmark", {"html": False}).enable("table")


def markdown(text: str) -> str:
    rendered: str = _renderer().render(text)
    return rendered
