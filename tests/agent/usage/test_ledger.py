"""The price table and the ledger: costs by model, rows kept once, sums by local day."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from agent.model.charge import Charge, Purpose
from agent.settings import PriceSettings
from agent.usage.ledger import Call, UsageLedger
from agent.usage.prices import PriceTable
from gateway.contract.events import SessionKey, job_key

BERLIN = ZoneInfo("Europe/Berlin")
PRIVATE = SessionKey("telegram", "private", "42")
GROUP = SessionKey("telegram", "group", "-100")


def test_prices_match_dated_ids_and_unpriced_models_cost_nothing():
    table = PriceTable()
    # 1M input, 1M cache write, 1M cache read, 1M output on Sonnet 5.5.
    assert table.cost("claude-sonnet-5-5", 10**6, 10**6, 10**6, 10**6) == pytest.approx(14.6)
    assert table.get("claude-haiku-4-5-20251001") == table.get("claude-haiku-4-5")
    assert table.get("claude-opus-4-5") != table.get("claude-opus-4")
    assert table.cost("llama3.1:8b", 10**6, 0, 0, 10**6) == 0.0
    assert table.cost("claude-sonnet-5-5", 0, 0, 0, 0, searches=3) == pytest.approx(0.03)


def test_haiku_5_5_prompts_over_100k_tokens_pay_the_higher_tier():
    table = PriceTable()
    short = table.cost("claude-haiku-5-5", 100_000, 0, 0, 1000)
    long = table.cost("claude-haiku-5-5", 100_001, 0, 0, 1000)
    assert short == pytest.approx(0.01 + 0.0005)
    assert long == pytest.approx(5 * (100_001 * 0.10 + 1000 * 0.50) / 1e6)


def test_configured_prices_override_and_extend_the_table():
    table = PriceTable(
        {
            "claude-sonnet-5-5": PriceSettings(input=1, output=2, cache_write=0, cache_read=0),
            "llama": PriceSettings(input=0.5, output=0.5, web_search=0),
        }
    )
    assert table.cost("claude-sonnet-5-5", 10**6, 0, 0, 10**6) == pytest.approx(3.0)
    assert table.cost("llama3.1", 10**6, 0, 0, 0, searches=5) == pytest.approx(0.5)


def test_a_call_is_kept_once_and_counted_in_its_local_day(tmp_path):
    ledger = UsageLedger(tmp_path / "usage.sqlite", BERLIN)
    late = datetime(2026, 11, 22, 23, 30, tzinfo=UTC)  # 00:30 on the 23rd in Berlin
    call = Call(Charge(Purpose.CHAT, PRIVATE), "m", 10, 0, 0, 5, cost=0.5, id="msg_1")
    assert ledger.record(call, late)
    assert not ledger.record(call, late)  # the same answer again: not counted twice
    ledger.record(
        Call(Charge(Purpose.DIGEST, job_key("daily-summary", GROUP)), "m", cost=0.25), late
    )
    assert ledger.spent("2026-11-23") == pytest.approx(0.75)
    assert ledger.spent("2026-11-22") == 0
    assert ledger.spent("2026-11") == pytest.approx(0.75)
    assert ledger.spent("2026-11", audience="telegram-group--100") == pytest.approx(0.25)
    assert ledger.spent("2026-11", job="daily-summary") == pytest.approx(0.25)
    ledger.close()
    reopened = UsageLedger(tmp_path / "usage.sqlite", BERLIN)
    by_purpose = {r["key"]: r for r in reopened.totals("purpose")}
    assert by_purpose["chat"]["calls"] == 1 and by_purpose["chat"]["output"] == 5
    assert by_purpose["digest"]["cost"] == pytest.approx(0.25)
    reopened.close()


def test_a_charge_knows_its_audience_and_job():
    assert Charge(Purpose.CHAT, PRIVATE).audience == "owner"
    assert Charge(Purpose.CHAT, PRIVATE).owner_private
    assert Charge(Purpose.CHAT, GROUP).audience == "telegram-group--100"
    job = Charge(Purpose.REMINDER, job_key("r1", GROUP))
    assert (job.audience, job.job, job.owner_private) == ("telegram-group--100", "r1", False)
    mine = Charge(Purpose.HEARTBEAT, job_key("heartbeat", PRIVATE))
    assert (mine.audience, mine.job, mine.owner_private) == ("owner", "heartbeat", False)


def test_the_ledger_keeps_only_its_newest_pages_in_memory(tmp_path):
    """One row a call: SQLite's default 2 MiB page cache filled with old rows as it grew."""
    ledger = UsageLedger(tmp_path / "usage.sqlite", BERLIN)
    try:
        assert ledger._db.execute("PRAGMA cache_size").fetchone()[0] == -256
    finally:
        ledger.close()
