"""The shared access policy and the pairing store behind it."""

from __future__ import annotations

import json
import os
import stat

import pytest

from channels.access import Access, Action, Arrival
from channels.pairing import ALPHABET, PairingError, PairingStore
from gateway.contract.events import SessionKey
from tests.fakes.clock import FakeClock

DM = SessionKey("x", "private", "7")
GROUP = SessionKey("x", "group", "-100")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store(tmp_path, clock) -> PairingStore:
    return PairingStore(tmp_path / "state" / "pairing.json", clock=clock)


def _access(store: PairingStore, clock: FakeClock, **kw) -> Access:
    opts = {"allow_from": ["1"], "groups": ["-100"], "pairing": store, "clock": clock}
    return Access("x", **{**opts, **kw})


def test_codes_are_eight_unambiguous_characters_and_one_per_user(store):
    req, created = store.request("x", "7", "Eve")
    assert created and req is not None
    assert len(req.code) == 8
    assert set(req.code) <= set(ALPHABET)
    assert not set("01OIL") & set(ALPHABET)
    again, created = store.request("x", "7", "Eve")
    assert not created and again == req


def test_one_code_per_stranger_many_strangers_bounded_and_codes_expire(store, clock):
    from channels.pairing import MAX_PENDING

    first, created = store.request("x", "a", "")
    again, created_again = store.request("x", "a", "")
    assert created and not created_again and again == first  # one place per stranger
    # Many can wait, up to a bound on the file; then the oldest gives way, so a crowd of
    # strangers cannot keep a friend out.
    for uid in range(1, MAX_PENDING):
        clock.tick(1)
        assert store.request("x", f"s{uid}", "")[0] is not None
    friend, created = store.request("x", "friend", "")
    assert created and friend is not None
    waiting = [p.user_id for p in store.pending() if p.channel == "x"]
    assert len(waiting) == MAX_PENDING and "a" not in waiting and "friend" in waiting
    with pytest.raises(PairingError):
        store.approve(first.code)  # the code that gave way no longer works
    assert store.approve(friend.code).user_id == "friend"
    assert store.request("other", "late", "")[0] is not None  # per channel
    clock.tick(3601)
    assert store.pending() == []
    assert store.request("x", "late", "")[0] is not None


def test_the_owner_can_deny_one_request_or_clear_them_all(store):
    a, _ = store.request("x", "a", "Eve")
    b, _ = store.request("x", "b", "Mallory")
    assert a is not None and b is not None
    assert store.deny(a.code.lower()).user_id == "a"
    with pytest.raises(PairingError):
        store.approve(a.code)  # a denied code no longer works
    assert [p.user_id for p in store.pending()] == ["b"]
    assert store.clear() == 1 and store.pending() == []
    with pytest.raises(PairingError, match="no pending pairing code"):
        store.deny(b.code)


def test_approve_moves_the_user_to_the_approved_list(store, tmp_path):
    req, _ = store.request("x", "7", "Eve")
    assert not store.is_approved("x", "7")
    got = store.approve(req.code.lower()[:4] + " " + req.code.lower()[4:])
    assert got.user_id == "7"
    assert store.is_approved("x", "7")
    assert store.pending() == []
    with pytest.raises(PairingError, match="no pending pairing code"):
        store.approve(req.code)  # one-time
    mode = stat.S_IMODE(os.stat(tmp_path / "state" / "pairing.json").st_mode)
    assert mode == 0o600
    assert store.revoke("x", "7")
    assert not store.is_approved("x", "7")


def test_an_expired_code_cannot_be_approved(store, clock):
    req, _ = store.request("x", "7", "Eve")
    clock.tick(3601)
    with pytest.raises(PairingError, match="expired"):
        store.approve(req.code)


def test_a_corrupt_pairing_file_is_an_error_not_a_reset(store):
    store.path.parent.mkdir(parents=True, exist_ok=True)
    store.path.write_text("{not json")
    with pytest.raises(PairingError, match="cannot be read"):
        store.approve("ABCDEFGH")
    assert store.path.read_text() == "{not json"


def test_unknown_dm_gets_a_code_and_nothing_reaches_the_agent(store, clock):
    access = _access(store, clock)
    verdict = access.decide(Arrival(DM, "7", "Eve", "hi"))
    assert verdict.action is Action.REPLY
    code = store.pending()[0].code
    assert f"corvid pairing approve {code}" in verdict.text
    # Asking again right away is not answered again (no spam), still not delivered.
    assert access.decide(Arrival(DM, "7", "Eve", "hi?")).action is Action.DROP
    clock.tick(61)
    assert code in access.decide(Arrival(DM, "7", "Eve", "hello?")).text
    store.approve(code)
    verdict = access.decide(Arrival(DM, "7", "Eve", "now?"))
    assert verdict.action is Action.DELIVER
    # ...as a guest, in a session of their own that is not private.
    assert verdict.key == SessionKey("x", "guest", "7")
    assert not verdict.key.private


