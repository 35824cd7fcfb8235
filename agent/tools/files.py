"""Workspace file tools (list, read, write, edit), confined to the workspace by construction.

Every path goes through ``resolve_in_workspace``: absolute paths, ``..`` components and symbolic
links that lead outside are refused, and what a session may reach follows from its audience
(``agent/workspace/audience.py``): a shared chat sees the bootstrap files and its own places,
nothing of the owner's, nothing of another chat's, and writes only in its own ``chats/<chat>/``
folder.
"""

from __future__ import annotations

import contextlib
import time
import unicodedata
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, NotRequired, TypedDict

from agent.tools import walk
from agent.tools.context import TurnContext
from agent.tools.registry import Tool
from agent.workspace.audience import (
    EVERYONE,
    SHARED_BOOTSTRAP,
    area,
    chat_of,
    files_folder,
    in_owner_prompts,
    linked_from,
    named_in_chat,
    on_the_way,
    readable,
    untrusted,
    writable,
)
from gateway.contract.atomic import write_atomic
from gateway.contract.errors import PathRefused, ToolError

MAX_WRITE_CHARS = 1_000_000
MAX_LIST_ENTRIES = 500
DEFAULT_READ_LINES = 400
# Private files and folders are created readable by the owner's user alone.
PRIVATE_FILE_MODE = 0o600
PRIVATE_DIR_MODE = 0o700


def resolve_in_workspace(ctx: TurnContext, raw: Any) -> Path:
    """Map a model-supplied relative path to a real path inside the workspace that this
    session may read, or refuse."""
    resolved = _resolve(ctx, raw)
    rel = PurePosixPath(resolved.relative_to(ctx.workspace).as_posix())
    if not readable(ctx.audience, rel):
        raise PathRefused(_not_yours(raw, rel))
    return resolved


def _resolve(ctx: TurnContext, raw: Any) -> Path:
    if not isinstance(raw, str) or not raw.strip():
        raise ToolError("A path is required, relative to the workspace (e.g. notes/todo.md).")
    text = unicodedata.normalize("NFC", raw.strip())
    if any(unicodedata.category(c) in ("Cc", "Cf") for c in text):
        raise PathRefused("Paths may not contain control or invisible formatting characters.")
    if "\\" in text:
        raise PathRefused("Use forward slashes in paths (e.g. notes/todo.md).")
    pure = PurePosixPath(text)
    if pure.is_absolute() or text.startswith("~"):
        raise PathRefused(
            f"{raw!r} is an absolute path. Only files inside the workspace can be used; "
            "give a relative path such as memory/notes.md."
        )
    if ".." in pure.parts:
        raise PathRefused(f"{raw!r} contains '..'. Paths must stay inside the workspace.")
    if any(part.startswith(".") for part in pure.parts):
        raise PathRefused(f"{raw!r}: hidden files and folders (starting with '.') are off limits.")
    root = ctx.workspace
    try:
        resolved = root.joinpath(*pure.parts).resolve()
    except RuntimeError:  # a loop of links (Python < 3.13); its message names host paths
        raise PathRefused(f"{raw!r} goes through a loop of symbolic links.") from None
    # is_relative_to compares path parts, so a sibling named like the workspace
    # (workspace-old/) is outside, as it should be.
    if resolved != root and not resolved.is_relative_to(root):
        raise PathRefused(f"{raw!r} leads outside the workspace (through a symbolic link).")
    return resolved


def _not_yours(raw: Any, rel: PurePosixPath) -> str:
    where = area(rel)
    if where is EVERYONE or getattr(where, "chat", None) is None:
        return (
            f"{raw!r} is only available in private chats with the owner (their memory, logs and "
            "files stay out of shared chats)."
        )
    return f"{raw!r} belongs to another chat; each chat sees only its own files and notes."


def check_writable(ctx: TurnContext, path: Path) -> None:
    """Nothing written for one audience may land where another reads: a shared chat writes
    only in its own folder; the owner's sessions never write into a shared chat's places."""
    rel = PurePosixPath(path.relative_to(ctx.workspace).as_posix())
    everyone = area(rel) is EVERYONE or linked_from(ctx.workspace, path, SHARED_BOOTSTRAP)
    if ctx.private and everyone and not ctx.exposure.clean:
        # Read by every chat: text from outside that steered the model would reach them all.
        raise PathRefused(
            f"{rel} is read in every chat, groups included, and this conversation has read "
            f"text from outside the owner's own chats ({ctx.exposure.describe()}), which may "
            f"carry instructions; so {rel} cannot be changed from it. The owner can edit it by "
            "hand (the control page's Memory page, or any editor). A new conversation (/new) "
            "may change it only if it reads nothing from outside either, and quoted text in "
            "its own prompt (in today's or yesterday's log, or in USER.md) counts as read."
        )
    if writable(ctx.audience, rel) and not (everyone and not ctx.private):
        return
    folder = files_folder(ctx.audience)
    if folder is not None:
        if everyone:
            raise PathRefused(
                f"{rel} can only be changed from a private chat with the owner, not from a group."
            )
        raise PathRefused(
            f"In this chat, files can be written only in {folder}/ (e.g. {folder}/notes.md); "
            "notes for later go in this chat's log with memory_append."
        )
    raise PathRefused(
        f"{rel} is a shared chat's place; private chats do not write there, so nothing private "
        "can reach that chat."
    )


