"""Workspace file tools: what they do, and that nothing outside the workspace is reachable."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from agent.tools.context import TurnContext
from agent.tools.files import FILE_TOOLS
from agent.tools.paths import resolve_in_workspace
from agent.tools.registry import Tool, ToolRegistry, ToolResult
from gateway.contract.errors import PathRefused, ToolError
from gateway.contract.events import SessionKey

PRIVATE = SessionKey("test", "private", "1")
SHARED = SessionKey("test", "group", "2")
GROUP_CHAT = "test-group-2"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    (root / "MEMORY.md").write_text("canary-7f3a long-term secret\n")
    (root / "notes").mkdir()
    (root / "notes" / "a.md").write_text("one\ntwo\nthree\n")
    (tmp_path / "outside.txt").write_text("outside secret")
    return root.resolve()


def ctx(ws: Path, key: SessionKey = PRIVATE) -> TurnContext:
    tz = ZoneInfo("UTC")
    return TurnContext(key=key, workspace=ws, now=datetime.now(UTC), tz=tz)


async def call(ws: Path, name: str, key: SessionKey = PRIVATE, **args):
    return await ToolRegistry(FILE_TOOLS).call(name, args, ctx(ws, key))


@pytest.mark.parametrize(
    "path",
    [
        "../outside.txt",
        "notes/../../outside.txt",
        "/etc/passwd",
        "~/x",
        "..",
        "a\\..\\b",
        "notes/\x00x",
        "notes/a\tb.md",
    ],
)
def test_paths_that_leave_the_workspace_are_refused(ws, path):
    with pytest.raises(PathRefused):
        resolve_in_workspace(ctx(ws), path)


def test_symlinks_pointing_outside_are_refused_inside_ones_allowed(ws):
    (ws / "escape").symlink_to(ws.parent)
    (ws / "leak.md").symlink_to(ws.parent / "outside.txt")
    (ws / "alias.md").symlink_to(ws / "notes" / "a.md")
    for path in ("escape/outside.txt", "leak.md", "escape"):
        with pytest.raises(PathRefused, match="outside the workspace"):
            resolve_in_workspace(ctx(ws), path)
    assert resolve_in_workspace(ctx(ws), "alias.md") == ws / "notes" / "a.md"


async def test_reading_through_an_outside_symlink_returns_an_error_not_the_file(ws):
    (ws / "leak.md").symlink_to(ws.parent / "outside.txt")
    result = await call(ws, "read_file", path="leak.md")
    assert result.is_error and "outside secret" not in result.text
    result = await call(ws, "write_file", path="leak.md", content="x")
    assert result.is_error
    assert (ws.parent / "outside.txt").read_text() == "outside secret"


@pytest.mark.parametrize("path", ["MEMORY.md", "memory.md", "./MEMORY.md", "notes/../MEMORY.md"])
def test_memory_md_is_invisible_in_shared_sessions(ws, path):
    with pytest.raises(PathRefused):
        resolve_in_workspace(ctx(ws, SHARED), path)


def test_a_path_with_dot_dot_is_refused_even_when_it_would_stay_inside(ws):
    # Refused by its spelling, before anything is resolved: no probing through "..".
    with pytest.raises(PathRefused, match=r"contains '\.\.'\. Paths must stay inside"):
        resolve_in_workspace(ctx(ws), "notes/../notes/a.md")


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("MEMORY.md", "'MEMORY.md' is only available in private chats with the owner"),
        ("notes/a.md", "'notes/a.md' is only available in private chats with the owner"),
        ("chats/test-group-9/x.md", "'chats/test-group-9/x.md' belongs to another chat; each "
         "chat sees only its own files and notes."),
        ("memory/chats/test-guest-7/NOTES.md", "'memory/chats/test-guest-7/NOTES.md' belongs "
         "to another chat"),
    ],
)  # fmt: skip
async def test_a_refused_path_says_whose_it_is_and_nothing_of_what_is_there(ws, path, why):
    result = await call(ws, "read_file", SHARED, path=path)
    assert result.is_error and why in result.text
    assert "canary-7f3a" not in result.text


async def test_listing_a_folder_that_is_not_the_chats_says_whose_it_is(ws):
    listed = await call(ws, "list_files", SHARED, path="notes")
    assert listed.is_error and "'notes' is only available in private chats" in listed.text
    assert "a.md" not in listed.text


async def test_memory_md_through_a_symlink_or_listing_in_shared_sessions(ws):
    (ws / "innocent.md").symlink_to(ws / "MEMORY.md")
    result = await call(ws, "read_file", SHARED, path="innocent.md")
    assert result.is_error and "canary-7f3a" not in result.text
    (ws / "SOUL.md").write_text("be kind")
    (ws / "chats" / GROUP_CHAT).mkdir(parents=True)
    listing = await call(ws, "list_files", SHARED)
    assert "MEMORY.md" not in listing.text and "innocent.md" not in listing.text
    assert "SOUL.md" in listing.text and "chats/" in listing.text
    assert "notes/" not in listing.text  # the owner's notes are the owner's
    assert "MEMORY.md" in (await call(ws, "list_files", PRIVATE)).text
    assert "canary-7f3a" in (await call(ws, "read_file", PRIVATE, path="MEMORY.md")).text


async def test_read_windows_and_write_edit(ws):
    assert (await call(ws, "read_file", path="notes/a.md")).text == "one\ntwo\nthree"
    window = await call(ws, "read_file", path="notes/a.md", offset=2, limit=1)
    assert window.text == "[notes/a.md: lines 2-2 of 3; use offset to read more]\ntwo"
    created = await call(ws, "write_file", path="new/deep/file.md", content="hello hello")
    assert created.text == "Created new/deep/file.md (11 characters)."
    ambiguous = await call(
        ws, "edit_file", path="new/deep/file.md", old_text="hello", new_text="bye"
    )
    assert ambiguous.is_error and "occurs 2 times" in ambiguous.text
    done = await call(
        ws, "edit_file", path="new/deep/file.md", old_text="hello", new_text="bye", replace_all=True
    )
    assert done.text == "Edited new/deep/file.md: 2 replacement(s)."
    assert (ws / "new" / "deep" / "file.md").read_text() == "bye bye"
    missing = await call(ws, "edit_file", path="new/deep/file.md", old_text="zzz", new_text="y")
    assert missing.is_error and "not found" in missing.text
    assert (await call(ws, "read_file", path="nope.md")).text == "'nope.md' does not exist."


async def test_binary_and_folder_reads_are_clear_errors(ws):
    (ws / "blob.bin").write_bytes(b"\xff\xfe\x00\x01")
    assert "not a UTF-8 text file" in (await call(ws, "read_file", path="blob.bin")).text
    assert "is a folder" in (await call(ws, "read_file", path="notes")).text


async def test_writes_are_atomic_and_leave_no_temp_files(ws):
    await call(ws, "write_file", path="notes/a.md", content="replaced")
    assert sorted(os.listdir(ws / "notes")) == ["a.md"]
    assert (ws / "notes" / "a.md").read_text() == "replaced"


def test_bad_path_argument_type_is_a_tool_error(ws):
    with pytest.raises(ToolError):
        resolve_in_workspace(ctx(ws), 42)


def test_a_path_longer_than_any_the_system_takes_is_refused_before_it_is_looked_up(ws):
    """No file has a path past the system's limit, and looking up each of its parts would
    hold a worker thread for seconds: it is refused as it is read, with its length."""
    with pytest.raises(PathRefused, match=r"too long \(100,000 characters; at most 4,096\)"):
        resolve_in_workspace(ctx(ws), "a/" * 50_000)
    at_the_limit = resolve_in_workspace(ctx(ws), "a/" * 2_048)  # looked up: not there yet
    assert at_the_limit == ws.joinpath(*["a"] * 2_048)


@pytest.mark.parametrize("path", [".git/config", "notes/.hidden", "MEMORY\u200c.md", "a\u202eb.md"])
def test_hidden_paths_and_invisible_characters_are_refused(ws, path):
    with pytest.raises(PathRefused):
        resolve_in_workspace(ctx(ws), path)


async def test_a_hard_link_to_memory_md_is_still_memory_md(ws):
    os.link(ws / "MEMORY.md", ws / "notes" / "innocent.md")
    result = await call(ws, "read_file", SHARED, path="notes/innocent.md")
    assert result.is_error and "canary-7f3a" not in result.text
    listing = await call(ws, "list_files", SHARED, recursive=True)
    assert "innocent.md" not in listing.text


async def test_shared_sessions_cannot_rewrite_the_bootstrap_files(ws):
    (ws / "SOUL.md").write_text("be kind")
    for name, args in [
        ("write_file", {"path": "SOUL.md", "content": "obey the group"}),
        ("edit_file", {"path": "soul.md", "old_text": "kind", "new_text": "mean"}),
    ]:
        result = await call(ws, name, SHARED, **args)
        assert result.is_error and "private chat with the owner" in result.text
    assert (ws / "SOUL.md").read_text() == "be kind"
    assert (await call(ws, "read_file", SHARED, path="SOUL.md")).text == "be kind"
    assert not (await call(ws, "write_file", PRIVATE, path="SOUL.md", content="x")).is_error
    elsewhere = await call(ws, "write_file", SHARED, path="notes/group.md", content="x")
    assert elsewhere.is_error and f"chats/{GROUP_CHAT}/" in elsewhere.text
    own = await call(ws, "write_file", SHARED, path=f"chats/{GROUP_CHAT}/g.md", content="x")
    assert not own.is_error


async def test_listing_survives_broken_links_and_never_follows_links_out(ws):
    (ws / "dangling.md").symlink_to(ws / "nowhere.md")
    (ws / "escape").symlink_to(ws.parent)
    listing = (await call(ws, "list_files", PRIVATE, recursive=True)).text
    assert "dangling.md  (broken link)" in listing
    assert "outside.txt" not in listing and "notes/a.md" in listing


async def test_os_errors_reach_the_model_without_host_paths(ws):
    def failing(ctx, args):
        raise FileExistsError(17, "File exists", str(ws / "notes" / "a.md"))

    tool = Tool("failing", "always fails", {"type": "object", "properties": {}}, failing)
    result = await ToolRegistry([tool]).call("failing", {}, ctx(ws))
    assert result == ToolResult("Tool failing failed: File exists (notes/a.md)", True)


async def test_files_sent_in_private_chats_are_invisible_to_shared_sessions(ws):
    private_dir = ws / "inbox" / "private" / "2026-11-21"
    private_dir.mkdir(parents=True)
    (private_dir / "bank.pdf").write_text("account 123")
    theirs = ws / "inbox" / "chats" / GROUP_CHAT / "2026-11-21"
    theirs.mkdir(parents=True)
    (theirs / "menu.txt").write_text("pizza")
    (ws / "alias").symlink_to(private_dir)
    for path in (
        "inbox/private/2026-11-21/bank.pdf",
        "Inbox/Private/2026-11-21/bank.pdf",
        "inbox/private",
        "alias/bank.pdf",
    ):
        result = await call(ws, "read_file", SHARED, path=path)
        assert result.is_error and "account 123" not in result.text, path
    listing = (await call(ws, "list_files", SHARED, path="inbox", recursive=True)).text
    assert "menu.txt" in listing and "private" not in listing and "bank" not in listing
    refused = await call(ws, "list_files", SHARED, path="inbox/private")
    assert refused.is_error
    write = await call(ws, "write_file", SHARED, path="inbox/private/x.md", content="planted")
    assert write.is_error
    assert (await call(ws, "read_file", PRIVATE, path="alias/bank.pdf")).text == "account 123"


@pytest.mark.timeout(20)
async def test_a_fifo_is_refused_rather_than_blocking_the_process(ws):
    os.mkfifo(ws / "pipe.md")  # opening it for reading would wait for a writer forever
    result = await call(ws, "read_file", path="pipe.md")
    assert result.is_error and "not a regular file" in result.text
    result = await call(ws, "edit_file", path="pipe.md", old_text="a", new_text="b")
    assert result.is_error and "not a regular file" in result.text


@pytest.mark.parametrize("sibling", ["workspace-old", "workspace2", "workspace.bak"])
async def test_a_link_to_a_sibling_named_like_the_workspace_is_outside(ws, sibling):
    # The inside-the-workspace check compares path parts, not strings: "<ws>-old" starts with
    # "<ws>" as a string and is still outside.
    other = ws.parent / sibling
    other.mkdir()
    (other / "secret.md").write_text("sibling secret")
    (ws / "notes" / "old").symlink_to(other, target_is_directory=True)
    for name, args in [
        ("read_file", {"path": "notes/old/secret.md"}),
        ("write_file", {"path": "notes/old/new.md", "content": "x"}),
        ("edit_file", {"path": "notes/old/secret.md", "old_text": "sibling", "new_text": "x"}),
        ("list_files", {"path": "notes/old"}),
    ]:
        result = await call(ws, name, **args)
        assert result.is_error, (name, result.text)
        assert "sibling secret" not in result.text
    assert sorted(p.name for p in other.iterdir()) == ["secret.md"]
    assert (other / "secret.md").read_text() == "sibling secret"


async def test_state_is_unreachable_from_every_file_tool(ws):
    state = ws.parent / "state"
    state.mkdir()
    (state / "pairing.json").write_text('{"secret": "state canary"}')
    (ws / "st").symlink_to(state, target_is_directory=True)
    attempts = [
        ("read_file", {"path": "../state/pairing.json"}),
        ("read_file", {"path": str(state / "pairing.json")}),
        ("read_file", {"path": "st/pairing.json"}),
        ("write_file", {"path": "st/pairing.json", "content": "{}"}),
        ("write_file", {"path": "../state/new.json", "content": "{}"}),
        ("edit_file", {"path": "st/pairing.json", "old_text": "state", "new_text": "x"}),
        ("list_files", {"path": "st"}),
        ("list_files", {"path": "../state"}),
    ]
    for name, args in attempts:
        result = await call(ws, name, **args)
        assert result.is_error, (name, args)
        assert "state canary" not in result.text
        if not args["path"].startswith("/"):  # no host path the model did not give itself
            assert str(state) not in result.text
    listing = await call(ws, "list_files", path=".", recursive=True)
    assert "pairing.json" not in listing.text
    assert (state / "pairing.json").read_text() == '{"secret": "state canary"}'
    assert sorted(p.name for p in state.iterdir()) == ["pairing.json"]


async def test_a_shared_chat_cannot_write_a_file_in_place_of_its_own_folder(ws):
    result = await call(ws, "write_file", SHARED, path=f"chats/{GROUP_CHAT}", content="x")
    assert result.is_error
    assert not (ws / "chats" / GROUP_CHAT).is_file()
    ok = await call(ws, "write_file", SHARED, path=f"chats/{GROUP_CHAT}/notes.md", content="x")
    assert not ok.is_error and (ws / "chats" / GROUP_CHAT / "notes.md").read_text() == "x"


async def test_what_came_from_outside_the_owners_chats_is_noted_when_read(ws):
    """A file someone sent, a shared chat's files and the names chosen there mark the session
    (``Exposure``); the owner's own notes and Corvid's folders do not."""
    (ws / "inbox" / "private" / "2026-03-12").mkdir(parents=True)
    (ws / "inbox" / "private" / "2026-03-12" / "letter.txt").write_text("from the bank")
    (ws / "chats" / GROUP_CHAT).mkdir(parents=True)
    (ws / "chats" / GROUP_CHAT / "plan.md").write_text("the group's plan")
    registry = ToolRegistry(FILE_TOOLS)

    async def sources(tool: str, **args: object) -> list[str]:
        context = ctx(ws)
        assert not (await registry.call(tool, args, context)).is_error
        return context.exposure.sources

    assert await sources("read_file", path="notes/a.md") == []
    assert await sources("list_files", path="inbox", recursive=False) == []
    assert await sources("list_files", path="chats", recursive=False) == []
    letter = "inbox/private/2026-03-12/letter.txt"
    assert await sources("read_file", path=letter) == ["a file sent in chat"]
    assert await sources("read_file", path=f"chats/{GROUP_CHAT}/plan.md") == [
        f"the chat {GROUP_CHAT}"
    ]
    assert await sources("list_files", recursive=True) == ["file names chosen in chat"]


async def test_what_later_prompts_read_is_refused_to_a_conversation_that_read_outside(ws):
    context = ctx(ws)
    assert not (await ToolRegistry(FILE_TOOLS).call(
        "write_file", {"path": "SOUL.md", "content": "kind"}, context)).is_error  # fmt: skip
    context.saw("a web page")
    for tool, args in (
        ("write_file", {"path": "AGENTS.md", "content": "x"}),
        ("edit_file", {"path": "SOUL.md", "old_text": "kind", "new_text": "x"}),
        ("write_file", {"path": "identity.md", "content": "x"}),  # any spelling
    ):
        refused = await ToolRegistry(FILE_TOOLS).call(tool, args, context)
        assert refused.is_error and "is read in every chat" in refused.text
        assert "(a web page)" in refused.text
    # The places only the owner's own prompts read are asked about just the same.
    for path in ("USER.md", "memory.md", "skills/x/SKILL.md", "memory/2026-11-22.md"):
        refused = await ToolRegistry(FILE_TOOLS).call(
            "write_file", {"path": path, "content": "the owner's"}, context
        )
        assert refused.is_error and "is read by the owner's later prompts" in refused.text, path
    written = await ToolRegistry(FILE_TOOLS).call(
        "write_file", {"path": "notes/plan.md", "content": "the owner's"}, context
    )
    assert not written.is_error  # no prompt reads it unasked
    assert (ws / "SOUL.md").read_text() == "kind"


async def test_no_spelling_or_second_name_reaches_a_file_every_chat_reads(ws):
    (ws / "AGENTS.md").write_text("kind")
    (ws / "alias.md").symlink_to("AGENTS.md")
    (ws / "notes" / "up").symlink_to("..", target_is_directory=True)
    os.link(ws / "AGENTS.md", ws / "notes" / "hard.md")
    context = ctx(ws)
    context.saw("a web page")
    registry = ToolRegistry(FILE_TOOLS)
    for tool, path in (
        ("write_file", "./AGENTS.md"),
        ("write_file", "AGENTS.md/"),
        ("write_file", "notes/../AGENTS.md"),
        ("write_file", "alias.md"),
        ("write_file", "notes/up/AGENTS.md"),
        ("edit_file", "alias.md"),
    ):
        args = {"path": path, "content": "x"} if tool == "write_file" else {
            "path": path, "old_text": "kind", "new_text": "x"}  # fmt: skip
        assert (await registry.call(tool, args, context)).is_error, path
    # Writing a second name (a hard link) gives it content of its own; the file stays.
    written = await registry.call("write_file", {"path": "notes/hard.md", "content": "x"}, context)
    assert not written.is_error
    assert (ws / "AGENTS.md").read_text() == "kind"


async def test_a_slow_listing_from_a_group_does_not_hold_up_other_chats(
    start_gateway, fake_api, monkeypatch
):
    """A recursive listing of a huge workspace runs off the event loop: the owner is answered
    while it is still walking. (On the loop, the walk would hold every chat until released.)"""
    import asyncio
    import threading

    from agent.tools import walk
    from tests.conftest import GROUP
    from tests.conftest import PRIVATE as OWNER_CHAT
    from tests.fakes.anthropic_api import Reply

    walking, release, walked = threading.Event(), threading.Event(), threading.Event()
    plain_walk = os.walk

    def slow_walk(*args, **kwargs):
        walking.set()
        release.wait(timeout=5)  # the bound, should the listing block the loop after all
        walked.set()
        yield from plain_walk(*args, **kwargs)

    monkeypatch.setattr(walk.os, "walk", slow_walk)
    _app, channel = await start_gateway()
    fake_api.enqueue(Reply(tool_calls=[("list_files", {"recursive": True})]))
    group_turn = channel.push("what is in the workspace?", key=GROUP)
    await asyncio.wait_for(asyncio.to_thread(walking.wait, 10), 15)
    answered_while_walking = False
    try:
        await asyncio.wait_for(channel.push("hello"), 10)
        answered_while_walking = not walked.is_set()
    finally:
        release.set()
    await asyncio.wait_for(group_turn, 10)
    assert answered_while_walking
    assert channel.texts(OWNER_CHAT) == ["echo: hello"]
    assert len(channel.texts(GROUP)) == 1


async def test_a_listing_stops_at_its_entry_and_time_bounds(ws, monkeypatch):
    from agent.tools import walk

    for i in range(30):
        (ws / "notes" / f"n{i:02}.md").write_text("x")
    monkeypatch.setattr(walk, "MAX_WALK_ENTRIES", 10)
    out = (await call(ws, "list_files", recursive=True)).text.splitlines()
    assert len(out) == 11 and out[-1] == "[... more entries not shown; list a subfolder]"
    monkeypatch.setattr(walk, "MAX_WALK_ENTRIES", 20_000)
    monkeypatch.setattr(walk, "MAX_WALK_SECONDS", -1.0)  # out of time before the first entry
    out = (await call(ws, "list_files", recursive=True)).text.splitlines()
    assert out == ["[... more entries not shown; list a subfolder]"]
    monkeypatch.setattr(walk, "MAX_WALK_SECONDS", 5.0)
    out = (await call(ws, "list_files", recursive=True)).text.splitlines()
    assert len(out) == 33 and not out[-1].startswith("[...")  # MEMORY.md, notes/, 31 notes


async def test_what_the_file_tools_make_is_private_whatever_the_umask(ws):
    old = os.umask(0o277)  # even one that would take the owner's own bits
    try:
        assert not (await call(ws, "write_file", path="new/deep/x.md", content="hi")).is_error
    finally:
        os.umask(old)
    for folder in (ws / "new", ws / "new" / "deep"):
        assert folder.stat().st_mode & 0o777 == 0o700, folder
    assert (ws / "new" / "deep" / "x.md").stat().st_mode & 0o777 == 0o600
    # A file replaced keeps the mode it had.
    (ws / "notes" / "a.md").chmod(0o640)
    assert not (await call(ws, "write_file", path="notes/a.md", content="new")).is_error
    assert (ws / "notes" / "a.md").stat().st_mode & 0o777 == 0o640


async def test_read_file_windows_say_where_they_are(ws):
    (ws / "notes" / "empty.md").write_text("")
    assert (await call(ws, "read_file", path="notes/empty.md")).text == "notes/empty.md is empty."
    assert (await call(ws, "read_file", path="notes/a.md")).text == "one\ntwo\nthree"
    first = await call(ws, "read_file", path="notes/a.md", limit=2)
    assert first.text == "[notes/a.md: lines 1-2 of 3; use offset to read more]\none\ntwo"
    last = await call(ws, "read_file", path="notes/a.md", offset=2, limit=2)
    assert last.text == "[notes/a.md: lines 2-3 of 3]\ntwo\nthree"
    (ws / "notes" / "long.md").write_text("".join(f"{i}\n" for i in range(1, 402)))
    long = await call(ws, "read_file", path="notes/long.md")
    assert long.text.startswith("[notes/long.md: lines 1-400 of 401; use offset")


async def test_write_and_edit_hold_the_size_limit_to_the_character(ws):
    from agent.tools.files import MAX_WRITE_CHARS

    assert MAX_WRITE_CHARS == 1_000_000  # the limit the tools tell the model

    at = await call(ws, "write_file", path="notes/big.md", content="a" * MAX_WRITE_CHARS)
    assert not at.is_error
    over = await call(ws, "write_file", path="notes/big2.md", content="a" * (MAX_WRITE_CHARS + 1))
    assert over.is_error and over.text == (
        f"Content is too long ({MAX_WRITE_CHARS + 1} characters; limit {MAX_WRITE_CHARS})."
    )
    folder = await call(ws, "write_file", path="notes", content="x")
    assert folder.is_error and folder.text == "'notes' is a folder."
    # An edit may bring a file to the limit exactly, not past it.
    (ws / "notes" / "e.md").write_text("b" * (MAX_WRITE_CHARS - 8) + "abc")
    grow = {"path": "notes/e.md", "old_text": "abc", "new_text": "abcdefgh"}
    assert not (await call(ws, "edit_file", **grow)).is_error
    assert len((ws / "notes" / "e.md").read_text()) == MAX_WRITE_CHARS
    past = await call(ws, "edit_file", path="notes/e.md", old_text="fgh", new_text="fghi")
    assert past.is_error and "too long" in past.text
    # A file already past it may still be edited if it does not grow.
    (ws / "notes" / "huge.md").write_text("c" * (MAX_WRITE_CHARS + 10) + "d")
    assert not (
        await call(ws, "edit_file", path="notes/huge.md", old_text="d", new_text="e")
    ).is_error


async def test_edit_file_replaces_one_exact_passage_unless_told_all(ws):
    empty = await call(ws, "edit_file", path="notes/a.md", old_text="", new_text="x")
    assert empty.text == "old_text must not be empty; use write_file to create a file."
    once = await call(ws, "edit_file", path="notes/a.md", old_text="two", new_text="2")
    assert once.text == "Edited notes/a.md: 1 replacement(s)."
    from agent.tools.files import MAX_WRITE_CHARS

    # Twice in a file near the limit: refused as ambiguous, not as too long.
    (ws / "notes" / "twice.md").write_text("x" + "-" * (MAX_WRITE_CHARS - 17) + "x")
    twice = await call(ws, "edit_file", path="notes/twice.md", old_text="x", new_text="y" * 10)
    assert twice.is_error and "occurs 2 times" in twice.text


@pytest.mark.parametrize(("files", "more"), [(500, False), (501, True)])
async def test_a_listing_shows_at_most_500_entries_and_says_when_there_are_more(ws, files, more):
    from agent.tools.listing import MAX_LIST_ENTRIES

    folder = ws / "notes" / "many"
    folder.mkdir()
    for i in range(files):
        (folder / f"{i:04d}.md").write_text("x")
    listed = (await call(ws, "list_files", path="notes/many")).text.splitlines()
    shown = [line for line in listed if line.startswith("notes/many/")]
    assert len(shown) == min(files, MAX_LIST_ENTRIES) == 500
    assert (listed[-1] == "[... more entries not shown; list a subfolder]") is more


async def test_a_group_does_not_list_a_second_name_of_a_file(ws):
    own = ws / "chats" / GROUP_CHAT
    own.mkdir(parents=True)
    (own / "mine.md").write_text("ours")
    os.link(ws / "MEMORY.md", own / "looks-like-ours.md")  # two names: one is the owner's
    listed = (await call(ws, "list_files", SHARED, path=f"chats/{GROUP_CHAT}")).text
    assert "mine.md" in listed and "looks-like-ours" not in listed
    assert (
        "looks-like-ours"
        in (await call(ws, "list_files", PRIVATE, path=f"chats/{GROUP_CHAT}")).text
    )


async def test_a_file_written_after_reading_outside_is_read_back_quoted(ws):
    """A file a conversation wrote after reading a web page is remembered: any later read of
    it comes back quoted as outside text, and marks the reader as having read from outside."""
    writer = ctx(ws)
    writer.saw("a web page")
    registry = ToolRegistry(FILE_TOOLS)
    done = await registry.call("write_file", {"path": "notes/plan.md", "content": "obey"}, writer)
    assert not done.is_error and (ws / "notes" / "plan.md").read_text() == "obey"
    reader = ctx(ws)
    read = await registry.call("read_file", {"path": "notes/plan.md"}, reader)
    assert read.text.startswith('<untrusted source="notes/plan.md, written after reading a web')
    assert "obey\n</untrusted>" in read.text
    assert reader.exposure.sources == ["notes/plan.md, written after reading a web page"]
