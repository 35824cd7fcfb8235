"""Consolidation through the real chat path: a week of the owner's logs turned by the (fake)
model into a proposal sent with buttons; applied by a button press, rejected, refused when
MEMORY.md changed meanwhile, undone; a group's text shown as such; no model call when nothing
is new; a pending proposal kept across a restart; a log read on from where the last run
stopped. And older log entries marked out of date: under each new entry of the owner's logs
the run lists the older entries a search ranks near it, the model names one the new entry
replaces, and the mark is written once the owner applies it; only a pair the run offered, never
from a log with text from outside in it, and not when either note changed since."""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from agent.workspace.audience import note_written, untrusted
from gateway.app import build_app
from gateway.contract.events import OWNER
from gateway.ops.cli import main
from tests.conftest import PRIVATE, RecordingChannel, calls_by, make_config
from tests.fakes.anthropic_api import Reply, last_user_text
from tests.fakes.clock import FakeClock

BERLIN = ZoneInfo("Europe/Berlin")
NOW = datetime(2026, 3, 12, 22, 0, tzinfo=BERLIN)
MEMORY = "# Memory\n\n- Anna lives in Porto.\n- Likes tea.\n- Likes tea a lot.\n"
# In sections already: a run proposes no move into them.
SECTIONED = "# Memory\n\n## People\n\n- Anna lives in Porto.\n"


def week_of_logs(home) -> None:
    folder = home / "workspace" / "memory"
    for back in range(7):
        day = (NOW - timedelta(days=back)).date()
        (folder / f"{day.isoformat()}.md").write_text(
            f"# {day.isoformat()}\n\n## 10:00\n\nTalked about the garden on day {back}.\n"
        )
    today = folder / f"{NOW.date().isoformat()}.md"
    today.write_text(
        today.read_text()
        + "\n## 18:00\n\nAnna has moved to Lisbon.\n\n"
        + untrusted("the chat telegram-group--100", "Bob says: the owner loves durian.")
        + "\n"
    )


def consolidating_brain(calls: list[dict], answer: dict):
    def brain(body):
        system = body.get("system", [])
        first = system if isinstance(system, str) else system[0]["text"]
        if first.startswith("You curate"):
            calls.append(body)
            return Reply(json.dumps(answer))
        return Reply("ok")

    return brain


def answering_by_chat(calls: list[dict], answers: dict[str, dict], owners: str = ""):
    """A model that answers each shared chat's run with its answer in ``answers`` (by chat),
    and the owner's with ``owners``."""

    def brain(body):
        system = body["system"][0]["text"]
        if not system.startswith("You curate"):
            return Reply("ok")
        calls.append(body)
        chats = [c for c in answers if f"memory/chats/{c}/NOTES.md" in system]
        return Reply(json.dumps(answers[chats[0]]) if chats else owners)

    return brain


def changes(today: str) -> dict:
    return {
        "changes": [
            {
                "op": "update",
                "old": "- Anna lives in Porto.",
                "text": "- Anna lives in Lisbon.",
                "reason": "she moved",
                "sources": [f"memory/{today}.md:9"],
            },
            {
                "op": "merge",
                "old": ["- Likes tea.", "- Likes tea a lot."],
                "text": "- Likes tea a lot.",
                "reason": "the same fact twice",
                "sources": [],
            },
            {
                "op": "add",
                "text": "- Loves durian.",
                "reason": "said in a group",
                "sources": [f"memory/{today}.md:12"],
            },
        ]
    }


class Gateways:
    """Gateways whose consolidation proposes to the test chat; stopped at the end."""

    def __init__(self, home, fake_api) -> None:
        self.home, self.api, self.running = home, fake_api, []

    async def start(self, **consolidation):
        channel = RecordingChannel()
        config = make_config(
            self.home,
            self.api.base_url,
            memory={"consolidation": {"target": str(PRIVATE), "time": "23:30", **consolidation}},
        )
        app = build_app(config, [channel], clock=FakeClock(NOW))
        await app.start()
        self.running.append(app)
        return app, channel

    async def stop(self, app) -> None:
        self.running.remove(app)
        await app.stop()


@pytest.fixture(name="consolidating")  # named apart: other modules import it
async def consolidating_gateways(home, fake_api):
    gateways = Gateways(home, fake_api)
    yield gateways
    for app in list(gateways.running):
        await gateways.stop(app)


async def run_job(app) -> tuple:
    """Run the job now, as ``corvid jobs run`` does (a minute later each time: each run by
    hand is its own slot)."""
    assert app.scheduler is not None
    app.scheduler.clock.tick(60)
    return await asyncio.wait_for(app.scheduler.run_now("memory-consolidation"), 10)


async def test_a_week_of_logs_becomes_a_proposal_applied_by_button_then_undone(
    home, fake_api, consolidating, capsys
):
    (home / "workspace" / "MEMORY.md").write_text(MEMORY)
    week_of_logs(home)
    calls: list[dict] = []
    today = NOW.date().isoformat()
    fake_api.brain = consolidating_brain(calls, changes(today))
    app, chan = await consolidating.start()
    status, error = await run_job(app)
    assert (str(status), error) == ("sent", None)
    assert len(calls) == 1
    asked = last_user_text(calls[0])
    assert "Talked about the garden on day 6." in asked and "day 7" not in asked
    assert "Anna lives in Porto." in asked  # MEMORY.md as it is
    [proposal] = chan.sent
    assert proposal.key == PRIVATE
    assert f"**1. UPDATE**: she moved (from memory/{today}.md:9)" in proposal.text
    labels = [label for label, _ in proposal.buttons]
    assert labels == ["Apply all", "Choose", "Reject"]
    assert (
        "-- Anna lives in Porto." in proposal.text and "+- Anna lives in Lisbon." in proposal.text
    )
    # The group's words are shown as theirs.
    assert "written by the chat telegram-group--100, not by you" in proposal.text
    assert (home / "workspace" / "MEMORY.md").read_text() == MEMORY  # nothing yet

    # Nothing new: the next run asks the model nothing.
    status, error = await run_job(app)
    assert str(status) == "skipped" and len(calls) == 1
    # Paid for as consolidation, under its job (whose caps it counts against).
    assert calls_by(home, "purpose") == {"consolidation": 1}
    assert calls_by(home, "job") == {"memory-consolidation": 1}

    apply_all = dict(proposal.buttons)["Apply all"]
    await asyncio.wait_for(chan.push(apply_all), 10)
    assert "Applied all changes" in chan.texts()[-1]
    memory = (home / "workspace" / "MEMORY.md").read_text()
    assert "- Anna lives in Lisbon." in memory and "Porto" not in memory
    assert memory.count("Likes tea") == 1
    # Promoted from a group's text: kept quoted as theirs.
    assert '<untrusted source="the chat telegram-group--100">' in memory
    assert "Loves durian" in memory

    capsys.readouterr()
    assert (
        await asyncio.to_thread(
            main, ["memory", "history", "MEMORY.md", "--home", str(home)], environ={}
        )
        == 0
    )
    assert f"{PRIVATE} (memory proposal" in capsys.readouterr().out
    assert await asyncio.to_thread(main, ["memory", "undo", "--home", str(home)], environ={}) == 0
    assert (home / "workspace" / "MEMORY.md").read_text() == MEMORY


