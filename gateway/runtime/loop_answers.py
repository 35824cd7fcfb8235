"""Closing loops by hand: ``/done`` in a chat (or a nudge's button) and the control page."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime
from zoneinfo import ZoneInfo

from agent.loops.book import State
from agent.loops.store import Loops, loops_path, open_loops
from agent.loops.tools import Follow
from agent.loops.views import describe
from agent.workspace.changes import Author, authored
from gateway.contract.errors import ToolError
from gateway.contract.events import Audience, InboundMessage, audience_of
from gateway.runtime.pairing_notices import Settle

Buttons = tuple[tuple[str, str], ...]
USAGE = "Which loop? /done N closes loop N; /done N drop says it is no longer needed."
LISTED = 20
BUTTONED = 4


class LoopAnswers:
    def __init__(
        self,
        loops: Loops,
        follow: Follow | None,
        settle: Settle | None,
        clock: Callable[[], datetime],
        tz: ZoneInfo,
    ) -> None:
        self.loops = loops
        self.follow = follow
        self.settle = settle
        self.clock = clock
        self.tz = tz

    async def answer(self, msg: InboundMessage) -> tuple[str, Buttons]:
        """The answer to ``/done [N [drop]]`` in ``msg``'s chat."""
        audience = audience_of(msg.key)
        if loops_path(audience) is None:
            return "No loops are kept here.", ()
        words = msg.text.split()[1:]
        if not words:
            return self.listing(audience, buttons=msg.key.private)
        number = words[0].removeprefix("#")
        if not number.isdigit() or len(words) > 2:
            return USAGE, ()
        state = State.DONE
        if len(words) == 2:
            if words[1].casefold() not in ("drop", "dropped"):
                return USAGE, ()
            state = State.DROPPED
        who = "the owner" if msg.key.private else (msg.sender_name or msg.sender_id)
        try:
            with authored(Author(str(msg.key), "/done")):
                return await self.close(audience, int(number), state, f"{who} (/done)"), ()
        except ToolError as exc:
            return str(exc), ()

    def listing(self, audience: Audience, *, buttons: bool) -> tuple[str, Buttons]:
        loops = open_loops(self.loops.read(audience))
        if not loops:
            return "No open loops here.", ()
        now = self.clock().astimezone(self.tz)
        lines = [f"• {describe(lp, now)}" for lp in loops[:LISTED]]
        if len(loops) > LISTED:
            lines.append(f"… and {len(loops) - LISTED} more ({self.loops.path(audience)})")
        text = "Open loops:\n" + "\n".join(lines) + "\n\n" + USAGE.removeprefix("Which loop? ")
        shown = tuple((f"Done #{lp.id}", f"/done {lp.id}") for lp in loops[:BUTTONED])
        return text, shown if buttons else ()

    async def close(self, audience: Audience, number: int, state: State, by: str) -> str:
        """Close loop ``number`` of ``audience``; what to tell whoever asked. ``ToolError``
        when there is no such open loop."""
        day = self.clock().astimezone(self.tz).date().isoformat()
        loop = await asyncio.to_thread(self.loops.close, audience, number, state, day=day, by=by)
        if self.follow is not None:
            self.follow.closed(audience, loop)
        said = "Done" if state == State.DONE else "Dropped"
        text = f"{said}: #{number} {loop.what}."
        if self.settle is not None and audience.private:  # only there do nudges have buttons
            for command in (f"/done {number}", f"/done {number} drop"):
                if await self.settle(command, text):
                    break
        return text
