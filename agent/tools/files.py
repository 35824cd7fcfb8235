"""The workspace file tools: read, write and edit a file; ``FILE_TOOLS`` offers them all."""

from __future__ import annotations

import contextlib
import errno
from pathlib import Path
from typing import Annotated, Any, NotRequired, TypedDict

from agent.tools.context import TurnContext
from agent.tools.listing import ListArgs, list_files
from agent.tools.paths import (
    as_written,
    check_single_name,
    check_writable,
    relpath,
    resolve_in_workspace,
    resolve_path,
    shown_path,
    skill_file,
)
from agent.tools.registry import Tool
from agent.workspace.audience import (
    WRITTEN_AFTER,
    chat_of,
    in_prompts,
    untrusted,
    written_after_outside,
)
from agent.workspace.history import History, recording
from agent.workspace.reading import NotPlainFile, read_plain, text_of
from agent.workspace.writers import held
from gateway.contract.errors import ToolError
from gateway.infra.atomic import write_atomic

MAX_WRITE_CHARS = 1_000_000
DEFAULT_READ_LINES = 400
# Private files and folders are created readable by the owner's user alone.
PRIVATE_FILE_MODE = 0o600
PRIVATE_DIR_MODE = 0o700


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
    path: Path,
    text: str,
    mode: int = PRIVATE_FILE_MODE,
    *,
    keep_mode: bool = True,
    history: History | None = None,
) -> None:
    """Write via a temporary file and rename, so a crash never leaves half a file. A new
    file gets ``mode``; a replaced one keeps its own unless ``keep_mode`` is off. The change
    is kept in ``history`` when given."""
    ensure_dir(path.parent)
    with recording(history, path):
        write_atomic(path, text, mode=mode, keep_mode=keep_mode)


# Nothing to open at the path: missing, a file where a folder should be, a loop of links.
_NOT_THERE = frozenset((errno.ENOENT, errno.ENOTDIR, errno.ELOOP))


def _read_text(path: Path, raw: str) -> str:
    try:
        return text_of(read_plain(path), strict=True)
    except NotPlainFile as exc:  # a FIFO is found without waiting for a writer
        if exc.folder:
            raise ToolError(f"{raw!r} is a folder; use list_files.") from None
        raise ToolError(f"{raw!r} is not a regular file.") from None
    except OSError as exc:
        if exc.errno in _NOT_THERE:
            raise ToolError(f"{raw!r} does not exist.") from None
        raise
    except UnicodeDecodeError:
        raise ToolError(f"{raw!r} is not a UTF-8 text file.") from None


def read_file(ctx: TurnContext, args: ReadArgs) -> str:
    path = resolve_in_workspace(ctx, args["path"])
    check_single_name(ctx, path)
    text = _read_text(path, args["path"])
    lines = text.splitlines()
    offset = max(1, int(args.get("offset", 1)))
    limit = max(1, int(args.get("limit", DEFAULT_READ_LINES)))
    window = lines[offset - 1 : offset - 1 + limit]
    if not lines:
        return f"{shown_path(ctx, path)} is empty."
    body = "\n".join(window)
    rel = relpath(ctx, path)
    ctx.saw_file(rel, text)
    chat = chat_of(rel)
    if ctx.private and chat is not None:  # what a shared chat wrote, read in the owner's chat
        body = untrusted(f"chats/{chat}", body)
    elif read := written_after_outside(ctx.workspace).get(str(rel)):
        body = untrusted(f"{rel}, written after reading {read}", body, WRITTEN_AFTER)
    if offset == 1 and len(window) == len(lines):
        return body
    end = offset - 1 + len(window)
    header = f"[{shown_path(ctx, path)}: lines {offset}-{end} of {len(lines)}"
    header += "; use offset to read more]" if end < len(lines) else "]"
    return header + "\n" + body


def _kept(ctx: TurnContext, path: Path, text: str) -> str:
    """Text the file tools write: quoted where a later prompt reads it (``paths.as_written``),
    else remembered as written after reading from outside (``TurnContext.wrote``)."""
    if in_prompts(ctx.workspace, path) and not skill_file(ctx, path):
        return as_written(ctx, path, text)
    ctx.wrote(relpath(ctx, path))
    return text


def _writable_path(ctx: TurnContext, raw: Any) -> Path:
    """A path this session's file tools may write at (which it may also read)."""
    path = resolve_path(ctx, raw)
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
    with held(ctx.workspace):  # not while a memory entry is appended to it
        existed = path.exists()
        ctx.check_room(len(content.encode()) - (path.stat().st_size if existed else 0))
        atomic_write(path, content, history=ctx.history)
    verb = "Replaced" if existed else "Created"
    return f"{verb} {shown_path(ctx, path)} ({len(content)} characters)."


def edit_file(ctx: TurnContext, args: EditArgs) -> str:
    path = _writable_path(ctx, args["path"])
    old, new = args["old_text"], _kept(ctx, path, args["new_text"])
    if not old:
        raise ToolError("old_text must not be empty; use write_file to create a file.")
    with held(ctx.workspace):  # read, changed, replaced: no entry appended between is lost
        text = _read_text(path, args["path"])
        count = _occurrences(ctx, path, text, old, new, bool(args.get("replace_all")))
        edited = text.replace(old, new)
        ctx.check_room(len(edited.encode()) - len(text.encode()))
        atomic_write(path, edited, history=ctx.history)
    return f"Edited {shown_path(ctx, path)}: {count} replacement(s)."


def _occurrences(
    ctx: TurnContext, path: Path, text: str, old: str, new: str, replace_all: bool
) -> int:
    """How often ``old`` is in ``text``: once, or any number with ``replace_all``."""
    count = text.count(old)
    # A few characters replaced everywhere can make a huge file: the cap of write_file holds.
    times = count if replace_all else min(count, 1)
    grown = len(text) + times * (len(new) - len(old))
    if grown > MAX_WRITE_CHARS and grown > len(text):
        raise ToolError(
            f"The edit would make {shown_path(ctx, path)} too long ({grown} characters; limit "
            f"{MAX_WRITE_CHARS})."
        )
    if count == 0:
        raise ToolError(
            f"old_text was not found in {shown_path(ctx, path)}; read the file and copy it exactly."
        )
    if count > 1 and not replace_all:
        raise ToolError(
            f"old_text occurs {count} times in {shown_path(ctx, path)}; include more "
            "surrounding text to make it unique, or set replace_all."
        )
    return count


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