def test_allowlisted_dm_is_delivered_unless_unsupported(store, clock):
    access = _access(store, clock)
    assert access.decide(Arrival(DM, "1", "Owner", "hi")).action is Action.DELIVER
    v = access.decide(Arrival(DM, "1", "Owner", "", unsupported="voice messages"))
    assert v.action is Action.REPLY and "voice messages" in v.text


def test_group_rules(store, clock):
    access = _access(store, clock, context_messages=2)
    base = {"group_ids": ("-100",)}
    assert access.decide(Arrival(GROUP, "5", "Bob", "chatter", **base)).action is Action.CONTEXT
    assert access.decide(Arrival(GROUP, "5", "Bob", "@bot hi", addressed=True, **base)).action is (
        Action.DELIVER
    )
    cmd = Arrival(GROUP, "5", "Bob", "/new", addressed=True, is_command=True, **base)
    assert access.decide(cmd).action is Action.REPLY  # only allowed users run commands
    assert access.decide(cmd).action is Action.DROP  # ...and that is said once a minute
    owner_cmd = Arrival(GROUP, "1", "Owner", "/new", addressed=True, is_command=True, **base)
    assert access.decide(owner_cmd).action is Action.DELIVER
    # A command the platform did not mark as one (odd leading space, no entity) is still one.
    clock.tick(61)
    sneaky = Arrival(GROUP, "5", "Bob", "\u3000/stop", addressed=True, **base)
    assert access.decide(sneaky).action is Action.REPLY


def test_unlisted_group_is_silent_except_a_hint_for_the_owner(store, clock):
    access = _access(store, clock)
    other = SessionKey("x", "group", "-200")
    stranger = Arrival(other, "5", "Bob", "@bot hi", addressed=True, group_ids=("-200",))
    assert access.decide(stranger).action is Action.DROP
    owner = Arrival(other, "1", "Owner", "@bot hi", addressed=True, group_ids=("-200",))
    verdict = access.decide(owner)
    assert verdict.action is Action.REPLY
    assert "-200" in verdict.text and "channels.x.groups" in verdict.text
    assert "`corvid reload`" in verdict.text and "restart" not in verdict.text  # live change


def test_group_context_is_bounded_and_taken_once(store, clock):
    access = _access(store, clock, context_messages=3)
    for i in range(5):
        access.remember(Arrival(GROUP, "5", "Bob", f"message {i} " + "x" * 1000))
    ctx = access.take_context(GROUP)
    assert len(ctx) == 3
    assert ctx[0].startswith("Bob: message 2 ")
    assert all(len(line) <= 505 for line in ctx)
    assert access.take_context(GROUP) == ()


def test_pairing_state_is_plain_json(store):
    req, _ = store.request("x", "7", "Eve")
    data = json.loads(store.path.read_text())
    assert data["pending"][0]["code"] == req.code


def test_a_revocation_is_seen_even_within_one_clock_tick(store):
    req, _ = store.request("x", "7", "Eve")
    store.approve(req.code)
    assert store.is_approved("x", "7")
    # Another process replaces the file with one of the same size and the same mtime, in
    # which 7 is no longer approved (8 is): only the new inode tells the two apart.
    st = store.path.stat()
    text = store.path.read_text().replace('"7"', '"8"')
    tmp = store.path.with_name("replacement.json")
    tmp.write_text(text)
    os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(tmp, store.path)
    assert store.path.stat().st_size == st.st_size
    assert not store.is_approved("x", "7")
    assert store.is_approved("x", "8")


# -- boundaries and failures ---------------------------------------------------------------------


def _dm(user: str, text: str = "hi", **kw) -> Arrival:
    return Arrival(SessionKey("x", "private", user), user, f"user{user}", text, **kw)


def test_a_stranger_is_told_once_a_minute_at_most(store, clock):
    access = _access(store, clock)
    assert access.decide(_dm("7")).action is Action.REPLY
    clock.tick(59.9)
    assert access.decide(_dm("7")).action is Action.DROP
    clock.tick(0.1)  # a full minute since the last notice
    again = access.decide(_dm("7"))
    assert again.action is Action.REPLY and "60 minutes" not in again.text
    assert "within 59 minutes" in again.text  # the same code, a minute older


