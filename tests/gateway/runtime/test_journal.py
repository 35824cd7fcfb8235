"""The journal and outbox (gateway/journal.py), and what the gateway does with them on start:
each state a crash can leave is set up on disk, then a gateway starts on it."""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agent.sessions.transcript import SessionStore
from gateway.contract.events import Attachment, InboundMessage, OutboundMessage
from gateway.runtime.delivery import UNCERTAIN_NOTE
from gateway.runtime.journal import Journal
from tests.conftest import PRIVATE
from tests.fakes.anthropic_api import Reply, last_user_text, tool_results


def _journal(home: Path) -> Journal:
    return Journal(home / "state" / "gateway.sqlite")


def _msg(text: str, message_id: str) -> InboundMessage:
    return InboundMessage(PRIVATE, text, sender_id="1", message_id=message_id)


def _user(text: str) -> dict:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def test_numbers_are_never_reused_and_an_answer_is_queued_atomically(tmp_path):
    journal = Journal(tmp_path / "g.sqlite")
    first = journal.take(_msg("a", "1"))
    journal.answer([first], OutboundMessage(PRIVATE, "reply"))
    second = journal.take(_msg("b", "2"))
    assert first.seq is not None and second.seq is not None and second.seq > first.seq
    assert [m.text for m in journal.unanswered()] == ["b"]
    [row] = journal.unsettled()
    assert row.out.text == "reply" and row.status == "pending"
    # A fresh journal starts somewhere else, so its numbers can't match an old transcript's.
    other = Journal(tmp_path / "other.sqlite").take(_msg("c", "3"))
    assert other.seq is not None and abs(other.seq - first.seq) > 1000


def test_a_platform_message_is_taken_once_and_old_ids_are_forgotten(tmp_path):
    journal = Journal(tmp_path / "g.sqlite")
    assert journal.first_time(_msg("a", "7"))
    assert not journal.first_time(_msg("a again", "7"))
    assert journal.first_time(_msg("no id", None))  # type: ignore[arg-type]
    journal.prune(datetime.now(UTC) + timedelta(days=3))
    assert journal.first_time(_msg("a", "7"))


async def test_a_tool_call_cut_off_by_a_crash_is_closed_and_the_turn_finished(
    home, fake_api, start_gateway
):
    journal = _journal(home)
    msg = journal.take(_msg("what's on my list?", "m1"))
    journal.close()
    store = SessionStore(home / "state" / "sessions")
    state = store.create(PRIVATE, "system")
    store.append_message(state, _user("what's on my list?"), [msg.seq])
    use = {"type": "tool_use", "id": "toolu_1", "name": "memory_search", "input": {"query": "x"}}
    store.append_message(state, {"role": "assistant", "content": [use]})

    fake_api.enqueue(Reply("Nothing on the list."))
    _gateway, chan = await start_gateway()
    await chan.wait_sent(1)
    assert chan.texts() == ["Nothing on the list."]
    [request] = fake_api.message_requests
    [result] = tool_results(request.body)
    assert result["tool_use_id"] == "toolu_1" and result.get("is_error")
    assert request.body["messages"][0]["content"][0]["text"].count("what's on my list?") == 1


async def test_an_answer_written_before_a_crash_is_sent_without_asking_the_model_again(
    home, fake_api, start_gateway
):
    journal = _journal(home)
    msg = journal.take(_msg("hello", "m1"))
    journal.close()
    store = SessionStore(home / "state" / "sessions")
    state = store.create(PRIVATE, "system")
    store.append_message(state, _user("hello"), [msg.seq])
    answer = {"role": "assistant", "content": [{"type": "text", "text": "Hi there."}]}
    store.append_message(state, answer)

    gateway, chan = await start_gateway()
    await chan.wait_sent(1)
    assert chan.texts() == ["Hi there."]
    assert fake_api.message_requests == []
    assert gateway.journal is not None and gateway.journal.unanswered() == []