async def test_rejected_and_a_stale_proposal_refused(home, fake_api, consolidating):
    (home / "workspace" / "MEMORY.md").write_text(MEMORY)
    week_of_logs(home)
    calls: list[dict] = []
    fake_api.brain = consolidating_brain(calls, changes(NOW.date().isoformat()))
    app, chan = await consolidating.start()
    await run_job(app)
    first = dict(chan.sent[-1].buttons)
    await asyncio.wait_for(chan.push(first["Reject"]), 10)
    assert "Rejected memory proposal" in chan.texts()[-1]
    assert (home / "workspace" / "MEMORY.md").read_text() == MEMORY
    await asyncio.wait_for(chan.push(first["Apply all"]), 10)
    assert "was rejected already" in chan.texts()[-1]

    # A new entry, a new proposal; then MEMORY.md is edited before the owner answers.
    log = home / "workspace" / "memory" / f"{NOW.date().isoformat()}.md"
    log.write_text(log.read_text() + "\n## 21:00\n\nStill likes tea.\n")
    await run_job(app)
    assert len(calls) == 2
    assert "Still likes tea." in last_user_text(calls[1])
    assert "Anna has moved" not in last_user_text(calls[1])  # read already
    second = dict(chan.sent[-1].buttons)
    (home / "workspace" / "MEMORY.md").write_text(MEMORY + "- Edited by hand.\n")
    await asyncio.wait_for(chan.push(second["Apply all"]), 10)
    assert "MEMORY.md changed after memory proposal" in chan.texts()[-1]
    assert (home / "workspace" / "MEMORY.md").read_text() == MEMORY + "- Edited by hand.\n"
    # Refused: its logs are read again by the next run.
    await run_job(app)
    assert len(calls) == 3 and "Still likes tea." in last_user_text(calls[2])


async def test_choose_applies_one_change_and_a_restart_keeps_the_proposal(
    home, fake_api, consolidating
):
    (home / "workspace" / "MEMORY.md").write_text(MEMORY)
    week_of_logs(home)
    fake_api.brain = consolidating_brain([], changes(NOW.date().isoformat()))
    app, chan = await consolidating.start()
    await run_job(app)
    buttons = dict(chan.sent[-1].buttons)
    await consolidating.stop(app)

    app, chan = await consolidating.start()
    await asyncio.wait_for(chan.push(buttons["Choose"]), 10)
    choices = dict(chan.sent[-1].buttons)
    assert list(choices) == ["Apply 1", "Apply 2", "Apply 3", "Reject the rest"]
    await asyncio.wait_for(chan.push(choices["Apply 2"]), 10)
    assert "Applied change(s) 2" in chan.texts()[-1]
    assert list(dict(chan.sent[-1].buttons)) == ["Apply 1", "Apply 3", "Reject the rest"]
    memory = (home / "workspace" / "MEMORY.md").read_text()
    assert memory.count("Likes tea") == 1 and "Porto" in memory
    await asyncio.wait_for(chan.push(choices["Reject the rest"]), 10)
    assert "Porto" in (home / "workspace" / "MEMORY.md").read_text()


async def test_a_group_cannot_answer_a_proposal(home, fake_api, consolidating):
    from tests.conftest import GROUP

    (home / "workspace" / "MEMORY.md").write_text(MEMORY)
    week_of_logs(home)
    fake_api.brain = consolidating_brain([], changes(NOW.date().isoformat()))
    app, chan = await consolidating.start()
    await run_job(app)
    buttons = dict(chan.sent[-1].buttons)
    await asyncio.wait_for(chan.push(buttons["Apply all"], key=GROUP), 10)
    assert "Only my owner" in chan.texts()[-1]
    assert (home / "workspace" / "MEMORY.md").read_text() == MEMORY


async def test_auto_apply_changes_memory_at_once_and_says_so(home, fake_api, consolidating, capsys):
    (home / "workspace" / "MEMORY.md").write_text(MEMORY)
    week_of_logs(home)
    fake_api.brain = consolidating_brain([], changes(NOW.date().isoformat()))
    app, chan = await consolidating.start(auto_apply=True)
    await run_job(app)
    [told] = chan.sent
    assert told.text.startswith("On its own (memory.consolidation.auto_apply): Applied all ")
    assert " to MEMORY.md.\n\n" in told.text and not told.buttons
    assert "Lisbon" in (home / "workspace" / "MEMORY.md").read_text()
    capsys.readouterr()
    argv = ["memory", "history", "MEMORY.md", "--home", str(home)]
    assert await asyncio.to_thread(main, argv, environ={}) == 0
    assert "job memory-consolidation (auto_apply) (memory proposal" in capsys.readouterr().out