def check_single_name(ctx: TurnContext, path: Path) -> None:
    """In a shared chat, a file with another name elsewhere (a hard link) is refused: the
    other name may be one of the owner's files."""
    if ctx.private:
        return
    try:
        st = path.stat()
    except OSError:
        return
    if st.st_nlink > 1 and not path.is_dir():
        raise PathRefused(f"{path.name} has other names (hard links); not readable here.")


def ensure_dir(path: Path) -> None:
    """Create a folder and any missing parents, each readable by the owner's user alone."""
    missing = []
    while not path.exists():
        missing.append(path)
        path = path.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=PRIVATE_DIR_MODE)
        folder.chmod(PRIVATE_DIR_MODE)  # mkdir's mode is filtered by the umask


def atomic_write(
    path: Path, text: str, mode: int = PRIVATE_FILE_MODE, *, keep_mode: bool = True
) -> None:
    """Write via a temporary file and rename, so a crash never leaves half a file. A new
    file gets ``mode``; a replaced one keeps its own unless ``keep_mode`` is off."""
    ensure_dir(path.parent)
    write_atomic(path, text, mode=mode, keep_mode=keep_mode)


def _rel(ctx: TurnContext, path: Path) -> str:
    rel = path.relative_to(ctx.workspace)
    return str(rel) if rel.parts else "."


def _read_text(path: Path, raw: str) -> str:
    if not path.exists():
        raise ToolError(f"{raw!r} does not exist.")
    if path.is_dir():
        raise ToolError(f"{raw!r} is a folder; use list_files.")
    if not path.is_file():  # a FIFO or a device would block the whole process on open
        raise ToolError(f"{raw!r} is not a regular file.")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ToolError(f"{raw!r} is not a UTF-8 text file.") from None


def list_files(ctx: TurnContext, args: ListArgs) -> str:
    raw = args.get("path", ".")
    base = _resolve(ctx, raw)
    if not (_may_read(ctx, base) or _leads_to_own(ctx, base)):
        raise PathRefused(_not_yours(raw, _relpath(ctx, base)))
    if not base.is_dir():
        raise ToolError(f"{raw!r} is not a folder.")
    lines: list[str] = []
    deadline = time.monotonic() + walk.MAX_WALK_SECONDS
    entries, complete = walk.bounded_walk(base, bool(args.get("recursive")), deadline)
    for entry in entries:
        if time.monotonic() > deadline:
            complete = False
            break
        line = _listed(ctx, entry)
        if line is None:
            continue
        if len(lines) >= MAX_LIST_ENTRIES:  # one more this chat may see: say there are more
            complete = False
            break
        if named_in_chat(_relpath(ctx, entry)):
            ctx.saw("file names chosen in chat")
        lines.append(line)
    if not complete:
        lines.append("[... more entries not shown; list a subfolder]")
    return "\n".join(lines) if lines else f"{_rel(ctx, base)} is empty."


def _relpath(ctx: TurnContext, path: Path) -> PurePosixPath:
    return PurePosixPath(path.relative_to(ctx.workspace).as_posix())


def _may_read(ctx: TurnContext, path: Path) -> bool:
    return path.is_relative_to(ctx.workspace) and readable(ctx.audience, _relpath(ctx, path))


def _leads_to_own(ctx: TurnContext, path: Path) -> bool:
    return path.is_relative_to(ctx.workspace) and on_the_way(ctx.audience, _relpath(ctx, path))


def _listed(ctx: TurnContext, entry: Path) -> str | None:
    """How an entry shows in a listing, or None when this session may not see it."""
    rel = entry.relative_to(ctx.workspace)
    if not ctx.private:
        try:
            target = entry.resolve()
        except (OSError, RuntimeError):
            return None
        if not (_may_read(ctx, entry) and _may_read(ctx, target)):
            return f"{rel}/" if entry.is_dir() and _leads_to_own(ctx, entry) else None
    try:
        st = entry.stat()
    except OSError:  # a dangling link: show it, do not fail the whole listing
        return f"{rel}  (broken link)"
    if entry.is_dir():
        return f"{rel}/"
    if not ctx.private and st.st_nlink > 1:
        return None  # another name of a file that may be the owner's
    return f"{rel}  ({st.st_size} bytes)"


