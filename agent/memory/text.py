"""How memory text is cut and matched for search: chunks of lines, CJK characters spaced for
the tokenizer, the terms of a query, and the snippet a hit shows."""

from __future__ import annotations

import re
import unicodedata

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_CJK_CHAR = re.compile(f"([{_CJK}])")
_QUERY_PART = re.compile(f"[{_CJK}]+|[^\\W_{_CJK}]+")
_IS_CJK = re.compile(f"[{_CJK}]")


def query_terms(query: str) -> list[str]:
    """The words of a query (a run of CJK characters is one term); nothing else survives."""
    return _QUERY_PART.findall(query)


def is_cjk(term: str) -> bool:
    return _IS_CJK.match(term) is not None


def fold(text: str) -> str:
    return _CJK_CHAR.sub(r" \1 ", text)


def chunk_lines(text: str, size: int, overlap: int) -> list[tuple[int, int, str]]:
    """Windows of ``size`` lines, each starting ``size - overlap`` after the last (1-based)."""
    lines = text.splitlines()
    if not lines:
        return []
    step = max(1, size - overlap)
    out = []
    start = 0
    while start < len(lines):
        window = lines[start : start + size]
        if any(line.strip() for line in window):
            out.append((start + 1, start + len(window), "\n".join(window)))
        if start + size >= len(lines):
            break
        start += step
    return out


def strip_accents(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def snippet(text: str, terms: list[str], width: int = 280) -> str:
    lines = text.splitlines()
    folded = [t.casefold() for t in terms]
    for i, line in enumerate(lines):
        low = line.casefold()
        if any(t in low for t in folded):
            piece = "\n".join(lines[max(0, i - 1) : i + 3]).strip()
            return piece if len(piece) <= width else piece[:width] + "…"
    head = text.strip()
    return head if len(head) <= width else head[:width] + "…"
