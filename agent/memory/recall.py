"""Recall before answering: the notes a search of the person's message finds, given with it."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import date
from typing import Any

from agent.memory.hits import Hit, dated
from agent.memory.store import Memory, read_text
from agent.memory.text import is_cjk, query_terms
from agent.settings import RecallSettings
from gateway.contract.events import Audience

log = logging.getLogger(__name__)

HEADER = "[Recalled from memory by searching the message below"
MAX_QUERY_CHARS = 1000
MIN_EXCERPT = 60  # bytes: a note is not listed with less of its text than this
MIN_WORDS_FOR_MEANING = 3


# An absolute bar, not the rank: hybrid scores are relative to the other hits.
def relevant(hit: Hit, cfg: RecallSettings) -> bool:
    """Whether a hit clears the bars: its cosine, or the share of the message's weight its
    words hold."""
    near = hit.vector_score is not None and hit.vector_score >= cfg.min_similarity
    return near or hit.words >= cfg.min_words


def by_meaning(message: str) -> bool:
    """Whether a message is long enough to be searched by meaning as well as by its words:
    three words or more, a CJK character counting as half a word. A shorter one ("ok",
    "thanks", a code or a name alone) is searched by its words alone: its vector says little,
    and the words bar is what recalls an exact token anyway, so no model runs for it."""
    terms = query_terms(message)
    words = sum(len(t) / 2 if is_cjk(t) else 1 for t in terms)
    return words >= MIN_WORDS_FOR_MEANING


def already_there(hit: Hit, loaded: str) -> bool:
    """Whether every line of the hit's excerpt is in ``loaded`` (the session's prompt and its
    earlier recalls)."""
    lines = [line.strip() for line in hit.snippet.removesuffix("…").splitlines()]
    lines = [line for line in lines if line]
    if hit.snippet.endswith("…") and lines:
        lines[-1] = lines[-1][:40]  # cut by the snippet's width: its start is what it has
    return bool(lines) and all(line in loaded for line in lines)


def recall(
    memory: Memory,
    message: str,
    audience: Audience,
    loaded: Iterable[str],
    today: date | None = None,
) -> tuple[str, list[tuple[str, str]]]:
    """The block recalled for ``message`` ("" when nothing is), and the text of each file its
    notes come from (for the turn to mark what it read, as ``memory_search`` does). The
    search is ``memory_search``'s, ranking and all; each note says when it was written, and
    how long before ``today``. Blocking: the search may embed the message."""
    cfg = memory.cfg.recall
    query = message.strip()[:MAX_QUERY_CHARS]
    if not cfg.enabled or not query:
        return "", []
    hits = memory.search(query, cfg.max_notes, audience, meaning=by_meaning(query))
    return _noted(memory, hits, query, audience, loaded, today)


def recall_at_once(
    memory: Memory,
    message: str,
    audience: Audience,
    loaded: Iterable[str],
    today: date | None = None,
) -> tuple[str, list[tuple[str, str]]] | None:
    """``recall``, when it needs no model and no catch-up with the files, so that it can run
    on the event loop (a worker thread's hand-over costs more than such a search); None when it
    cannot. A message searched by meaning with embeddings on needs the model, so it is
    searched from a worker thread."""
    cfg = memory.cfg.recall
    query = message.strip()[:MAX_QUERY_CHARS]
    if not cfg.enabled or not query:
        return "", []
    hits = memory.search_at_once(query, cfg.max_notes, audience, meaning=by_meaning(query))
    if hits is None:
        return None
    return _noted(memory, hits, query, audience, loaded, today)


def _noted(
    memory: Memory,
    hits: list[Hit],
    query: str,
    audience: Audience,
    loaded: Iterable[str],
    today: date | None,
) -> tuple[str, list[tuple[str, str]]]:
    """The block of the hits that clear the bars and are not in ``loaded`` yet, and their
    files' text."""
    cfg = memory.cfg.recall
    seen = "\n".join(loaded)
    kept = [
        h
        for h in hits
        if (not audience.private or not h.chat) and relevant(h, cfg) and not already_there(h, seen)
    ]
    files = {rel: read_text(memory.workspace / rel) for rel in dict.fromkeys(h.path for h in kept)}
    shown, block = notes_block([narrowed(h, files[h.path]) for h in kept], cfg.max_bytes, today)
    if shown:
        log.debug("recalled %d note(s) for a message of %d characters", len(shown), len(query))
    return block, [(rel, files[rel]) for rel in dict.fromkeys(h.path for h in shown)]


def narrowed(hit: Hit, text: str) -> Hit:
    """The hit with the lines of its excerpt rather than its whole chunk's, when the file
    still has them where the index saw them."""
    lines = [line.strip() for line in hit.snippet.removesuffix("…").splitlines()]
    if not lines:
        return hit
    file_lines = text.splitlines()
    for n in range(hit.start_line, hit.end_line + 1):
        if file_lines[n - 1 : n] and file_lines[n - 1].strip().startswith(lines[0]):
            return replace(hit, start_line=n, end_line=min(hit.end_line, n + len(lines) - 1))
    return hit


def earlier_recalls(messages: Iterable[dict[str, Any]]) -> list[str]:
    """The blocks recalled earlier in a conversation (their notes are not given twice)."""
    out = []
    for msg in messages:
        if msg.get("role") != "user" or not isinstance(msg.get("content"), list):
            continue
        for block in msg["content"]:
            text = block.get("text") if isinstance(block, dict) else None
            if isinstance(text, str) and text.startswith(HEADER):
                out.append(text)
    return out


# The block goes into the user message and its transcript, never the system prompt, so what
# the prompt cache holds stays a prefix of the next request.
def notes_block(
    hits: Sequence[Hit], max_bytes: int, today: date | None = None
) -> tuple[list[Hit], str]:
    """The hits as one block of at most ``max_bytes`` bytes of UTF-8: a line each with its
    path and lines, when it was written, and as much of its excerpt as fits."""
    if not hits:
        return [], ""
    head = (
        f"{HEADER} (may be beside the point; each says when it was written: an old note may "
        "no longer be true, and a newer note on its subject is named; memory_get reads a note "
        "whole):"
    )
    tail = "]"
    left = max_bytes - len(head.encode()) - len(tail.encode())
    lines: list[str] = []
    shown: list[Hit] = []
    for h in hits:
        span = f"line {h.start_line}"
        if h.end_line > h.start_line:
            span = f"lines {h.start_line}-{h.end_line}"
        where = f"\n- {h.path} {span} ({dated(h, today)}): "
        room = left - len(where.encode())
        if room < MIN_EXCERPT:
            break
        excerpt = _fit(" / ".join(p.strip() for p in h.snippet.splitlines() if p.strip()), room)
        line = where + excerpt
        left -= len(line.encode())
        lines.append(line)
        shown.append(h)
    if not shown:
        return [], ""
    return shown, head + "".join(lines) + tail


def _fit(text: str, room: int) -> str:
    """``text`` cut to ``room`` bytes of UTF-8, at a character, marked when cut."""
    if len(text.encode()) <= room:
        return text
    cut = text.encode()[: room - len("…".encode())].decode("utf-8", errors="ignore")
    return cut + "…"