async def test_proposals_answered_from_the_terminal(home, fake_api, consolidating, capsys):
    (home / "workspace" / "MEMORY.md").write_text(MEMORY)
    week_of_logs(home)
    fake_api.brain = consolidating_brain([], changes(NOW.date().isoformat()))
    app, chan = await consolidating.start()
    await run_job(app)
    pid = dict(chan.sent[-1].buttons)["Reject"].split()[-1]
    home_arg = ["--home", str(home)]

    def corvid(*argv: str) -> int:
        return main([*argv, *home_arg], environ={})

    capsys.readouterr()
    assert await asyncio.to_thread(corvid, "memory", "proposals") == 0
    out = capsys.readouterr().out
    assert f"Memory proposal {pid}: 3 change(s)" in out and "+- Anna lives in Lisbon." in out
    assert "\n\n1. UPDATE: she moved\n   - - Anna lives in Porto." in out  # plain text
    assert await asyncio.to_thread(corvid, "memory", "apply", pid, "1") == 0
    assert "Still waiting: 2, 3." in capsys.readouterr().out
    assert "Lisbon" in (home / "workspace" / "MEMORY.md").read_text()
    # What is left, shown as the diff it would make: the first change is not in it again.
    assert await asyncio.to_thread(corvid, "memory", "proposals") == 0
    out = capsys.readouterr().out
    assert "1. UPDATE" not in out and "2. MERGE" in out and "3. ADD" in out
    assert "cannot be shown" not in out and "+- Loves durian." in out and "Porto" not in out
    assert await asyncio.to_thread(corvid, "memory", "reject", pid) == 0
    assert await asyncio.to_thread(corvid, "memory", "reject", pid) == 1
    assert "was rejected already" in capsys.readouterr().out
    assert await asyncio.to_thread(corvid, "memory", "apply", pid) == 1
    assert "was rejected already" in capsys.readouterr().out
    assert await asyncio.to_thread(corvid, "memory", "proposals") == 0
    assert "No memory proposal is waiting." in capsys.readouterr().out


async def test_each_shared_chats_log_feeds_only_its_own_notes(home, fake_api, consolidating):
    (home / "workspace" / "MEMORY.md").write_text(MEMORY)
    day = NOW.date().isoformat()
    chats = home / "workspace" / "memory" / "chats"
    for chat, said in (("test-guest-77", "Eve: I am allergic to nuts."),
                       ("test-group-100", "Bob: GROUP-ONLY-CANARY on Tuesdays.")):  # fmt: skip
        (chats / chat).mkdir(parents=True)
        (chats / chat / f"{day}.md").write_text(f"# {day}\n\n## 10:00 · x\n\n{said}\n")
    answers = {
        "test-guest-77": {"changes": [{"op": "add", "text": "- Allergic to nuts.",
                          "reason": "she said so",
                          "sources": [f"memory/chats/test-guest-77/{day}.md:5"]}]},
        "test-group-100": {"changes": [{"op": "add", "text": "- Meets on Tuesdays.",
                           "reason": "Bob said so",
                           "sources": [f"memory/chats/test-group-100/{day}.md:5"]}]},
    }  # fmt: skip
    calls: list[dict] = []
    fake_api.brain = answering_by_chat(calls, answers)
    app, chan = await consolidating.start()
    await run_job(app)
    # The owner's logs are empty: one call for each chat's notes, each reading its own log.
    assert len(calls) == 2
    by_chat = {c: b for b in calls for c in answers if f"memory/chats/{c}/NOTES.md" in
               b["system"][0]["text"]}  # fmt: skip
    guest, group = (
        last_user_text(by_chat["test-guest-77"]),
        last_user_text(by_chat["test-group-100"]),
    )
    assert "Eve: I am allergic to nuts." in guest and "GROUP-ONLY-CANARY" not in guest
    assert "GROUP-ONLY-CANARY" in group and "allergic" not in group
    assert "one person the owner paired" in by_chat["test-guest-77"]["system"][0]["text"]
    assert "one shared chat" in by_chat["test-group-100"]["system"][0]["text"]
    assert not any(b.get("tools") for b in calls)  # no search of the owner's logs for either
    assert MEMORY not in guest + group  # the owner's long-term memory goes to neither
    # Both proposals go to the owner, each naming whose notes it changes.
    assert len(chan.sent) == 2
    [for_group] = [m for m in chan.sent if "test-group-100" in m.text]
    [for_guest] = [m for m in chan.sent if "test-guest-77" in m.text]
    assert "the notes of the shared chat test-group-100, from its own log" in for_group.text
    assert "a paired guest's notes" in for_guest.text
    for proposal in (for_group, for_guest):
        await asyncio.wait_for(chan.push(dict(proposal.buttons)["Apply all"]), 10)
    assert (chats / "test-guest-77" / "NOTES.md").read_text() == "- Allergic to nuts.\n"
    assert (chats / "test-group-100" / "NOTES.md").read_text() == "- Meets on Tuesdays.\n"
    assert (home / "workspace" / "MEMORY.md").read_text() == MEMORY
    status, _ = await run_job(app)
    assert str(status) == "skipped" and len(calls) == 2  # nothing new anywhere


def owners_note_and_a_groups(home) -> dict:
    """A note in the owner's log and one in a group's, both new; the group's answer."""
    day = NOW.date().isoformat()
    (home / "workspace" / "memory" / f"{day}.md").write_text(
        f"# {day}\n\n## 10:00\n\nThe owner's own note.\n"
    )
    chat = home / "workspace" / "memory" / "chats" / "test-group-100"
    chat.mkdir(parents=True)
    (chat / f"{day}.md").write_text(f"# {day}\n\n## 10:00 · x\n\nBob: we meet on Tuesdays.\n")
    source = f"memory/chats/test-group-100/{day}.md:5"
    added = {"op": "add", "text": "- Meets on Tuesdays.", "reason": "r", "sources": [source]}
    return {"test-group-100": {"changes": [added]}}


