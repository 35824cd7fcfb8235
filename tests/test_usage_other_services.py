"""The other paid calls in the ledger: a voice note a transcription service heard, priced by
the minute, and the tokens an OpenAI-compatible embedding service reports."""

from __future__ import annotations

import asyncio
from zoneinfo import ZoneInfo

import pytest

from agent.memory.embedding.openai import OpenAIEmbedder
from agent.usage.ledger import UsageLedger
from agent.usage.meter import Meter
from agent.usage.prices import PriceTable
from gateway.contract.ports import SystemClock
from gateway.usage.setup import embeddings_counter
from tests.channels.test_voice import _corvid, _voice, ears  # noqa: F401 (a fixture)
from tests.conftest import OWNER
from tests.fakes.embeddings_api import FakeEmbeddings

UTC = ZoneInfo("UTC")


async def test_a_transcribed_voice_note_is_counted_by_the_minute(
    home,
    fake_api,
    fake_telegram,
    ears,  # noqa: F811
):
    tg = fake_telegram.channel_config(allow_from=[str(OWNER)])
    async with _corvid(home, fake_api, "telegram", tg, **ears.config(price_per_minute=0.006)):
        _voice(fake_telegram, seconds=90)
        await fake_telegram.wait_sent(1)
    assert len(ears.heard) == 1
    ledger = UsageLedger(home / "state" / "usage.sqlite", UTC)
    try:
        rows = {r["key"]: r for r in ledger.totals("purpose")}
    finally:
        ledger.close()
    assert rows["transcription"]["calls"] == 1
    assert rows["transcription"]["cost"] == pytest.approx(0.009)  # a minute and a half
    assert rows["chat"]["calls"] == 1


async def test_the_tokens_an_embedding_service_bills_are_counted(tmp_path):
    api = FakeEmbeddings(api_key=None)
    await api.start()
    ledger = UsageLedger(tmp_path / "usage.sqlite", UTC)
    embedder = OpenAIEmbedder(base_url=api.base_url, model="text-embedding-3-small", api_key=None)
    embedder.on_usage = embeddings_counter(Meter(ledger, PriceTable(), SystemClock()))
    try:
        # From a thread, as memory search embeds: the fake answers on this loop.
        texts = ["call the bank about the loan", "water the plants", "buy milk"]
        await asyncio.to_thread(embedder.embed, texts)
        await asyncio.to_thread(embedder.embed, ["one more text to embed"])
    finally:
        embedder.close()
        await api.close()
    [row] = ledger.totals("purpose")
    ledger.close()
    assert (row["key"], row["calls"]) == ("embedding", 2)
    assert row["input"] == api.billed > 0
    assert row["cost"] == pytest.approx(api.billed * 0.02 / 1e6)
