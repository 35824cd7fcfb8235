"""The memory page's search in a real browser (headless Chromium through Playwright, as in
test_browser.py), against a gateway whose vectors come from the fake embeddings API: the
hits of the assistant's own search, each with why it ranked, and the index's progress on the
overview."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gateway.web.memory_search import HEADERS
from tests.fakes.embeddings_api import FakeEmbeddings
from tests.gateway.web.test_browser import CHROMIUM, _signed_in

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium (see test_browser.py)")


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        chromium = await pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        await chromium.close()


async def test_the_memory_page_shows_why_each_hit_ranked(browser, home, start_gateway):
    ws = home / "workspace"
    (ws / "MEMORY.md").write_text("# Memory\n\n- Anna moved to Lisbon in May.\n")
    (ws / "memory").mkdir(exist_ok=True)
    (ws / "memory" / "2026-03-11.md").write_text("## 09:00\n\nFlights to Lisbon booked: TP 541.\n")
    embeddings = FakeEmbeddings(api_key="emb-key")
    await embeddings.start()
    section = {"provider": "openai", "base_url": embeddings.base_url, "api_key": "emb-key"}
    try:
        app, _chan = await start_gateway(
            web={"enabled": True, "port": 0}, memory={"embeddings": section}
        )
        vectors = app.gateway.agent.memory.vectors
        assert vectors is not None and await asyncio.to_thread(vectors.wait_idle, 10)
        page = await _signed_in(browser, app)
        await page.get_by_text(
            re.compile(r"by words and meaning, .*all 2 chunks embedded")
        ).wait_for()
        await page.get_by_role("link", name="Memory").click()
        await page.get_by_label("Search").fill("Lisbon")
        await page.get_by_role("button", name="Search").click()
        await page.get_by_role("heading", name="Found").wait_for()
        rows = page.locator("p.how + table tbody tr")  # the Found table, not the files
        assert await rows.count() == 2
        cells = {}
        for i in range(2):
            row = [t.strip() for t in await rows.nth(i).locator("td").all_inner_texts()]
            cells[row[0]] = dict(zip(HEADERS, row, strict=True))
        await page.get_by_text("0.7 × vector + 0.3 × text (1: first in both)").wait_for()
    finally:
        await embeddings.close()
    dated, undated = cells["memory/2026-03-11.md"], cells["MEMORY.md"]
    for hit in (dated, undated):
        assert re.fullmatch(r"0\.\d\d", hit["Vector"]), hit  # the cosine, from the vectors
        assert re.fullmatch(r"[01]\.\d\d", hit["Text"]) and hit["Words"] == "1.00", hit
        assert hit["Recalled"] == "yes"
    # The log by its name, MEMORY.md's line by the history (written there once it existed,
    # so earlier than any recorded change: not known); neither loses score for its age.
    assert re.fullmatch(
        r"2026-03-11, (\d+ (days|weeks|months) ago|today|yesterday)", dated["Written"]
    )
    assert undated["Written"] == "not known"
    assert dated["Newer note"] == undated["Newer note"] == "—"
    assert "Lisbon" in dated["Excerpt"] and "Anna" in undated["Excerpt"]
