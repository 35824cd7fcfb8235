"""Open loops end to end: the real python-telegram-bot against the fake Bot API, the scripted
model behind the fake Messages API, the fake clock. A loop made in chat lands in the file and
in the next daily summary while open, is nudged once when due (also across a restart), and is
closed from the nudge's button and from /done; a group's loop stays the group's."""

from __future__ import annotations

import asyncio
import json
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from tests.conftest import OWNER, TG_GROUP, make_config, running
from tests.fakes.anthropic_api import Reply, last_user_text, tool_results
from tests.fakes.clock import FakeClock
from tests.fakes.telegram_api import BOT_USERNAME

BERLIN = ZoneInfo("Europe/Berlin")
TODAY = date(2026, 3, 12)
OWNERS = "memory/LOOPS.md"
GROUPS = f"memory/chats/telegram-group-{TG_GROUP}/LOOPS.md"


def _at(hour: int, days: int = 0, minute: int = 0) -> datetime:
    day = TODAY + timedelta(days=days)
    return datetime(day.year, day.month, day.day, hour, minute, tzinfo=BERLIN)


def _config(home, fake_api, fake_telegram, **schedule):
    tg = fake_telegram.channel_config(allow_from=[str(OWNER)], groups=[str(TG_GROUP)])
    return make_config(
        home,
        fake_api.base_url,
        channels={"telegram": tg},
        schedule={"daily_summary": {"enabled": True, "time": "21:00",
                                    "target": f"telegram:private:{OWNER}"}, **schedule},
    )  # fmt: skip


def _shown(fake_telegram, chat: int) -> list[str]:
    return [m["shown"] for m in fake_telegram.sent if m["chat_id"] == str(chat)]


async def _open_loop(fake_api, fake_telegram, due: str = "", what="Send Anna the report") -> None:
    args = {"what": what, "who": "owner", "said": "I'll send Anna the report"}
    if due:
        args["due"] = due
    fake_api.enqueue(Reply(tool_calls=[("loop_open", args)]), Reply("Noted."))
    n = len(fake_telegram.sent)
    fake_telegram.text("I'll send Anna the report by tomorrow 10:00")
    await fake_telegram.wait_sent(n + 1)


async def test_a_loop_made_in_chat_is_in_the_file_and_the_evening_summary(
    home, fake_api, fake_telegram
):
    clock = FakeClock(_at(18))
    async with running(_config(home, fake_api, fake_telegram), clock):
        await _open_loop(fake_api, fake_telegram, due=f"{_at(10, days=1):%Y-%m-%d %H:%M}")
        result = tool_results(fake_api.message_requests[1].body)[0]["content"]
        assert "Opened loop #1 in memory/LOOPS.md" in result
        assert "A nudge will be sent here at Fri 2026-03-13 10:00" in result
        text = (home / "workspace" / OWNERS).read_text()
        line = next(ln for ln in text.splitlines() if "Send Anna the report" in ln)
        assert line.startswith("- [ ] #1 Send Anna the report · who: owner")
        assert "due: 2026-03-13 10:00" in line and f"from: telegram:private:{OWNER}" in line
        # It points at the line of today's log that says where it came from.
        log = (home / "workspace" / "memory" / "2026-03-12.md").read_text().splitlines()
        number = int(line.split("line: memory/2026-03-12.md:")[1].split(" ")[0])
        assert log[number - 1].startswith("Open loop #1: Send Anna the report")
        fake_api.enqueue(Reply("Open: send Anna the report (#1), due tomorrow 10:00."))
        await clock.set(_at(21))
        await fake_telegram.wait_sent(2)
        digest = last_user_text(fake_api.message_requests[-1].body)
    assert "## Loops" in digest and "### New today" in digest and "### Due tomorrow" in digest
    assert "#1 Send Anna the report · due 2026-03-13 10:00" in digest


async def test_a_due_loop_is_nudged_once_and_closed_by_its_button(home, fake_api, fake_telegram):
    clock = FakeClock(_at(18))
    async with running(_config(home, fake_api, fake_telegram), clock) as app:
        await _open_loop(fake_api, fake_telegram, due=f"{_at(10, days=1):%Y-%m-%d %H:%M}")
        fake_api.enqueue(Reply("Nothing much today."))  # the daily summary
        await clock.set(_at(10, days=1))
        await fake_telegram.wait_for(
            lambda: any(s.startswith("Due now") for s in _shown(fake_telegram, OWNER))
        )
        [nudge] = [m for m in fake_telegram.sent if m["shown"].startswith("Due now")]
        assert nudge["shown"] == "Due now: Send Anna the report (loop #1, opened 2026-03-12)."
        calls = len(fake_api.message_requests)
        fake_telegram.press(nudge, "Done")
        await fake_telegram.wait_for(
            lambda: any(
                "Done: #1 Send Anna the report." in str(c.params.get("text"))
                for c in fake_telegram.calls_to("editMessageText")
            )
        )
        await app.idle()
        assert len(fake_api.message_requests) == calls  # no model call for a nudge or /done
    text = (home / "workspace" / OWNERS).read_text()
    done = text.split("## Done")[1]
    assert "- [x] #1 Send Anna the report" in done and "by: the owner (/done)" in done
    assert "closed: 2026-03-13" in done


