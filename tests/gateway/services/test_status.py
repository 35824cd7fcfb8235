"""``corvid status`` (gateway/status.py): from a running gateway over the control socket, and
from the files alone when none runs."""

from __future__ import annotations

import asyncio
import json
import logging

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
