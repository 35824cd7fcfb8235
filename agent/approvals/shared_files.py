"""A write to a file every chat reads (``AGENTS.md``, ``SOUL.md``, ``IDENTITY.md``) from a turn
that has read text from outside the owner's chats: what it would change, as a diff for the
owner to approve."""

from __future__ import annotations

import difflib
from pathlib import Path, PurePosixPath
from typing import Any

from agent.tools.context import TurnContext
from agent.tools.paths import resolve_path
from agent.workspace.audience import EVERYONE, SHARED_BOOTSTRAP, area, linked_from
from gateway.contract.errors import ToolError

WRITING_TOOLS = ("write_file", "edit_file")
MAX_DIFF_CHARS = 3000


def everyone_path(ctx: TurnContext, tool: str, args: Any) -> Path | None:
    """The file every chat reads that this call of a file tool would change, if it would."""
    if tool not in WRITING_TOOLS or not isinstance(args, dict):
        return None
    try:
        path = resolve_path(ctx, args.get("path"))
    except ToolError:
        return None  # the tool itself refuses it, with its own words
    rel = PurePosixPath(path.relative_to(ctx.workspace).as_posix())
    if area(rel) is EVERYONE or linked_from(ctx.workspace, path, SHARED_BOOTSTRAP):
        return path
    return None


def proposed_diff(ctx: TurnContext, tool: str, args: dict[str, Any], path: Path) -> str:
    """The change the call would make, as a unified diff (cut when long)."""
    try:
        old = path.read_text(encoding="utf-8") if path.is_file() else ""
    except (OSError, UnicodeDecodeError):
        old = ""
    if tool == "write_file":
        new = str(args.get("content", ""))
    else:
        find, put = str(args.get("old_text", "")), str(args.get("new_text", ""))
        new = old.replace(find, put, -1 if args.get("replace_all") else 1) if find else old
    rel = path.relative_to(ctx.workspace).as_posix()
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{rel}", f"b/{rel}"
    )
    diff = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    if len(diff) > MAX_DIFF_CHARS:
        diff = diff[:MAX_DIFF_CHARS] + f"… ({len(diff) - MAX_DIFF_CHARS} more characters)\n"
    return diff or "(no change)\n"
