"""Whose each workspace path is: the rules every file and memory tool applies."""

from __future__ import annotations

import json
import stat
from datetime import date
from pathlib import Path, PurePosixPath

import pytest

from agent.workspace.audience import (
    EVERYONE,
    PROMPT_FILES,
    WRITTEN_AFTER_OUTSIDE,
    area,
    chat_notes,
    guest_notes,
    in_prompts,
    inbox_folder,
    is_guest,
    named_in_chat,
    note_written,
    notes_path,
    own_folders,
    quotes_outside,
    untrusted,
    written_after_outside,
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


def test_each_shared_chat_has_notes_of_its_own_and_the_owner_has_memory_md():
    guest = audience_of(SessionKey("telegram", "guest", "77"))
    assert notes_path(guest) == "memory/chats/telegram-guest-77/NOTES.md"
    assert guest_notes(PurePosixPath("memory/chats/telegram-guest-77/NOTES.md"))
    assert is_guest(guest)
    for key, chat in (
        (SessionKey("telegram", "group", "-100"), "telegram-group--100"),
        (SessionKey("telegram", "group", "-100", topic="7"), "telegram-group--100"),  # its group's
        (SessionKey("discord", "channel", "5"), "discord-channel-5"),
        (SessionKey("discord", "thread", "6"), "discord-thread-6"),
    ):
        rel = notes_path(audience_of(key))
        assert rel == f"memory/chats/{chat}/NOTES.md", key
        assert area(PurePosixPath(rel)) == Audience(chat)  # read and written by that chat alone
        assert chat_notes(PurePosixPath(rel)) and not guest_notes(PurePosixPath(rel))
        assert not is_guest(audience_of(key))
    assert notes_path(OWNER) is None  # the owner's long-term memory is MEMORY.md
    assert notes_path(audience_of(SessionKey.parse("cron:shared:digest"))) is None
    assert not chat_notes(PurePosixPath("memory/NOTES.md"))
    assert not chat_notes(PurePosixPath("memory/chats/telegram-group--100/2026-11-22.md"))
    assert not chat_notes(PurePosixPath("chats/telegram-group--100/NOTES.md"))


@pytest.mark.parametrize(
    ("path", "chosen"),
    [
        ("chats/abc", False),  # the chat's folder: Corvid named it
        ("chats/abc/notes.md", True),
        ("Chats/abc/sub/notes.md", True),
        ("inbox/chats/abc/2026-11-22", False),  # the day's folder: Corvid's
        ("inbox/chats/abc/2026-11-22/a.pdf", True),
        ("inbox/private/2026-11-22", False),
        ("inbox/private/2026-11-22/a.pdf", True),
        ("inbox", False),
        ("memory/chats/abc/2026-11-22.md", False),  # a log: named by Corvid
        ("notes/a/b/c.md", False),  # the owner's own names
        ("MEMORY.md", False),
    ],
)
def test_names_chosen_in_chat_are_a_shared_chats_files_and_what_was_sent(path, chosen):
    # Listing such a name counts as reading from outside: a file name can carry instructions.
    assert named_in_chat(PurePosixPath(path)) == chosen


def test_files_sent_in_chat_go_to_the_inbox_of_their_audience():
    day = date(2026, 11, 22)
    assert inbox_folder(OWNER, day) == "inbox/private/2026-11-22"
    assert inbox_folder(Audience("telegram-group--100"), day) == (
        "inbox/chats/telegram-group--100/2026-11-22"
    )
    assert area(PurePosixPath(inbox_folder(Audience("x"), day)) / "a.pdf") == Audience("x")
    assert own_folders(OWNER) == ()  # the owner's space is everything else, not a folder
    assert own_folders(Audience("x")) == ("chats/x", "memory/chats/x", "inbox/chats/x")
    assert repr(EVERYONE) == "EVERYONE"


@pytest.mark.parametrize(
    ("path", "loaded"),
    [
        ("MEMORY.md", True),
        ("user.md", True),  # another spelling of USER.md
        ("HEARTBEAT.md", True),
        ("AGENTS.md", True),  # every chat's prompt
        ("memory/2026-11-22.md", True),  # the owner's logs are loaded too
        ("memory/chats/abc/2026-11-22.md", True),  # the chat's own prompt loads it
        ("memory/chats/abc/NOTES.md", True),
        ("skills/x/SKILL.md", True),  # listed in every new session's prompt
        ("Skills/x/notes.md", True),  # a skill's own files, read with it
        ("notes.md", False),
        ("memory/chats/abc", False),
        ("notes/MEMORY.md", False),
        ("chats/abc/AGENTS.md", False),
    ],
)
def test_the_places_later_prompts_read(tmp_path: Path, path, loaded):
    assert in_prompts(tmp_path, tmp_path / path) == loaded


@pytest.mark.parametrize("name", [*PROMPT_FILES, "skills"])
def test_where_a_prompt_place_links_to_is_read_with_it(tmp_path: Path, name):
    (tmp_path / "notes").mkdir()
    target = tmp_path / "notes" / "me.md"
    target.write_text("about me\n")
    assert in_prompts(tmp_path, target) == False  # noqa: E712 (a bool, not just falsy)
    (tmp_path / name).symlink_to(target if name != "skills" else target.parent)
    assert in_prompts(tmp_path, target) == True  # noqa: E712


def test_what_was_written_after_reading_outside_is_kept_private(tmp_path: Path):
    note_written(tmp_path, "notes/plan.md", "the chat telegram-group--100 «Café»")
    record = tmp_path / WRITTEN_AFTER_OUTSIDE
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
    assert written_after_outside(tmp_path) == {
        "notes/plan.md": "the chat telegram-group--100 «Café»"
    }
    note_written(tmp_path, "MEMORY.md", "a web page")
    assert set(json.loads(record.read_text(encoding="utf-8"))) == {"notes/plan.md", "MEMORY.md"}