async def test_a_nudge_due_while_down_is_sent_once_after_restart(home, fake_api, fake_telegram):
    config = _config(home, fake_api, fake_telegram, daily_summary={"enabled": False})
    clock = FakeClock(_at(18))
    async with running(config, clock):
        await _open_loop(fake_api, fake_telegram, due=f"{_at(10, days=1):%Y-%m-%d %H:%M}")
    # Down from 18:00 until 10:20 the next day: the nudge is still owed, once.
    for minutes in (20, 25):
        clock = FakeClock(_at(10, days=1, minute=minutes))
        async with running(config, clock) as app:
            async with asyncio.timeout(10):
                await app.scheduler.join("loop-owner-1")
            await app.idle()
    nudges = [s for s in _shown(fake_telegram, OWNER) if s.startswith("Due now")]
    assert nudges == ["Due now: Send Anna the report (loop #1, opened 2026-03-12)."]
    jobs = json.loads((home / "state" / "jobs.json").read_text())
    assert jobs["jobs"] == [] and jobs["finished"][0]["id"] == "loop-owner-1"


async def test_done_closes_a_loop_and_its_nudge_is_never_sent(home, fake_api, fake_telegram):
    config = _config(home, fake_api, fake_telegram, daily_summary={"enabled": False})
    clock = FakeClock(_at(18))
    async with running(config, clock) as app:
        await _open_loop(fake_api, fake_telegram, due=f"{_at(10, days=1):%Y-%m-%d %H:%M}")
        fake_telegram.text("/done")
        await fake_telegram.wait_sent(2)
        listing = fake_telegram.sent[-1]
        assert "#1 Send Anna the report · due 2026-03-13 10:00" in listing["shown"]
        assert "Done #1" in listing["reply_markup"]
        fake_telegram.text("/done 1")
        await fake_telegram.wait_sent(3)
        assert fake_telegram.sent[-1]["shown"] == "Done: #1 Send Anna the report."
        assert json.loads((home / "state" / "jobs.json").read_text())["jobs"] == []
        assert [j.id for j in app.scheduler.jobs() if j.id.startswith("loop-")] == []
        await clock.set(_at(10, days=1))
        await app.idle()
        fake_telegram.text("/done 1")
        await fake_telegram.wait_sent(4)
    assert fake_telegram.sent[-1]["shown"] == "Loop #1 (Send Anna the report) is done already."
    assert not [s for s in _shown(fake_telegram, OWNER) if s.startswith("Due now")]


async def test_a_groups_loop_is_the_groups_and_never_in_the_owners_summary(
    home, fake_api, fake_telegram
):
    clock = FakeClock(_at(18))
    async with running(_config(home, fake_api, fake_telegram), clock) as app:
        fake_api.enqueue(
            Reply(tool_calls=[("loop_open", {"what": "Bring the cake GROUP-LOOP-7f3",
                                             "who": "Bob"})]),
            Reply("Noted for the group."),
        )  # fmt: skip
        fake_telegram.text(
            f"@{BOT_USERNAME} Bob brings the cake", chat=TG_GROUP, chat_type="supergroup"
        )
        await fake_telegram.wait_sent(1)
        await _open_loop(fake_api, fake_telegram, what="Call the landlord")
        assert "GROUP-LOOP-7f3" in (home / "workspace" / GROUPS).read_text()
        assert "GROUP-LOOP-7f3" not in (home / "workspace" / OWNERS).read_text()
        assert "Call the landlord" not in (home / "workspace" / GROUPS).read_text()
        # The group's /done lists the group's loops only; the owner's lists the owner's.
        fake_telegram.text("/done", chat=TG_GROUP, chat_type="supergroup")
        await fake_telegram.wait_for(lambda: len(_shown(fake_telegram, TG_GROUP)) >= 2)
        group_list = _shown(fake_telegram, TG_GROUP)[-1]
        assert "GROUP-LOOP-7f3" in group_list and "landlord" not in group_list
        fake_api.enqueue(Reply("A quiet day."))
        await clock.set(_at(21))
        await fake_telegram.wait_for(lambda: "A quiet day." in _shown(fake_telegram, OWNER))
        await app.idle()
    digest = last_user_text(fake_api.message_requests[-1].body)
    loops = digest.split("## Loops")[1]
    assert "Call the landlord" in loops and "GROUP-LOOP-7f3" not in loops