async def test_queued_replies_are_sent_and_interrupted_ones_become_a_note(home, start_gateway):
    journal = _journal(home)
    pending = journal.queue(OutboundMessage(PRIVATE, "queued before the crash"))
    cut = journal.queue(OutboundMessage(PRIVATE, "was being sent"))
    journal.sending(cut)
    journal.close()

    gateway, chan = await start_gateway()
    await chan.wait_sent(2)
    assert sorted(chan.texts()) == sorted(["queued before the crash", UNCERTAIN_NOTE])
    assert [m.ident for m in chan.sent if m.text != UNCERTAIN_NOTE] == [f"c{pending}"]
    assert [(r.id, r.status) for r in gateway.undelivered()] == [(cut, "uncertain")]


async def test_where_sends_are_idempotent_an_interrupted_send_is_repeated(
    home, start_gateway, monkeypatch
):
    from tests.conftest import RecordingChannel

    monkeypatch.setattr(RecordingChannel, "idempotent_sends", True)
    journal = _journal(home)
    cut = journal.queue(OutboundMessage(PRIVATE, "was being sent"))
    journal.sending(cut)
    journal.close()

    gateway, chan = await start_gateway()
    [sent] = await chan.wait_sent(1)
    assert sent.text == "was being sent" and sent.ident == f"c{cut}"
    assert gateway.undelivered() == []


async def test_a_message_delivered_twice_by_the_platform_is_answered_once(fake_api, start_gateway):
    _gateway, chan = await start_gateway()
    same = _msg("hello", "m-42")
    assert chan._sink is not None
    await asyncio.wait_for(chan._sink(same), 10)
    await asyncio.wait_for(chan._sink(same), 10)
    assert chan.texts() == ["echo: hello"]
    assert len(fake_api.message_requests) == 1


async def test_a_message_not_taken_is_not_marked_seen(fake_api, start_gateway, monkeypatch):
    """Seen and taken are one commit: a message that could not be written (a full disk) is
    not remembered as seen, so the platform's next delivery of it is answered."""
    gateway, chan = await start_gateway()
    journal = gateway.journal
    assert journal is not None and chan._sink is not None
    commits = []
    journal.db.set_trace_callback(lambda sql: commits.append(sql) if sql == "COMMIT" else None)
    same = _msg("hello", "m-7")

    def full(msg):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(journal, "take", full)
    with pytest.raises(sqlite3.OperationalError):
        await asyncio.wait_for(chan._sink(same), 10)
    assert commits == []  # rolled back: neither seen nor taken
    monkeypatch.undo()
    await asyncio.wait_for(chan._sink(same), 10)
    assert chan.texts() == ["echo: hello"]
    assert len(fake_api.message_requests) == 1
    assert journal.unanswered() == []
    journal.db.set_trace_callback(None)


async def test_a_stopped_turn_is_not_answered_after_a_restart(fake_api, start_gateway):
    release = asyncio.Event()

    async def brain(body):
        await release.wait()
        return Reply("late")

    fake_api.brain = brain
    gateway, chan = await start_gateway()
    pending = chan.push("a long job")
    await fake_api.wait_for_requests(1)
    await asyncio.wait_for(chan.push("/stop"), 10)
    await asyncio.wait_for(pending, 10)
    release.set()
    assert gateway.journal is not None and gateway.journal.unanswered() == []
    fake_api.brain = lambda body: Reply("re: " + last_user_text(body))
    await gateway.stop()
    _gateway2, chan2 = await start_gateway()
    await asyncio.wait_for(chan2.push("next"), 10)
    assert chan2.texts()[-1].endswith("next") and len(chan2.texts()) == 1