def read_file(ctx: TurnContext, args: ReadArgs) -> str:
    path = resolve_in_workspace(ctx, args["path"])
    check_single_name(ctx, path)
    text = _read_text(path, args["path"])
    lines = text.splitlines()
    offset = max(1, int(args.get("offset", 1)))
    limit = max(1, int(args.get("limit", DEFAULT_READ_LINES)))
    window = lines[offset - 1 : offset - 1 + limit]
    if not lines:
        return f"{_rel(ctx, path)} is empty."
    body = "\n".join(window)
    rel = _relpath(ctx, path)
    ctx.saw_file(rel, text)
    chat = chat_of(rel)
    if ctx.private and chat is not None:  # what a shared chat wrote, read in the owner's chat
        body = untrusted(f"chats/{chat}", body)
    if offset == 1 and len(window) == len(lines):
        return body
    end = offset - 1 + len(window)
    header = f"[{_rel(ctx, path)}: lines {offset}-{end} of {len(lines)}"
    header += "; use offset to read more]" if end < len(lines) else "]"
    return header + "\n" + body


def _kept(ctx: TurnContext, path: Path, text: str) -> str:
    """Text the file tools write: quoted where the owner's prompts load it, else remembered."""
    if in_owner_prompts(ctx.workspace, path):
        return ctx.marked(text) if text.strip() else text
    ctx.wrote(_relpath(ctx, path))
    return text


def _writable_path(ctx: TurnContext, raw: Any) -> Path:
    """A path this session's file tools may write at (which it may also read)."""
    path = _resolve(ctx, raw)
    check_writable(ctx, path)
    path = resolve_in_workspace(ctx, raw)
    check_single_name(ctx, path)  # an edit would read the other name's content
    return path


def write_file(ctx: TurnContext, args: WriteArgs) -> str:
    path = _writable_path(ctx, args["path"])
    content = _kept(ctx, path, args["content"])
    if len(content) > MAX_WRITE_CHARS:
        raise ToolError(
            f"Content is too long ({len(content)} characters; limit {MAX_WRITE_CHARS})."
        )
    if path.is_dir():
        raise ToolError(f"{args['path']!r} is a folder.")
    existed = path.exists()
    ctx.check_room(len(content.encode()) - (path.stat().st_size if existed else 0))
    atomic_write(path, content)
    verb = "Replaced" if existed else "Created"
    return f"{verb} {_rel(ctx, path)} ({len(content)} characters)."


def edit_file(ctx: TurnContext, args: EditArgs) -> str:
    path = _writable_path(ctx, args["path"])
    old, new = args["old_text"], _kept(ctx, path, args["new_text"])
    if not old:
        raise ToolError("old_text must not be empty; use write_file to create a file.")
    text = _read_text(path, args["path"])
    count = text.count(old)
    # A few characters replaced everywhere can make a huge file: the cap of write_file holds.
    times = count if args.get("replace_all") else min(count, 1)
    grown = len(text) + times * (len(new) - len(old))
    if grown > MAX_WRITE_CHARS and grown > len(text):
        raise ToolError(
            f"The edit would make {_rel(ctx, path)} too long ({grown} characters; limit "
            f"{MAX_WRITE_CHARS})."
        )
    if count == 0:
        raise ToolError(
            f"old_text was not found in {_rel(ctx, path)}; read the file and copy it exactly."
        )
    if count > 1 and not args.get("replace_all"):
        raise ToolError(
            f"old_text occurs {count} times in {_rel(ctx, path)}; include more surrounding text "
            "to make it unique, or set replace_all."
        )
    edited = text.replace(old, new)
    ctx.check_room(len(edited.encode()) - len(text.encode()))
    atomic_write(path, edited)
    return f"Edited {_rel(ctx, path)}: {count} replacement(s)."


class ListArgs(TypedDict):
    path: NotRequired[Annotated[str, "Folder relative to the workspace; default '.'."]]
    recursive: NotRequired[Annotated[bool, "Include subfolders."]]


class ReadArgs(TypedDict):
    path: Annotated[str, "File path relative to the workspace."]
    offset: NotRequired[Annotated[int, "First line to read (1-based)."]]
    limit: NotRequired[Annotated[int, "Number of lines to read."]]


class WriteArgs(TypedDict):
    path: Annotated[str, "File path relative to the workspace."]
    content: Annotated[str, "The whole new content."]


class EditArgs(TypedDict):
    path: Annotated[str, "File path relative to the workspace."]
    old_text: Annotated[str, "Exact text to find."]
    new_text: Annotated[str, "Replacement text."]
    replace_all: NotRequired[Annotated[bool, "Replace every occurrence."]]


FILE_TOOLS = (
    Tool.typed(
        "list_files",
        "List files and folders in the workspace.",
        ListArgs,
        list_files,
        blocking=True,
    ),
    Tool.typed(
        "read_file",
        "Read a text file from the workspace. Long files are returned in windows of lines.",
        ReadArgs,
        read_file,
        blocking=True,
    ),
    Tool.typed(
        "write_file",
        "Create or replace a text file in the workspace. Folders are created as needed.",
        WriteArgs,
        write_file,
        blocking=True,
    ),
    Tool.typed(
        "edit_file",
        "Replace an exact piece of text in a workspace file. old_text must match exactly once "
        "unless replace_all is true.",
        EditArgs,
        edit_file,
        blocking=True,
    ),
)