async def _group_loop(fake_api, fake_telegram, due: datetime) -> str:
    args = {"what": "Bring the cake", "who": "Bob", "due": f"{due:%Y-%m-%d %H:%M}"}
    fake_api.enqueue(Reply(tool_calls=[("loop_open", args)]), Reply("Noted."))
    n = len(fake_telegram.sent)
    fake_telegram.text(
        f"@{BOT_USERNAME} Bob brings the cake", chat=TG_GROUP, chat_type="supergroup"
    )
    await fake_telegram.wait_sent(n + 1)
    return tool_results(fake_api.message_requests[-1].body)[0]["content"]


async def test_a_group_gets_no_nudge_unless_shared_chats_may_schedule(
    home, fake_api, fake_telegram
):
    config = _config(home, fake_api, fake_telegram, daily_summary={"enabled": False})
    clock = FakeClock(_at(18))
    async with running(config, clock):
        result = await _group_loop(fake_api, fake_telegram, _at(10, days=1))
    assert result.startswith("Opened loop #1 in " + GROUPS)
    assert "No nudge will be sent: Only the owner schedules" in result
    assert not (home / "state" / "jobs.json").exists()


async def test_a_groups_nudge_goes_to_the_group_without_buttons(home, fake_api, fake_telegram):
    config = _config(
        home, fake_api, fake_telegram, daily_summary={"enabled": False}, allow_shared=True
    )
    clock = FakeClock(_at(18))
    async with running(config, clock) as app:
        result = await _group_loop(fake_api, fake_telegram, _at(10, days=1))
        assert "A nudge will be sent here at Fri 2026-03-13 10:00" in result
        await clock.set(_at(10, days=1))
        async with asyncio.timeout(10):
            await app.scheduler.join(f"loop-telegram-group-{TG_GROUP}-1")
        await app.idle()
    [nudge] = [m for m in fake_telegram.sent if m["shown"].startswith("Due now")]
    assert nudge["chat_id"] == str(TG_GROUP) and not nudge.get("reply_markup")
    assert nudge["shown"].endswith("When it is done: /done 1")
    assert not [m for m in fake_telegram.sent if m["chat_id"] == str(OWNER)]


async def test_a_loop_closed_by_hand_in_the_file_is_not_nudged(home, fake_api, fake_telegram):
    config = _config(home, fake_api, fake_telegram, daily_summary={"enabled": False})
    clock = FakeClock(_at(18))
    async with running(config, clock) as app:
        await _open_loop(fake_api, fake_telegram, due=f"{_at(10, days=1):%Y-%m-%d %H:%M}")
        path = home / "workspace" / OWNERS
        path.write_text(path.read_text().replace("- [ ] #1", "- [x] #1"))
        await clock.set(_at(10, days=1))
        async with asyncio.timeout(10):
            await app.scheduler.join("loop-owner-1")
        status = app.scheduler.ledger.history("loop-owner-1")[0]
    assert status["status"] == "skipped" and "closed or gone" in status["error"]
    assert not [s for s in _shown(fake_telegram, OWNER) if s.startswith("Due now")]


async def test_the_summaries_list_a_loop_while_open_and_once_as_closed(
    home, fake_api, fake_telegram
):
    fake_api.brain = lambda body: Reply("Summary.")
    clock = FakeClock(_at(18))
    digests: list[str] = []
    async with running(_config(home, fake_api, fake_telegram), clock) as app:
        fake_api.brain = None
        await _open_loop(fake_api, fake_telegram, due=f"{_at(0, days=1):%Y-%m-%d}")
        fake_api.brain = lambda body: Reply("Summary.")
        for day in (0, 1):
            await clock.set(_at(21, days=day))
            await fake_telegram.wait_for(
                lambda d=day: _shown(fake_telegram, OWNER).count("Summary.") == d + 1
            )
            digests.append(last_user_text(fake_api.message_requests[-1].body))
        await clock.set(_at(8, days=2))
        fake_telegram.text("/done 1")
        await fake_telegram.wait_for(
            lambda: "Done: #1 Send Anna the report." in _shown(fake_telegram, OWNER)
        )
        await clock.set(_at(21, days=2))
        await fake_telegram.wait_for(lambda: _shown(fake_telegram, OWNER).count("Summary.") == 3)
        digests.append(last_user_text(fake_api.message_requests[-1].body))
        await app.idle()
    first, second, third = (d.split("## Loops")[1] for d in digests)
    assert "### New today" in first and "### Due tomorrow" in first
    assert "### Due or overdue\n\n- #1 Send Anna the report · due 2026-03-13 (today)" in second
    assert "New today" not in second
    assert (
        "### Closed today\n\n- #1 Send Anna the report · due 2026-03-13 · who: owner · done"
        in third
    )
    assert "Due or overdue" not in third


