"""Delivery: every reply and scheduled message leaves through here, recorded in the outbox.

Two verbs: ``deliver`` raises ``DeliveryError`` unless the platform took the message (scheduled
jobs must know), ``send`` records a failure and returns False (a reply to a person is logged and
listed in ``corvid status`` instead). Where a channel keeps a journal, every message is an outbox
row (``journal.py``) before it is sent, so a crash cannot lose or double it; a scheduled run's
message is kept under the run's name (its *origin*), so the run claimed again after a crash finds
it rather than writing another.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from channels.base import Channel
from channels.live import LiveReply
from gateway.errors import DeliveryError
from gateway.events import InboundMessage, OutboundMessage, SessionKey
from gateway.runtime.journal import Journal, Outgoing, SendStatus

log = logging.getLogger(__name__)

UNCERTAIN_NOTE = (
    "I was restarted while sending you a reply, so it may not have arrived (or only in part). "
    "Ask me to repeat it if it's missing."
)


class Delivery:
    def __init__(
        self,
        channels: Mapping[str, Channel],
        journal: Journal | None,
        mask: Callable[[str], str],
    ) -> None:
        self.channels = channels
        self.journal = journal
        self._mask = mask  # errors are stored and logged without secrets

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
        """Send; a failure is logged and kept for ``corvid status``, never raised."""
        try:
            await self._push(out, oid, live)
        except DeliveryError as exc:
            log.error("%s: could not deliver %d characters: %s", out.key, len(out.text), exc)
            return False
        return True

    async def deliver(self, out: OutboundMessage, origin: str | None = None) -> None:
        """Send, and raise ``DeliveryError`` if the platform did not take it."""
        if self.channels.get(out.key.channel) is None:
            raise DeliveryError(f"no channel {out.key.channel!r} is running for {out.key}")
        oid = None
        if self.journal is not None and self.durable(out.key):
            oid = self.journal.queue(out, origin)
        await self._push(out, oid)

    async def finish(self, origin: str) -> bool:
        """A scheduled run's message written before a crash: sent now unless it went out
        already. True if the run had written one."""
        row = self.journal.by_origin(origin) if self.journal is not None else None
        if row is None:
            return False
        if row.status not in (SendStatus.SENT, SendStatus.UNCERTAIN):
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

    async def take_back(self) -> None:
        """Remove the half-written messages a crash left mid-stream; the answers they began
        are still owed and come again whole."""
        if self.journal is None:
            return
        for key, ref in self.journal.half_written():
            channel = self.channels.get(key.channel)
            if channel is None:
                continue
            try:
                await channel.take_back(key, ref)
            except Exception as exc:
                log.warning("%s: could not take back a half-written reply: %s", key, exc)
            self.journal.finished(key, [ref])

    def recover(self) -> list[Outgoing]:
        """The replies a crash left unsent, to send once the channels are up. A send cut off
        midway is repeated where the platform drops repeats; elsewhere it becomes a short note
        that a reply may be missing."""
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
                    outgoing.append(Outgoing(oid, note, SendStatus.PENDING, 0, "", None, ""))
            elif row.origin is None:
                outgoing.append(row)
            # A scheduled run's message is finished by the run itself, claimed again on start.
        return outgoing

    def undelivered(self, limit: int = 20) -> list[Outgoing]:
        """Recent messages that failed or may not have arrived, newest first."""
        return self.journal.undelivered(limit) if self.journal is not None else []

    async def _push(
        self, out: OutboundMessage, oid: int | None, live: LiveReply[Any] | None = None
    ) -> None:
        channel = self.channels.get(out.key.channel)
        journal = self.journal if oid is not None else None
        if channel is None:
            error = f"no channel {out.key.channel!r} is running"
            if journal is not None and oid is not None:
                journal.settle(oid, SendStatus.FAILED, error)
            raise DeliveryError(error)
        if journal is not None and oid is not None:
            out = replace(out, ident=f"c{oid}")
            journal.sending(oid)
        try:
            if live is not None:
                await live.finish(out)
            else:
                await channel.send(out)
        except asyncio.CancelledError:
            raise  # stays "sending": after a restart it counts as possibly delivered
        except Exception as exc:
            error = self._mask(f"{type(exc).__name__}: {exc}")[:500]
            if journal is not None and oid is not None:
                journal.settle(oid, SendStatus.FAILED, error)
            raise DeliveryError(error) from exc
        if journal is not None and oid is not None:
            journal.settle(oid, SendStatus.SENT, live=live.refs if live is not None else ())
