"""How memory text is cut and matched for search: chunks, CJK spacing, query terms, snippets."""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Mapping
from functools import cache, lru_cache

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"


@cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """A CJK character, and a query's parts. Compiled when first used: each class spans tens
    of thousands of characters, costly to compile on every start's way to the first poll."""
    return re.compile(f"([{_CJK}])"), re.compile(f"[{_CJK}]+|[^\\W_{_CJK}]+")


def query_terms(query: str) -> list[str]:
    """The words of a query (a run of CJK characters is one term); nothing else survives."""
    return _patterns()[1].findall(query)


def is_cjk(term: str) -> bool:
    return _patterns()[0].match(term) is not None


def fold(text: str) -> str:
    return _patterns()[0].sub(r" \1 ", text)


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
    if text.isascii():
        return text
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def snippet(text: str, terms: list[str], width: int = 280) -> str:
    lines = text.splitlines()
    card = next((i for i, line in enumerate(lines) if line.startswith("### ")), None)
    heads = card is not None and all(not ln.strip() or ln.startswith("#") for ln in lines[:card])
    if card is not None and heads and _card_lines(["## People", *lines[card:]]):
        whole = "\n".join(lines[card:]).strip()
        if len(whole) <= width:
            return whole  # a person's card is shown whole, its name first
    folded = [t.casefold() for t in terms]
    for i, line in enumerate(lines):
        low = line.casefold()
        if any(t in low for t in folded):
            piece = "\n".join(lines[max(0, i - 1) : i + 3]).strip()
            return piece if len(piece) <= width else piece[:width] + "…"
    head = text.strip()
    return head if len(head) <= width else head[:width] + "…"


def idf(doc_freq: int, chunks: int) -> float:
    """BM25's inverse document frequency, never below zero (an unknown count counts as 1)."""
    df = max(1, doc_freq)
    return math.log(1 + (max(chunks, df) - df + 0.5) / (df + 0.5))


def share_of_query(text: str, weights: Mapping[str, float]) -> float:
    """How much of the query's weight the text holds: the IDF of the terms found in it over
    the IDF of all the terms. Terms match as the keyword index matches them: whole words up
    to two letters, word beginnings from three, and runs of CJK characters anywhere."""
    return query_share(tuple(weights.items()))(text)


@lru_cache(maxsize=64)
def query_share(weights: tuple[tuple[str, float], ...]) -> Callable[[str], float]:
    """``share_of_query`` for these (term, weight) pairs, its patterns made once: a search
    asks it of every candidate."""
    total = sum(w for _, w in weights)
    cjk, spaced = [], []  # CJK runs match anywhere; other terms in the text with CJK spaced
    for term, weight in weights:
        low = strip_accents(term).casefold()
        if is_cjk(term):
            cjk.append((re.compile(re.escape(low)), weight))
        elif len(low) >= 3:
            spaced.append((re.compile(f"(?<![^\\W_]){re.escape(low)}"), weight))
        else:
            spaced.append((re.compile(f"(?<![^\\W_]){re.escape(low)}(?![^\\W_])"), weight))

    def share(text: str) -> float:
        if total <= 0:
            return 0.0
        folded = strip_accents(text).casefold()
        found = sum(w for p, w in cjk if p.search(folded))
        if spaced:
            apart = fold(folded)
            found += sum(w for p, w in spaced if p.search(apart))
        return found / total

    return share


def words_held(text: str, doc_freq: Mapping[str, int], chunks: int) -> float:
    """``share_of_query`` with each term weighted by its IDF among ``chunks`` chunks."""
    weights = {t: idf(df, chunks) for t, df in doc_freq.items()}
    return round(share_of_query(text, weights), 3)


def _card_lines(lines: list[str]) -> set[int]:
    """The lines of a person's card in a ``## People`` section: the list items under its
    ``### Name`` heading, which stay with it as one note."""
    inside, card, found = False, False, set()
    for i, line in enumerate(lines):
        if line.startswith("## ") or line.startswith("# "):
            inside, card = line[3:].strip().casefold() == "people", False
        elif line.startswith("### "):
            card = inside
        elif card:
            found.add(i)
    return found


def chunk_entries(text: str, size: int, overlap: int) -> list[tuple[int, int, str]]:
    """Chunks that follow the notes' own structure: a new chunk at each Markdown heading (a
    daily log's entry, a section of MEMORY.md) and at each top-level list item, so one
    chunk holds one note; a person's card (a ``### Name`` and its items under ``## People``)
    is one note too. A note longer than ``size`` lines is cut into windows as
    ``chunk_lines`` cuts a file. Headings with nothing under them join the next note."""
    lines = text.splitlines()
    cards = _card_lines(lines)
    starts = [
        i
        for i, line in enumerate(lines)
        if line.startswith("#") or (line.startswith(("- ", "* ")) and i not in cards)
    ]
    out: list[tuple[int, int, str]] = []
    pending = 0  # where the current note starts, headings above it included
    for start in [*starts, len(lines)]:
        end = start
        body = lines[pending:end]
        if start < len(lines) and not any(
            line.strip() and not line.startswith("#") for line in body
        ):
            continue  # only headings so far: they head the next note
        if any(line.strip() for line in body):
            for first, last, piece in chunk_lines("\n".join(body), size, overlap):
                out.append((pending + first, pending + last, piece))
        pending = end
    return out


RARE_TOKEN_CHUNKS = 3


def rare_tokens(query: str, doc_freq: Mapping[str, int], chunks: int) -> set[str]:
    """The query's terms that look like a code, a number or a name (a digit in them, or a
    capital not at the start of the query) and that at most ``RARE_TOKEN_CHUNKS`` chunks of
    the ``chunks`` hold, and no more than a tenth of them: asked for by name, not by
    meaning."""
    found = set()
    for n, term in enumerate(query_terms(query)):
        named = any(c.isdigit() for c in term) or (n > 0 and term[:1].isupper())
        df = doc_freq.get(term, 0)
        if named and 0 < df <= RARE_TOKEN_CHUNKS and df * 10 <= chunks:
            found.add(term)
    return found
