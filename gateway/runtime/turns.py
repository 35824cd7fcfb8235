"""What the router runs for a session: a turn over a batch of messages, or an ordered command."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from datetime import timedelta

from agent.loop import Agent
from agent.outcome import TurnOutcome
from agent.sessions.state import Usage
from channels.base import Channel
from gateway.contract.errors import LLMError
from gateway.contract.events import InboundMessage, OutboundMessage, SessionKey, blank, silent
from gateway.contract.ports import Clock
from gateway.logcontext import turn_scope
from gateway.runtime.commands import ChatCommand
from gateway.runtime.delivery import Delivery
from gateway.runtime.streaming import ReplyStream

log = logging.getLogger(__name__)

PRUNE_EVERY = 3600.0  # seconds
KEEP_JOB_RUNS = timedelta(days=30)  # transcripts of scheduled jobs' runs

BLANK_ANSWER = (
    "I came back with an empty answer to that, which is on my side. Please ask again, perhaps "
    "in other words."
)
INTERNAL_ERROR = (
    "Something went wrong on my side while answering. Your message is saved; please try again."
)


class Turns:
    def __init__(
        self,
        agent: Agent,
        delivery: Delivery,
        channels: Mapping[str, Channel],
        clock: Clock,
        closing: Callable[[], bool],
    ) -> None:
        self.agent = agent
        self.delivery = delivery
        self.channels = channels
        self.clock = clock
        # Shutting down: a turn cancelled now is owed an answer after the restart, while one
        # cancelled by /stop is not.
        self.closing = closing
        self._pruned = clock.monotonic()

    async def batch(self, key: SessionKey, batch: list[InboundMessage]) -> None:
        with turn_scope(key):
            await self._turn(key, batch)
        await self._maintain(key)
        self._tidy()

    def _tidy(self) -> None:
        """What grows with use stays bounded: once an hour the journal forgets what it no
        longer needs (sessions not in use leave memory as each turn ends: ``Router``)."""
        journal = self.delivery.journal
        if journal is not None and self.clock.monotonic() - self._pruned > PRUNE_EVERY:
            self._pruned = self.clock.monotonic()
            journal.prune()
            self.agent.store.prune_job_runs(KEEP_JOB_RUNS)

    async def ordered(self, key: SessionKey, msg: InboundMessage, command: ChatCommand) -> None:
        with turn_scope(key):
            try:
                # /new and /compact ask the model for a summary: show that work is under way.
                async with self.channels[key.channel].typing(key):
                    answer = await command.run(msg)
            except asyncio.CancelledError:
                self._forget([msg])
                raise
            except Exception:
                log.exception("%s: /%s failed", key, command.name)
                answer = "That command failed on my side; the details are in the log."
            text, buttons = (answer, ()) if isinstance(answer, str) else answer
            out = OutboundMessage(key, text, reply_to=msg.message_id, buttons=buttons)
            await self.delivery.answer([msg], out)

    def unanswered(self, key: SessionKey, msgs: list[InboundMessage]) -> None:
        if all(m.seq is not None for m in msgs):
            log.warning("%s: shutting down; %d message(s) to answer on restart", key, len(msgs))
            return
        self.agent.record_unanswered(key, msgs)
        log.warning("%s: shutting down; %d message(s) saved without an answer", key, len(msgs))

    def _forget(self, msgs: list[InboundMessage]) -> None:
        """/stop: the person asked for no answer, so the journal owes them none."""
        journal = self.delivery.journal
        if not self.closing() and journal is not None:
            journal.drop(msgs)

    def _stream(self, channel: Channel, key: SessionKey, reply_to: str | None) -> ReplyStream:
        stream = ReplyStream(
            channel,
            key,
            reply_to,
            self.clock,
            self.delivery.finish_live,
            self.delivery.placed(key),
        )
        stream.start()
        return stream

    async def _turn(self, key: SessionKey, batch: list[InboundMessage]) -> None:  # long: one turn
        channel = self.channels[key.channel]
        began = self.clock.monotonic()
        queued = max(0.0, (self.clock.now() - batch[0].received_at).total_seconds())
        outcome: TurnOutcome | None = None
        stream = self._stream(channel, key, batch[-1].message_id) if channel.streaming else None
        listen = stream.listen if stream is not None and stream.streaming else None
        try:
            async with channel.typing(key):
                outcome = await self.agent.run_turn(key, batch, listen)
            # Streamed, the pieces before the tools went out as they were finished.
            text = outcome.text if listen is not None else outcome.full_text
            status = str(outcome.status)
        except LLMError as exc:
            text, status = exc.user_message(), f"error:{exc.kind}"
            if exc.kind.refuses_the_turn:
                # Kept in the transcript, marked withdrawn, as /stop does: sent again, it
                # would be refused again, and every later message with it.
                self.agent.withdraw_turn(key)
        except asyncio.CancelledError:
            log.info("%s: turn cancelled", key)
            if not self.closing():  # /stop, not a shutdown (which answers after the restart)
                self.agent.withdraw_turn(key)
                if stream is not None:
                    await stream.stop()
            elif stream is not None:
                stream.abandon()
            self._forget(batch)
            raise
        except Exception:
            log.exception("%s: turn failed", key)
            text, status = INTERNAL_ERROR, "error:internal"
        live = await stream.close() if stream is not None else None
        out = None
        if silent(text):
            status += ":no-reply"
            if live is not None and live.started:
                try:
                    await live.take_back()
                except Exception as exc:
                    log.warning("%s: could not take back a streamed reply: %s", key, exc)
        else:
            if blank(text):
                # The person would hear nothing and not know why (an answer of only spaces or
                # zero-width characters shows as nothing, or is refused by the platform).
                log.warning("%s: the model answered with nothing; saying so", key)
                text, status = BLANK_ANSWER, status + ":blank"
            out = OutboundMessage(key, text, reply_to=batch[-1].message_id)
        answered = self.clock.monotonic()
        delivered = await self.delivery.answer(batch, out, live)
        if delivered is False:
            status += ":undelivered"
        timings = (began, answered, self.clock.monotonic(), queued)
        _log_turn(key, status, len(batch), outcome, timings)

    async def _maintain(self, key: SessionKey) -> None:
        """Silent flush and compaction, after the reply is out; never visible in the chat."""
        try:
            await self.agent.maintenance.after_turn(key)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("%s: flush/compaction failed; will try again after the next turn", key)


def _log_turn(
    key: SessionKey,
    status: str,
    messages: int,
    outcome: TurnOutcome | None,
    timings: tuple[float, float, float, float],
) -> None:
    """The one line that ends a turn, with its timings and tokens as fields for JSON logs."""
    began, answered, done, queued = timings
    usage = outcome.usage if outcome is not None else Usage()
    fields = {
        "event": "turn",
        "status": status,
        "messages": messages,
        "queued_ms": round(queued * 1000),
        "turn_ms": round((done - began) * 1000),
        "model_ms": round(outcome.model_seconds * 1000) if outcome else 0,
        "send_ms": round((done - answered) * 1000),
        "model_calls": outcome.calls if outcome else 0,
        "tool_calls": outcome.tool_calls if outcome else 0,
        "tokens_in": usage.input,
        "tokens_cache_read": usage.cache_read,
        "tokens_cache_write": usage.cache_write,
        "tokens_out": usage.output,
    }
    log.info(
        "%s: turn %s: %d message(s), %d ms (model %d ms in %d call(s), %d tool call(s), "
        "send %d ms), tokens in %d + cached %d, out %d",
        key,
        status,
        messages,
        fields["turn_ms"],
        fields["model_ms"],
        fields["model_calls"],
        fields["tool_calls"],
        fields["send_ms"],
        usage.input + usage.cache_write,
        usage.cache_read,
        usage.output,
        extra={"fields": fields},
    )
