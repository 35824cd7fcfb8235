"""``/undo``: the owner takes back the newest change to the workspace from a private chat."""

from __future__ import annotations

from agent.workspace.changes import Author
from agent.workspace.history import History
from gateway.contract.errors import ToolError
from gateway.contract.events import OWNER

Buttons = tuple[tuple[str, str], ...]
USAGE = "/undo shows the newest change to the workspace; /undo #N takes it back."
MAX_DIFF = 1_500  # characters of the diff shown in the chat


def undo_answer(history: History, argument: str, who: str) -> tuple[str, Buttons]:
    """The answer to ``/undo ARGUMENT`` from ``who`` (the owner's session)."""
    argument = argument.strip()
    if argument == "keep":
        return "Nothing was undone.", ()
    if not argument:
        change = history.undoable(OWNER)
        if change is None:
            return "There is nothing to undo.", ()
        diff = history.diff(change)
        if len(diff) > MAX_DIFF:
            diff = diff[:MAX_DIFF].rsplit("\n", 1)[0] + "\n… (the rest: corvid memory history)\n"
        text = (
            f"The newest change:\n{change.describe(history.tz)}\n```diff\n{diff}```\nTake it back?"
        )
        return text, (("Undo it", f"/undo #{change.id}"), ("Keep it", "/undo keep"))
    number = argument.removeprefix("#")
    if not number.isdigit():
        return USAGE, ()
    try:
        change = history.undo(OWNER, Author(who, "/undo"), expected=int(number))
    except ToolError as exc:
        return str(exc), ()
    return (
        f"Undid {change.describe(history.tz)}.\n/undo again shows the change before it; "
        "`corvid memory restore` goes forward again.",
        (),
    )
