"""The contract's session keys: every platform's key made in one place, privacy by scope."""

from __future__ import annotations

import pytest

from gateway.contract import events
from gateway.contract.events import Scope, SessionKey


def test_each_platform_key_reads_as_documented():
    assert str(events.telegram_private(42)) == "telegram:private:42"
    assert str(events.telegram_group(-100, 7)) == "telegram:group:-100:topic:7"
    assert str(events.telegram_group(-100)) == "telegram:group:-100"
    assert str(events.discord_dm(9)) == "discord:dm:9"
    assert str(events.discord_channel(8)) == "discord:channel:8"
    assert str(events.discord_thread(7)) == "discord:thread:7"
    assert str(events.TERMINAL) == "terminal:private:local"


def test_only_the_owners_direct_chats_are_private():
    private = [events.telegram_private(1), events.discord_dm(1), events.TERMINAL]
    shared = [
        events.telegram_group(-1),
        events.telegram_group(-1, 2),
        events.discord_channel(1),
        events.discord_thread(1),
        events.guest_of(events.telegram_private(5)),
        events.guest_of(events.discord_dm(5)),
    ]
    assert all(k.private for k in private)
    assert not any(k.private for k in shared)
    assert {s for s in Scope if s.private} == {Scope.PRIVATE, Scope.DM}


def test_a_job_is_as_private_as_the_chat_it_reports_to():
    assert events.job_key("daily-summary", events.telegram_private(1)).private
    shared = events.job_key("r1", events.telegram_group(-5))
    assert not shared.private and str(shared) == "cron:shared:r1@telegram-group--5"
    assert events.audience_of(shared) == events.audience_of(events.telegram_group(-5))


def test_the_audience_follows_from_the_key():
    group = events.audience_of(events.telegram_group(-5))
    assert group.chat == "telegram-group--5" and not group.private
    # A forum topic is the same people as its group; a thread is a chat apart.
    assert events.audience_of(events.telegram_group(-5, 9)) == group
    assert events.audience_of(events.discord_thread(7)) != events.audience_of(
        events.discord_channel(7)
    )
    guest = events.audience_of(events.guest_of(events.telegram_private(5)))
    assert guest.chat == "telegram-guest-5"
    for key in (events.telegram_private(1), events.discord_dm(1), events.TERMINAL):
        assert events.audience_of(key) is events.OWNER or events.audience_of(key).private


@pytest.mark.parametrize(
    "text",
    ["telegram:private:42", "telegram:group:-100:topic:7", "discord:thread:9", "cron:shared:x"],
)
def test_keys_round_trip_through_text(text):
    key = SessionKey.parse(text)
    assert str(key) == text and isinstance(key.scope, Scope)


@pytest.mark.parametrize(
    "text", ["telegram:owner:42", "telegram:private", "a:b:c:d", "telegram:private:4 2", ""]
)
def test_malformed_or_unknown_keys_are_refused(text):
    with pytest.raises(ValueError):
        SessionKey.parse(text)


def test_a_scope_given_as_text_becomes_the_enum_and_an_unknown_one_is_refused():
    assert SessionKey("x", "group", "1").scope is Scope.GROUP  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="scope"):
        SessionKey("x", "owner", "1")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text",
    [
        "NO_REPLY",
        " NO_REPLY\n",
        "**NO_REPLY**",
        "`HEARTBEAT_OK`",
        "_NO_REPLY_",
        "NO_REPLY.",
        "**HEARTBEAT_OK**!",
        "~~NO_REPLY~~ ",
    ],
)
def test_a_silent_answer_is_silent_however_the_model_dresses_it(text):
    assert events.silent(text)
    assert events.could_be_silent(text)


@pytest.mark.parametrize(
    "text", ["", "NO", "NO_REPLY because", "Say NO_REPLY", "no_reply", "NO_REPLY: the plan", "OK"]
)
def test_an_answer_with_anything_else_is_not_silent(text):
    assert not events.silent(text)