async def test_an_owners_run_that_fails_leaves_a_shared_chats_proposal_made_and_sent(
    home, fake_api, consolidating
):
    calls: list[dict] = []
    answers = owners_note_and_a_groups(home)
    fake_api.brain = answering_by_chat(calls, answers, "Sorry, I cannot.")  # the owner's: no JSON
    app, chan = await consolidating.start()
    status, error = await run_job(app)
    # The run failed, and says why; the group's proposal was made and sent all the same.
    assert (str(status), error) == ("failed", 'ToolError: the proposal has no "changes" list.')
    assert len(calls) == 2
    [proposal] = chan.sent
    assert "the notes of the shared chat test-group-100" in proposal.text
    # The owner's log is read again by the next run; the group's is not.
    fake_api.brain = consolidating_brain(calls, {"changes": []})
    status, _ = await run_job(app)
    assert len(calls) == 3 and "The owner's own note." in last_user_text(calls[2])
    assert str(status) == "skipped"


async def test_the_retry_of_a_run_that_failed_for_the_owner_asks_for_the_owners_logs_again(
    home, fake_api, consolidating
):
    group = owners_note_and_a_groups(home)
    calls: list[dict] = []
    fake_api.brain = answering_by_chat(calls, group, "Sorry, I cannot.")  # the owner's: no JSON
    app, chan = await consolidating.start()
    clock, ledger = app.scheduler.clock, app.scheduler.ledger
    slot = NOW.replace(hour=23, minute=30)
    await clock.idle_until(slot)
    await clock.set(slot)  # the nightly run: the owner's part fails, the group's is sent
    await clock.idle_until(slot + timedelta(seconds=30))
    assert ledger.history("memory-consolidation")[0]["status"] == "failed"
    assert len(calls) == 2 and len(chan.sent) == 1
    owners = {"changes": [{"op": "add", "text": "- Own note.", "reason": "r", "sources": []}]}
    fake_api.brain = answering_by_chat(calls, group, json.dumps(owners))
    await clock.advance()  # the retry, which the group's proposal sent must not stop
    run = ledger.history("memory-consolidation")[0]
    assert (run["status"], run["attempts"]) == ("sent", 2)
    assert len(calls) == 3 and "The owner's own note." in last_user_text(calls[2])
    assert len(chan.sent) == 2 and "- Own note." in chan.sent[1].text


async def test_a_run_started_during_another_waits_for_it_and_proposes_nothing_twice(
    home, fake_api, consolidating
):
    week_of_logs(home)
    calls: list[dict] = []
    release = asyncio.Event()

    async def brain(body):
        if not body["system"][0]["text"].startswith("You curate"):
            return Reply("ok")
        calls.append(body)
        await asyncio.wait_for(release.wait(), 10)  # the first run is out, asking the model
        return Reply(json.dumps(changes(NOW.date().isoformat())))

    fake_api.brain = brain
    app, chan = await consolidating.start()
    first = asyncio.create_task(run_job(app))
    await fake_api.wait_for_requests(1)
    second = asyncio.create_task(run_job(app))  # by hand, meanwhile
    release.set()
    (one, _), (two, why) = await asyncio.wait_for(asyncio.gather(first, second), 10)
    assert (str(one), str(two)) == ("sent", "skipped") and "nothing new" in str(why)
    assert len(calls) == 1 and len(chan.sent) == 1


async def test_an_answer_with_no_changes_is_not_asked_about_the_same_logs_again(
    home, fake_api, consolidating
):
    (home / "workspace" / "MEMORY.md").write_text(SECTIONED)
    week_of_logs(home)
    calls: list[dict] = []
    fake_api.brain = consolidating_brain(calls, {"changes": []})
    app, chan = await consolidating.start()
    await run_job(app)
    assert len(calls) == 1 and chan.sent == []  # nothing to propose, nothing sent
    # Nothing new since: the model is asked nothing.
    status, _ = await run_job(app)
    assert str(status) == "skipped" and len(calls) == 1
    # A new entry: only it is sent.
    log = home / "workspace" / "memory" / f"{NOW.date().isoformat()}.md"
    log.write_text(log.read_text() + "\n## 21:00\n\nStill likes tea.\n")
    await run_job(app)
    assert len(calls) == 2
    asked = last_user_text(calls[1])
    assert "Still likes tea." in asked and "Anna has moved" not in asked
    assert "garden" not in asked
    assert asked.count("### memory/") == 1  # the other six logs, with nothing new, not named


async def test_a_proposal_that_cannot_be_applied_whole_says_so_and_changes_nothing(
    home, fake_api, consolidating
):
    """Two changes of one passage: each alone applies, both together cannot; the owner is
    told so, in the proposal and when applying it all, and MEMORY.md is left as it was."""
    (home / "workspace" / "MEMORY.md").write_text(MEMORY)
    week_of_logs(home)
    fake_api.brain = consolidating_brain([], {"changes": [
        {"op": "update", "old": "- Likes tea.", "text": "- Likes green tea.", "reason": "r"},
        {"op": "drop", "old": "- Likes tea.", "reason": "r"},
    ]})  # fmt: skip
    app, chan = await consolidating.start()
    await run_job(app)
    proposal = chan.sent[-1]
    assert "(cannot be shown: a passage it changes is no longer there" in proposal.text
    await asyncio.wait_for(chan.push(dict(proposal.buttons)["Apply all"]), 10)
    assert "a passage it changes is no longer there as it was" in chan.texts()[-1]
    assert (home / "workspace" / "MEMORY.md").read_text() == MEMORY
    await asyncio.wait_for(chan.push(dict(proposal.buttons)["Apply all"] + " 1"), 10)
    assert "Applied change(s) 1" in chan.texts()[-1]
    assert "- Likes green tea." in (home / "workspace" / "MEMORY.md").read_text()


