"""``exec``: the model runs a shell command in the sandbox, in the owner's private chats only."""

from __future__ import annotations

import asyncio
import fnmatch
import re
from collections.abc import Sequence
from typing import Annotated, Any, TypedDict

from agent.approvals.audit import AuditLog, whole_arguments
from agent.approvals.policy import Policy
from agent.sandbox.bwrap import INSIDE, Ran, Sandbox
from agent.sandbox.leftovers import look, tidy
from agent.tools.context import TurnContext
from agent.tools.registry import Tool
from gateway.contract.errors import ToolError

# What lets one command become several, or take its words from elsewhere: such a command is
# never allowed by a pattern, whatever it looks like.
_OPERATORS = re.compile(r"[;&|`$<>(){}\n\r\\]")
MAX_COMMAND_CHARS = 4000


class ExecArgs(TypedDict):
    command: Annotated[str, f"A shell command, run with /bin/sh -c in {INSIDE}."]


def allowed_by(patterns: Sequence[str], args: Any) -> bool:
    """Does the owner allow this command in advance (a pattern matches it whole)?"""
    command = args.get("command") if isinstance(args, dict) else None
    if not isinstance(command, str) or _OPERATORS.search(command):
        return False
    command = " ".join(command.split())
    return any(fnmatch.fnmatchcase(command, pattern) for pattern in patterns)


def described(ran: Ran, limit_kb: int, timeout: float) -> str:
    if ran.stopped == "time":
        head = f"Stopped after {timeout:g} s (the time limit)."
    elif ran.stopped == "output":
        head = f"Stopped: the output passed {limit_kb} KB (the limit)."
    else:
        head = f"Exit status {ran.status} ({ran.seconds:.1f} s)."
    output = ran.output if ran.output.strip() else "(no output)"
    if ran.cut:
        output += f"\n[... {ran.cut} more bytes not shown]"
    return f"{head}\n{output}"


SEALED = (
    "This conversation has read text from outside the owner's own chats: in the box, the files "
    "later conversations read as instructions (AGENTS.md, SOUL.md, IDENTITY.md, USER.md, "
    "TOOLS.md, MEMORY.md, HEARTBEAT.md, memory/, skills/) are read-only."
)


def exec_tool(sandbox: Sandbox, audit: AuditLog) -> Tool:
    cfg = sandbox.settings
    where = "the workspace" if cfg.writable == "workspace" else "an empty scratch folder"

    async def run(ctx: TurnContext, args: ExecArgs) -> str:
        command = args["command"]
        if not command.strip():
            raise ToolError("command is empty.")
        if len(command) > MAX_COMMAND_CHARS:
            raise ToolError(f"The command is too long (limit {MAX_COMMAND_CHARS} characters).")
        # Read text from outside: what later prompts read is read-only in the box.
        sealed = not ctx.exposure.clean
        boxed = cfg.writable == "workspace"
        before = await asyncio.to_thread(look, sandbox.workspace) if boxed else None
        ran = await sandbox.run(command, sealed=sealed)
        removed: list[str] = []
        if before is not None:
            read = ctx.exposure.describe() if sealed else None
            removed = await asyncio.to_thread(tidy, sandbox.workspace, before, read)
        outcome = (ran.stopped and f"stopped ({ran.stopped})") or f"exit {ran.status}"
        detail = f"{outcome}, {ran.seconds:.1f} s, {len(ran.output.encode()) + ran.cut} bytes"
        audit.record(
            "ran",
            "exec",
            str(ctx.key),
            arguments=whole_arguments(args),
            sources=ctx.exposure.sources,
            detail=detail + "".join(f"; removed {r}" for r in removed),
        )
        said = described(ran, cfg.max_output_kb, cfg.timeout)
        if removed:
            said += "\n[Removed what the workspace may not hold: " + "; ".join(removed) + "]"
        if sealed and boxed:
            said += f"\n[{SEALED}]"
        return said

    network = "with network access" if cfg.network else "without network access"
    description = (
        f"Run a shell command in a sandbox: {INSIDE} is {where} (writable), the system is "
        f"read-only, {network}, at most {cfg.timeout:g} s, {cfg.memory_mb} MB and "
        f"{cfg.max_output_kb} KB of output. The owner is asked before a command runs unless "
        "they allowed it in advance."
    )
    return Tool.typed(
        "exec",
        description,
        ExecArgs,
        run,
        private_only=True,
        outside="a command's output, with network access" if cfg.network else None,
        policy=Policy.ASK,
        allowed=lambda args: allowed_by(cfg.allow, args),
        sends_out=(lambda args, ctx: "the command has network access") if cfg.network else None,
    )
