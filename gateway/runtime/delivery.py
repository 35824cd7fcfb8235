"""Delivery: every reply and scheduled message leaves through here, recorded in the outbox."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from channels.base import Channel
from channels.live import LiveReply
from gateway.contract.errors import DeliveryError
from gateway.contract.events import InboundMessage, OutboundMessage, SessionKey
from gateway.contract.ports import Clock, SystemClock
from gateway.infra.times import local_time
from gateway.runtime.journal import Journal, Outgoing, SendStatus
from gateway.runtime.retries import Held, Retries, Unreachable

log = logging.getLogger(__name__)

UNCERTAIN_NOTE = (
    "I was restarted while sending you a reply, so it may not have arrived (or only in part). "
    "Ask me to repeat it if it's missing."
)
# A message sent this much later than it was written says so.
LATE = timedelta(minutes=2)


class Delivery:
    def __init__(
        self,
        channels: Mapping[str, Channel],
        journal: Journal | None,
        mask: Callable[[str], str],
        *,
        clock: Clock | None = None,
        tz: ZoneInfo | None = None,
        retry_window: timedelta = timedelta(hours=24),
    ) -> None:
        self.channels = channels
        self.journal = journal
        self._mask = mask  # errors are stored and logged without secrets
        self.clock = clock or SystemClock()
        self.tz = tz
        self.retries = Retries(self._attempt, self._give_up, self.clock, retry_window)
        # Per channel: sends that found the platform unreachable since the last one that went
        # out, when the first of them was, and the last error.
        self._failing: dict[str, tuple[int, datetime, str]] = {}

    def trouble(self, channel: str) -> str | None:
        """Why this channel cannot send right now, for ``corvid status``; None when its last
        send went out (or none was tried)."""
        failing = self._failing.get(channel)
        if failing is None:
            return None
        count, since, error = failing
        when = local_time(since, self.tz or UTC)
        waiting = self.retries.count()
        return f"cannot send since {when} ({count} failed in a row; {error})" + (
            f"; {waiting} message(s) waiting to be sent again" if waiting else ""
        )

    def durable(self, key: SessionKey) -> bool:
        """Messages of this session are journaled (every channel but the local terminal)."""
        channel = self.channels.get(key.channel)
        return self.journal is not None and channel is not None and channel.journaled

    async def answer(
        self,
        msgs: Sequence[InboundMessage],
        out: OutboundMessage | None,
        live: LiveReply[Any] | None = None,
    ) -> bool | None:
        """The messages are answered with ``out`` (None: no reply), durably, then it is sent
        (``live``: it finishes the reply shown while it was written). Returns whether it was
        delivered (None when there was nothing to send)."""
        key = out.key if out is not None else msgs[0].key
        if self.journal is None or not self.durable(key):
            return None if out is None else await self.send(out, live=live)
        oid = self.journal.answer(msgs, out)
        if out is None or oid is None:
            return None
        return await self.send(out, oid, live)

    async def send(
        self, out: OutboundMessage, oid: int | None = None, live: LiveReply[Any] | None = None
    ) -> bool:
        """Send; False when it did not go out now (it failed, which is logged and kept for
        ``corvid status``, or it waits to be sent again). Never raises."""
        try:
            return await self._push(out, oid, live)
        except DeliveryError as exc:
            log.error("%s: could not deliver %d characters: %s", out.key, len(out.text), exc)
            return False

    async def deliver(self, out: OutboundMessage, origin: str | None = None) -> None:
        """Send, and raise ``DeliveryError`` if the platform refused it (a message waiting to
        be sent again counts as the outbox's now)."""
        if self.channels.get(out.key.channel) is None:
            raise DeliveryError(f"no channel {out.key.channel!r} is running for {out.key}")
        oid = None
        # An outbox row before the send, so a crash can neither lose nor double it; ``origin``
        # lets a scheduled run claimed again find its message rather than write another.
        if self.journal is not None and self.durable(out.key):
            oid = self.journal.queue(out, origin)
        await self._push(out, oid)

    async def finish(self, origin: str) -> bool:
        """A scheduled run's message written before a crash: sent now unless it went out
        already or waits to be sent again. True if the run had written one."""
        row = self.journal.by_origin(origin) if self.journal is not None else None
        if row is None:
            return False
        if row.status not in (SendStatus.SENT, SendStatus.UNCERTAIN, SendStatus.WAITING):
            await self._push(row.out, row.id)
        return True

    async def finish_live(self, live: LiveReply[Any], out: OutboundMessage) -> bool:
        """A piece of a streamed reply is final: journaled and sent like any message."""
        oid = (
            self.journal.queue(out) if self.journal is not None and self.durable(out.key) else None
        )
        return await self.send(out, oid, live)

    def placed(self, key: SessionKey) -> Callable[[str], None]:
        """What a streamed reply of ``key`` calls with each message it posts: recorded, so a
        crash mid-stream leaves word of the half-written message."""
        journal = self.journal if self.durable(key) else None
        if journal is None:
            return lambda ref: None
        return lambda ref: journal.placed(key, ref)

    async def take_back(self, channel_name: str) -> None:
        """Remove the half-written messages a crash left mid-stream in this channel's chats;
        the answers they began are still owed and come again whole."""
        if self.journal is None:
            return
        for key, ref in self.journal.half_written():
            channel = self.channels.get(key.channel)
            if channel is None or key.channel != channel_name:
                continue
            try:
                await channel.take_back(key, ref)
            except Exception as exc:
                log.warning("%s: could not take back a half-written reply: %s", key, exc)
            self.journal.finished(key, [ref])

    def recover(self) -> list[Outgoing]:
        """The replies a crash or shutdown left unsent, to send once the channels are up
        (``resend``). A send cut off midway is repeated where the platform drops repeats;
        elsewhere it becomes a short note that a reply may be missing."""
        if self.journal is None:
            return []
        outgoing: list[Outgoing] = []
        for row in self.journal.unsettled():
            channel = self.channels.get(row.out.key.channel)
            if channel is None or not self.durable(row.out.key):
                continue
            if row.status is SendStatus.SENDING and not channel.idempotent_sends:
                # It may have arrived: a note instead of a possible duplicate.
                self.journal.settle(row.id, SendStatus.UNCERTAIN, "interrupted while sending")
                log.warning("%s: a message may not have arrived (interrupted)", row.out.key)
                if row.origin is None:
                    note = OutboundMessage(row.out.key, UNCERTAIN_NOTE)
                    oid = self.journal.queue(note)
                    now = self.clock.now().isoformat()
                    outgoing.append(Outgoing(oid, note, SendStatus.PENDING, 0, "", None, now, now))
            elif row.origin is None or row.status is SendStatus.WAITING:
                outgoing.append(row)
            # Otherwise a scheduled run's message, finished by the run, claimed again on start.
        return outgoing

    def resend(self, rows: Sequence[Outgoing]) -> None:
        """Send what ``recover`` found, in order per chat, each tried again while its platform
        cannot take it."""
        for row in rows:
            created = _parsed(row.created) or self.clock.now()
            self.retries.hold(Held(row.id, row.out, created), tried=False)

    def undelivered(self, limit: int = 20) -> list[Outgoing]:
        """Recent messages that failed or may not have arrived, newest first."""
        return self.journal.undelivered(limit) if self.journal is not None else []

    async def stop(self) -> None:
        """Stop sending again; what still waits stays in the outbox for the next start."""
        await self.retries.stop()

    async def _push(
        self, out: OutboundMessage, oid: int | None, live: LiveReply[Any] | None = None
    ) -> bool:
        """Send now, or hold to send again later (False); raise ``DeliveryError`` if refused."""
        channel = self.channels.get(out.key.channel)
        if channel is None:
            error = f"no channel {out.key.channel!r} is running"
            if self.journal is not None and oid is not None:
                self.journal.settle(oid, SendStatus.FAILED, error)
            raise DeliveryError(error)
        if self.journal is None or oid is None:  # not journaled (the terminal): one try
            try:
                await channel.run_to_end(_send(channel, out, live))
            except Exception as exc:
                raise DeliveryError(self._mask(f"{type(exc).__name__}: {exc}")[:500]) from exc
            return True
        held = Held(oid, replace(out, ident=f"c{oid}"), self.clock.now(), live)
        if self.retries.waiting(out.key):
            self.retries.hold(held, tried=False)  # in order, after what waits already
            log.warning("%s: a reply waits behind an earlier one that could not be sent", out.key)
            return False
        try:
            await self._attempt(held)
        except Unreachable as exc:
            self.retries.hold(held, tried=True)
            log.warning("%s: could not send now (%s); will try again", out.key, exc)
            return False
        return True

    async def _attempt(self, held: Held) -> None:
        """One try at a journaled message: recorded as sent, as waiting (``Unreachable``), or
        as refused (``DeliveryError``). Runs to its end even if the caller is cancelled."""
        channel = self.channels.get(held.out.key.channel)
        if channel is None:
            raise Unreachable(f"no channel {held.out.key.channel!r}")
        await channel.run_to_end(self._try(channel, held))

    async def _try(self, channel: Channel, held: Held) -> None:
        journal = self.journal
        assert journal is not None
        out = held.out
        late = self.clock.now() - held.created
        if late > LATE:
            out = replace(out, text=self._late_note(held.created) + out.text)
        journal.sending(held.oid)
        try:
            await _send(channel, out, held.live)
        except Exception as exc:
            error = self._mask(f"{type(exc).__name__}: {exc}")[:500]
            if channel.maybe_sent(exc) and not channel.idempotent_sends:
                # It may be in the chat already: kept as possibly missing, never sent again.
                journal.settle(held.oid, SendStatus.UNCERTAIN, error)
                raise DeliveryError(f"may not have arrived: {error}") from exc
            if channel.transient(exc):  # the platform, not this one chat (a blocked bot)
                count, since, _ = self._failing.get(channel.name, (0, self.clock.now(), ""))
                self._failing[channel.name] = (count + 1, since, error[:200])
                journal.settle(held.oid, SendStatus.WAITING, error)
                raise Unreachable(error) from exc
            journal.settle(held.oid, SendStatus.FAILED, error)
            raise DeliveryError(error) from exc
        self._failing.pop(channel.name, None)
        live = held.live.refs if held.live is not None else ()
        journal.settle(held.oid, SendStatus.SENT, live=live)
        if late > LATE:
            log.info("%s: a reply written %s ago was sent late", out.key, late)

    def _give_up(self, held: Held) -> None:
        assert self.journal is not None
        hours = self.retries.window.total_seconds() / 3600
        error = f"given up after {hours:g} h of retries; the last error: {held.error}"
        self.journal.settle(held.oid, SendStatus.FAILED, error[:500])
        log.error(
            "%s: could not deliver %d characters: %s", held.out.key, len(held.out.text), error
        )

    def _late_note(self, written: datetime) -> str:
        when = written.astimezone(self.tz or UTC)
        return f"_(Written at {when:%H:%M}, sent late: the chat could not be reached.)_\n\n"


async def _send(channel: Channel, out: OutboundMessage, live: LiveReply[Any] | None) -> None:
    if live is not None:
        await live.finish(out)
    else:
        await channel.send(out)


def _parsed(stamp: str) -> datetime | None:
    try:
        when = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    # Corvid writes UTC offsets; a row written by hand may have none.
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)