def test_when_no_code_can_be_given_the_stranger_is_told_so(store, clock, tmp_path):
    full = PairingStore(tmp_path / "full.json", clock=clock, max_pending=1)
    access = _access(full, clock)
    assert "Your pairing code" in access.decide(_dm("7")).text
    clock.tick(1)
    assert "Your pairing code" in access.decide(_dm("8")).text  # 7's code gave way
    assert [p.user_id for p in full.pending()] == ["8"]
    (tmp_path / "full.json").write_text("[]")  # damaged: said, not a crash
    verdict = access.decide(_dm("9"))
    assert verdict.action is Action.REPLY
    assert "can't take new pairing requests right now" in verdict.text


def test_guests_and_the_owner_get_the_unsupported_notice_strangers_a_code(store, clock):
    req, _ = store.request("x", "8", "Gus")
    assert req is not None
    store.approve(req.code)
    access = _access(store, clock)
    for user in ("1", "8"):
        verdict = access.decide(_dm(user, "", unsupported="voice messages"))
        assert verdict.action is Action.REPLY and "can't read voice messages" in verdict.text
    assert "pairing code" in access.decide(_dm("7", "", unsupported="voice messages")).text


def test_an_unreadable_pairing_file_lets_no_guest_in(store, clock):
    req, _ = store.request("x", "8", "Gus")
    assert req is not None
    store.approve(req.code)
    access = _access(store, clock)
    assert access.decide(_dm("8")).action is Action.DELIVER
    store.path.write_text("{broken")
    assert access.is_guest("8") is False
    assert access.decide(_dm("1")).action is Action.DELIVER  # the owner is still let in


def test_group_context_lines_are_capped_at_500_characters(store, clock):
    access = _access(store, clock, context_messages=2)
    group = {"group_ids": ("-100",)}
    access.remember(Arrival(GROUP, "5", "Bob", "x" * 500, **group))
    access.remember(Arrival(GROUP, "5", "Bob", "y" * 501, **group))
    first, second = access.take_context(GROUP)
    assert first == "Bob: " + "x" * 500
    assert second == "Bob: " + "y" * 499 + "…"
    silent = _access(store, clock, context_messages=0)
    silent.remember(Arrival(GROUP, "5", "Bob", "hello", **group))
    assert silent.take_context(GROUP) == ()


def test_notices_are_remembered_within_bounds(store, clock):
    access = _access(store, clock)
    for i in range(10_001):
        access._may_notice("group", str(i))
    clock.tick(61)
    assert access._may_notice("group", "new")  # the old ones are dropped once past the bound
    assert len(access._noticed) == 1
    assert access._may_notice("group", "0")  # and a minute has passed for them anyway


# -- the pairing file ----------------------------------------------------------------------------


def test_codes_expire_exactly_at_their_time_and_say_how_long_they_last(store, clock):
    req, _ = store.request("x", "7", "Eve")
    assert req is not None and req.expires - req.created == 3600
    clock.tick(3599)
    assert [p.code for p in store.pending()] == [req.code]
    clock.tick(1)
    assert store.pending() == []
    with pytest.raises(PairingError, match="codes last 60 minutes"):
        store.approve(req.code)


def test_fifty_strangers_get_codes_the_fifty_first_takes_the_oldest_place(store, clock):
    for user in range(50):
        clock.tick(1)
        assert store.request("x", str(user), "someone")[0] is not None
    late, created = store.request("x", "50", "one too many")
    assert created and late is not None
    assert sorted(int(p.user_id) for p in store.pending()) == list(range(1, 51))
    assert store.request("y", "50", "another channel")[0] is not None


def test_a_pairing_file_that_is_not_an_object_is_an_error_and_a_partial_one_is_fine(store):
    store.path.parent.mkdir(parents=True, exist_ok=True)
    store.path.write_text("[]")
    with pytest.raises(PairingError, match="not a JSON object"):
        store.pending()
    store.path.write_text("{}")
    assert store.pending() == [] and store.approved() == {}
    req, _ = store.request("x", "7", "Eve")
    assert req is not None
    store.approve(req.code)
    assert store.approved() == {"x": {"7": {"name": "Eve", "approved_at": store.now()}}}


