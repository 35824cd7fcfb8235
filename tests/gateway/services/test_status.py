"""``corvid status`` (gateway/status.py): from a running gateway over the control socket, and
from the files alone when none runs."""

from __future__ import annotations

import asyncio
import json
import logging
import sys

from gateway.contract.events import OutboundMessage
from gateway.ops.cli import main
from gateway.runtime.journal import Journal, SendStatus
from gateway.services import logs
from tests.conftest import GROUP, PRIVATE
from tests.fakes.anthropic_api import Reply


async def test_status_of_a_running_gateway(home, fake_api, start_gateway, capsys, monkeypatch):
    # What corvid run's logging set-up installs: the last problems, masked.
    recent = logs.RecentProblems(logs.RedactingFormatter(logs.FORMAT, ["sk-test-0123456789"]))
    monkeypatch.setattr(logs, "RECENT", recent)
    logging.getLogger().addHandler(recent)
    try:
        await _status_of_a_running_gateway(home, fake_api, start_gateway, capsys)
    finally:
        logging.getLogger().removeHandler(recent)


async def _status_of_a_running_gateway(home, fake_api, start_gateway, capsys):
    release = asyncio.Event()

    async def brain(body):
        if "slow one" in str(body["messages"][-1]):
            await release.wait()
        return Reply("fine")

    fake_api.brain = brain
    _gateway, chan = await start_gateway()
    await asyncio.wait_for(chan.push("hello", key=GROUP), 10)
    chan.fail_sends = 1
    await asyncio.wait_for(chan.push("this reply will fail", key=GROUP), 10)
    busy = chan.push("a slow one")
    await fake_api.wait_for_requests(3)
    chan.push("and another")  # waits behind the slow one
    logging.getLogger("corvid.test").warning("a warning with key %s", "sk-test-0123456789")
    capsys.readouterr()
    try:
        rc = await asyncio.to_thread(main, ["status", "--home", str(home)], {})
        out = capsys.readouterr().out
        # The same report for scripts.
        assert await asyncio.to_thread(main, ["status", "--json", "--home", str(home)], {}) == 0
        data = json.loads(capsys.readouterr().out)
    finally:
        release.set()
        await asyncio.wait_for(busy, 10)
    assert data["running"] and data["sessions_total"] == 2
    assert {s["key"]: s["queued"] for s in data["sessions"]}[str(PRIVATE)] == 1
    assert "sk-test-0123456789" not in json.dumps(data)
    assert rc == 0
    assert out.startswith("Corvid is running (pid ")
    assert "test: connected" in out
    assert "Sessions: 2" in out
    private_line = next(line for line in out.splitlines() if str(PRIVATE) in line)
    assert "answering, 1 queued" in private_line
    group_line = next(line for line in out.splitlines() if str(GROUP) in line)
    assert "2 turns" in group_line and "context" in group_line
    assert "Undelivered messages: 1" in out
    assert "RuntimeError: send refused (injected)" in out and "'fine'" in out
    assert "WARNING a warning with key ***" in out and "sk-test-0123456789" not in out


def test_status_without_a_running_gateway_reads_the_files(home, capsys):
    journal = Journal(home / "state" / "gateway.sqlite")
    oid = journal.queue(OutboundMessage(PRIVATE, "Your reminder: call the bank " * 5))
    journal.settle(oid, SendStatus.FAILED, "Forbidden: bot was blocked by the user")
    journal.close()
    from agent.sessions.transcript import SessionStore

    store = SessionStore(home / "state" / "sessions")
    state = store.create(PRIVATE, "system prompt")
    store.append_message(state, {"role": "user", "content": "hi"})
    store.end_turn(state, "ok")
    store.archive(GROUP)  # nothing to archive: no effect
    assert main(["status", "--home", str(home)], environ={}) == 0
    out = capsys.readouterr().out
    assert out.startswith("Corvid is not running")
    assert "Sessions: 1" in out and "1 turns" in out
    assert "Forbidden: bot was blocked by the user" in out
    assert "'Your reminder: call the bank Your reminder: call the bank" in out and "…'" in out


