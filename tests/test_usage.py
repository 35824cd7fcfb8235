"""The usage ledger end to end, through the real anthropic client and the fake API: what the
ledger keeps equals what the fake billed, per purpose and per audience, and silent work runs on
the background model."""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from typing import Any

from agent.usage.ledger import UsageLedger
from tests.conftest import GROUP, PRIVATE
from tests.fakes.anthropic_api import FakeAnthropic, Reply, request_kind, tool_results

SMALL_WINDOW: dict[str, Any] = {
    "llm": {
        "context_window": 9000,
        "models": {"chat": "claude-sonnet-5-5", "background": "claude-haiku-5-5"},
    },
    "compaction": {
        "reserve_tokens": 2000,
        "soft_threshold_tokens": 1500,
        "keep_recent_tokens": 1200,
    },
}
TOKENS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
COLUMNS = ("input", "cache_write", "cache_read", "output")


def brain(body: dict[str, Any]) -> Reply:
    kind = request_kind(body)
    if kind == "summary":
        return Reply("SUMMARY: long messages about sailing.")
    if kind == "flush":
        if tool_results(body):
            return Reply("NO_REPLY")
        return Reply(tool_calls=[("memory_append", {"text": "FACT: loves sailing"})])
    return Reply("ack")


def billed(api: FakeAnthropic) -> tuple[dict[tuple[str, str], Counter[str]], Counter[str]]:
    """What the fake billed, by (kind, audience), and the models it was asked for by kind."""
    sums: dict[tuple[str, str], Counter[str]] = {}
    models: Counter[str] = Counter()
    for s in api.served:
        kind = request_kind(s.body)
        audience = "group" if "GROUPTAG" in str(s.body["messages"]) else "owner"
        counter = sums.setdefault((kind, audience), Counter())
        for name, column in zip(TOKENS, COLUMNS, strict=True):
            counter[column] += s.usage[name]
        counter["calls"] += 1
        models[f"{kind} {s.model}"] += 1
    return sums, models


def kept(home: Any) -> dict[tuple[str, str], Counter[str]]:
    """The ledger's sums by (the fake's kind of request, audience)."""
    kinds = {"compaction": "summary", "new_summary": "summary"}
    ledger = UsageLedger(home / "state" / "usage.sqlite", __import__("zoneinfo").ZoneInfo("UTC"))
    try:
        rows = ledger._db.execute(
            "SELECT purpose, audience, count(*), sum(input), sum(cache_write), sum(cache_read), "
            "sum(output) FROM calls GROUP BY purpose, audience"
        ).fetchall()
    finally:
        ledger.close()
    sums: dict[tuple[str, str], Counter[str]] = {}
    for purpose, audience, calls, *tokens in rows:
        who = "owner" if audience == "owner" else "group"
        counter = sums.setdefault((kinds.get(purpose, purpose), who), Counter())
        counter["calls"] += calls
        for column, value in zip(COLUMNS, tokens, strict=True):
            counter[column] += value
    return sums


GROUP_AUDIENCE = "test-group-100"


def purposes(home: Any) -> set[tuple[str, str]]:
    """The (purpose, audience) pairs the ledger holds calls of."""
    ledger = UsageLedger(home / "state" / "usage.sqlite", __import__("zoneinfo").ZoneInfo("UTC"))
    try:
        return {
            (str(r["key"]), audience)
            for audience in ("owner", GROUP_AUDIENCE)
            for r in ledger.totals("purpose", audience=audience)
        }
    finally:
        ledger.close()


async def test_the_ledger_sums_equal_the_bill_per_purpose_and_audience(
    start_gateway, fake_api, home
):
    fake_api.brain = brain
    fake_api.keep_served = True
    _gateway, chan = await start_gateway(**SMALL_WINDOW)
    for i in range(6):
        await asyncio.wait_for(chan.push(f"message {i}: " + "sailing " * 500), 10)
    await asyncio.wait_for(chan.push("GROUPTAG hello", key=GROUP), 10)
    await asyncio.wait_for(chan.push("GROUPTAG more", key=GROUP), 10)
    await asyncio.wait_for(chan.push("/new", key=GROUP), 10)

    bill, models = billed(fake_api)
    assert {k for k, _ in bill} == {"chat", "flush", "summary"}
    assert ("summary", "group") in bill  # the group's /new summary
    assert kept(home) == bill
    # The fake tells summaries apart by neither: the owner's were compactions, the group's
    # the summary of the session /new ended.
    assert purposes(home) == {
        ("chat", "owner"),
        ("chat", GROUP_AUDIENCE),
        ("flush", "owner"),
        ("compaction", "owner"),
        ("new_summary", GROUP_AUDIENCE),
    }
    # Silent work on the background model, chat turns on the chat model.
    assert set(models) == {
        "chat claude-sonnet-5-5",
        "flush claude-haiku-5-5",
        "summary claude-haiku-5-5",
    }
    for key in (PRIVATE, GROUP):
        assert chan.texts(key)


