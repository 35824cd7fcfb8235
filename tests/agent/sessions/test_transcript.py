"""Transcripts: append-only JSONL, torn last lines dropped, sessions reload after a restart."""

from __future__ import annotations

import json
import os

import pytest

from agent.sessions.state import Usage
from agent.sessions.transcript import SessionStore
from gateway.contract.events import SessionKey

KEY = SessionKey("telegram", "private", "42")


def test_round_trip_and_counters(tmp_path):
    store = SessionStore(tmp_path)
    state = store.create(KEY, "system prompt")
    store.append_message(state, {"role": "user", "content": "hi"})
    store.append_usage(state, Usage(10, 100, 5, 7))
    store.append_message(state, {"role": "assistant", "content": [{"type": "text", "text": "yo"}]})
    store.end_turn(state, "ok")
    again = SessionStore(tmp_path).load(KEY)
    assert again is not None
    assert again.session_id == state.session_id and again.system == "system prompt"
    assert again.messages == state.messages and again.turns == 1
    assert again.usage_total == Usage(10, 100, 5, 7) and again.context_tokens == 122
    assert (tmp_path / "telegram:private:42.jsonl").stat().st_mode & 0o777 == 0o600


def test_torn_last_line_is_dropped_and_appends_stay_readable(tmp_path):
    store = SessionStore(tmp_path)
    state = store.create(KEY, "s")
    store.append_message(state, {"role": "user", "content": "kept"})
    with store.path(KEY).open("ab") as f:
        f.write(b'{"t":"msg","msg":{"role":"assistant","content":"tor')
    loaded = store.load(KEY)
    assert loaded is not None and [m["content"] for m in loaded.messages] == ["kept"]
    store.append_message(loaded, {"role": "user", "content": "after"})
    lines = store.path(KEY).read_text().splitlines()
    assert all(json.loads(line) for line in lines)
    assert [m["content"] for m in store.load(KEY).messages] == ["kept", "after"]


def test_corrupt_middle_line_is_skipped(tmp_path):
    store = SessionStore(tmp_path)
    state = store.create(KEY, "s")
    with store.path(KEY).open("a") as f:
        f.write("not json\n")
    store.append_message(state, {"role": "user", "content": "ok"})
    assert [m["content"] for m in store.load(KEY).messages] == ["ok"]


def test_archive_keeps_the_old_file(tmp_path):
    store = SessionStore(tmp_path)
    store.create(KEY, "s")
    archived = store.archive(KEY)
    assert archived is not None and archived.exists() and not store.path(KEY).exists()
    assert store.load(KEY) is None
    assert store.archive(KEY) is None


def test_malformed_lines_of_every_kind_are_skipped(tmp_path):
    store = SessionStore(tmp_path)
    state = store.create(KEY, "s")
    store.append_message(state, {"role": "user", "content": "before"})
    with store.path(KEY).open("ab") as f:
        f.write(b"null\n")
        f.write(b'{"t":"msg"}\n')
        f.write(b'{"t":"usage","input":"x"}\n')
        f.write('{"t":"msg","msg":{"role":"user","content":"caf\u00e9"}}\n'.encode()[:-6] + b"\n")
        f.write(b'{"t":"msg","msg":{"role":"robot","content":"?"}}\n')
        f.write(b"\xff\xfe not utf-8\n")
    store.append_message(state, {"role": "user", "content": "after"})
    loaded = store.load(KEY)
    assert loaded is not None
    assert [m["content"] for m in loaded.messages] == ["before", "after"]


def fill_the_disk(monkeypatch):
    """From here on a long line gets half written, then the disk is full; returns the real
    ``os.write``."""
    real_write = os.write

    def half_then_full_disk(fd, data):
        if len(data) > 10:
            return real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", half_then_full_disk)
    return real_write


