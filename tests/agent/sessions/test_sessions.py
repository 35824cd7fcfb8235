"""Sessions in memory (agent/sessions/loaded.py): the ones in use and the most recently used stay
loaded; the others are let go and come back from their transcript, unchanged."""

from __future__ import annotations

import os
from datetime import timedelta

from agent.sessions.loaded import Sessions
from agent.sessions.transcript import SessionStore
from gateway.contract.events import SessionKey
from tests.fakes.clock import FakeClock


def _key(n: int) -> SessionKey:
    return SessionKey("test", "private", str(n))


def test_sessions_not_in_use_leave_memory_least_recently_used_first(tmp_path):
    sessions = Sessions(SessionStore(tmp_path), prompt=lambda key: f"prompt of {key}")
    for n in range(10):
        state = sessions.get(_key(n))
        sessions.store.append_message(state, {"role": "user", "content": f"hello {n}"}, [n])
    sessions.get(_key(0))  # used again: now the most recent
    in_use = {_key(1)}  # a turn runs there: it stays, however old
    assert sessions.let_go(lambda key: key in in_use, keep=4) == 6
    assert [n for n in range(10) if sessions.loaded(_key(n))] == [0, 1, 8, 9]
    back = sessions.get(_key(3))  # its next message brings it back from disk
    assert back.messages == [{"role": "user", "content": "hello 3"}] and back.seqs == {3}
    assert back.system == f"prompt of {_key(3)}"
    assert sessions.let_go(lambda key: False, keep=100) == 0


def test_transcripts_of_past_job_runs_are_deleted_after_a_while_and_nothing_else(tmp_path):
    clock = FakeClock()
    store = SessionStore(tmp_path, clock)
    job = SessionKey("cron", "private", "heartbeat")
    chat = _key(1)
    for key in (job, chat):
        store.create(key, "prompt")
        store.archive(key)  # a past run of the job; an old session of the chat (/new)
        store.create(key, "prompt")  # the current ones
    old = (clock.now() - timedelta(days=31)).timestamp()
    for path in tmp_path.iterdir():
        os.utime(path, (old, old))
    assert store.prune_job_runs(timedelta(days=30)) == 1
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names[0] == "cron:private:heartbeat.jsonl" and len(names) == 3
    assert all(not n.startswith("cron:") for n in names[1:])
