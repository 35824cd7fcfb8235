"""The chat commands as people see them: one list, for the platforms' menus, ``/help`` and names."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ChatCommandInfo:
    """A chat command as people see it: in a platform's command menu and in ``/help``."""

    name: str
    menu: str = ""  # its line in the platform menus; "" keeps it out of them
    help: str = ""  # its line in /help; "" when another command's line covers it
    owner: bool = False  # answers a pairing request: the owner's, in a private chat


# Every chat command, in the order menus and /help list them. The gateway answers them
# (``gateway/runtime/commands.py``, whose table must name exactly these).
COMMANDS: tuple[ChatCommandInfo, ...] = (
    ChatCommandInfo(
        "new",
        "Start a fresh session",
        "/new or /reset — start a fresh session (the old transcript stays on disk)",
    ),
    ChatCommandInfo("reset", "Same as /new"),
    ChatCommandInfo(
        "status",
        "Model, session and context use",
        "/status — model, session, context use and turns",
    ),
    ChatCommandInfo(
        "compact",
        "Summarise the conversation to free context",
        "/compact — summarise the conversation so far to free up context",
    ),
    ChatCommandInfo("stop", "Cancel the reply in progress", "/stop — cancel the reply in progress"),
    ChatCommandInfo(
        "usage",
        "What model calls cost",
        "/usage — what model calls cost today and this month (a shared chat: its own)",
    ),
    ChatCommandInfo(
        "budget",
        "",  # the owner's: kept out of the menus groups see too
        "/budget — the spending caps; /budget CAP AMOUNT raises one until its period ends "
        "(the owner, in a private chat)",
    ),
    ChatCommandInfo(
        "done",
        "Close an open loop: /done N",
        "/done — this chat's open loops; /done N closes one, /done N drop when no longer needed",
    ),
    ChatCommandInfo("help", "List the commands", "/help — this list"),
    ChatCommandInfo("start"),  # what Telegram sends first: answered like /help
    ChatCommandInfo(
        "approve",
        "Let someone who asked talk to me: /approve CODE",
        "/approve CODE, /deny CODE — answer a pairing request (the owner, in a private chat)",
        owner=True,
    ),
    ChatCommandInfo("deny", "Turn a pairing request down: /deny CODE", owner=True),
    # The owner's answer to a request to act: sent by its buttons, and spelled out in it.
    ChatCommandInfo("approval", owner=True),
    ChatCommandInfo(
        "revoke",
        "Take an approval back: /revoke PLATFORM USER_ID",
        "/revoke PLATFORM USER_ID — take an approval back",
        owner=True,
    ),
    ChatCommandInfo(
        "undo",
        "Take back the newest change to memory",
        "/undo — show the newest change to the workspace and take it back (the owner, in a "
        "private chat)",
        owner=True,
    ),
    # The owner's answer to a memory proposal: sent by the proposal's buttons (or typed, as
    # their text fallback shows), so in no menu and not in /help.
    ChatCommandInfo("memory", owner=True),
)
COMMAND_NAMES = frozenset(c.name for c in COMMANDS)
# The chat commands every channel offers (name, short description), e.g. for a platform's
# command menu.
CHAT_COMMANDS: tuple[tuple[str, str], ...] = tuple(
    (c.name, c.menu) for c in COMMANDS if c.menu and not c.owner
)
# Answering pairing requests: the owner's, in a private chat; not in the public command menus.
OWNER_COMMANDS: tuple[tuple[str, str], ...] = tuple(
    (c.name, c.menu) for c in COMMANDS if c.menu and c.owner
)
HELP = "\n".join(
    [
        "Commands:",
        *(c.help for c in COMMANDS if c.help),
        "",
        "Anything else you write goes to the assistant.",
    ]
)