@pytest.mark.parametrize("held", [False, True], ids=["opened-per-line", "held-open"])
async def test_a_write_cut_short_is_taken_back(tmp_path, monkeypatch, held):
    """Also when the transcript is held open (a flush due): it is then let go, not leaked."""
    from agent.sessions import transcript

    monkeypatch.setattr(transcript, "SYNC_WITHIN", 3600.0)
    before = _fds()
    store = SessionStore(tmp_path)
    state = store.create(KEY, "s")
    if held:
        store.end_turn(state, "ok")  # a flush is due from here on
    store.append_message(state, {"role": "user", "content": "kept"})
    assert (KEY in store._files.held) == held
    size = store.path(KEY).stat().st_size
    real_write = fill_the_disk(monkeypatch)
    with pytest.raises(OSError):
        store.append_message(state, {"role": "user", "content": "lost to a full disk"})
    monkeypatch.setattr(os, "write", real_write)
    assert store.path(KEY).stat().st_size == size and store._files.held == {} and _fds() == before
    store.append_message(state, {"role": "user", "content": "after"})
    await store.close()
    assert [m["content"] for m in store.load(KEY).messages] == ["kept", "after"]
    assert _fds() == before


def test_a_withdrawn_turn_stays_on_disk_but_leaves_the_conversation(tmp_path):
    store = SessionStore(tmp_path)
    state = store.create(KEY, "s")
    store.append_message(state, {"role": "user", "content": "kept"})
    store.append_message(state, {"role": "assistant", "content": "answer"})
    state.turn_start = len(state.messages)
    store.append_message(state, {"role": "user", "content": "stopped request"})
    store.append_message(state, {"role": "assistant", "content": [
        {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "x"}}
    ]})  # fmt: skip
    store.withdraw(state, len(state.messages) - state.turn_start)
    assert [m["content"] for m in state.messages] == ["kept", "answer"]
    again = store.load(KEY)
    assert again is not None and again.messages == state.messages
    assert "stopped request" in store.path(KEY).read_text()  # the history keeps it


def test_a_hand_edit_renews_each_snapshot_once_across_restarts(tmp_path):
    from agent.sessions.loaded import HandEdits, Sessions
    from tests.fakes.clock import FakeClock

    clock = FakeClock()
    made = iter(range(100))
    store = SessionStore(tmp_path / "sessions", clock)
    edits = HandEdits(tmp_path / "hand_edited")
    sessions = Sessions(store, lambda key: f"prompt {next(made)}", edits)
    state = sessions.get(KEY)
    assert state.system == "prompt 0"
    clock.tick(1)
    edits.mark(clock.now())
    clock.tick(1)
    # A restart before the session's next turn: the edit is on disk, so it still counts.
    again = Sessions(SessionStore(tmp_path / "sessions", clock), sessions._prompt, HandEdits(
        tmp_path / "hand_edited"))  # fmt: skip
    assert again.get(KEY).system == "prompt 1"
    assert again.get(KEY).system == "prompt 1"  # once, not at every turn
    # What a restart after the renewal loads is the renewed snapshot, with no new one.
    third = Sessions(SessionStore(tmp_path / "sessions", clock), sessions._prompt, edits)
    assert third.get(KEY).system == "prompt 1"
    # No edit file at all: nothing is renewed.
    assert HandEdits(tmp_path / "none").outdated(third.get(KEY)) is False


