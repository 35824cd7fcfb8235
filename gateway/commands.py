"""Chat commands handled before the agent: parsing and the texts they answer with."""

from __future__ import annotations

from agent.transcript import SessionState

# Parsing lives in the leaf module so the channels' access policy uses the same parser.
from gateway.events import Command as Command
from gateway.events import parse_command as parse_command

# Commands that take their place in the session's queue (they change the session).
ORDERED = frozenset({"new", "reset", "compact"})
# Commands answered at once, even while a turn runs.
IMMEDIATE = frozenset({"status", "help", "start", "stop"})

HELP = """Commands:
/new or /reset — start a fresh session (the old transcript stays on disk)
/status — model, session, context use and turns
/compact — summarise the conversation so far to free up context
/stop — cancel the reply in progress
/help — this list

Anything else you write goes to the assistant."""


def status_text(
    *,
    model: str,
    context_window: int,
    state: SessionState | None,
    key: str,
    private: bool,
    running: bool,
    queued: int,
) -> str:
    kind = "private" if private else "shared"
    lines = [f"Model: {model}", f"Session: {key} ({kind})"]
    if state is None:
        lines.append("No conversation yet in this session.")
        return "\n".join(lines)
    used = state.context_tokens
    pct = 100 * used / context_window if context_window else 0
    lines.append(f"Context: {used:,} / {context_window:,} tokens ({pct:.0f}%)")
    lines.append(f"Turns: {state.turns} since {state.created[:16].replace('T', ' ')} UTC")
    u = state.usage_total
    total_in = u.input + u.cache_read + u.cache_write
    if total_in:
        lines.append(
            f"Tokens used: {total_in:,} in ({100 * u.cache_read / total_in:.0f}% from cache), "
            f"{u.output:,} out"
        )
    lines.append(
        "Now: " + ("answering" if running else "idle") + (f", {queued} queued" if queued else "")
    )
    return "\n".join(lines)
