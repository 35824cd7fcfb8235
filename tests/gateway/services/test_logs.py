"""Logging (gateway/logs.py): turn ids and timings on every turn, JSON lines on request, and
secrets masked in both formats."""

from __future__ import annotations

import io
import json
import logging

import pytest

from gateway import logcontext
from gateway.services import logs
from tests.fakes.anthropic_api import FakeAnthropic, Reply, tool_results
from tests.fakes.process import API_KEY, FIRST_CALL, corvid_process
from tests.fakes.telegram_api import FakeTelegram


@pytest.fixture
def captured():
    """A stream for ``setup_logging``; the test's logging set-up is undone afterwards."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    chatty = {name: logging.getLogger(name).level for name in ("anthropic", "httpx")}
    yield io.StringIO()
    root.handlers[:] = handlers
    root.setLevel(level)
    for name, old in chatty.items():
        logging.getLogger(name).setLevel(old)
    logs.RECENT = None


@pytest.mark.parametrize("log_bodies", [False, True])
async def test_debug_logs_carry_no_prompt_unless_bodies_are_asked_for(
    captured, home, fake_api, log_bodies
):
    from gateway.app import build_app
    from tests.conftest import RecordingChannel, make_config

    canary = "CANARY-memory-in-a-debug-log-41e2"
    (home / "workspace" / "MEMORY.md").write_text(f"- {canary}\n")
    logs.setup_logging("DEBUG", ["sk-test-0123456789"], stream=captured, log_bodies=log_bodies)
    channel = RecordingChannel()
    app = build_app(make_config(home, fake_api.base_url), [channel])
    await app.start()
    try:
        await channel.push("hello")
    finally:
        await app.stop()
    text = captured.getvalue()
    assert "model call msg_" in text  # Corvid's own line: sizes and the message id
    assert (canary in text) is log_bodies
    assert "sk-test-0123456789" not in text


def test_json_lines_carry_the_turn_and_mask_secrets(captured):
    secret = 'tok"en\\with-quotes-123'
    logs.setup_logging("INFO", [secret], "json", captured)
    log = logging.getLogger("corvid.test")
    with logcontext.turn_scope("telegram:private:42") as turn:
        log.info("calling with %s", secret, extra={"fields": {"event": "turn", "ms": 12}})
    log.warning("outside a turn, token %s", secret)
    first, second = (json.loads(line) for line in captured.getvalue().splitlines())
    assert first["session"] == "telegram:private:42" and first["turn"] == turn
    assert first["event"] == "turn" and first["ms"] == 12
    assert first["msg"] == "calling with ***" and first["level"] == "INFO"
    assert "session" not in second and second["msg"] == "outside a turn, token ***"
    assert "with-quotes" not in captured.getvalue()
    assert logs.RECENT is not None
    assert [r["msg"] for r in logs.RECENT.records] == ["outside a turn, token ***"]


def test_text_lines_name_the_turn(captured):
    logs.setup_logging("INFO", ["supersecret"], "text", captured)
    with logcontext.turn_scope("discord:dm:7") as turn:
        logging.getLogger("x").info("supersecret step")
    line = captured.getvalue().strip()
    assert line.endswith(f"x: *** step [turn {turn}]")


async def test_corvid_run_logs_json_with_timings_and_no_secrets(tmp_path):
    api, tg = FakeAnthropic(), FakeTelegram()
    await api.start()
    await tg.start()
    home = tmp_path / "h"
    tg.write_corvid_config(home, api.base_url)
    api.enqueue(
        Reply(tool_calls=[("memory_append", {"text": "a note"})]),
        Reply("Saved."),
    )
    try:
        async with corvid_process(
            home, {"TELEGRAM_BOT_TOKEN": tg.token}, watch=True, args=("--log-format", "json")
        ) as proc:
            await proc.wait_line("is polling")
            tg.text("remember this")
            await tg.wait_sent(1, FIRST_CALL)
            turn_line = await proc.wait_line('"event": "turn"')
            assert await proc.stop() == 0
    finally:
        await tg.close()
        await api.close()
    assert tool_results(api.message_requests[1].body)
    entries = [json.loads(line) for line in proc.lines]  # every line is JSON
    turn = json.loads(turn_line)
    assert turn["session"] == "telegram:private:42" and len(turn["turn"]) == 8
    assert turn["status"] == "ok" and turn["model_calls"] == 2 and turn["tool_calls"] == 1
    for field in ("turn_ms", "model_ms", "send_ms", "queued_ms", "tokens_in", "tokens_out"):
        assert isinstance(turn[field], int) and turn[field] >= 0
    assert turn["turn_ms"] >= turn["model_ms"]
    # Lines written during the turn (the memory write, say) carry the same turn id.
    same = [e for e in entries if e.get("turn") == turn["turn"]]
    assert len(same) >= 2
    output = "\n".join(proc.lines)
    assert API_KEY not in output and tg.token not in output


@pytest.mark.parametrize("fmt", ["text", "json"])
@pytest.mark.parametrize("order", [1, -1])
def test_a_secret_inside_another_leaks_neither(captured, fmt, order):
    """A token that contains the API key (or the other way round): the longer is masked whole,
    in the log line and in the warnings kept for corvid status, given in either order."""
    short = "sk-ant-0123456789"
    longer = short + "-TAILOFTHELONGERONE"
    logs.setup_logging("INFO", [short, longer][::order], fmt, captured)
    log = logging.getLogger("corvid.test")
    log.warning("sent %s and %s; %s again", longer, short, longer)
    out = captured.getvalue()
    assert "0123456789" not in out and "TAILOFTHELONGERONE" not in out
    assert "sent *** and ***; *** again" in out
    assert logs.RECENT is not None
    [kept] = logs.RECENT.records
    assert kept["msg"] == "sent *** and ***; *** again"
    assert logs.Masker([short, longer][::order])(f"{short}{longer}") == "******"


def test_a_secret_in_a_list_or_tuple_field_is_masked(captured):
    secret = "sk-in-a-list-0123456789"
    logs.setup_logging("INFO", [secret], "json", captured)
    fields = {"to": ["owner", secret], "pair": ("x", secret)}
    logging.getLogger("corvid.test").info("sent", extra={"fields": fields})
    [entry] = (json.loads(line) for line in captured.getvalue().splitlines())
    assert entry["to"] == ["owner", "***"] and entry["pair"] == ["x", "***"]
    assert "0123456789" not in captured.getvalue()


def test_secrets_from_six_characters_on_are_masked(captured):
    """Shorter values would mask ordinary words; from six characters on, a value is masked."""
    logs.setup_logging("INFO", ["q7x9k2", "z8w1v"], "text", captured)
    logging.getLogger("corvid.test").info("q7x9k2 z8w1v")
    assert captured.getvalue().rstrip().endswith("corvid.test: *** z8w1v")


def test_a_second_set_up_replaces_the_first_and_keeps_bodies_out(captured):
    """``corvid run`` sets logging up once per process, but a set-up replaces the last one
    whole: no line is written twice, and without ``log_bodies`` the libraries that log
    request bodies stay at WARNING even at DEBUG."""
    first = io.StringIO()
    logs.setup_logging("DEBUG", [], "text", first)
    logs.setup_logging("DEBUG", [], "text", captured)
    logging.getLogger("corvid.test").info("once")
    assert first.getvalue() == ""
    assert captured.getvalue().count("once") == 1
    assert logging.getLogger("anthropic").level == logging.WARNING
    assert logging.getLogger("httpx").level == logging.WARNING


def test_status_keeps_the_last_twenty_problems_each_cut_short(captured):
    logs.setup_logging("INFO", [], "text", captured)
    log = logging.getLogger("corvid.test")
    for n in range(25):
        log.warning("problem %d %s", n, "x" * 600)
    assert logs.RECENT is not None
    kept = list(logs.RECENT.records)
    assert len(kept) == 20 and kept[0]["msg"].startswith("problem 5 ")
    assert {len(r["msg"]) for r in kept} == {500}
