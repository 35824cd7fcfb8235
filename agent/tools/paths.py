"""Where the file tools may reach: a path the model gave, resolved in the workspace and checked."""

from __future__ import annotations

import unicodedata
from pathlib import Path, PurePosixPath
from typing import Any

from agent.tools.context import TurnContext
from agent.workspace.audience import (
    EVERYONE,
    SHARED_BOOTSTRAP,
    SKILLS,
    area,
    files_folder,
    in_prompts,
    linked_from,
    writable,
)
from gateway.contract.errors import PathRefused, ToolError

# Linux's PATH_MAX, in bytes, which a character is at least: no longer path names a file, and
# resolving one looks up each of its parts.
MAX_PATH_CHARS = 4096


def resolve_in_workspace(ctx: TurnContext, raw: Any) -> Path:
    """Map a model-supplied relative path to a real path inside the workspace that this
    session may read, or refuse."""
    resolved = resolve_path(ctx, raw)
    rel = PurePosixPath(resolved.relative_to(ctx.workspace).as_posix())
    if not ctx.may_read(rel):
        raise PathRefused(not_yours(raw, rel))
    return resolved


def resolve_path(ctx: TurnContext, raw: Any) -> Path:
    """The real path inside the workspace that a model-supplied path names, or refuse; whether
    this session may use it is the caller's to check."""
    if not isinstance(raw, str) or not raw.strip():
        raise ToolError("A path is required, relative to the workspace (e.g. notes/todo.md).")
    text = unicodedata.normalize("NFC", raw.strip())
    if len(text) > MAX_PATH_CHARS:
        raise PathRefused(
            f"That path is too long ({len(text):,} characters; at most {MAX_PATH_CHARS:,})."
        )
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


def not_yours(raw: Any, rel: PurePosixPath) -> str:
    """Why a path this session may not read is refused, without saying what is there."""
    where = area(rel)
    if where is EVERYONE or getattr(where, "chat", None) is None:
        return (
            f"{raw!r} is only available in private chats with the owner (their memory, logs and "
            "files stay out of shared chats)."
        )
    return f"{raw!r} belongs to another chat; each chat sees only its own files and notes."


def check_writable(ctx: TurnContext, path: Path) -> None:
    """Nothing written for one audience may land where another reads: a shared chat writes
    only in its own folder; the owner's sessions never write into a shared chat's places. A
    place a later prompt reads (``audience.in_prompts``) is changed from a conversation that has
    read text from outside only with the owner's approval of the diff (``agent/approvals``)."""
    rel = PurePosixPath(path.relative_to(ctx.workspace).as_posix())
    everyone = area(rel) is EVERYONE or linked_from(ctx.workspace, path, SHARED_BOOTSTRAP)
    prompts = in_prompts(ctx.workspace, path)
    if ctx.private and prompts and not ctx.exposure.clean and not ctx.owner_approved:
        # Read by later prompts as instructions: text from outside that steered the model
        # would reach them (every chat's, for the files every chat reads).
        who = "in every chat, groups included," if everyone else "by the owner's later prompts"
        raise PathRefused(
            f"{rel} is read {who} as instructions, and this conversation has read text "
            f"from outside the owner's own chats ({ctx.exposure.describe()}), which may carry "
            f"instructions; so {rel} is changed from it only with the owner's approval of the "
            "change, which was not given. The owner can edit it by hand (the control page's "
            "Memory page, or any editor). A new conversation (/new) may change it only if it "
            "reads nothing from outside either, and quoted text in its own prompt (in today's "
            "or yesterday's log, or in USER.md) counts as read. Notes for later go in memory "
            "with memory_append, kept quoted."
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


def as_written(ctx: TurnContext, path: Path, text: str) -> str:
    """``text`` as the file tools write it at ``path``: quoted with where it came from when a
    conversation that has read text from outside writes into a Markdown place a later prompt
    reads, so that it stays outside text wherever it is read (a skill's files are kept as they
    are, since quoting would break their format, and are noted instead: ``TurnContext.wrote``)."""
    if not text.strip() or not in_prompts(ctx.workspace, path) or skill_file(ctx, path):
        return text
    return ctx.marked(text)


def skill_file(ctx: TurnContext, path: Path) -> bool:
    """Is ``path`` one of a skill's files (under ``skills/``, or where a link named so leads)?"""
    parts = path.relative_to(ctx.workspace).parts
    return (bool(parts) and parts[0].casefold() == SKILLS) or linked_from(
        ctx.workspace, path, (SKILLS,)
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


def relpath(ctx: TurnContext, path: Path) -> PurePosixPath:
    """``path`` relative to the workspace, as the audience rules take it."""
    return PurePosixPath(path.relative_to(ctx.workspace).as_posix())


def shown_path(ctx: TurnContext, path: Path) -> str:
    """``path`` as the tools' answers name it: relative to the workspace, ``.`` for its root."""
    rel = path.relative_to(ctx.workspace)
    return str(rel) if rel.parts else "."