class Fsyncs:
    """Records the files made durable, one list per hand-over to the worker thread."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import asyncio

        from agent.sessions import transcript

        self.rounds: list[list[str]] = []
        self.done = asyncio.Event()
        loop = asyncio.get_running_loop()
        real = transcript._fsync_all

        def fsync_all(paths: set) -> None:
            self.rounds.append(sorted(p.name for p in paths))
            real(paths)
            loop.call_soon_threadsafe(self.done.set)

        monkeypatch.setattr(transcript, "_fsync_all", fsync_all)


async def test_turns_ended_within_a_second_are_made_durable_in_one_hand_over(tmp_path, monkeypatch):
    import asyncio

    from agent.sessions import transcript

    monkeypatch.setattr(transcript, "SYNC_WITHIN", 0.05)
    fsyncs = Fsyncs(monkeypatch)
    store = SessionStore(tmp_path)
    other = SessionKey("discord", "dm", "7")
    for key in (KEY, other):
        state = store.create(key, "s")
        store.append_message(state, {"role": "user", "content": "hi"})
        store.end_turn(state, "ok")
    assert fsyncs.rounds == []  # not before the reply: within SYNC_WITHIN after it
    await asyncio.wait_for(fsyncs.done.wait(), 10)
    assert fsyncs.rounds == [sorted([f"{KEY}.jsonl", f"{other}.jsonl"])]
    await store.close()
    assert len(fsyncs.rounds) == 1  # nothing left to do


async def test_closing_makes_what_is_pending_durable_at_once(tmp_path, monkeypatch):
    from agent.sessions import transcript

    monkeypatch.setattr(transcript, "SYNC_WITHIN", 3600.0)
    fsyncs = Fsyncs(monkeypatch)
    store = SessionStore(tmp_path)
    state = store.create(KEY, "s")
    store.end_turn(state, "ok")
    store.sync_soon(KEY)  # twice: one file, one fsync
    await store.close()
    assert fsyncs.rounds == [[f"{KEY}.jsonl"]]
    assert store._syncing is None


async def test_a_transcript_archived_before_its_fsync_is_made_durable_where_it_went(
    tmp_path, monkeypatch
):
    from agent.sessions import transcript

    monkeypatch.setattr(transcript, "SYNC_WITHIN", 3600.0)
    fsyncs = Fsyncs(monkeypatch)
    store = SessionStore(tmp_path)
    store.end_turn(store.create(KEY, "s"), "ok")
    archived = store.archive(KEY)
    await store.close()
    assert archived is not None and fsyncs.rounds == [[archived.name]]


async def test_an_fsync_that_fails_is_logged_and_the_lines_stay(tmp_path, monkeypatch, caplog):
    from agent.sessions import transcript

    def failing(path: object) -> None:
        raise OSError(5, "EIO")

    monkeypatch.setattr(transcript, "SYNC_WITHIN", 3600.0)
    monkeypatch.setattr(transcript, "fsync_path", failing)
    store = SessionStore(tmp_path)
    state = store.create(KEY, "s")
    store.append_message(state, {"role": "user", "content": "kept"})
    store.end_turn(state, "ok")
    await store.close()  # does not raise
    assert "could not make" in caplog.text and "EIO" in caplog.text
    loaded = SessionStore(tmp_path).load(KEY)
    assert loaded is not None and [m["content"] for m in loaded.messages] == ["kept"]


async def test_closing_while_a_flush_is_under_way_lets_it_finish_and_does_not_repeat_it(
    tmp_path, monkeypatch
):
    import asyncio
    import threading

    from agent.sessions import transcript

    monkeypatch.setattr(transcript, "SYNC_WITHIN", 0.0)
    started, release = asyncio.Event(), threading.Event()
    loop = asyncio.get_running_loop()
    rounds: list[list[str]] = []

    def slow(paths: set) -> None:
        rounds.append(sorted(p.name for p in paths))
        loop.call_soon_threadsafe(started.set)
        release.wait(10)

    monkeypatch.setattr(transcript, "_fsync_all", slow)
    store = SessionStore(tmp_path)
    store.end_turn(store.create(KEY, "s"), "ok")
    await asyncio.wait_for(started.wait(), 10)
    closing = asyncio.create_task(store.close())
    done, _ = await asyncio.wait({closing}, timeout=0.2)
    assert not done  # it waits for the fsync under way
    release.set()
    await asyncio.wait_for(closing, 10)
    assert rounds == [[f"{KEY}.jsonl"]]


async def test_stopping_corvid_makes_the_last_turns_transcript_durable(home, fake_api, monkeypatch):
    import asyncio

    from agent.sessions import transcript
    from gateway.app import build_app
    from tests.conftest import RecordingChannel, make_config

    monkeypatch.setattr(transcript, "SYNC_WITHIN", 3600.0)  # only the stop can do it
    fsyncs = Fsyncs(monkeypatch)
    channel = RecordingChannel()
    app = build_app(make_config(home, fake_api.base_url), [channel])
    await app.start()
    try:
        await asyncio.wait_for(channel.push("hello"), 10)
        assert fsyncs.rounds == []
    finally:
        await app.stop()
    assert fsyncs.rounds == [["test:private:1.jsonl"]]


async def test_a_transcript_archived_while_a_flush_has_it_in_hand_is_made_durable_where_it_went(
    tmp_path, monkeypatch
):
    import asyncio
    import threading

    from agent.sessions import transcript

    monkeypatch.setattr(transcript, "SYNC_WITHIN", 0.0)
    started, release = asyncio.Event(), threading.Event()
    loop = asyncio.get_running_loop()
    seen: list[tuple[str, bool]] = []
    real = transcript._fsync_all

    def slow(paths: set) -> None:
        if not started.is_set():
            loop.call_soon_threadsafe(started.set)
            release.wait(10)
        seen.extend((p.name, p.exists()) for p in paths)
        real(paths)

    monkeypatch.setattr(transcript, "_fsync_all", slow)
    store = SessionStore(tmp_path)
    store.end_turn(store.create(KEY, "s"), "ok")
    await asyncio.wait_for(started.wait(), 10)
    archived = store.archive(KEY)  # /new while the flush holds the old name
    release.set()
    await store.close()
    assert archived is not None and (archived.name, True) in seen


def test_a_store_used_by_one_loop_after_another_still_makes_its_writes_durable(
    tmp_path, monkeypatch
):
    """A flush left waiting on a loop that has ended (a command's asyncio.run) does not stand
    in the way of the next loop's."""
    import asyncio

    from agent.sessions import transcript

    # Not due before the first loop has ended, however slow its teardown.
    monkeypatch.setattr(transcript, "SYNC_WITHIN", 3600.0)
    rounds: list[list[str]] = []
    monkeypatch.setattr(transcript, "_fsync_all", lambda ps: rounds.append(sorted(ps)))
    store = SessionStore(tmp_path)
    state = store.create(KEY, "s")

    async def first() -> None:
        store.end_turn(state, "ok")  # the loop ends before its flush is due

    asyncio.run(first())
    assert rounds == []
    monkeypatch.setattr(transcript, "SYNC_WITHIN", 0.01)

    async def second() -> None:
        loop, flushed = asyncio.get_running_loop(), asyncio.Event()

        def recorded(paths: set) -> None:
            rounds.append(sorted(paths))
            loop.call_soon_threadsafe(flushed.set)

        monkeypatch.setattr(transcript, "_fsync_all", recorded)
        store.end_turn(state, "ok")
        await asyncio.wait_for(flushed.wait(), 10)

    asyncio.run(second())
    assert rounds == [[store.path(KEY)]]


async def test_a_flush_that_cannot_run_is_logged_and_its_files_wait_for_the_next(
    tmp_path, monkeypatch, caplog
):
    import asyncio

    from agent.sessions import transcript

    monkeypatch.setattr(transcript, "SYNC_WITHIN", 3600.0)
    calls: list[int] = []

    def broken(paths: set) -> None:
        calls.append(len(paths))
        if len(calls) == 1:
            raise RuntimeError("cannot schedule new futures after shutdown")

    monkeypatch.setattr(transcript, "_fsync_all", broken)
    store = SessionStore(tmp_path)
    store.end_turn(store.create(KEY, "s"), "ok")
    store._start_flush()  # as the timer would
    flushing = next(iter(store._flushes))
    await asyncio.wait({flushing}, timeout=10)
    assert "making transcripts durable failed" in caplog.text
    assert store._unsynced == {store.path(KEY)}  # kept for the next
    await store.close()
    assert calls == [1, 1] and store._unsynced == set()


def count_opens(monkeypatch) -> list[str]:
    """The paths ``os.open`` is asked for from here on."""
    opened: list[str] = []
    real_open = os.open

    def counting_open(path, *args, **kwargs):
        opened.append(os.fspath(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", counting_open)
    return opened


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def test_while_a_flush_is_due_a_transcript_is_opened_once_and_each_line_is_in_it_at_once(
    tmp_path, monkeypatch
):
    """A turn's lines go through one descriptor, kept until the flush that is due closes it;
    each line is in the file as soon as it is written (a killed process loses none)."""
    from agent.sessions import transcript

    monkeypatch.setattr(transcript, "SYNC_WITHIN", 3600.0)
    opened = count_opens(monkeypatch)
    before = _fds()
    store = SessionStore(tmp_path)
    state = store.create(KEY, "s")  # no flush due yet: opened and closed
    store.end_turn(state, "ok")  # the same; this turn's end makes a flush due
    for n in range(5):
        store.append_message(state, {"role": "user", "content": f"q{n}"})
        assert store.read(KEY).messages[-1]["content"] == f"q{n}"
        store.append_usage(state, Usage(input=3))
        store.end_turn(state, "ok")
    assert opened.count(str(store.path(KEY))) == 3  # 17 lines
    assert _fds() == before + 1
    await store.close()
    assert _fds() == before and store._files.held == {}
    store.append_message(state, {"role": "user", "content": "after the stop"})  # not kept
    assert _fds() == before
    assert [m["content"] for m in store.load(KEY).messages][-2:] == ["q4", "after the stop"]


async def test_a_transcript_held_open_and_then_archived_gets_no_later_line(tmp_path, monkeypatch):
    from agent.sessions import transcript

    monkeypatch.setattr(transcript, "SYNC_WITHIN", 3600.0)
    store = SessionStore(tmp_path)
    state = store.create(KEY, "s")
    store.end_turn(state, "ok")
    store.append_message(state, {"role": "user", "content": "before /new"})
    assert KEY in store._files.held
    archived = store.archive(KEY)
    assert archived is not None and KEY not in store._files.held
    store.append_message(store.create(KEY, "s2"), {"role": "user", "content": "after /new"})
    text = archived.read_text()
    assert "before /new" in text and "after /new" not in text
    assert [m["content"] for m in store.load(KEY).messages] == ["after /new"]
    await store.close()


async def test_no_more_transcripts_than_the_cap_are_held_open(tmp_path, monkeypatch):
    from agent.sessions import transcript

    monkeypatch.setattr(transcript, "SYNC_WITHIN", 3600.0)
    monkeypatch.setattr(transcript, "OPEN_KEPT", 2)
    before = _fds()
    store = SessionStore(tmp_path)
    keys = [SessionKey("telegram", "private", str(n)) for n in range(5)]
    states = [store.create(key, "s") for key in keys]
    store.end_turn(states[0], "ok")
    for state in states:
        store.append_message(state, {"role": "user", "content": "hi"})
    assert len(store._files.held) == 2 and _fds() == before + 2
    await store.close()
    assert _fds() == before
    assert all(store.load(k).messages[-1]["content"] == "hi" for k in keys)


async def test_a_line_written_from_a_tools_thread_opens_its_own_file(tmp_path, monkeypatch):
    """A tool run in a worker thread records what it exposed (``mark_exposed``): that write
    never uses a descriptor the loop holds, which the flush may close under it."""
    import asyncio

    from agent.sessions import transcript

    monkeypatch.setattr(transcript, "SYNC_WITHIN", 3600.0)
    store = SessionStore(tmp_path)
    state = store.create(KEY, "s")
    store.end_turn(state, "ok")
    store.append_message(state, {"role": "user", "content": "read that file"})
    held = dict(store._files.held)
    assert list(held) == [KEY]
    opened = count_opens(monkeypatch)
    await asyncio.to_thread(store.mark_exposed, state, "file chats/5/notes.md")
    assert opened == [str(store.path(KEY))] and store._files.held == held
    monkeypatch.undo()
    await store.close()
    assert store.load(KEY).exposed == ["file chats/5/notes.md"]


async def test_close_waits_for_a_flush_that_began_while_it_waited(tmp_path, monkeypatch):
    """A turn that ends during the stop starts a flush of its own while ``close`` waits for the
    one under way; ``close`` returns only once that one is done as well."""
    import asyncio
    import threading

    from agent.sessions import transcript

    monkeypatch.setattr(transcript, "SYNC_WITHIN", 0.0)
    loop = asyncio.get_running_loop()
    started = [asyncio.Event(), asyncio.Event()]
    release = [threading.Event(), threading.Event()]
    seen: list[tuple[str, bool]] = []
    calls = 0
    real = transcript._fsync_all

    def slow(paths: set) -> None:
        nonlocal calls
        n, calls = calls, calls + 1
        if n < 2:
            loop.call_soon_threadsafe(started[n].set)
            release[n].wait(10)
        seen.extend((p.name, p.exists()) for p in paths)
        real(paths)

    monkeypatch.setattr(transcript, "_fsync_all", slow)
    store = SessionStore(tmp_path)
    store.end_turn(store.create(KEY, "s"), "ok")
    await asyncio.wait_for(started[0].wait(), 10)
    closing = asyncio.create_task(store.close())
    await asyncio.sleep(0)  # one turn of the loop: close is now waiting for the first flush
    other = SessionKey("telegram", "private", "43")
    store.end_turn(store.create(other, "s"), "ok")
    await asyncio.wait_for(started[1].wait(), 10)  # its flush began while close waited
    release[0].set()
    done, _ = await asyncio.wait({closing}, timeout=0.5)
    assert not done  # the second flush is still in hand
    release[1].set()
    await asyncio.wait_for(closing, 10)
    assert (store.path(other).name, True) in seen
