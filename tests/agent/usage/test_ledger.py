"""The price table and the ledger: costs by model, rows kept once, sums by local day."""

from __future__ import annotations

import sqlite3
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


def test_a_months_sums_end_at_its_first_and_last_local_day(tmp_path):
    """A month is summed as a range of local days: the calls on its first and last days count,
    the ones a day outside do not."""
    ledger = UsageLedger(tmp_path / "usage.sqlite", BERLIN)
    for n, (when, key) in enumerate(
        [
            (datetime(2026, 10, 31, 23, 30, tzinfo=UTC), GROUP),  # 1 November, 00:30 in Berlin
            (datetime(2026, 11, 30, 22, 30, tzinfo=UTC), PRIVATE),  # 30 November, 23:30
            (datetime(2026, 11, 30, 23, 30, tzinfo=UTC), GROUP),  # 1 December
            (datetime(2026, 10, 31, 12, 0, tzinfo=UTC), PRIVATE),  # 31 October
        ]
    ):
        ledger.record(Call(Charge(Purpose.CHAT, key), "m", cost=2.0**n, id=f"m{n}"), when)
    try:
        assert ledger.spent("2026-11") == pytest.approx(3.0)
        assert ledger.spent("2026-11", audience="telegram-group--100") == pytest.approx(1.0)
        assert ledger.spent("2026-11", audience="owner") == pytest.approx(2.0)
        assert ledger.summary("2026-11")["calls"] == 2
        assert ledger.summary("2026-12", audience="telegram-group--100")["cost"] == 4.0
        assert [r["key"] for r in ledger.top("chat", "2026-11")] == ["telegram-group--100"]
    finally:
        ledger.close()


def _indexes(ledger: UsageLedger) -> set[str]:
    rows = ledger._db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")
    return {name for (name,) in rows if not name.startswith("sqlite_")}


def test_an_owners_call_is_written_to_one_index_and_a_shared_chats_sums_use_their_own(tmp_path):
    """Every index is written at every call: the owner's calls (most of them) go into the one
    index on the day; a shared chat's or a job's also into one of its own, through which their
    caps' sums are read without going through everyone's month."""
    ledger = UsageLedger(tmp_path / "usage.sqlite", BERLIN)
    try:
        assert _indexes(ledger) == {"calls_period", "calls_chat", "calls_job"}
        when = datetime(2026, 11, 23, 12, tzinfo=UTC)
        ledger.record(Call(Charge(Purpose.CHAT, PRIVATE), "m", cost=1.0, id="a"), when)
        ledger.record(Call(Charge(Purpose.CHAT, GROUP), "m", cost=1.0, id="b"), when)
        ledger.record(Call(Charge(Purpose.DIGEST, job_key("j", PRIVATE)), "m", cost=1.0), when)

        def rows(index: str, where: str) -> int:
            sql = f"SELECT count(*) FROM calls INDEXED BY {index} WHERE {where}"
            return int(ledger._db.execute(sql).fetchone()[0])

        assert rows("calls_period", "day > ''") == 3
        assert rows("calls_chat", "audience > '' AND audience != 'owner'") == 1
        assert rows("calls_job", "job > ''") == 1

        ran: list[tuple[str, tuple]] = []  # the statements with their bound values
        db = ledger._db

        class Recording:
            def execute(self, sql: str, args: tuple = ()) -> sqlite3.Cursor:
                ran.append((sql, tuple(args)))
                return db.execute(sql, args)

        ledger._db = Recording()
        try:
            assert ledger.spent("2026-11", audience="telegram-group--100") == 1.0
            assert ledger.spent("2026-11", job="j") == 1.0
        finally:
            ledger._db = db
        plans = [
            " ".join(r[3] for r in db.execute(f"EXPLAIN QUERY PLAN {sql}", args))
            for sql, args in ran
        ]
        assert "INDEX calls_chat" in plans[0] and "INDEX calls_job" in plans[1], plans
    finally:
        ledger.close()


def test_a_ledger_made_with_five_indexes_keeps_its_rows_and_drops_them(tmp_path):
    path = tmp_path / "usage.sqlite"
    ledger = UsageLedger(path, BERLIN)
    when = datetime(2026, 11, 23, 12, tzinfo=UTC)
    ledger.record(Call(Charge(Purpose.CHAT, GROUP), "m", cost=1.5, id="old"), when)
    for name, columns in [
        ("calls_day", "day, purpose, cost"),
        ("calls_month_audience", "month, audience, cost"),
        ("calls_month_job", "month, job, cost"),
        ("calls_day_audience", "day, audience, cost"),
        ("calls_day_job", "day, job, cost"),
    ]:
        ledger._db.execute(f"CREATE INDEX {name} ON calls ({columns})")
    ledger.close()
    reopened = UsageLedger(path, BERLIN)
    try:
        assert _indexes(reopened) == {"calls_period", "calls_chat", "calls_job"}
        assert reopened.spent("2026-11", audience="telegram-group--100") == 1.5
    finally:
        reopened.close()


