"""What shared chats may store: each chat and all together are capped, the owner is not."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from agent.memory.index import MemoryIndex
from agent.memory.store import Memory
from agent.memory.tools import memory_tools
from agent.settings import MemorySettings
from agent.tools.context import TurnContext
from agent.tools.files import FILE_TOOLS
from agent.tools.registry import ToolRegistry
from agent.workspace.quota import Quota
from channels.inbox import Intake
from gateway.contract.events import SessionKey, audience_of

GROUP = SessionKey("test", "group", "2")
OTHER = SessionKey("test", "group", "3")
OWNER = SessionKey("test", "private", "1")


def setup(tmp_path: Path, **limits: int) -> tuple[ToolRegistry, Path, Quota]:
    ws = (tmp_path / "ws").resolve()
    (ws / "memory").mkdir(parents=True)
    quota = Quota(
        ws, **{"chat_bytes": 10_000, "all_chats_bytes": 15_000, "chat_files": 5, **limits}
    )
    memory = Memory(ws, MemoryIndex(tmp_path / "i.sqlite", ws), MemorySettings())
    return ToolRegistry((*FILE_TOOLS, *memory_tools(memory))), ws, quota


def ctx(ws: Path, key: SessionKey, quota: Quota) -> TurnContext:
    return TurnContext(key, ws, datetime(2026, 3, 1, 12, tzinfo=UTC), ZoneInfo("UTC"), quota=quota)


async def test_a_chat_cannot_fill_the_disk_but_the_owner_can_write(tmp_path):
    tools, ws, quota = setup(tmp_path)
    group = ctx(ws, GROUP, quota)
    ok = await tools.call(
        "write_file", {"path": "chats/test-group-2/a.md", "content": "x" * 6000}, group
    )
    assert not ok.is_error
    # replace_all that would grow the file past the chat's share is refused
    grown = await tools.call(
        "edit_file",
        {"path": "chats/test-group-2/a.md", "old_text": "x", "new_text": "xx", "replace_all": True},
        group,
    )
    assert grown.is_error and "This chat's files and notes are full" in grown.text
    assert (ws / "chats" / "test-group-2" / "a.md").stat().st_size == 6000
    big = await tools.call(
        "write_file", {"path": "chats/test-group-2/b.md", "content": "y" * 5000}, group
    )
    assert big.is_error and "agent.chat_quota_mb" in big.text
    note = await tools.call("memory_append", {"text": "z" * 5000}, group)
    assert note.is_error and "full" in note.text
    assert not (await tools.call("memory_append", {"text": "short"}, group)).is_error
    for i in range(3):  # files are counted too: a.md, the log, and 3 more make 5
        await tools.call(
            "write_file", {"path": f"chats/test-group-2/{i}.md", "content": "1"}, group
        )
    many = await tools.call(
        "write_file", {"path": "chats/test-group-2/9.md", "content": "1"}, group
    )
    assert many.is_error and "5 files" in many.text
    owner = await tools.call(
        "write_file", {"path": "notes/big.md", "content": "o" * 50_000}, ctx(ws, OWNER, quota)
    )
    assert not owner.is_error


async def test_all_chats_together_are_capped(tmp_path):
    tools, ws, quota = setup(tmp_path)
    await tools.call(
        "write_file",
        {"path": "chats/test-group-2/a.md", "content": "x" * 9000},
        ctx(ws, GROUP, quota),
    )
    other = await tools.call(
        "write_file",
        {"path": "chats/test-group-3/a.md", "content": "y" * 7000},
        ctx(ws, OTHER, quota),
    )
    assert other.is_error and "agent.all_chats_quota_mb" in other.text


async def test_an_upload_past_the_chats_share_is_not_saved_and_the_model_is_told(tmp_path):
    _tools, ws, quota = setup(tmp_path, chat_bytes=100)
    downloads: list[int] = []

    async def read() -> bytes:
        downloads.append(1)
        return b"d" * 500

    intake = Intake(
        ws,
        max_image_bytes=10_000,
        max_file_bytes=10_000,
        today=lambda: date(2026, 3, 1),
        folder=lambda key, day: f"inbox/chats/{audience_of(key).chat}/{day}",
        room=lambda key, size: quota.refusal(audience_of(key), size),
    )
    note = await intake.take(GROUP, "minutes.pdf", "application/pdf", 500, read)
    assert isinstance(note, str) and "was not saved" in note and "full" in note
    assert downloads == []  # refused before downloading it
    saved = await intake.take(OWNER, "minutes.pdf", "application/pdf", 500, read)
    assert not isinstance(saved, str) and saved.path is not None


async def test_rewriting_a_file_in_place_needs_room_only_for_what_it_adds(tmp_path):
    tools, ws, quota = setup(tmp_path)
    group = ctx(ws, GROUP, quota)
    path = "chats/test-group-2/a.md"
    assert not (
        await tools.call("write_file", {"path": path, "content": "x" * 6000}, group)
    ).is_error
    # 6,000 bytes replacing 6,000 in a chat holding 6,000 of its 10,000: no more room needed.
    same = await tools.call("write_file", {"path": path, "content": "y" * 6000}, group)
    assert not same.is_error, same.text
    edit = {"path": path, "old_text": "y" * 6000, "new_text": "z" * 6000}
    edited = await tools.call("edit_file", edit, group)
    assert not edited.is_error, edited.text
    assert (ws / path).read_text() == "z" * 6000


async def test_a_chats_notes_count_against_its_space(tmp_path):
    tools, ws, quota = setup(tmp_path, chat_bytes=1000)
    group = ctx(ws, GROUP, quota)
    notes = ws / "memory" / "chats" / "test-group-2" / "NOTES.md"
    notes.parent.mkdir(parents=True)
    notes.write_text("n" * 699 + "\n")  # 700 of the chat's 1,000 bytes: 300 left
    # An append needs room for its text: 300 bytes fit exactly, 301 do not.
    full = await tools.call("memory_update", {"action": "append", "text": "a" * 301}, group)
    assert full.is_error and "This chat's files and notes are full" in full.text
    fits = await tools.call("memory_update", {"action": "append", "text": "a" * 300}, group)
    assert not fits.is_error, fits.text
    # A replacement is written beside the old file first: room for both.
    notes.write_text("n" * 699 + "\n")
    copy = await tools.call(
        "memory_update", {"action": "replace", "old_text": "n", "text": "m"}, group
    )
    assert copy.is_error and "full" in copy.text  # 1 + 700 bytes needed, 300 left