def test_a_failed_write_leaves_the_old_file_and_no_temporary_one(store, monkeypatch):
    store.request("x", "7", "Eve")
    before = store.path.read_text()

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)  # the new contents cannot be made durable
    with pytest.raises(OSError, match="No space left"):
        store.request("x", "8", "Gus")
    monkeypatch.undo()
    assert store.path.read_text() == before
    assert sorted(p.name for p in store.path.parent.iterdir()) == ["pairing.json", "pairing.lock"]


def test_requests_from_several_processes_at_once_are_all_kept(tmp_path):
    import multiprocessing

    path = tmp_path / "pairing.json"
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_ask_for_codes, args=(str(path), n)) for n in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
        assert w.exitcode == 0
    users = {p.user_id for p in PairingStore(path).pending()}
    assert users == {f"{n}-{i}" for n in range(4) for i in range(10)}


def _ask_for_codes(path: str, worker: int) -> None:
    from pathlib import Path

    store = PairingStore(Path(path))
    for i in range(10):
        store.request("x", f"{worker}-{i}", "someone")


def test_one_context_message_is_kept_when_one_is_configured(store, clock):
    access = _access(store, clock, context_messages=1)
    group = {"group_ids": ("-100",)}
    access.remember(Arrival(GROUP, "5", "Bob", "first", **group))
    access.remember(Arrival(GROUP, "5", "Bob", "second", **group))
    assert access.take_context(GROUP) == ("Bob: second",)


def test_arrivals_carry_no_lone_surrogates():
    # A platform's JSON can carry half a surrogate pair; no file or database would take it.
    a = Arrival(DM, "7", "Eve\ud800", "hi \udc00 there")
    assert a.text == "hi \ufffd there" and a.sender_name == "Eve\ufffd"
    a.text.encode()  # would raise UnicodeEncodeError with the surrogate left in


def test_a_notice_waits_a_minute_from_the_last_one_whenever_the_clock_started(store, clock):
    access = _access(store, clock)
    clock.tick(100)  # the monotonic clock is not at zero in a running process
    assert access._may_notice("group", "5")
    clock.tick(30)
    assert not access._may_notice("group", "5")
    # Pruning a full table keeps the notices still within their minute.
    for i in range(10_001):
        access._noticed[("group", f"x{i}")] = clock.monotonic()
    assert not access._may_notice("group", "5")
    clock.tick(31)
    assert access._may_notice("group", "5")


def test_the_pairing_notice_names_the_minutes_left(store, clock):
    access = _access(store, clock)
    verdict = access.decide(_dm("7"))
    assert "within 60 minutes" in verdict.text
    clock.tick(45 * 60)  # the same code, asked about again: a quarter of an hour is left
    assert "within 15 minutes" in access.decide(_dm("7")).text


# -- what a mutation audit found no test defending ---------------------------------------------


def test_the_last_minute_of_a_code_is_one_minute(store, clock):
    access = _access(store, clock)
    access.decide(_dm("7"))
    clock.tick(60 * 60 - 30)  # half a minute left
    assert "within 1 minutes" in access.decide(_dm("7")).text


def test_an_addressed_message_the_bot_cannot_read_is_answered_in_a_group(store, clock):
    access = _access(store, clock)
    sticker = Arrival(GROUP, "5", "Bob", "", addressed=True, group_ids=("-100",),
                      unsupported="stickers")  # fmt: skip
    verdict = access.decide(sticker)
    assert verdict.action is Action.REPLY and "can't read stickers" in verdict.text


def test_the_pairing_file_and_its_lock_are_private_wherever_the_folder_is(tmp_path, clock):
    store = PairingStore(tmp_path / "a" / "b" / "pairing.json", clock=clock)
    store.request("x", "7", "Eve")
    for name in ("pairing.json", "pairing.lock"):
        assert stat.S_IMODE(os.stat(tmp_path / "a" / "b" / name).st_mode) == 0o600, name


def test_approvals_from_two_processes_at_once_are_all_kept(tmp_path, clock):
    """Each change reads, changes and writes the file under a lock: without it, two writers
    at once lose each other's approvals. Threads with their own stores stand in for two
    processes (the lock is per open file, so they exclude each other the same way)."""
    import threading

    path = tmp_path / "pairing.json"
    codes = []
    for n in range(40):
        one = PairingStore(path, clock=clock, max_pending=100)
        req, _ = one.request("x", str(100 + n), f"P{n}")
        codes.append(req.code)

    def approve(mine: list[str]) -> None:
        store = PairingStore(path, clock=clock, max_pending=100)
        for code in mine:
            store.approve(code)

    workers = [threading.Thread(target=approve, args=(codes[i::4],)) for i in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=30)
    assert len(PairingStore(path, clock=clock).approved()["x"]) == 40
