"""The memory page's search results, each with why it ranked where it did."""

from __future__ import annotations

import asyncio
from datetime import date
from urllib.parse import quote

from agent.memory.hits import Hit
from agent.memory.recall import relevant
from agent.memory.when import age
from agent.settings import MemorySettings
from gateway.services.index_status import index_line
from gateway.web.backend import Backend
from gateway.web.html import esc, table

SEARCH_RESULTS = 20
HEADERS = (
    "File",
    "Lines",
    "Written",
    "Score",
    "Text",
    "Vector",
    "Words",
    "Recalled",
    "Newer note",
    "Excerpt",
)


async def found(backend: Backend, query: str) -> str:
    """The "Found" section for ``query``: how search ran, and a row per hit."""
    # The search may embed the query: not on the page's event loop.
    hits = await asyncio.to_thread(backend.search, query, SEARCH_RESULTS)
    state = backend.memory_search()
    how = index_line(state)
    s = backend.config.memory.search
    if state["hybrid"]:
        how += (
            f" Score: the keyword and meaning rankings fused by rank, {s.vector_weight:g} × "
            f"vector + {s.text_weight:g} × text (1: first in both)."
        )
    how += " A newer note on the same subject ranks just above the one it replaces."
    if s.half_life_days > 0:
        how += f" A daily log's score halves every {s.half_life_days:g} days."
    legend = (
        "Written: when the note was written (MEMORY.md's lines, from the workspace history). "
        "Text: the keyword (BM25) score over the best one's, times Words. Vector: the cosine "
        "of meaning. Words: the share of the query's words the note holds, rarer words "
        "weighing more. Recalled: whether it clears the bar for being given to the assistant "
        "with a message of these words. Newer note: one on the same subject, written later."
    )
    today = backend.clock.now().astimezone(backend.config.tz).date()
    rows = (_row(h, backend.config.memory, state["hybrid"], today) for h in hits)
    return (
        f'<h2>Found</h2><p class="how">{esc(how)}</p>'
        + table(HEADERS, rows, f"Nothing matches {query!r}.")
        + (f'<p class="legend">{esc(legend)}</p>' if hits else "")
    )


def _row(h: Hit, cfg: MemorySettings, hybrid: bool, today: date) -> tuple[str, ...]:
    def num(value: float | None, missing: str = "—") -> str:
        return missing if value is None else f"{value:.2f}"

    written = f"{h.written}, {age(h.written, today)}" if h.written else "not known"
    if h.recency is not None and h.recency < 1:
        written += f" (score ×{h.recency:.2f} for its age)"
    newer = "—"
    if h.newer:
        path, _, line = h.newer.rpartition(":")
        newer = f'<a href="/memory/file?path={quote(path)}">{esc(path)}</a> line {esc(line)}'
    return (
        f'<a href="/memory/file?path={quote(h.path)}">{esc(h.path)}</a>',
        f"{h.start_line}–{h.end_line}",
        esc(written),
        num(h.score),
        num(h.text_score),
        num(h.vector_score, "not embedded yet" if hybrid else "—"),
        num(h.words),
        "yes" if relevant(h, cfg.recall) else "no",
        newer,
        esc(h.snippet),
    )
