"""Consolidation's model looking for older notes in its own words (``earlier_notes``), through
the real chat path: a note the search under a new entry did not list is found by its subject,
named in a replaces change and marked once the owner applies it; a model that keeps searching
answers in a last call without the tool; a run with no proposal for an answer is read again by
the next."""

from __future__ import annotations

import asyncio
import json

from agent.memory.replacing import LAST_CALL, SEARCH
from tests.fakes.anthropic_api import Reply, last_user_text, tool_results
from tests.test_consolidation_e2e import NOW, consolidating_gateways, run_job  # noqa: F401

TODAY = NOW.date().isoformat()
OLD_DAY = "2026-03-05"
OLD_LOG = (
    f"# {OLD_DAY}\n\n## 09:00\n\nThe front door code of the building is 4711.\n\n"
    "## 09:30\n\nBought a lemon tree for the balcony.\n"
)
NEW_ENTRY = "Downstairs keypad takes 0815 since the landlord swapped it."
MARK = f"(Out of date: replaced by the note of {TODAY} 18:00.)"


def write_logs(home) -> None:
    folder = home / "workspace" / "memory"
    (folder / f"{OLD_DAY}.md").write_text(OLD_LOG)
    (folder / f"{TODAY}.md").write_text(f"# {TODAY}\n\n## 18:00\n\n{NEW_ENTRY}\n")


def replaces(old: str) -> dict:
    return {"op": "replaces", "source": f"memory/{TODAY}.md:3", "old": old, "reason": "new code"}


def curating(calls: list[dict], answer) -> object:
    def brain(body):
        if not body["system"][0]["text"].startswith("You curate"):
            return Reply("ok")
        calls.append(body)
        return answer(body)

    return brain


async def test_a_note_found_by_its_subject_is_marked_once_the_owner_applies_it(
    home, fake_api, consolidating
):
    write_logs(home)
    calls: list[dict] = []

    def answer(body):
        if not tool_results(body):
            return Reply(tool_calls=[(SEARCH, {"entry": f"memory/{TODAY}.md:3",
                                               "about": "front door code"})])  # fmt: skip
        # The lemon tree was neither listed nor found: not a pair the run may propose.
        return Reply(json.dumps({"changes": [replaces(f"memory/{OLD_DAY}.md:3"),
                                             replaces(f"memory/{OLD_DAY}.md:7")]}))  # fmt: skip

    fake_api.brain = curating(calls, answer)
    app, chan = await consolidating.start()
    status, error = await run_job(app)
    assert (str(status), error) == ("sent", None)
    first, second = calls
    # The search under the new entry shares no word with the old code: nothing is listed.
    assert "Earlier notes a new entry may make out of date" not in last_user_text(first)
    assert [t["name"] for t in first["tools"]] == [SEARCH]
    assert "earlier_notes, in your own words" in first["system"][0]["text"]
    [result] = tool_results(second)
    assert result["content"] == (
        f"### memory/{TODAY}.md:3\n- memory/{OLD_DAY}.md:3 ({OLD_DAY}, 7 days ago): "
        "The front door code of the building is 4711.\n"
    )
    assert not result.get("is_error")
    [proposal] = chan.sent
    assert ": 1 older note(s) of the logs to mark out of date\n" in proposal.text
    assert "older, marked out of date: The front door code of the building is 4711." in (
        proposal.text
    )
    log = home / "workspace" / "memory" / f"{OLD_DAY}.md"
    assert log.read_text() == OLD_LOG  # nothing until the owner says so
    await asyncio.wait_for(chan.push(dict(proposal.buttons)["Apply all"]), 10)
    assert log.read_text() == OLD_LOG.replace("4711.\n\n", f"4711.\n{MARK}\n")


async def test_a_model_that_keeps_searching_answers_in_a_last_call_without_the_tool(
    home, fake_api, consolidating
):
    write_logs(home)
    calls: list[dict] = []

    def answer(body):
        if body.get("tools"):  # searching for as long as it may
            return Reply(tool_calls=[(SEARCH, {"entry": f"memory/{TODAY}.md:3",
                                               "about": "front door code"})])  # fmt: skip
        return Reply(json.dumps({"changes": [replaces(f"memory/{OLD_DAY}.md:3")]}))

    fake_api.brain = curating(calls, answer)
    app, chan = await consolidating.start()
    status, error = await run_job(app)
    assert (str(status), error) == ("sent", None)
    # Four calls at most: three with the tool, then one without it, which must answer; what
    # the searches found is in its prompt, as it cannot be in tool results without the tool.
    assert len(calls) == 4 and [bool(c.get("tools")) for c in calls] == [True] * 3 + [False]
    assert [len(tool_results(c)) for c in calls] == [0, 1, 1, 0]
    assert len(calls[3]["messages"]) == 1  # no tool calls in its history
    assert last_user_text(calls[3]).endswith(
        "## Earlier notes your searches found\n\n"
        f"### memory/{TODAY}.md:3\n- memory/{OLD_DAY}.md:3 ({OLD_DAY}, 7 days ago): "
        f"The front door code of the building is 4711.\n\n{LAST_CALL}"
    )
    assert NEW_ENTRY in last_user_text(calls[3])
    [proposal] = chan.sent  # the note found is one the last answer may name
    assert f"marks memory/{OLD_DAY}.md:3 out of date" in proposal.text


async def test_a_last_answer_that_is_no_proposal_fails_and_its_logs_are_read_again(
    home, fake_api, consolidating
):
    write_logs(home)
    calls: list[dict] = []
    fake_api.brain = curating(calls, lambda body: Reply("I would rather not say."))
    app, chan = await consolidating.start()
    status, error = await run_job(app)
    assert (str(status), error) == ("failed", 'ToolError: the proposal has no "changes" list.')
    assert not chan.sent and len(calls) == 1

    # Nothing was lost: the next run reads the same entry again, and this time answers.
    fake_api.brain = curating(calls, lambda body: Reply(json.dumps({"changes": []})))
    status, _ = await run_job(app)
    assert len(calls) == 2 and NEW_ENTRY in last_user_text(calls[1])
    assert str(status) == "skipped"
    status, _ = await run_job(app)
    assert str(status) == "skipped" and len(calls) == 2  # read to its end now


async def test_a_search_for_an_entry_the_run_did_not_read_is_refused(home, fake_api, consolidating):
    write_logs(home)
    calls: list[dict] = []
    fake_api.brain = curating(calls, lambda body: Reply(json.dumps({"changes": []})))
    app, chan = await consolidating.start()
    await run_job(app)  # both logs read to their end
    log_today = home / "workspace" / "memory" / f"{TODAY}.md"
    log_today.write_text(log_today.read_text() + "\n## 19:00\n\nWatered the lemon tree.\n")

    def answer(body):
        if not tool_results(body):  # the code's new entry was read by the run before
            return Reply(tool_calls=[(SEARCH, {"entry": f"memory/{TODAY}.md:3",
                                               "about": "front door code"})])  # fmt: skip
        return Reply(json.dumps({"changes": [replaces(f"memory/{OLD_DAY}.md:3")]}))

    fake_api.brain = curating(calls, answer)
    status, _ = await run_job(app)
    assert "Watered the lemon tree" in last_user_text(calls[1])
    [result] = tool_results(calls[2])
    assert result["is_error"] and result["content"].startswith('"entry" names one of the new')
    assert str(status) == "skipped" and not chan.sent  # no search of this run found the code
    assert (home / "workspace" / "memory" / f"{OLD_DAY}.md").read_text() == OLD_LOG
