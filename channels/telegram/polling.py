"""Long polling for Telegram, and the offset that confirms an update once the gateway has it."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from channels.telegram.api import retry_after_seconds
from gateway.contract.ports import Clock

if TYPE_CHECKING:
    from telegram import Bot, Update

log = logging.getLogger(__name__)

CONFLICTS_BEFORE_GIVING_UP = 4
# Messages, and presses of the buttons under the bot's own (pairing requests for the owner).
UPDATES = ["message", "callback_query"]


# Corvid's own loop, not PTB's Updater: it stops the channel when the token is revoked or
# another process polls the same bot, where the Updater would retry forever.
class Poller:
    """The loop over ``getUpdates``, handing each update to ``dispatch`` (which returns the
    task taking it in, or None for an update that is not for us)."""

    def __init__(
        self,
        dispatch: Callable[[Update], asyncio.Task[None] | None],
        fail: Callable[[str], None],
        receiving: asyncio.Event,
        clock: Clock,
    ) -> None:
        self._dispatch = dispatch
        self._fail = fail
        self._receiving = receiving
        self._clock = clock
        self._offset: int | None = None
        # Updates still being taken in (a download, say), by update id. Telegram is not told
        # they were received until the gateway has them, so a crash meanwhile loses none.
        self._taking: dict[int, asyncio.Task[None]] = {}
        self._next_update = 0  # updates below this were dispatched by this process

    async def run(self, bot: Bot, poll_timeout: float, retry_backoff: float) -> None:
        """Long polling, until cancelled or until the channel cannot go on."""
        from telegram.error import Conflict, InvalidToken, RetryAfter, TelegramError, TimedOut

        failures = conflicts = 0
        while True:
            try:
                self._receiving.set()
                updates = await bot.get_updates(
                    offset=self._offset,
                    timeout=dt.timedelta(seconds=poll_timeout),
                    allowed_updates=UPDATES,
                )
            except InvalidToken:
                self._fail(
                    "Telegram no longer accepts the bot token (revoked or changed in "
                    "@BotFather); put the new one in channels.telegram.token"
                )
                return
            except Conflict:
                # Right after a restart the previous process's poll may still be open for a
                # moment; only a conflict that persists means a second instance.
                conflicts += 1
                if conflicts >= CONFLICTS_BEFORE_GIVING_UP:
                    self._fail(
                        "another program is receiving updates for this Telegram bot token (409 "
                        "Conflict): stop the other Corvid instance, or give each one its own "
                        "bot token"
                    )
                    return
                wait = retry_backoff * 2 ** (conflicts - 1)
            except RetryAfter as exc:
                wait = retry_after_seconds(exc)
            except TimedOut:
                continue  # a long poll that outlived the read timeout: just poll again
            except TelegramError as exc:
                failures += 1
                wait = min(30.0, retry_backoff * 2 ** min(failures - 1, 5))
                log.warning("telegram: polling failed (%s); retrying in %.0f s", exc, wait)
            else:
                failures = conflicts = 0
                await self._take(updates)
                continue
            # Waited out of the handler, so the failed request (its traceback's frames, its
            # connection) is not kept meanwhile.
            await self._clock.sleep(wait)

    async def _take(self, updates: Sequence[Update]) -> None:
        """Hand a batch from getUpdates to the chats' lanes, then move the offset past what
        the gateway has."""
        fresh = [u for u in updates if u.update_id >= self._next_update]
        for update in fresh:
            self._next_update = update.update_id + 1
            task = self._dispatch(update)
            if task is not None:
                self._taking[update.update_id] = task
        # One pass of the loop lets plain messages, which need no I/O, reach the gateway,
        # so the next poll confirms them instead of receiving them again.
        await asyncio.sleep(0)
        self._offset = self._confirmable()
        if updates and not fresh and self._taking:
            # All Telegram returned is still being taken in: asking again now would only
            # return the same updates, so wait for one of them to be done.
            await asyncio.wait(list(self._taking.values()), return_when=asyncio.FIRST_COMPLETED)
            self._offset = self._confirmable()

    def _confirmable(self) -> int | None:
        """The offset that confirms every update the gateway has (or has turned away). An
        intake cancelled by stop() stays unconfirmed, for the next start to receive."""
        for uid, task in list(self._taking.items()):
            if task.done() and not task.cancelled():
                del self._taking[uid]
        if self._taking:
            return min(self._taking)
        return self._next_update or self._offset

    async def confirm(self, bot: Bot) -> None:
        """On stop, once the intake has ended: confirm what the gateway has, so a restart does
        not receive it again. Updates whose intake was cut short stay unconfirmed and come
        again after the restart."""
        self._offset = self._confirmable()
        if self._offset is not None:
            with contextlib.suppress(Exception):
                await bot.get_updates(offset=self._offset, timeout=dt.timedelta(0))