async def test_answering_a_batch_clears_every_message_of_it_from_the_journal(
    fake_api, start_gateway
):
    release = asyncio.Event()

    async def brain(body):
        await release.wait()
        return Reply("re: " + last_user_text(body))

    fake_api.brain = brain
    gateway, chan = await start_gateway()
    first = chan.push("first")
    await fake_api.wait_for_requests(1)
    # Sent while the first is being answered: collected into one batch for the next turn.
    batch = [chan.push(f"more {i}") for i in range(3)]
    assert gateway.journal is not None
    assert len(gateway.journal.unanswered()) == 4
    release.set()
    await asyncio.wait_for(asyncio.gather(first, *batch), 10)
    assert len(fake_api.message_requests) == 2  # the three came as one batch
    assert all(f"more {i}" in fake_api.message_requests[1].raw for i in range(3))
    assert gateway.journal.unanswered() == []
    await gateway.stop()
    # Nothing is owed after a restart: no turn runs until a new message arrives.
    _gateway2, chan2 = await start_gateway()
    await asyncio.wait_for(chan2.push("new"), 10)
    assert len(fake_api.message_requests) == 3
    assert len(chan2.texts()) == 1 and chan2.texts()[0].endswith("\nnew")


# -- the journal file itself ----------------------------------------------------------------------


def test_a_new_journal_is_private_in_a_private_folder_and_opens_again(tmp_path):
    path = tmp_path / "state" / "gateway.sqlite"
    Journal(path).close()
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700
    again = Journal(path)  # the folder exists now: no error
    assert again.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_sent_replies_are_kept_a_week_and_failed_ones_until_seen(tmp_path):
    from gateway.runtime.journal import SendStatus

    journal = Journal(tmp_path / "g.sqlite")
    ids = [journal.queue(OutboundMessage(PRIVATE, f"reply {i}")) for i in range(3)]
    journal.settle(ids[0], SendStatus.SENT)
    journal.settle(ids[1], SendStatus.FAILED, "refused")
    journal.settle(ids[2], SendStatus.SENT)

    def left() -> list[int]:
        return [r[0] for r in journal.db.execute("SELECT id FROM outbox ORDER BY id")]

    now = datetime.now(UTC)
    journal.prune(now + timedelta(days=6, hours=23))
    assert left() == ids
    journal.prune(now + timedelta(days=7, hours=1))
    assert left() == [ids[1]]  # the failed one stays for `corvid status`


def test_message_ids_are_remembered_two_days(tmp_path):
    journal = Journal(tmp_path / "g.sqlite")
    assert journal.first_time(_msg("a", "m-1"))
    now = datetime.now(UTC)
    journal.prune(now + timedelta(days=1, hours=23))
    assert not journal.first_time(_msg("a", "m-1"))
    journal.prune(now + timedelta(days=2, hours=1))
    assert journal.first_time(_msg("a", "m-1"))


def test_undelivered_lists_the_newest_twenty(tmp_path):
    from gateway.runtime.journal import SendStatus

    journal = Journal(tmp_path / "g.sqlite")
    for i in range(25):
        journal.settle(journal.queue(OutboundMessage(PRIVATE, f"lost {i}")), SendStatus.FAILED)
    shown = journal.undelivered()
    assert [o.out.text for o in shown] == [f"lost {i}" for i in range(24, 4, -1)]


def test_an_answer_that_cannot_be_queued_leaves_the_messages_owed(tmp_path, monkeypatch):
    journal = Journal(tmp_path / "g.sqlite")
    taken = [journal.take(_msg(t, t)) for t in ("a", "b")]

    def broken(*args):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(journal, "_insert", broken)
    with pytest.raises(sqlite3.OperationalError):
        journal.answer(taken, OutboundMessage(PRIVATE, "reply"))
    assert [m.text for m in journal.unanswered()] == ["a", "b"]  # rolled back, not half done
    monkeypatch.undo()
    journal.answer(taken, OutboundMessage(PRIVATE, "reply"))
    assert journal.unanswered() == []


def test_a_row_that_cannot_be_read_is_dropped_once(tmp_path, caplog):
    journal = Journal(tmp_path / "g.sqlite")
    journal.take(_msg("fine", "1"))
    journal.db.execute(
        "INSERT INTO inbound (key, payload, created) VALUES ('x', '{not json', '2026-01-01')"
    )
    assert [m.text for m in journal.unanswered()] == ["fine"]
    assert journal.db.execute("SELECT count(*) FROM inbound").fetchone()[0] == 1
    assert [m.text for m in journal.unanswered()] == ["fine"]
    assert sum("cannot be read" in r.message for r in caplog.records) == 1


