"""The heartbeat: no model call while HEARTBEAT.md is empty; HEARTBEAT_OK never reaches a chat."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from gateway.scheduling.heartbeat import has_real_content, in_active_hours, strip_heartbeat_ok
from tests.conftest import OWNER, calls_by, make_config, running
from tests.fakes.anthropic_api import Reply, tool_results
from tests.fakes.clock import FakeClock

BERLIN = ZoneInfo("Europe/Berlin")


def _config(home, fake_api, fake_telegram):
    return make_config(
        home,
        fake_api.base_url,
        channels={"telegram": fake_telegram.channel_config(allow_from=[str(OWNER)])},
        schedule={"heartbeat": {"enabled": True, "every_minutes": 30,
                                "active_hours": "08:00-22:00",
                                "target": f"telegram:private:{OWNER}"}},
    )  # fmt: skip


def test_what_counts_as_content():
    template = "# Heartbeat\n\n<!-- things to check -->\n\n- [ ]\n* [ ] \n## More\n"
    assert not has_real_content(template)
    assert has_real_content(template + "- [ ] water the plants\n")
    assert strip_heartbeat_ok("HEARTBEAT_OK") == ""
    assert strip_heartbeat_ok("All quiet. HEARTBEAT_OK") == "All quiet"
    for dressed in ("**HEARTBEAT_OK**", "`HEARTBEAT_OK`", "_HEARTBEAT_OK_.", " HEARTBEAT_OK!\n"):
        assert strip_heartbeat_ok(dressed) == ""
    assert strip_heartbeat_ok("Water the plants.\n\n**HEARTBEAT_OK**") == "Water the plants"
    assert strip_heartbeat_ok("Say HEARTBEAT_OK to me") == "Say HEARTBEAT_OK to me"
    assert in_active_hours("08:00-22:00", datetime(2026, 1, 1, 8, 0, tzinfo=BERLIN))
    assert not in_active_hours("08:00-22:00", datetime(2026, 1, 1, 22, 0, tzinfo=BERLIN))
    assert in_active_hours("22:00-06:00", datetime(2026, 1, 1, 23, 0, tzinfo=BERLIN))
    for hour in (0, 7, 23):  # the same start and end: all day
        assert in_active_hours("00:00-00:00", datetime(2026, 1, 1, hour, 59, tzinfo=BERLIN))


async def test_an_empty_heartbeat_makes_no_model_call_all_day(home, fake_api, fake_telegram):
    start = datetime(2026, 11, 21, 0, 0, tzinfo=BERLIN)
    clock = FakeClock(start)
    config = _config(home, fake_api, fake_telegram)
    async with running(config, clock) as gateway:
        beats = 0
        while await clock.next_wake() <= start + timedelta(days=1):
            await clock.advance()
            beats += 1
        history = gateway.scheduler.ledger.history("heartbeat", limit=100)
    assert beats >= 47
    assert fake_api.message_requests == []
    assert fake_telegram.sent == []
    assert {row["status"] for row in history} == {"skipped"}


async def test_a_checklist_runs_and_heartbeat_ok_is_dropped(home, fake_api, fake_telegram):
    (home / "workspace" / "HEARTBEAT.md").write_text("# Checks\n\n- [ ] water the plants\n")
    start = datetime(2026, 11, 21, 9, 50, tzinfo=BERLIN)
    clock = FakeClock(start)
    config = _config(home, fake_api, fake_telegram)
    fake_api.enqueue(Reply("HEARTBEAT_OK"), Reply("NO_REPLY."), Reply("Time to water the plants."))
    async with running(config, clock):
        # The beats of 09:50 and 10:20 have nothing to say; the next one (10:50) has.
        assert await clock.advance() == start + timedelta(minutes=30)
        assert await clock.advance() == start + timedelta(minutes=60)
        sent = await fake_telegram.wait_sent(1)
    assert [s["shown"] for s in sent] == ["Time to water the plants."]
    assert len(fake_api.message_requests) == 3
    # Each beat paid for as the heartbeat, under its job.
    assert calls_by(home, "purpose") == {"heartbeat": 3}
    assert calls_by(home, "job") == {"heartbeat": 3}


async def test_the_heartbeat_may_look_things_up_and_note_them_but_not_reach_out(
    home, fake_api, fake_telegram
):
    """Nobody watches it: it is shown only the memory and reading tools, and a call to any
    other (the web, files, schedules) is refused in code."""
    (home / "workspace" / "HEARTBEAT.md").write_text("# Checks\n\n- [ ] water the plants\n")
    start = datetime(2026, 11, 21, 9, 50, tzinfo=BERLIN)
    clock = FakeClock(start)
    config = _config(home, fake_api, fake_telegram)
    fake_api.enqueue(
        Reply(tool_calls=[("web_fetch", {"url": "https://example.org/"}),
                          ("write_file", {"path": "AGENTS.md", "content": "x"}),
                          ("memory_append", {"text": "reminded about the plants"})]),
        Reply("Time to water the plants."),
    )  # fmt: skip
    async with running(config, clock):
        await fake_telegram.wait_sent(1)
    first, second = (r.body for r in fake_api.message_requests)
    assert sorted(t["name"] for t in first["tools"]) == [
        "list_files", "memory_append", "memory_get", "memory_search", "read_file",
    ]  # fmt: skip
    assert [(r["content"], r.get("is_error")) for r in tool_results(second)] == [
        ("web_fetch cannot be used in the heartbeat.", True),
        ("write_file cannot be used in the heartbeat.", True),
        ("Appended to memory/2026-11-21.md.", None),
    ]


async def test_the_beats_keep_to_their_half_hours_across_a_restart(home, fake_api, fake_telegram):
    """Planned anew at every start, the heartbeat still beats on the times it began on: up at
    09:50 after a stop at 09:40, the next beat is at 10:00, not at once."""
    start = datetime(2026, 11, 21, 9, 0, tzinfo=BERLIN)
    config = _config(home, fake_api, fake_telegram)
    clock = FakeClock(start)
    async with running(config, clock):
        await clock.idle_until(start + timedelta(minutes=30))  # beat at 09:00, next 09:30
    clock = FakeClock(start + timedelta(minutes=50))
    async with running(config, clock) as gateway:
        await clock.idle_until(start + timedelta(minutes=60))
        history = gateway.scheduler.ledger.history("heartbeat", limit=10)
    assert [(row["slot"], row["status"]) for row in history] == [
        ("2026-11-21T09:30", "missed"),
        ("2026-11-21T09:00", "skipped"),
    ]