async def test_a_due_time_set_by_hand_is_nudged_after_the_next_start(home, fake_api, fake_telegram):
    config = _config(home, fake_api, fake_telegram, daily_summary={"enabled": False})
    clock = FakeClock(_at(18))
    async with running(config, clock):
        await _open_loop(fake_api, fake_telegram, due=f"{_at(10, days=1):%Y-%m-%d %H:%M}")
    path = home / "workspace" / OWNERS
    text = path.read_text().replace("due: 2026-03-13 10:00", "due: 2026-03-13 11:30")
    plants = f"- [ ] Water the plants · due: 2026-03-13 09:00 · from: telegram:private:{OWNER}"
    text = text.replace("## Done", f"{plants}\n\n## Done")
    path.write_text(text)
    clock = FakeClock(_at(19))
    async with running(config, clock) as app:
        planned = {j.id: j.spec for j in app.scheduler.jobs() if j.id.startswith("loop-")}
        assert planned == {
            "loop-owner-1": "2026-03-13T11:30:00+01:00",
            "loop-owner-2": "2026-03-13T09:00:00+01:00",
        }
        for hour, minute, job in ((9, 0, "loop-owner-2"), (11, 30, "loop-owner-1")):
            await clock.set(_at(hour, days=1, minute=minute))
            async with asyncio.timeout(10):
                await app.scheduler.join(job)
        await app.idle()
    nudges = [s for s in _shown(fake_telegram, OWNER) if s.startswith("Due now")]
    assert nudges == [
        "Due now: Water the plants (loop #2).",
        "Due now: Send Anna the report (loop #1, opened 2026-03-12).",
    ]


async def test_a_later_message_closes_the_loop_and_its_nudge_is_dropped(
    home, fake_api, fake_telegram
):
    config = _config(home, fake_api, fake_telegram, daily_summary={"enabled": False})
    clock = FakeClock(_at(18))
    async with running(config, clock) as app:
        await _open_loop(fake_api, fake_telegram, due=f"{_at(10, days=1):%Y-%m-%d %H:%M}")
        close = {"id": 1, "said": "Sent Anna the report just now"}
        fake_api.enqueue(Reply(tool_calls=[("loop_close", close)]), Reply("Great, closed it."))
        fake_telegram.text("Sent Anna the report just now")
        await fake_telegram.wait_sent(2)
        result = tool_results(fake_api.message_requests[-1].body)[0]["content"]
        assert result == "Closed loop #1 (done): Send Anna the report."
        assert [j.id for j in app.scheduler.jobs() if j.id.startswith("loop-")] == []
    text = (home / "workspace" / OWNERS).read_text()
    done = text.split("## Done")[1]
    assert "- [x] #1 Send Anna the report" in done
    line = int(done.split("by: the assistant, from memory/2026-03-12.md:")[1].split("\n")[0])
    log = (home / "workspace" / "memory" / "2026-03-12.md").read_text().splitlines()
    assert log[line - 1] == 'Loop #1 done: Send Anna the report — "Sent Anna the report just now"'


async def test_nothing_of_the_owners_loops_reaches_a_group(home, fake_api, fake_telegram):
    canary = "CANARY-loop-91a"
    config = _config(home, fake_api, fake_telegram, daily_summary={"enabled": False})
    clock = FakeClock(_at(18))
    async with running(config, clock) as app:
        await _open_loop(fake_api, fake_telegram, what=f"Call the landlord {canary}")
        before = len(fake_api.message_requests)
        fake_api.enqueue(
            Reply(tool_calls=[("loop_list", {"closed": True}),
                              ("memory_search", {"query": "landlord"}),
                              ("memory_get", {"path": "memory/LOOPS.md"})]),
            Reply("Nothing open here."),
        )  # fmt: skip
        fake_telegram.text(
            f"@{BOT_USERNAME} what is open? landlord?", chat=TG_GROUP, chat_type="supergroup"
        )
        await fake_telegram.wait_for(lambda: len(_shown(fake_telegram, TG_GROUP)) >= 1)
        await app.idle()
    group_requests = fake_api.message_requests[before:]
    assert len(group_requests) == 2
    assert all(canary not in r.raw for r in group_requests)
    results = [r["content"] for r in tool_results(group_requests[1].body)]
    assert results[0] == f"No loops in {GROUPS}."
    assert "only available in private chats" in str(results[2])