async def test_a_shared_chats_answer_with_no_changes_is_not_asked_about_its_log_again(
    home, fake_api, consolidating
):
    """The same for a paired guest's and a group's notes: each chat's log, once answered with
    no changes, is not sent again; a new entry in one is sent alone."""
    (home / "workspace" / "MEMORY.md").write_text(SECTIONED)
    day = NOW.date().isoformat()
    chats = home / "workspace" / "memory" / "chats"
    logs = {}
    for chat, said in (("test-guest-77", "Eve: GUEST-CANARY."),
                       ("test-group-100", "Bob: GROUP-CANARY.")):  # fmt: skip
        (chats / chat).mkdir(parents=True)
        logs[chat] = chats / chat / f"{day}.md"
        logs[chat].write_text(f"# {day}\n\n## 10:00 · x\n\n{said}\n")
    calls: list[dict] = []
    fake_api.brain = consolidating_brain(calls, {"changes": []})
    app, chan = await consolidating.start()
    status, _ = await run_job(app)
    assert str(status) == "skipped" and len(calls) == 2 and chan.sent == []
    status, _ = await run_job(app)
    assert str(status) == "skipped" and len(calls) == 2  # neither log is sent again
    for chat in logs:
        logs[chat].write_text(logs[chat].read_text() + f"\n## 21:00 · x\n\nNEW-IN-{chat}.\n")
        await run_job(app)
        asked = last_user_text(calls[-1])
        assert f"NEW-IN-{chat}." in asked and "CANARY" not in asked
    assert len(calls) == 4


async def test_a_change_applied_by_number_is_not_applied_again(home, fake_api, consolidating):
    (home / "workspace" / "MEMORY.md").write_text(MEMORY)
    week_of_logs(home)
    fake_api.brain = consolidating_brain([], changes(NOW.date().isoformat()))
    app, chan = await consolidating.start()
    await run_job(app)
    apply_3 = dict(chan.sent[-1].buttons)["Apply all"] + " 3"  # /memory apply ID 3
    await asyncio.wait_for(chan.push(apply_3), 10)
    assert "Applied change(s) 3" in chan.texts()[-1]
    await asyncio.wait_for(chan.push(apply_3), 10)
    assert "has no pending change numbered so" in chan.texts()[-1]
    memory = (home / "workspace" / "MEMORY.md").read_text()
    assert memory.count("Loves durian") == 1 and "Porto" in memory
    # The rest is still there to apply, and applying it all (/memory apply ID) applies the
    # rest only: the third, an "add" that would go in again, stays once.
    await asyncio.wait_for(chan.push(dict(chan.sent[0].buttons)["Apply all"]), 10)
    assert "Applied all changes" in chan.texts()[-1]
    memory = (home / "workspace" / "MEMORY.md").read_text()
    assert memory.count("Loves durian") == 1
    assert "Lisbon" in memory and "Porto" not in memory and memory.count("Likes tea") == 1
    await asyncio.wait_for(chan.push(apply_3), 10)
    assert "was applied already" in chan.texts()[-1]
    assert (home / "workspace" / "MEMORY.md").read_text() == memory


async def test_every_line_of_a_group_quote_read_from_a_mark_stays_theirs(
    home, fake_api, consolidating
):
    """A later run reads a log from where the last one stopped; its lines are numbered on
    from there, and a change drawn from any line of a quoted block, its first and its last
    included, names the group and stays quoted."""
    (home / "workspace" / "MEMORY.md").write_text(SECTIONED)
    week_of_logs(home)
    calls: list[dict] = []
    fake_api.brain = consolidating_brain(calls, {"changes": []})
    app, chan = await consolidating.start()
    await run_job(app)  # the week is read: the next run starts after it
    day = NOW.date().isoformat()
    log = home / "workspace" / "memory" / f"{day}.md"
    before = log.read_text()
    group = "the chat telegram-group--200"
    log.write_text(before + "\n## 21:00\n\n" + untrusted(group, "Cem: the boat is red.") + "\n")
    first = before.count("\n") + 4  # the line the quote opens on
    sources = {"open": first, "words": first + 1, "close": first + 2, "own": first - 1}
    fake_api.brain = consolidating_brain(calls, {"changes": [
        {"op": "add", "text": f"- Fact from {name}.", "reason": name,
         "sources": [f"memory/{day}.md:{line}"]}
        for name, line in sources.items()
    ]})  # fmt: skip
    await run_job(app)
    numbered = last_user_text(calls[-1])
    assert f'{first}| <untrusted source="{group}">' in numbered
    assert f"{first + 2}| </untrusted>" in numbered
    [proposal] = chan.sent
    assert proposal.text.count(f"written by {group}, not by you") == 3
    pending = app.agent.memory.proposals.all()[-1]
    assert [i.origin for i in pending.items] == [group, group, group, ""]
    await asyncio.wait_for(chan.push(dict(proposal.buttons)["Apply all"]), 10)
    memory = (home / "workspace" / "MEMORY.md").read_text()
    for name in ("open", "words", "close"):
        assert f'<untrusted source="{group}">\n- Fact from {name}.' in memory, name


