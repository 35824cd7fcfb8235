"""The memory page's search results: the hits of the search the assistant itself runs
(``memory_search``, as the owner), each with why it ranked where it did."""

from __future__ import annotations

import asyncio
from urllib.parse import quote

from agent.memory.hits import Hit
from agent.memory.recall import relevant
from agent.settings import MemorySettings
from gateway.services.index_status import index_line
from gateway.web.backend import Backend
from gateway.web.html import esc, table

SEARCH_RESULTS = 20
HEADERS = ("File", "Lines", "Score", "Text", "Vector", "Recency", "Words", "Recalled", "Excerpt")


async def found(backend: Backend, query: str) -> str:
    """The "Found" section for ``query``: how search ran, and a row per hit."""
    # The search may embed the query: not on the page's event loop.
    hits = await asyncio.to_thread(backend.search, query, SEARCH_RESULTS)
    state = backend.memory_search()
    how = index_line(state)
    if state["hybrid"]:
        s = backend.config.memory.search
        how += (
            f" Score: {s.vector_weight:g} × vector + {s.text_weight:g} × text, times the "
            f"recency of a daily log (halved every {s.half_life_days:g} days; "
            "MEMORY.md does not age)."
        )
    legend = (
        "Text: the keyword (BM25) score over the best one's, times Words. Vector: the cosine "
        "of meaning. Words: the share of the query's words the note holds, rarer words "
        "weighing more. Recalled: whether it clears the bar for being given to the assistant "
        "with a message of these words."
    )
    rows = (_row(h, backend.config.memory, state["hybrid"]) for h in hits)
    return (
        f'<h2>Found</h2><p class="how">{esc(how)}</p>'
        + table(HEADERS, rows, f"Nothing matches {query!r}.")
        + (f'<p class="legend">{esc(legend)}</p>' if hits else "")
    )


def _row(h: Hit, cfg: MemorySettings, hybrid: bool) -> tuple[str, ...]:
    def num(value: float | None, missing: str = "—") -> str:
        return missing if value is None else f"{value:.2f}"

    return (
        f'<a href="/memory/file?path={quote(h.path)}">{esc(h.path)}</a>',
        f"{h.start_line}–{h.end_line}",
        num(h.score),
        num(h.text_score),
        num(h.vector_score, "not embedded yet" if hybrid else "—"),
        "—" if h.recency is None else f"×{h.recency:.2f}",
        num(h.words),
        "yes" if relevant(h, cfg.recall) else "no",
        esc(h.snippet),
    )