@pytest.mark.parametrize("zone", ["UTC", "Asia/Kathmandu", "America/St_Johns", "Europe/Berlin"])
def test_the_period_of_a_moment_is_its_local_day_and_month(zone):
    """Kept per minute, the period still changes at the zone's own midnight (a quarter or half
    hour off UTC in some zones) and across a change of summer time."""
    from datetime import timedelta

    from agent.usage.ledger import Period

    tz = ZoneInfo(zone)
    start = datetime(2026, 3, 28, 0, 0, tzinfo=UTC)  # Europe's summer time starts on the 29th
    for seconds in range(0, 4 * 86_400, 599):  # every ten minutes less a second, four days
        when = start + timedelta(seconds=seconds)
        local = when.astimezone(tz)
        assert Period.of(when, tz) == Period(f"{local:%Y-%m-%d}", f"{local:%Y-%m}"), when
    midnight = datetime(2026, 3, 31, 0, 0, tzinfo=tz)
    before, after = midnight - timedelta(seconds=1), midnight
    assert Period.of(before, tz).day == "2026-03-30"
    assert Period.of(after, tz) == Period("2026-03-31", "2026-03")
    assert Period.of(after + timedelta(days=1), tz) == Period("2026-04-01", "2026-04")


# -- each rule of the ledger at its edge (the mutation bench's survivors) ----------------------


def test_a_call_counts_what_it_is_given_and_nothing_it_is_not(tmp_path):
    ledger = UsageLedger(tmp_path / "new" / "deeper" / "usage.sqlite", BERLIN)  # folders made
    when = datetime(2026, 11, 23, 12, tzinfo=UTC)
    empty = ledger.summary("2026-11")
    assert {k: v for k, v in empty.items() if k != "key"} == dict.fromkeys(
        ("calls", "input", "cache_write", "cache_read", "output", "web_searches", "cost"), 0
    )
    ledger.record(Call(Charge(Purpose.EMBEDDING), "e", input=7, cost=0.1), when)
    ledger.record(Call(Charge(Purpose.CHAT, PRIVATE), "m", 1, 2, 3, 4, 5, 0.2), when)
    ledger.record(Call(Charge(Purpose.CHAT, PRIVATE), "m", cost=0.0), when)  # counted, free
    assert ledger.summary("2026-11-23") == {
        "key": "all", "calls": 3, "input": 8, "cache_write": 2, "cache_read": 3, "output": 4,
        "web_searches": 5, "cost": pytest.approx(0.3),
    }  # fmt: skip
    ledger.close()
    with sqlite3.connect(tmp_path / "new" / "deeper" / "usage.sqlite") as db:
        sessions = sorted(db.execute("SELECT purpose, session FROM calls"), key=str)
        # The file says which chat each call was for: the owner can read it with sqlite3.
        assert sessions == [("chat", str(PRIVATE)), ("chat", str(PRIVATE)), ("embedding", None)]
    UsageLedger(tmp_path / "new" / "deeper" / "usage.sqlite", BERLIN).close()  # there already


def test_a_new_ledger_is_stamped_with_its_schema_and_an_old_one_keeps_its_stamp(tmp_path):
    from agent.usage.ledger import SCHEMA_VERSION

    UsageLedger(tmp_path / "usage.sqlite", BERLIN).close()
    with sqlite3.connect(tmp_path / "usage.sqlite") as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        # Written ahead in its log, so a chat never waits for the file (docs: growth).
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        db.execute("PRAGMA user_version = 9")  # another version's: upgrades decide, not it
    UsageLedger(tmp_path / "usage.sqlite", BERLIN).close()
    with sqlite3.connect(tmp_path / "usage.sqlite") as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 9


def test_totals_by_day_run_oldest_first_and_the_rest_dearest_first(tmp_path):
    ledger = UsageLedger(tmp_path / "usage.sqlite", BERLIN)
    for day, chat, cost in ((21, PRIVATE, 1.0), (22, GROUP, 3.0), (23, PRIVATE, 0.5)):
        when = datetime(2026, 11, day, 12, tzinfo=UTC)
        ledger.record(Call(Charge(Purpose.CHAT, chat), "m", cost=cost), when)
    assert [r["key"] for r in ledger.totals("day")] == ["2026-11-21", "2026-11-22", "2026-11-23"]
    assert [r["key"] for r in ledger.totals("chat")] == ["telegram-group--100", "owner"]
    ledger.close()


def test_the_months_top_lists_five_unless_asked_for_more(tmp_path):
    ledger = UsageLedger(tmp_path / "usage.sqlite", BERLIN)
    when = datetime(2026, 11, 23, 12, tzinfo=UTC)
    for n in range(7):
        chat = SessionKey("telegram", "group", f"-{n}")
        ledger.record(Call(Charge(Purpose.CHAT, chat), "m", cost=1.0 + n), when)
    top = ledger.top("chat", "2026-11")
    assert [r["key"] for r in top] == [f"telegram-group--{n}" for n in (6, 5, 4, 3, 2)]
    assert len(ledger.top("chat", "2026-11", limit=7)) == 7
    ledger.close()
