"""The model's Markdown as Telegram HTML: the usual constructs, and output Telegram always
accepts (checked by the fake Bot API's own validator)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from channels.markdown import utf16_len
from channels.telegram.html import to_telegram_html, visible_text
from tests.fakes.telegram_api import check_telegram_html


def test_the_usual_constructs():
    md = (
        "# Plan\n\n"
        "Some **bold _and italic_** text with `x < y && z`.\n\n"
        "- first\n- second [docs](https://example.org/a?b=1&c=2)\n  1. nested\n\n"
        "> a quote\n\n"
        "```python\nif a < b:\n    print('&')\n```\n\n"
        "~~gone~~ and <b>not a tag</b>"
    )
    out = to_telegram_html(md)
    assert out.startswith("<b>Plan</b>\n\n")
    assert "<b>bold <i>and italic</i></b>" in out
    assert "<code>x &lt; y &amp;&amp; z</code>" in out
    assert "• first\n• second " in out
    assert '<a href="https://example.org/a?b=1&amp;c=2">docs</a>' in out
    assert "  1. nested" in out
    assert "<blockquote>a quote</blockquote>" in out
    assert (
        "<pre><code class=\"language-python\">if a &lt; b:\n    print('&amp;')</code></pre>" in out
    )
    assert "<s>gone</s>" in out
    assert "&lt;b&gt;not a tag&lt;/b&gt;" in out
    assert check_telegram_html(out) is None


@pytest.mark.parametrize(
    "md",
    [
        "**bold with `code` inside** after",
        "[link **bold** and `code`](https://a.example)",
        "# Heading with `code`",
        "> outer\n> > inner quote\n> back",
        "| a | `b` |\n|---|---|\n| **1** | 2 |",
        "[script](javascript:alert(1)) and ![img](https://x.example/i.png)",
        "unclosed **bold and `tick",
        "```\n\n```",
        "a & b < c > d &amp; &#169;",
    ],
)
def test_output_is_always_html_telegram_accepts(md):
    out = to_telegram_html(md)
    assert check_telegram_html(out) is None, out


def test_a_link_whose_text_is_code_keeps_its_target():
    out = to_telegram_html(
        "Use [`httpx`](https://www.python-httpx.org) or **[`a` b](https://b.example)**"
    )
    assert '<a href="https://www.python-httpx.org">httpx</a>' in out
    assert '<b><a href="https://b.example">a b</a></b>' in out
    assert check_telegram_html(out) is None


def test_deep_lists_zero_starts_image_alts_and_latex_escapes():
    deep = "\n".join("  " * i + f"- level {i}" for i in range(12))
    assert all(f"level {i}" in to_telegram_html(deep) for i in range(12))
    deeper = "\n".join("  " * i + f"- level {i}" for i in range(150))
    assert visible_text(to_telegram_html(deeper)).count("level") == 150  # shown as written
    assert to_telegram_html("0. zero\n1. one") == "0. zero\n1. one"
    assert to_telegram_html("![a *tiny* `cat`](https://c.example/cat.png)") == (
        '<a href="https://c.example/cat.png">a tiny cat</a>'
    )
    assert (
        to_telegram_html(r"\(x^2\) and \{a\} but \*not bold\*")
        == r"\(x^2\) and \{a\} but *not bold*"
    )


def test_unsafe_link_schemes_are_not_links():
    out = to_telegram_html("[x](ftp://files.example/a)")
    assert "<a" not in out
    assert "ftp://files.example/a" in out


_markdownish = st.lists(
    st.sampled_from(
        ["**", "*", "_", "`", "```", "~~", "[", "](", ")", "https://e.org", "# ", "> ", "- ",
         "1. ", "\n", "\n\n", "<", ">", "&", "|", "---", " ", "word", "ünï", "😀", "\\"]
    ),
    max_size=60,
).map("".join)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(_markdownish)
def test_any_markdown_renders_to_acceptable_html_of_bounded_length(md):
    out = to_telegram_html(md)
    assert check_telegram_html(out) is None, (md, out)
    # Usually shorter than the source; list bullets, indentation and separators can add some
    # (a nested "- " becomes up to eight visible characters), never more than in proportion.
    # The Telegram adapter measures the rendered text and re-splits a piece that grew.
    assert utf16_len(visible_text(out)) <= 4 * utf16_len(md) + 8