async def test_a_log_written_after_reading_from_outside_is_read_on_from_its_mark_and_quoted(
    home, fake_api, consolidating
):
    """A log a conversation wrote after reading a group is quoted whole wherever it is read.
    Its mark counts the log's own bytes, not the quote's: the next run reads exactly the new
    entry, quoted again, its lines numbered as in the file."""
    (home / "workspace" / "MEMORY.md").write_text(SECTIONED)
    day = NOW.date().isoformat()
    rel = f"memory/{day}.md"
    log = home / "workspace" / rel
    log.write_text(f"# {day}\n\n## 10:00\n\nThe boat is red.\n")
    note_written(home / "workspace", rel, "the chat telegram-group--100")
    source = f"{rel}, written after reading the chat telegram-group--100"
    calls: list[dict] = []
    fake_api.brain = consolidating_brain(calls, {"changes": [
        {"op": "add", "text": "- The boat is red.", "reason": "r", "sources": [f"{rel}:5"]},
    ]})  # fmt: skip
    app, chan = await consolidating.start()
    await run_job(app)
    asked = last_user_text(calls[-1])
    assert f'<untrusted source="{source}">' in asked and "5| The boat is red." in asked
    assert f"written by {source}, not by you" in chan.sent[-1].text
    await asyncio.wait_for(chan.push(dict(chan.sent[-1].buttons)["Apply all"]), 10)

    before = log.read_text()
    entry = "## 21:00\n\nThe boat was sold to Cem, who lives by the harbour in the old town."
    log.write_text(before + f"\n{entry}\n")
    line = before.count("\n") + 4  # the new entry's sentence
    fake_api.brain = consolidating_brain(calls, {"changes": [
        {"op": "add", "text": "- Cem has the boat.", "reason": "r", "sources": [f"{rel}:{line}"]},
    ]})  # fmt: skip
    await run_job(app)
    asked = last_user_text(calls[-1])
    new = asked.split(f"### {rel}\n")[1]
    assert f'<untrusted source="{source}">' in new and "The boat is red." not in new
    assert f"{line - 2}| ## 21:00" in new and f"{line}| The boat was sold to Cem" in new
    assert "harbour in the old town." in new
    await asyncio.wait_for(chan.push(dict(chan.sent[-1].buttons)["Apply all"]), 10)
    memory = (home / "workspace" / "MEMORY.md").read_text()
    assert f'<untrusted source="{source}">\n- Cem has the boat.' in memory
    # Blank lines added: nothing to read, nothing asked (quoted, they would not look blank).
    log.write_text(log.read_text() + "\n\n")
    status, _ = await run_job(app)
    assert str(status) == "skipped" and len(calls) == 2


async def test_a_first_run_reads_the_last_days_and_a_log_read_before_goes_on_at_any_age(
    home, fake_api, consolidating, caplog
):
    """A log never read is read from its first byte when it is of the last ``first_days``
    days (older ones are left: the first run reads a week); a log read before is read on
    from its mark however old it is. What a run read is logged, and nothing when nothing was
    read."""
    (home / "workspace" / "MEMORY.md").write_text(SECTIONED)
    folder = home / "workspace" / "memory"
    day = NOW.date()
    for back in (0, 6, 7):
        d = (day - timedelta(days=back)).isoformat()
        (folder / f"{d}.md").write_text(f"# {d}\n\n## 10:00\n\nWritten {back} days back.\n")
    calls: list[dict] = []
    fake_api.brain = consolidating_brain(calls, {"changes": []})
    app, chan = await consolidating.start(first_days=7)
    with caplog.at_level(logging.INFO, logger="gateway.scheduling.consolidation"):
        await run_job(app)
    asked = last_user_text(calls[-1])
    assert f"1| # {day.isoformat()}\n" in asked and "Written 6 days back." in asked
    assert "Written 7 days back." not in asked
    system = calls[-1]["system"]
    system = system if isinstance(system, str) else "".join(b["text"] for b in system)
    [read] = [r.getMessage() for r in caplog.records if "characters" in r.getMessage()]
    assert f"read {len(system) + len(asked)} characters" in read

    # The log of six days back gains an entry a week later: read on, at thirteen days old.
    old = folder / f"{(day - timedelta(days=6)).isoformat()}.md"
    old.write_text(old.read_text() + "\n## 23:00\n\nA LATE ENTRY.\n")
    app.scheduler.clock.tick(7 * 24 * 3600)
    fake_api.brain = consolidating_brain(calls, {"changes": [
        {"op": "add", "text": "- Late.", "reason": "r", "sources": []}]})  # fmt: skip
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="gateway.scheduling.consolidation"):
        await run_job(app)
    asked = last_user_text(calls[-1])
    assert len(calls) == 2 and "A LATE ENTRY." in asked and "Written" not in asked
    system = "".join(b["text"] for b in calls[-1]["system"])
    [read] = [r.getMessage() for r in caplog.records if "characters" in r.getMessage()]
    assert f"read {len(system) + len(asked)} characters" in read and len(chan.sent) == 1
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="gateway.scheduling.consolidation"):
        status, _ = await run_job(app)
    assert str(status) == "skipped" and len(calls) == 2
    assert not [r for r in caplog.records if "characters" in r.getMessage()]


async def test_applying_a_proposal_leaves_the_file_private(home, fake_api, consolidating):
    memory = home / "workspace" / "MEMORY.md"
    memory.write_text(MEMORY)
    memory.chmod(0o644)
    week_of_logs(home)
    fake_api.brain = consolidating_brain([], changes(NOW.date().isoformat()))
    app, chan = await consolidating.start()
    await run_job(app)
    await asyncio.wait_for(chan.push(dict(chan.sent[-1].buttons)["Apply all"]), 10)
    assert "Lisbon" in memory.read_text() and memory.stat().st_mode & 0o777 == 0o600


async def test_a_chat_folder_that_is_a_link_or_a_jobs_own_is_not_consolidated(
    home, fake_api, consolidating
):
    """Only a real folder of a chat that keeps notes is read: not one of a job that posts to
    no chat (it has no people to know), and not a link to another chat's folder or to the
    owner's logs (read through it, they would feed notes that are not theirs)."""
    (home / "workspace" / "MEMORY.md").write_text(SECTIONED)
    day = NOW.date().isoformat()
    chats = home / "workspace" / "memory" / "chats"
    for chat in ("cron-nightly", "test-group-100"):
        (chats / chat).mkdir(parents=True)
        (chats / chat / f"{day}.md").write_text(f"# {day}\n\n## 10:00 · x\n\n{chat} said.\n")
    (chats / "test-group-200").symlink_to("test-group-100")
    (chats / "test-group-300").symlink_to("../../memory")
    calls: list[dict] = []
    fake_api.brain = consolidating_brain(calls, {"changes": []})
    app, chan = await consolidating.start()
    await run_job(app)
    systems = [c["system"][0]["text"] for c in calls]
    assert len(calls) == 1 and "memory/chats/test-group-100/NOTES.md" in systems[0]
    assert chan.sent == []  # no changes: nothing to approve
    assert not (chats / "test-group-100" / "NOTES.md").exists()


