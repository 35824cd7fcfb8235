"""Splitting long replies under a platform's limit without breaking code blocks."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from channels.markdown import split_markdown, utf16_len


def _fences_balanced(piece: str) -> bool:
    return len(re.findall(r"^```", piece, flags=re.M)) % 2 == 0


def test_short_text_is_one_piece():
    assert split_markdown("hello\n\nworld", 4096) == ["hello\n\nworld"]
    assert split_markdown("\n\n", 4096) == []


def test_ten_thousand_characters_with_code_blocks():
    paragraphs = []
    for i in range(15):
        paragraphs.append(f"Paragraph {i}. " + "Some prose here. " * 30)
        paragraphs.append(f"```js\n// block {i}\n" + "let x = 1;\n" * 20 + "```")
    text = "\n\n".join(paragraphs)
    assert len(text) > 10_000
    pieces = split_markdown(text, 4096)
    assert len(pieces) >= 3
    for piece in pieces:
        assert utf16_len(piece) <= 4096
        assert _fences_balanced(piece), piece[:200]
    # Nothing lost or invented: the pieces are the text, cut at boundaries.
    assert "".join(p.replace("\n", "") for p in pieces) == text.replace("\n", "")


def test_a_code_block_longer_than_the_limit_is_closed_and_reopened():
    code = "\n".join(f"line_{i} = {i}" for i in range(600))
    text = "Here:\n\n```python\n" + code + "\n```\n\nDone."
    pieces = split_markdown(text, 2000)
    assert len(pieces) > 2
    for piece in pieces:
        assert utf16_len(piece) <= 2000
        assert _fences_balanced(piece)
    inner = next(p for p in pieces if "line_300 = 300" in p)
    assert inner.startswith("```python\n")
    assert inner.endswith("\n```")
    rebuilt = "\n".join(
        line for p in pieces for line in p.splitlines() if not line.startswith("```")
    )
    for i in range(600):
        assert f"line_{i} = {i}" in rebuilt


def test_prefers_sentences_then_words_in_one_long_paragraph():
    text = "This is a sentence that goes on. " * 200
    pieces = split_markdown(text, 1000)
    for piece in pieces[:-1]:
        assert piece.endswith("on.")
    words = "word " * 1000
    for piece in split_markdown(words, 1000):
        assert piece.split() == ["word"] * len(piece.split())


def test_limit_counts_utf16_units():
    text = "😀" * 3000  # 6000 UTF-16 units, no spaces at all
    pieces = split_markdown(text, 4096)
    assert all(utf16_len(p) <= 4096 for p in pieces)
    assert "".join(pieces) == text


def _open_at_end(piece: str) -> bool:
    from channels.markdown import _scan

    last = _scan(piece)[-1]
    return last.opens or (last.inside is not None and not last.closes)


def _content(text: str, original: str | None = None) -> str:
    """The text without whitespace and without fence lines the splitter may add (closers, and
    copies of the original's opening lines, shortened when long)."""
    from channels.markdown import _scan, _short_openers

    source = _short_openers((original or text).replace("\r\n", "\n"))
    openers = {source[ln.start : ln.end] for ln in _scan(source) if ln.opens}
    kept = [
        line
        for line in _short_openers(text).splitlines()
        if line not in openers and not re.match(r"^[\s>]*(`{3,}|~{3,})\s*$", line)
    ]
    return re.sub(r"\s", "", "".join(kept))


_block = st.one_of(
    st.text(alphabet="abc .!?`~\n#>-", max_size=300),
    st.builds(
        lambda prefix, marker, info, body: f"{prefix}{marker}{info}\n{body}\n{prefix}{marker}",
        st.sampled_from(["", "  ", "> ", "   "]),
        st.sampled_from(["```", "~~~", "````"]),
        st.sampled_from(["", "python", "js title=x", "x" * 90]),
        st.text(alphabet="xyz =();\n", max_size=400),
    ),
    st.just("word " * 60),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_block, max_size=8).map("\n\n".join), st.integers(100, 400))
def test_split_keeps_every_piece_in_limit_closed_and_complete(text, limit):
    pieces = split_markdown(text, limit)
    for piece in pieces:
        assert utf16_len(piece) <= limit, (piece, limit)
    if not _open_at_end(text):
        for piece in pieces:
            assert not _open_at_end(piece), piece
    assert _content("\n".join(pieces), text) == _content(text)


@pytest.mark.parametrize(
    ("text", "limit"),
    [
        ("```\n" + "a" * 93 + "\n" + "b" * 50 + "\n```", 100),
        ("~~~" + "a" * 93 + "\n" + "b" * 500 + "\n~~~", 100),
        ("x" * 92 + " ```bash is how you start a block\nNext line.\n\nLast paragraph.", 100),
        ("1. Install:\n\n    ```bash\n" + "    echo hello world\n" * 12 + "    ```\n", 120),
        ("> ```py\n" + "> print('quoted code')\n" * 12 + "> ```\n", 120),
    ],
)
def test_split_edge_cases(text, limit):
    pieces = split_markdown(text, limit)
    assert len(pieces) < 30
    for piece in pieces:
        assert utf16_len(piece) <= limit
        assert not _open_at_end(piece), piece
        assert not piece.lstrip().startswith("```bash is")
    assert _content("\n".join(pieces), text) == _content(text)