def test_messages_come_back_whole_with_their_files(tmp_path):
    journal = Journal(tmp_path / "g.sqlite")
    photo = Attachment("image", "image/png", "p.png", data=b"\x89PNG")
    saved = Attachment("document", "text/plain", "a.txt", path="inbox/private/2026-11-22/a.txt")
    msg = InboundMessage(
        PRIVATE,
        "/new fresh start",
        sender_id="1",
        sender_name="Ada",
        message_id="9",
        attachments=(photo, saved),
        context=("Bob: earlier",),
    )
    journal.take(msg)
    [back] = Journal(tmp_path / "g.sqlite").unanswered()
    assert back.attachments == (photo, saved)
    assert (back.text, back.sender_name, back.message_id, back.context) == (
        "/new fresh start",
        "Ada",
        "9",
        ("Bob: earlier",),
    )
    assert back.received_at == msg.received_at
    assert back.command is not None and back.command.name == "new"


def test_a_damaged_journal_is_an_error_when_only_looking(tmp_path):
    path = tmp_path / "g.sqlite"
    path.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4096)
    with pytest.raises(sqlite3.DatabaseError):
        Journal(path, repair=False)
    assert path.read_bytes().startswith(b"SQLite format 3")  # left where it was


def test_a_finished_stream_leaves_nothing_to_take_back(tmp_path):
    from gateway.contract.events import SessionKey
    from gateway.runtime.journal import SendStatus

    journal = Journal(tmp_path / "g.sqlite")
    other = SessionKey.parse("telegram:group:-5")
    for ref in ("10", "11"):
        journal.placed(PRIVATE, ref)
    journal.placed(other, "10")  # the same id in another chat is another message
    oid = journal.queue(OutboundMessage(PRIVATE, "the whole answer"))
    journal.settle(oid, SendStatus.SENT, live=["10", "11"])
    assert journal.half_written() == [(other, "10")]
    assert journal.unsettled() == []  # and the answer itself is recorded as sent
    journal.finished(other, ["10"])
    assert journal.half_written() == []


# -- what a mutation audit found no test defending ---------------------------------------------


def test_settling_a_message_records_how_it_went(tmp_path):
    from gateway.runtime.journal import SendStatus

    journal = Journal(tmp_path / "deep" / "er" / "gateway.sqlite")  # folders made as needed
    sent = journal.queue(OutboundMessage(PRIVATE, "delivered"))
    journal.sending(sent)
    journal.settle(sent, SendStatus.SENT)
    failed = journal.queue(OutboundMessage(PRIVATE, "refused"), origin="job:daily@1")
    journal.sending(failed)
    journal.settle(failed, SendStatus.FAILED, "403 Forbidden")
    assert journal.unsettled() == []  # nothing is owed after a restart
    (row,) = journal.undelivered()
    assert (row.out.text, row.status, row.error) == ("refused", "failed", "403 Forbidden")
    found = journal.by_origin("job:daily@1")
    assert found is not None and found.out.text == "refused"
    assert journal.by_origin("job:other@1") is None
    journal.close()
    with pytest.raises(sqlite3.ProgrammingError):  # closed for real
        journal.db.execute("SELECT 1")


def deny_commit(db: sqlite3.Connection) -> None:
    """Make every COMMIT on ``db`` fail, as a full disk or a lock would."""

    def authorizer(action: int, arg1: str | None, *_: object) -> int:
        refused = action == sqlite3.SQLITE_TRANSACTION and arg1 == "COMMIT"
        return sqlite3.SQLITE_DENY if refused else sqlite3.SQLITE_OK

    db.set_authorizer(authorizer)


def test_a_commit_that_fails_is_rolled_back_and_leaves_the_connection_usable(tmp_path):
    journal = Journal(tmp_path / "gateway.sqlite")
    deny_commit(journal.db)
    with pytest.raises(sqlite3.DatabaseError), journal.transaction():
        journal.queue(OutboundMessage(PRIVATE, "never kept"))
    assert not journal.db.in_transaction
    journal.db.set_authorizer(None)
    with journal.transaction():
        journal.queue(OutboundMessage(PRIVATE, "kept"))
    assert [r.out.text for r in journal.unsettled()] == ["kept"]
    journal.close()


