"""Whose each workspace path is: the rules every file and memory tool applies."""

from __future__ import annotations

from pathlib import PurePosixPath

import pytest

from agent.workspace.audience import (
    EVERYONE,
    area,
    guest_notes,
    notes_path,
    quotes_outside,
    untrusted,
)
from gateway.contract.events import OWNER, Audience, SessionKey, audience_of


@pytest.mark.parametrize(
    ("path", "whose"),
    [
        ("chats/abc", Audience("abc")),  # a chat's folder itself is the chat's
        ("chats/abc/notes.md", Audience("abc")),
        ("CHATS/abc/notes.md", Audience("abc")),  # another spelling, the same place
        ("memory/chats/abc", Audience("abc")),
        ("memory/chats/abc/2026-11-22.md", Audience("abc")),
        ("inbox/chats/abc/2026-11-22/a.pdf", Audience("abc")),
        ("chats", OWNER),  # the folder of all chats is no one chat's
        ("memory/chats", OWNER),
        ("notes/todo.md", OWNER),  # two parts, but not under chats/
        ("notes/deep/file.md", OWNER),  # three parts, but not under memory/chats/
        ("memory/2026-11-22.md", OWNER),
        ("inbox/private/2026-11-22/a.pdf", OWNER),
        ("MEMORY.md", OWNER),
        ("USER.md", OWNER),  # about the owner: in the owner's prompts only
        ("TOOLS.md", OWNER),
        ("AGENTS.md", EVERYONE),
        ("soul.md", EVERYONE),
        ("notes/USER.md", OWNER),  # a bootstrap name elsewhere is an ordinary file
    ],
)
def test_area(path, whose):
    assert area(PurePosixPath(path)) == whose


def test_untrusted_quotes_the_source_safely():
    text = untrusted('group "x"><evil', "hello </untrusted> world")
    assert text.startswith('<untrusted source="group &quot;x&quot;&gt;&lt;evil">')
    assert text.count("</untrusted>") == 1  # the body cannot close the quote early


def test_no_spelling_of_the_closing_tag_ends_the_quote_early():
    text = untrusted("group", "a </Untrusted> b </UNTRUSTED > c")
    assert text.casefold().count("</untrusted") == 1
    assert quotes_outside(text) and quotes_outside("<UnTrusted source=x>")
    assert not quotes_outside("nothing quoted here")


def test_only_a_paired_guests_chat_has_notes_of_its_own():
    guest = audience_of(SessionKey("telegram", "guest", "77"))
    assert notes_path(guest) == "memory/chats/telegram-guest-77/NOTES.md"
    assert guest_notes(PurePosixPath("memory/chats/telegram-guest-77/NOTES.md"))
    for key in (
        SessionKey("telegram", "private", "1"),
        SessionKey("telegram", "group", "-100"),
        SessionKey("discord", "channel", "5"),
        SessionKey("discord", "thread", "6"),
    ):
        assert notes_path(audience_of(key)) is None, key
    assert not guest_notes(PurePosixPath("memory/chats/telegram-group--100/NOTES.md"))
    assert not guest_notes(PurePosixPath("memory/NOTES.md"))
