"""Damaged or unexpected state on disk: a derived file is rebuilt, a file that holds data is
moved aside (never overwritten) with a log line saying what and where, doctor names each one
with its fix, and no command prints a traceback."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest

from gateway.app import build_app
from gateway.config.home import init_home
from gateway.ops.cli import main
from gateway.ops.doctor.report import run_checks
from gateway.runtime.journal import Journal
from tests.conftest import GROUP, PRIVATE, RecordingChannel, make_config
from tests.fakes.anthropic_api import FakeAnthropic, Reply, tool_results

GARBAGE = b"this is not a database, it is what a full disk left behind\n" * 20


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    init_home(path, {})
    (path / "config.yaml").write_text("timezone: UTC\nmemory: {embeddings: {provider: none}}\n")
    return path


async def _one_turn(home: Path, api: FakeAnthropic, text: str = "hello") -> RecordingChannel:
    channel = RecordingChannel()
    app = build_app(make_config(home, api.base_url), [channel])
    await app.start()
    try:
        await asyncio.wait_for(channel.push(text), 10)
    finally:
        await app.stop()
    return channel


def _aside(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f"{path.name}.unreadable-*"))


HOLDING_DATA = ["gateway.sqlite", "scheduler.sqlite", "usage.sqlite", "history.sqlite",
                "actions.sqlite"]  # fmt: skip


@pytest.mark.parametrize("name", HOLDING_DATA)
async def test_a_damaged_database_that_holds_data_is_moved_aside_and_corvid_goes_on(
    home, fake_api, caplog, name
):
    path = home / "state" / name
    path.write_bytes(GARBAGE)
    with caplog.at_level(logging.ERROR):
        channel = await _one_turn(home, fake_api)
    assert channel.texts() == ["echo: hello"]
    [aside] = _aside(path)
    assert aside.read_bytes() == GARBAGE  # the old copy is kept as it was
    assert any(f"{name} could not be read" in r.getMessage() and aside.name in r.getMessage()
               for r in caplog.records)  # fmt: skip


async def test_a_damaged_search_index_is_rebuilt_from_the_files(home, fake_api, capsys):
    (home / "workspace" / "memory" / "2026-03-01.md").write_text("## 09:00\n\nCall the bank\n")
    (home / "state" / "index.sqlite").write_bytes(GARBAGE)
    assert main(["memory", "search", "bank", "--home", str(home)], environ={}) == 0
    assert "Call the bank" in capsys.readouterr().out
    (home / "state" / "index.sqlite").write_bytes(GARBAGE)
    fake_api.enqueue(Reply(tool_calls=[("memory_search", {"query": "bank"})]), Reply("found it"))
    channel = await _one_turn(home, fake_api, "what about the bank?")
    assert channel.texts() == ["found it"]
    [result] = tool_results(fake_api.message_requests[-1].body)
    assert "Call the bank" in result["content"] and not result.get("is_error")


async def test_an_unreadable_journal_row_is_dropped_and_the_rest_answered(home, fake_api, caplog):
    journal = Journal(home / "state" / "gateway.sqlite")
    journal.db.execute(
        "INSERT INTO inbound (key, payload, created) VALUES (?, ?, ?)",
        (str(PRIVATE), '{"key": "test:private:1", "text": 3}', "2026-01-01T00:00:00"),
    )
    journal.close()
    with caplog.at_level(logging.ERROR):
        channel = await _one_turn(home, fake_api)
    assert channel.texts() == ["echo: hello"]
    assert any("cannot be read" in r.getMessage() for r in caplog.records)
    assert Journal(home / "state" / "gateway.sqlite").unanswered() == []


@pytest.mark.parametrize("status", ["pending", "sending", "waiting"])
async def test_an_unreadable_outbox_row_is_set_aside_as_failed_and_named_by_doctor(
    home, fake_api, caplog, status
):
    journal = Journal(home / "state" / "gateway.sqlite")
    for key in ("not a session key", str(PRIVATE)):
        journal.db.execute(
            "INSERT INTO outbox (key, text, status, created, updated) VALUES (?, ?, ?, ?, ?)",
            (key, f"owed to {key}", status, "2026-01-01T00:00:00", "2026-01-01T00:00:00"),
        )
    journal.close()  # (times without an offset, as a hand edit may leave them, are read as UTC)
    checks = {c.name: c for c in await run_checks(home, {"ANTHROPIC_API_KEY": "k"}, limit=2)}
    assert checks["journal"].status == "warn"
    assert "1 message(s) in state/gateway.sqlite cannot be read" in checks["journal"].message
    with caplog.at_level(logging.ERROR):
        channel = await _one_turn(home, fake_api)  # corvid run starts all the same
    assert "echo: hello" in channel.texts()
    assert any("outbox message 1 cannot be read" in r.getMessage() for r in caplog.records)
    journal = Journal(home / "state" / "gateway.sqlite")
    try:
        [(row_status, error)] = journal.db.execute(
            "SELECT status, error FROM outbox WHERE key = 'not a session key'"
        ).fetchall()
        assert row_status == "failed" and "cannot be read" in error
        # Listed for corvid status: the readable ones only, and without a crash.
        assert {o.out.key for o in journal.undelivered()} <= {PRIVATE}
    finally:
        journal.close()


async def test_a_transcript_that_is_a_folder_is_moved_aside_and_the_chat_goes_on(
    home, fake_api, caplog
):
    path = home / "state" / "sessions" / f"{PRIVATE}.jsonl"
    path.mkdir(parents=True)
    (path / "x").write_text("kept")
    with caplog.at_level(logging.ERROR):
        channel = await _one_turn(home, fake_api)
    assert channel.texts() == ["echo: hello"]
    [aside] = _aside(path)
    assert (aside / "x").read_text() == "kept"
    assert path.is_file()
    assert any("is not a file; moved aside" in r.getMessage() for r in caplog.records)


async def test_damaged_jobs_and_pairing_files_are_said_not_thrown(home, fake_api, capsys):
    state = home / "state"
    (state / "jobs.json").write_text("{not json")
    (state / "pairing.json").write_text("[1, 2")
    assert main(["jobs", "--home", str(home)], environ={}) == 1
    assert main(["pairing", "list", "--home", str(home)], environ={}) == 1
    err = capsys.readouterr().err
    assert "jobs.json cannot be read" in err and "pairing.json cannot be read" in err
    assert "Traceback" not in err
    checks = {c.name: c for c in await run_checks(home, {"ANTHROPIC_API_KEY": "k"}, limit=2)}
    assert checks["jobs.json"].status == "FAIL" and "reminders" in checks["jobs.json"].message
    assert checks["pairing.json"].status == "FAIL"
    # The gateway moves both aside and goes on: the configured jobs run, strangers can pair.
    channel = await _one_turn(home, fake_api)
    assert channel.texts() == ["echo: hello"]
    assert _aside(state / "jobs.json") and _aside(state / "pairing.json")
    assert main(["pairing", "list", "--home", str(home)], environ={}) == 0


async def test_doctor_names_every_damaged_state_file(home):
    for name in (*HOLDING_DATA, "index.sqlite", "embeddings.sqlite"):
        (home / "state" / name).write_bytes(GARBAGE)
    checks = {c.name: c for c in await run_checks(home, {"ANTHROPIC_API_KEY": "k"}, limit=2)}
    for name in HOLDING_DATA:
        assert checks[name].status == "FAIL", name
        assert "corvid run moves it aside" in checks[name].fix, name
    assert checks["index.sqlite"].status == "warn" and "derived" in checks["index.sqlite"].message
    vectors = checks["embeddings.sqlite"]
    assert vectors.status == "warn" and "can be made again" in vectors.message
    assert (home / "state" / "gateway.sqlite").read_bytes() == GARBAGE  # doctor changes nothing


async def test_a_job_with_a_bad_schedule_is_left_out_and_named(home, fake_api, capsys, caplog):
    jobs = {
        "jobs": [
            {"id": "bad-cron", "kind": "cron", "spec": "61 25 * * *", "timezone": "UTC",
             "target": "test:private:1", "created": "2026-01-01T00:00:00+00:00"},
            {"id": "bad-zone", "kind": "cron", "spec": "0 9 * * *", "timezone": "Mars/Olympus",
             "target": "test:private:1", "created": "2026-01-01T00:00:00+00:00"},
        ]
    }  # fmt: skip
    (home / "state" / "jobs.json").write_text(json.dumps(jobs))
    assert main(["jobs", "--home", str(home)], environ={}) == 0
    out = capsys.readouterr().out
    assert out.count("cannot be scheduled") == 2
    with caplog.at_level(logging.ERROR):
        channel = await _one_turn(home, fake_api)
    assert channel.texts() == ["echo: hello"]
    left_out = [r.getMessage() for r in caplog.records if "cannot be scheduled" in r.getMessage()]
    assert len(left_out) == 2


async def test_a_transcript_line_that_is_not_a_message_is_skipped_and_the_session_goes_on(
    home, fake_api, caplog
):
    await _one_turn(home, fake_api, "first")
    path = home / "state" / "sessions" / f"{PRIVATE}.jsonl"
    with path.open("a") as f:
        bad = {"role": "user", "content": [{"type": "text"}, 7]}
        f.write(json.dumps({"t": "msg", "ts": "2026-01-01T00:00:00", "msg": bad}) + "\n")
    with caplog.at_level(logging.WARNING):
        channel = await _one_turn(home, fake_api, "second")
    assert channel.texts() == ["echo: second"]
    assert any("skipping unreadable line" in r.getMessage() for r in caplog.records)


async def test_a_tool_call_that_is_not_json_is_asked_again_then_said(home, fake_api):
    bad = Reply(tool_calls=[("memory_search", {"query": "x"})], raw_tool_input='{"query": no}')
    fake_api.enqueue(bad, Reply("Answered on the second try."))
    channel = await _one_turn(home, fake_api, "search please")
    assert channel.texts() == ["Answered on the second try."]
    retry = fake_api.message_requests[-1].body
    assert "not valid JSON" in retry["system"][-1]["text"]
    fake_api.enqueue(bad, bad)
    channel = await _one_turn(home, fake_api, "again")
    assert channel.texts() == [
        "My answer came back garbled. Your message is saved; please try again."
    ]


async def test_a_group_turn_is_not_stopped_by_a_damaged_other_session(home, fake_api):
    (home / "state" / "sessions" / f"{GROUP}.jsonl").write_text('{"t": "msg"}\n\x00\x00\n')
    channel = RecordingChannel()
    app = build_app(make_config(home, fake_api.base_url), [channel])
    await app.start()
    try:
        await asyncio.wait_for(channel.push("hi", key=GROUP), 10)
    finally:
        await app.stop()
    assert channel.texts(GROUP) == ["echo: hi"]