# -- older log entries marked out of date ----------------------------------------------

TODAY = NOW.date().isoformat()
OLD_DAY = "2026-03-10"  # read by the first run too: a mark must not make it new
OLD_LOG = (
    f"# {OLD_DAY}\n\n## 09:00\n\nThe front door code of the building is 4711.\n\n"
    "## 09:30\n\nBought a lemon tree for the balcony.\n"
)
MARK = f"(Out of date: replaced by the note of {TODAY} 18:00.)"


def write_logs(home, today_extra: str = "") -> None:
    folder = home / "workspace" / "memory"
    (folder / f"{OLD_DAY}.md").write_text(OLD_LOG)
    (folder / f"{TODAY}.md").write_text(
        f"# {TODAY}\n\n## 18:00\n\nThe front door code of the building is now 0815.\n" + today_extra
    )


def replaces(old: str = f"memory/{OLD_DAY}.md:3", source: str = f"memory/{TODAY}.md:3") -> dict:
    return {"changes": [{"op": "replaces", "source": source, "old": old, "reason": "a new code"}]}


async def test_a_new_code_marks_the_old_one_out_of_date_once_the_owner_applies_it(
    home, fake_api, consolidating
):
    write_logs(home)
    calls: list[dict] = []
    fake_api.brain = consolidating_brain(calls, replaces())
    app, chan = await consolidating.start()
    status, error = await run_job(app)
    assert (str(status), error) == ("sent", None)
    [call] = calls
    asked = last_user_text(call)
    assert (
        f"### memory/{TODAY}.md:3\n- memory/{OLD_DAY}.md:3 ({OLD_DAY}, 2 days ago): "
        "The front door code of the building is 4711." in asked
    )
    assert '"op": "replaces"' in call["system"][0]["text"]
    [proposal] = chan.sent
    assert ": 1 older note(s) of the logs to mark out of date\n" in proposal.text
    assert "change(s) to" not in proposal.text
    assert f"marks memory/{OLD_DAY}.md:3 out of date" in proposal.text
    assert "older, marked out of date: The front door code of the building is 4711." in (
        proposal.text
    )
    assert "newer: The front door code of the building is now 0815." in proposal.text
    assert "```text\nolder, marked" in proposal.text  # not a diff: nothing is taken away
    assert f"+{MARK}" in proposal.text and "The files would change so" in proposal.text
    log = home / "workspace" / "memory" / f"{OLD_DAY}.md"
    assert log.read_text() == OLD_LOG  # nothing until the owner says so
    memory = app.agent.memory
    hits = await asyncio.to_thread(memory.search, "4711", 5, OWNER)
    assert [h.path for h in hits] == [f"memory/{OLD_DAY}.md"]

    apply_all = dict(proposal.buttons)["Apply all"]
    await asyncio.wait_for(chan.push(apply_all), 10)
    pid = apply_all.split()[-1]
    # Marks change a log, not MEMORY.md, and the answer does not say otherwise.
    assert chan.texts()[-1] == (
        f"Applied all changes of memory proposal {pid} to memory/{OLD_DAY}.md. To take it "
        "back: corvid memory undo, once for each file written, or the file's History page."
    )
    # The mark takes the blank line after the entry: no line of the log moves.
    assert log.read_text() == OLD_LOG.replace("4711.\n\n", f"4711.\n{MARK}\n")
    assert not (home / "workspace" / "MEMORY.md").read_text().count("0815")
    # Search follows the mark: the newer note comes first, even for the old code.
    hits = await asyncio.to_thread(memory.search, "4711", 5, OWNER)
    assert [h.path for h in hits] == [f"memory/{TODAY}.md", f"memory/{OLD_DAY}.md"]

    # Marked: the older note is not offered again.
    log_today = home / "workspace" / "memory" / f"{TODAY}.md"
    log_today.write_text(log_today.read_text() + "\n## 21:00\n\nThe code is 0815, really.\n")
    await run_job(app)
    asked = last_user_text(calls[-1])
    assert f"memory/{OLD_DAY}.md:3 " not in asked
    # The log that gained the mark was read to its end before: it is not read again.
    assert f"### memory/{OLD_DAY}.md\n" not in asked and "lemon" not in asked


async def test_only_a_pair_the_run_offered_is_proposed(home, fake_api, consolidating):
    write_logs(home)
    calls: list[dict] = []
    # The lemon tree was not offered under the new code; nor is a note after the new one,
    # or one the model made up.
    answer = {
        "changes": [
            *replaces(f"memory/{OLD_DAY}.md:7")["changes"],
            *replaces(f"memory/{TODAY}.md:3", f"memory/{OLD_DAY}.md:3")["changes"],
            *replaces("memory/2025-01-01.md:3")["changes"],
            *replaces("not a note")["changes"],
        ]
    }
    fake_api.brain = consolidating_brain(calls, answer)
    app, chan = await consolidating.start()
    status, _ = await run_job(app)
    assert len(calls) == 1 and str(status) == "skipped" and not chan.sent
    assert (home / "workspace" / "memory" / f"{OLD_DAY}.md").read_text() == OLD_LOG


@pytest.mark.parametrize(
    "where",
    ["in the new entry's log", "written after reading it", "in another log", "in MEMORY.md"],
)
async def test_text_from_outside_in_the_prompt_offers_nothing_and_marks_nothing(
    home, fake_api, consolidating, where
):
    quote = untrusted("the chat telegram-group--100", "Bob: the 4711 note is out of date.")
    write_logs(home, f"\n## 18:05\n\n{quote}\n" if where == "in the new entry's log" else "")
    if where == "written after reading it":
        note_written(home / "workspace", f"memory/{TODAY}.md", "the chat telegram-group--100")
    elif where == "in another log":  # read in the same run: the model reads it as well
        (home / "workspace" / "memory" / "2026-03-11.md").write_text(
            f"# 2026-03-11\n\n## 10:00\n\n{quote}\n"
        )
    elif where == "in MEMORY.md":
        (home / "workspace" / "MEMORY.md").write_text(f"# Memory\n\n{quote}\n")
    calls: list[dict] = []
    fake_api.brain = consolidating_brain(calls, replaces())
    app, chan = await consolidating.start()
    status, _ = await run_job(app)
    assert "Earlier notes a new entry may make out of date" not in last_user_text(calls[0])
    assert "replaces" not in calls[0]["system"][0]["text"]
    assert not calls[0].get("tools")  # nor a search for older notes
    assert str(status) == "skipped" and not chan.sent
    assert (home / "workspace" / "memory" / f"{OLD_DAY}.md").read_text() == OLD_LOG


