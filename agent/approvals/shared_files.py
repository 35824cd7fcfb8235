"""A write to a place later prompts read, from a tainted turn: its diff for the owner to approve."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from agent.approvals.audit import visible
from agent.tools.context import TurnContext
from agent.tools.paths import as_written, resolve_path
from agent.workspace.audience import in_prompts
from agent.workspace.reading import read_plain, text_of
from gateway.contract.errors import ToolError

WRITING_TOOLS = ("write_file", "edit_file")
# The arguments a diff shows better than their text does.
CHANGE_ARGUMENTS = ("content", "old_text", "new_text", "replace_all")


def prompt_write(ctx: TurnContext, tool: str, args: Any) -> Path | None:
    """The prompt place this call of a file tool would change, if it would."""
    if tool not in WRITING_TOOLS or not isinstance(args, dict):
        return None
    try:
        path = resolve_path(ctx, args.get("path"))
    except ToolError:
        return None  # the tool itself refuses it, with its own words
    return path if in_prompts(ctx.workspace, path) else None


def proposed_diff(ctx: TurnContext, tool: str, args: dict[str, Any], path: Path) -> str:
    """The change the call would make, as a unified diff of what would be written (quoting
    included), whole, with nothing invisible."""
    try:
        old = text_of(read_plain(path))
    except OSError:
        old = ""  # none yet (or nothing the tool could edit: it says so itself)
    if tool == "write_file":
        new = as_written(ctx, path, str(args.get("content", "")))
    else:
        find = str(args.get("old_text", ""))
        put = as_written(ctx, path, str(args.get("new_text", "")))
        new = old.replace(find, put, -1 if args.get("replace_all") else 1) if find else old
    rel = path.relative_to(ctx.workspace).as_posix()
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{rel}", f"b/{rel}"
    )
    diff = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    return visible(diff) or "(no change)\n"
