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
from gateway.app import build_app
from gateway.channel_setup import build_channels
from gateway.contract.ports import SystemClock
from gateway.usage.setup import embeddings_counter
from tests.channels.test_voice import RECORDING, _corvid, _voice, ears  # noqa: F401 (a fixture)
from tests.conftest import OWNER, TG_GROUP, calls_by, make_config
from tests.fakes.embeddings_api import FakeEmbeddings
from tests.fakes.telegram_api import BOT_USERNAME, auto_entities

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
    columns = ("input", "cache_write", "cache_read", "output")
    assert [rows["transcription"][c] for c in columns] == [0, 0, 0, 0]  # no tokens: minutes
    assert rows["transcription"]["cost"] == pytest.approx(0.009)  # a minute and a half
    assert rows["chat"]["calls"] == 1


async def test_a_groups_voice_note_is_charged_to_the_group_and_within_its_cap(
    home,
    fake_api,
    fake_telegram,
    ears,  # noqa: F811
):
    """What hearing a group's recording cost is the group's: in the ledger under its name,
    and counted against its cap, which stops the group's turn while the owner's go on."""
    tg = fake_telegram.channel_config(allow_from=[str(OWNER)], groups=[str(TG_GROUP)])
    config = make_config(
        home,
        fake_api.base_url,
        channels={"telegram": tg},
        transcription=ears.config(price_per_minute=0.006),
        budget={"chat_daily": 0.01},
    )
    app = build_app(config, build_channels(config))
    await app.start()
    try:
        file_id, uid = fake_telegram.add_file(RECORDING)
        caption = f"@{BOT_USERNAME} listen"
        fake_telegram.text(
            "", chat=TG_GROUP, chat_type="supergroup", user=OWNER, caption=caption,
            caption_entities=auto_entities(caption),
            voice={"file_id": file_id, "file_unique_id": uid, "duration": 180,
                   "mime_type": "audio/ogg", "file_size": len(RECORDING)},
        )  # fmt: skip
        await ears.wait_for(lambda: len(ears.heard) == 1)
        await asyncio.wait_for(app.idle(), 10)
        fake_telegram.text("and me?")
        await fake_telegram.wait_for(
            lambda: any(s["shown"] == "echo: and me?" for s in fake_telegram.sent)
        )
    finally:
        await app.stop()
    told, answered = fake_telegram.sent  # the group heard nothing; the owner, of its cap
    assert told["chat_id"] == answered["chat_id"] == str(OWNER)
    assert told["shown"].startswith(f"The daily budget of the chat telegram-group-{TG_GROUP}")
    assert len(fake_api.message_requests) == 1  # the owner's turn; the group's never ran
    group = f"telegram-group-{TG_GROUP}"
    assert calls_by(home, "chat") == {group: 1, "owner": 1}
    assert calls_by(home, "purpose") == {"transcription": 1, "chat": 1}


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