def test_the_figures_kept_between_reports_are_only_those_of_current_sessions(tmp_path):
    """Each report reads a transcript again only when it changed; what it keeps for that is
    let go with the session (ended by /new), so it does not grow with every chat ever seen."""
    from agent.sessions.transcript import SessionStore
    from gateway.services.status import SessionFigures

    store = SessionStore(tmp_path)
    for key in (PRIVATE, GROUP):
        store.create(key, "system")
    figures = SessionFigures(store)
    assert {f.key for f in figures.all()} == {PRIVATE, GROUP}
    store.archive(GROUP)
    assert [f.key for f in figures.all()] == [PRIVATE]
    assert set(figures._seen) == {PRIVATE}


MISSING = "/nonexistent/corvid-test-server"
# Starts, then exits at once: a failure that a restart may mend, so it is retried.
FLAKY = {"command": sys.executable, "args": ["-c", "raise SystemExit(3)"]}


async def test_a_server_that_cannot_start_is_one_line_and_is_not_retried(
    home, fake_api, start_gateway, capsys, monkeypatch
):
    recent = logs.RecentProblems(logs.RedactingFormatter(logs.FORMAT, []))
    monkeypatch.setattr(logs, "RECENT", recent)
    logging.getLogger().addHandler(recent)
    try:
        servers = {"gone": {"command": MISSING}, "flaky": FLAKY}
        app, _ = await start_gateway(mcp={"servers": servers})
        assert app.mcp is not None
        await app.mcp.settle()
        gone, flaky = app.mcp.servers
        await flaky.wait_until(lambda s: s.restarts >= 2, 30)  # type: ignore[attr-defined]
        capsys.readouterr()
        assert await asyncio.to_thread(main, ["status", "--home", str(home)], {}) == 0
        out = capsys.readouterr().out
    finally:
        logging.getLogger().removeHandler(recent)
    assert gone.view().restarts == 0 and gone.view().state == "failed"
    assert f"gone (stdio, private chats only): failed: command not found: {MISSING}" in out
    problems = out.split("Recent warnings and errors:")[1].splitlines()
    assert len([line for line in problems if "MCP server gone" in line]) == 1, out
    assert len([line for line in problems if "MCP server flaky" in line]) == 1, out


async def test_no_server_is_started_again_while_corvid_shuts_down(home, fake_api, monkeypatch):
    from agent.mcp.hub import McpHub
    from gateway.app import build_app
    from tests.conftest import RecordingChannel, make_config

    # The pause before a restart, long: only the stop may end the wait, however slow the
    # machine is between the server's failure and the stop.
    monkeypatch.setitem(McpHub.__init__.__kwdefaults__, "first_pause", 60.0)

    release = asyncio.Event()

    async def brain(body):
        await release.wait()
        return Reply("done")

    fake_api.brain = brain
    channel = RecordingChannel()
    config = make_config(home, fake_api.base_url, mcp={"servers": {"flaky": FLAKY}})
    app = build_app(config, [channel])
    await app.start()
    assert app.mcp is not None
    stopping = None
    try:
        channel.push("a reply that is still being written at shutdown")
        await fake_api.wait_for_requests(1)
        await app.mcp.settle()
        (flaky,) = app.mcp.servers
        await flaky.wait_until(lambda s: s.state == "waiting", 30)  # type: ignore[attr-defined]
        stopping = asyncio.create_task(app.stop())  # waits for the reply (shutdown grace)
        await flaky.wait_until(lambda s: s.state == "stopped", 10)  # type: ignore[attr-defined]
        assert not stopping.done() and flaky.view().restarts == 0
    finally:
        release.set()
        if stopping is None:
            await app.stop()
        else:
            await asyncio.wait_for(stopping, 30)