def test_a_failed_transaction_is_rolled_back_and_its_error_raised(tmp_path):
    journal = Journal(tmp_path / "gateway.sqlite")
    with pytest.raises(ValueError, match="midway"), journal.transaction():
        journal.queue(OutboundMessage(PRIVATE, "half"))
        raise ValueError("midway")
    assert journal.unsettled() == []  # the insert went with the rollback
    with journal.transaction():  # and the connection is usable again
        journal.queue(OutboundMessage(PRIVATE, "whole"))
    assert [r.out.text for r in journal.unsettled()] == ["whole"]
    journal.close()


def test_doctor_counts_each_kind_of_row_that_cannot_be_read(tmp_path):
    from gateway.runtime.journal import unreadable_rows

    journal = Journal(tmp_path / "g.sqlite")
    journal.take(_msg("fine", "1"))
    journal.queue(OutboundMessage(PRIVATE, "a reply"))
    journal.db.execute(
        "INSERT INTO live (key, ref, created) VALUES (?, '7', '2026-01-01')", (str(PRIVATE),)
    )
    assert unreadable_rows(journal.db) == 0
    journal.db.execute(
        "INSERT INTO outbox (key, text, status, created, updated)"
        " VALUES ('nonsense', 'x', 'pending', '2026-01-01', '2026-01-01')"
    )
    journal.db.execute(
        "INSERT INTO inbound (key, payload, created) VALUES ('x', '{not json', '2026-01-01')"
    )
    journal.db.execute("INSERT INTO live (key, ref, created) VALUES ('nonsense', '8', '2026')")
    assert unreadable_rows(journal.db) == 3
    journal.close()


def test_a_half_written_message_that_cannot_be_read_is_dropped_once(tmp_path, caplog):
    journal = Journal(tmp_path / "g.sqlite")
    journal.db.execute(
        "INSERT INTO live (key, ref, created) VALUES (?, '7', '2026-01-01')", (str(PRIVATE),)
    )
    journal.db.execute("INSERT INTO live (key, ref, created) VALUES ('nonsense', '8', '2026')")
    assert journal.half_written() == [(PRIVATE, "7")]
    assert journal.db.execute("SELECT key FROM live").fetchall() == [(str(PRIVATE),)]
    assert journal.half_written() == [(PRIVATE, "7")]
    assert sum("cannot be read" in r.message for r in caplog.records) == 1
    journal.close()


def test_a_journal_damaged_inside_is_found_by_its_check_and_set_aside(tmp_path):
    """A file SQLite opens without a word, but one of whose pages is not sound: only the
    check made on opening finds it."""
    path = tmp_path / "g.sqlite"
    journal = Journal(path)
    for i in range(2000):
        journal.take(_msg(f"message {i}", str(i)))
    journal.db.execute("PRAGMA journal_mode=DELETE")  # folded into the file, no -wal beside it
    journal.close()
    data = bytearray(path.read_bytes())
    size = int.from_bytes(data[16:18], "big")
    data[4 * size + 7] += 5  # page 5's count of fragmented bytes
    path.write_bytes(bytes(data))
    with pytest.raises(sqlite3.DatabaseError, match=r"^damaged: "):
        Journal(path, repair=False)
    fresh = Journal(path)
    assert fresh.unanswered() == []  # a new journal; the damaged one is kept aside
    assert len(list(tmp_path.glob("g.sqlite.unreadable-*"))) == 1
    fresh.close()


def test_the_journal_keeps_only_its_newest_pages_in_memory(tmp_path):
    """Rows are added at the end and read while recent: SQLite's default 2 MiB page cache
    filled with old sent messages as the file grew (a long soak's RSS)."""
    journal = _journal(tmp_path)
    try:
        assert journal.db.execute("PRAGMA cache_size").fetchone()[0] == -256
    finally:
        journal.close()