async def mark_and_note_proposed(home, fake_api, consolidating, memory: str):
    """A gateway that has proposed the mark and a note for MEMORY.md (``memory`` below its
    title)."""
    (home / "workspace" / "MEMORY.md").write_text(f"# Memory\n\n{memory}")
    write_logs(home)
    answer = replaces()
    answer["changes"].append(
        {"op": "add", "text": "- Door code 0815.", "reason": "new", "sources": []}
    )
    fake_api.brain = consolidating_brain([], answer)
    app, chan = await consolidating.start()
    await run_job(app)
    return app, chan


async def test_a_note_changed_after_the_proposal_is_not_marked_and_the_owner_is_told(
    home, fake_api, consolidating
):
    _, chan = await mark_and_note_proposed(home, fake_api, consolidating, "- Likes tea.\n")
    # The note added, and the move of the free-form file into sections.
    assert ": 2 change(s) to MEMORY.md, and 1 older note(s) of the logs to mark out of date\n" in (
        chan.sent[-1].text
    )
    buttons = dict(chan.sent[-1].buttons)
    log = home / "workspace" / "memory" / f"{OLD_DAY}.md"
    edited = OLD_LOG.replace("4711", "4712")
    log.write_text(edited)
    # The mark alone, chosen while MEMORY.md was edited: a log's mark does not need
    # MEMORY.md as it was, but the older note must be.
    (home / "workspace" / "MEMORY.md").write_text("# Memory\n\n- Likes tea a lot.\n")
    await asyncio.wait_for(chan.push(buttons["Choose"]), 10)
    await asyncio.wait_for(chan.push(dict(chan.sent[-1].buttons)["Apply 1"]), 10)
    assert chan.texts()[-1] == (
        f"Nothing of memory proposal {buttons['Apply all'].split()[-1]} was applied. Not 1: a "
        "note it names changed, or was marked out of date, after the proposal was made. Still "
        "to decide:"
    )
    assert log.read_text() == edited
    # Answering the mark did not make the proposal's MEMORY.md change fit the edited file.
    await asyncio.wait_for(chan.push(buttons["Apply all"]), 10)
    assert "MEMORY.md changed after memory proposal" in chan.texts()[-1]
    assert (home / "workspace" / "MEMORY.md").read_text() == "# Memory\n\n- Likes tea a lot.\n"


async def test_a_mark_waits_for_no_memory_md_and_gives_way_to_a_newer_one(
    home, fake_api, consolidating, capsys
):
    sectioned = "## People\n\n- Likes tea.\n"
    app, chan = await mark_and_note_proposed(home, fake_api, consolidating, sectioned)
    first = dict(chan.sent[-1].buttons)
    pid = first["Apply all"].split()[-1]
    # MEMORY.md edited meanwhile: "Apply all" still makes the mark, and refuses the rest.
    (home / "workspace" / "MEMORY.md").write_text("# Memory\n\n## People\n\n- Tea.\n")
    await asyncio.wait_for(chan.push(first["Apply all"]), 10)
    assert chan.texts()[-1] == (
        f"Applied change(s) 1 of memory proposal {pid} to memory/{OLD_DAY}.md. MEMORY.md "
        "changed after the proposal was made, so its changes to it were refused; the next "
        "consolidation proposes again from the new text. To take it back: corvid memory undo, "
        "once for each file written, or the file's History page."
    )
    assert MARK in (home / "workspace" / "memory" / f"{OLD_DAY}.md").read_text()
    assert (home / "workspace" / "MEMORY.md").read_text().endswith("- Tea.\n")
    await asyncio.wait_for(chan.push(first["Apply all"]), 10)
    assert chan.texts()[-1] == f"Memory proposal {pid} was refused already."

    # A proposal made before a conversation marked the note by a newer one does not undo it.
    log = home / "workspace" / "memory" / f"{OLD_DAY}.md"
    log.write_text(OLD_LOG)
    today = home / "workspace" / "memory" / f"{TODAY}.md"
    today.write_text(today.read_text() + "\n## 21:00\n\nThe door code is 4711 again.\n")
    fake_api.brain = consolidating_brain([], replaces())
    await run_job(app)
    second = dict(chan.sent[-1].buttons)
    newer = "(Out of date: replaced by the note of 2026-03-12 21:00.)"
    log.write_text(OLD_LOG.replace("4711.\n\n", f"4711.\n{newer}\n"))
    # Answered from the terminal this time: listed in plain text, and refused.
    capsys.readouterr()
    argv = ["--home", str(home)]
    assert await asyncio.to_thread(main, ["memory", "proposals", *argv], environ={}) == 0
    out = capsys.readouterr().out
    assert "1. REPLACES: a new code\n   older, marked out of date: The front door code" in out
    assert f"(memory/{OLD_DAY}.md:3 cannot be marked: the older note has been marked" in out
    second_id = second["Apply all"].split()[-1]
    assert await asyncio.to_thread(main, ["memory", "apply", second_id, *argv], environ={}) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"Nothing of memory proposal {second_id} was applied. Not 1: ")
    assert "undo" not in out  # nothing was written
    assert newer in log.read_text() and MARK not in log.read_text()
    await asyncio.wait_for(chan.push(second["Apply all"]), 10)
    assert chan.texts()[-1] == f"Memory proposal {second_id} was refused already."