async def test_the_ledger_matches_the_bill_across_a_sigkill(tmp_path):
    from tests.fakes.process import FIRST_CALL, corvid_process
    from tests.fakes.telegram_api import BOT_USERNAME, FakeTelegram

    api, tg = FakeAnthropic(), FakeTelegram()
    api.keep_served = True
    await api.start()
    await tg.start()
    home = tmp_path / "home"
    tg.write_corvid_config(home, api.base_url, groups=["-100500"])
    held = asyncio.Event()
    release = asyncio.Event()

    async def gated(body: dict[str, Any]) -> Reply:
        if "HOLD" in str(body["messages"][-1]):
            held.set()
            await release.wait()  # the process is killed meanwhile: never answered
        return Reply("ack")

    api.brain = gated
    env = {"TELEGRAM_BOT_TOKEN": tg.token}
    try:
        async with corvid_process(home, env, watch=True) as proc:
            await proc.wait_line("is polling")
            tg.text("one")
            await tg.wait_for(lambda: len(tg.sent) == 1, timeout=FIRST_CALL)
            tg.text(f"@{BOT_USERNAME} GROUPTAG hello", chat=-100500, chat_type="supergroup")
            await tg.wait_for(lambda: len(tg.sent) == 2, timeout=30)
            tg.text("HOLD two")
            await asyncio.wait_for(held.wait(), 30)
            await proc.kill()
        release.set()
        async with corvid_process(home, env, watch=True) as proc:
            await proc.wait_line("is polling")
            # The held one, answered: the new process's first model call.
            await tg.wait_for(lambda: len(tg.sent) == 3, timeout=FIRST_CALL)
            tg.text(f"@{BOT_USERNAME} GROUPTAG again", chat=-100500, chat_type="supergroup")
            await tg.wait_for(lambda: len(tg.sent) == 4, timeout=30)
            await proc.stop()
    finally:
        await tg.close()
        await api.close()
    bill, _ = billed(api)
    assert bill[("chat", "owner")]["calls"] == 2
    assert bill[("chat", "group")]["calls"] == 2
    assert kept(home) == bill


async def test_usage_in_chat_the_cli_and_status_show_the_ledger(
    start_gateway, fake_api, home, capsys
):
    import json

    from gateway.ops.cli import main

    fake_api.brain = brain
    _gateway, chan = await start_gateway(llm={"models": {"chat": "claude-sonnet-5-5"}})
    await asyncio.wait_for(chan.push("hello"), 10)
    await asyncio.wait_for(chan.push("GROUPTAG hi", key=GROUP), 10)
    await asyncio.wait_for(chan.push("/usage"), 10)
    await asyncio.wait_for(chan.push("/usage", key=GROUP), 10)
    owner_view, group_view = chan.texts(PRIVATE)[-1], chan.texts(GROUP)[-1]
    assert "today: $0.0" in owner_view and "in 2 call(s)" in owner_view  # in dollars
    assert "top shared chats this month:\n  Test group:" in owner_view  # by name
    assert group_view.startswith("Usage of this chat:") and "in 1 call(s)" in group_view
    assert "top" not in group_view  # a shared chat sees its own figures alone

    capsys.readouterr()
    assert main(["usage", "--by", "chat", "--json", "--home", str(home)], environ={}) == 0
    rows = {r["key"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert set(rows) == {"owner", "test-group-100"}
    assert rows["owner"]["calls"] == 1 and rows["owner"]["cost"] > 0
    assert main(["usage", "--by", "model", "--home", str(home)], environ={}) == 0
    shown = capsys.readouterr().out
    assert "claude-sonnet-5-5" in shown and "total " in shown
    header = r"^ +calls +input +cache write +cache read +output +searches +cost$"
    assert re.search(header, shown, re.M)
    # It asks the running gateway over its socket, from a process (a thread here) of its own.
    assert await asyncio.to_thread(main, ["status", "--home", str(home)], {}) == 0
    assert "\n\nUsage: today " in capsys.readouterr().out  # a section of its own


async def test_status_and_the_ledger_name_the_fallback_that_answered(start_gateway, fake_api, home):
    from tests.fakes.anthropic_api import Fault

    fake_api.enqueue(Fault(529, "overloaded_error"))
    _gateway, chan = await start_gateway(
        llm={"retries": 0, "fallbacks": [{"model": "claude-opus-5-5"}]}
    )
    await asyncio.wait_for(chan.push("hello"), 10)
    await asyncio.wait_for(chan.push("/status"), 10)
    assert chan.texts()[0].startswith("echo: ")
    assert chan.texts()[1].startswith("Answering on the fallback claude-opus-5-5 (")
    ledger = UsageLedger(home / "state" / "usage.sqlite", __import__("zoneinfo").ZoneInfo("UTC"))
    try:
        assert [r["key"] for r in ledger.totals("model")] == ["claude-opus-5-5"]
    finally:
        ledger.close()


async def test_a_cap_raised_in_config_yaml_holds_at_once_on_reload(start_gateway, fake_api, home):
    from gateway.config.loader import parse_config
    from gateway.services.reload import live

    app, chan = await start_gateway(budget={"daily": 0.000001})
    await asyncio.wait_for(chan.push("hello"), 10)  # passes the tiny cap by this one call
    await asyncio.wait_for(chan.push("again"), 10)
    assert "/budget daily" in chan.texts()[-1] and len(fake_api.message_requests) == 1
    assert live("budget.daily")
    raised = parse_config(
        {"llm": {"api_key": "k"}, "budget": {"daily": 100}}, home=home, environ={}
    )
    app.appliers()["budget"](raised)
    await asyncio.wait_for(chan.push("and now?"), 10)
    assert chan.texts()[-1].startswith("echo: ") and len(fake_api.message_requests) == 2


async def test_budget_shows_a_cap_raised_with_its_button_as_in_force(start_gateway):
    _app, chan = await start_gateway(budget={"daily": 0.000001, "monthly": 50})
    await asyncio.wait_for(chan.push("hello"), 10)  # passes the tiny cap by this one call
    await asyncio.wait_for(chan.push("again"), 10)
    # What the notice's "Raise to 2e-06" button sends.
    await asyncio.wait_for(chan.push("/budget daily 0.000002"), 10)
    await asyncio.wait_for(chan.push("/budget"), 10)
    shown = chan.texts()[-1].splitlines()
    assert "daily: $2e-06, raised from $1e-06 until this day ends" in shown, shown
    assert "monthly: $50" in shown
