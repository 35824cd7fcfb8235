"""Workspace file tools (list, read, write, edit), confined to the workspace by construction.

Every path goes through ``resolve_in_workspace``: absolute paths, ``..`` components and symbolic
links that lead outside are refused, and in shared sessions ``MEMORY.md`` and ``inbox/private/``
do not exist.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import unicodedata
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, NotRequired, TypedDict

from agent.tools import Tool, TurnContext
from gateway.errors import PathRefused, ToolError

MAX_WRITE_CHARS = 1_000_000
MAX_LIST_ENTRIES = 500
DEFAULT_READ_LINES = 400
# Files at the workspace root that only private sessions may see (compared case-insensitively).
PRIVATE_FILES = frozenset({"memory.md"})
# Files at the workspace root that shared sessions may read but not change.
PROTECTED_IN_SHARED = frozenset(
    {"agents.md", "soul.md", "identity.md", "user.md", "tools.md", "heartbeat.md"}
)


# Folders only private sessions may see: files people sent in private chats.
PRIVATE_DIRS = (("inbox", "private"),)


def is_private_path(rel: PurePosixPath | Path) -> bool:
    parts = tuple(p.casefold() for p in rel.parts)
    if len(parts) == 1 and parts[0] in PRIVATE_FILES:
        return True
    return any(parts[: len(d)] == d for d in PRIVATE_DIRS)


def resolve_in_workspace(ctx: TurnContext, raw: Any) -> Path:
    """Map a model-supplied relative path to a real path inside the workspace, or refuse."""
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
    if resolved != root and not resolved.is_relative_to(root):
        raise PathRefused(f"{raw!r} leads outside the workspace (through a symbolic link).")
    if not ctx.private and is_long_term(root, resolved):
        raise PathRefused(
            f"{raw!r} is only available in private chats with the owner (MEMORY.md and files "
            "sent in private chats)."
        )
    return resolved


def _long_term_ids(root: Path) -> set[tuple[int, int]]:
    """(device, inode) of MEMORY.md under any spelling at the workspace root."""
    ids: set[tuple[int, int]] = set()
    for name in os.listdir(root):
        if name.casefold() in PRIVATE_FILES:
            with contextlib.suppress(OSError):
                st = (root / name).stat()
                ids.add((st.st_dev, st.st_ino))
    return ids


def is_long_term(root: Path, resolved: Path) -> bool:
    """By name, and by identity: another name for the same file (a file system that folds
    case or ignores some characters, a hard link) is MEMORY.md too."""
    if is_private_path(resolved.relative_to(root)):
        return True
    try:
        st = resolved.stat()
    except OSError:
        return False
    return (st.st_dev, st.st_ino) in _long_term_ids(root)


def check_writable(ctx: TurnContext, path: Path) -> None:
    """Shared chats may not rewrite the files that shape every private session's prompt."""
    rel = path.relative_to(ctx.workspace)
    if not ctx.private and len(rel.parts) == 1 and rel.parts[0].casefold() in PROTECTED_IN_SHARED:
        raise PathRefused(
            f"{rel} can only be changed from a private chat with the owner, not from a group."
        )


def atomic_write(path: Path, text: str) -> None:
    """Write via a temporary file and rename, so a crash never leaves half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o777)
        else:
            os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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
    base = resolve_in_workspace(ctx, raw)
    if not base.is_dir():
        raise ToolError(f"{raw!r} is not a folder.")
    # Looked up once for the whole listing, not once per entry.
    hidden = set() if ctx.private else _long_term_ids(ctx.workspace)
    lines: list[str] = []
    for entry in _walk(base, bool(args.get("recursive"))):
        rel = entry.relative_to(ctx.workspace)
        if not ctx.private and is_private_path(rel):
            continue
        try:
            st = entry.stat()
        except OSError:
            st = None
        if st is not None and (st.st_dev, st.st_ino) in hidden:
            continue
        if len(lines) >= MAX_LIST_ENTRIES:
            lines.append("[... more entries not shown; list a subfolder]")
            break
        if st is None:  # a dangling link: show it, do not fail the whole listing
            lines.append(f"{rel}  (broken link)")
        else:
            lines.append(f"{rel}/" if entry.is_dir() else f"{rel}  ({st.st_size} bytes)")
    return "\n".join(lines) if lines else f"{_rel(ctx, base)} is empty."


def _walk(base: Path, recursive: bool) -> list[Path]:
    """Visible entries under ``base``; never descends through a symbolic link."""
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        here = Path(dirpath)
        out.extend(here / name for name in dirnames)
        out.extend(here / name for name in sorted(filenames) if not name.startswith("."))
        if not recursive:
            break
    return sorted(out)


def read_file(ctx: TurnContext, args: ReadArgs) -> str:
    path = resolve_in_workspace(ctx, args["path"])
    lines = _read_text(path, args["path"]).splitlines()
    offset = max(1, int(args.get("offset", 1)))
    limit = max(1, int(args.get("limit", DEFAULT_READ_LINES)))
    window = lines[offset - 1 : offset - 1 + limit]
    if not lines:
        return f"{_rel(ctx, path)} is empty."
    if offset == 1 and len(window) == len(lines):
        return "\n".join(window)
    end = offset - 1 + len(window)
    header = f"[{_rel(ctx, path)}: lines {offset}-{end} of {len(lines)}"
    header += "; use offset to read more]" if end < len(lines) else "]"
    return header + "\n" + "\n".join(window)


def write_file(ctx: TurnContext, args: WriteArgs) -> str:
    path = resolve_in_workspace(ctx, args["path"])
    check_writable(ctx, path)
    content: str = args["content"]
    if len(content) > MAX_WRITE_CHARS:
        raise ToolError(
            f"Content is too long ({len(content)} characters; limit {MAX_WRITE_CHARS})."
        )
    if path.is_dir():
        raise ToolError(f"{args['path']!r} is a folder.")
    existed = path.exists()
    atomic_write(path, content)
    verb = "Replaced" if existed else "Created"
    return f"{verb} {_rel(ctx, path)} ({len(content)} characters)."


def edit_file(ctx: TurnContext, args: EditArgs) -> str:
    path = resolve_in_workspace(ctx, args["path"])
    check_writable(ctx, path)
    old, new = args["old_text"], args["new_text"]
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
    atomic_write(path, text.replace(old, new))
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
    Tool.typed("list_files", "List files and folders in the workspace.", ListArgs, list_files),
    Tool.typed(
        "read_file",
        "Read a text file from the workspace. Long files are returned in windows of lines.",
        ReadArgs,
        read_file,
    ),
    Tool.typed(
        "write_file",
        "Create or replace a text file in the workspace. Folders are created as needed.",
        WriteArgs,
        write_file,
    ),
    Tool.typed(
        "edit_file",
        "Replace an exact piece of text in a workspace file. old_text must match exactly once "
        "unless replace_all is true.",
        EditArgs,
        edit_file,
    ),
)
