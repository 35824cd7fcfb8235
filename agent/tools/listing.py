"""The ``list_files`` tool: the entries of a workspace folder that this session may see."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, NotRequired, TypedDict

from agent.tools import walk
from agent.tools.context import TurnContext
from agent.tools.paths import not_yours, relpath, resolve_path, shown_path
from agent.workspace.audience import named_in_chat, on_the_way
from gateway.contract.errors import PathRefused, ToolError

MAX_LIST_ENTRIES = 500


class ListArgs(TypedDict):
    path: NotRequired[Annotated[str, "Folder relative to the workspace; default '.'."]]
    recursive: NotRequired[Annotated[bool, "Include subfolders."]]


def list_files(ctx: TurnContext, args: ListArgs) -> str:
    raw = args.get("path", ".")
    base = resolve_path(ctx, raw)
    if not (_may_read(ctx, base) or _leads_to_own(ctx, base)):
        raise PathRefused(not_yours(raw, relpath(ctx, base)))
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
        if named_in_chat(relpath(ctx, entry)):
            ctx.saw("file names chosen in chat")
        lines.append(line)
    if not complete:
        lines.append("[... more entries not shown; list a subfolder]")
    return "\n".join(lines) if lines else f"{shown_path(ctx, base)} is empty."


def _may_read(ctx: TurnContext, path: Path) -> bool:
    return path.is_relative_to(ctx.workspace) and ctx.may_read(relpath(ctx, path))


def _leads_to_own(ctx: TurnContext, path: Path) -> bool:
    return path.is_relative_to(ctx.workspace) and on_the_way(ctx.audience, relpath(ctx, path))


def _listed(ctx: TurnContext, entry: Path) -> str | None:
    """How an entry shows in a listing, or None when this session may not see it."""
    rel = entry.relative_to(ctx.workspace)
    if ctx.private and not _may_read(ctx, entry):
        return None  # a guest's notes, when the owner's chats are kept out of them
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
