"""The gateway: wires channels to the router and the agent, and owns start-up and shutdown.

``build_app(config, channels)`` is the one place where the parts are put together; the CLI only
parses arguments and calls it.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta

from agent.compaction import Maintenance
from agent.files import FILE_TOOLS
from agent.llm import LLM, AnthropicLLM
from agent.loop import Agent, Clock, utc_now
from agent.memory import Memory, memory_tools
from agent.memory_index import open_index
from agent.tools import ToolRegistry
from agent.transcript import SessionStore, Usage
from channels.base import Channel
from gateway import commands
from gateway.config import ChannelConfig, Config
from gateway.control import ControlServer
from gateway.errors import ConfigError, LLMError
from gateway.events import InboundMessage, OutboundMessage, SessionKey
from gateway.jobs import DailySummary, JobStore, reminder_tools, run_heartbeat, run_reminder
from gateway.journal import FAILED, SENDING, SENT, UNCERTAIN, Journal, Outgoing
from gateway.logs import Masker, turn_scope
from gateway.router import Router, RouterClosed
from gateway.scheduler import Clock as SchedulerClock
from gateway.scheduler import Job, Ledger, Scheduler, SystemClock

log = logging.getLogger(__name__)

NO_REPLY = "NO_REPLY"
DAILY_SUMMARY = "daily-summary"
HEARTBEAT = "heartbeat"
INTERNAL_ERROR = (
    "Something went wrong on my side while answering. Your message is saved; please try again."
)
UNCERTAIN_NOTE = (
    "I was restarted while sending you a reply, so it may not have arrived (or only in part). "
    "Ask me to repeat it if it's missing."
)
# The scheduled run (job and slot) whose message is being delivered, if any.
_ORIGIN: contextvars.ContextVar[str | None] = contextvars.ContextVar("origin", default=None)


class DeliveryError(Exception):
    """The platform did not take a message; the text says why (no secrets in it)."""


class Gateway:
    def __init__(
        self,
        config: Config,
        agent: Agent,
        channels: Sequence[Channel],
        scheduler: Scheduler | None = None,
        jobs: JobStore | None = None,
        journal: Journal | None = None,
    ) -> None:
        self.config = config
        self.agent = agent
        self.scheduler = scheduler
        self.jobs = jobs
        self.journal = journal
        self.control: ControlServer | None = None
        self.channels = {c.name: c for c in channels}
        self.router = Router(
            self._run_batch,
            self._run_ordered,
            self._unanswered,
            max_batch_chars=config.agent.max_input_chars,
        )
        self._side_tasks: set[asyncio.Task[None]] = set()
        self._started: list[Channel] = []
        # Turns wait for this, so work recovered from the journal runs once channels are up.
        self._ready = asyncio.Event()
        self._mask = Masker(config.secrets())
        self.pid = os.getpid()
        self.started_at = time.monotonic()

    # -- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        for channel in self.channels.values():
            channel.bind(self.handle)
        # Queued before any channel receives, so what a crash left is answered first, in order.
        outgoing = self._recover()
        for channel in self.channels.values():
            await channel.start()
            self._started.append(channel)
            log.info("channel %s started", channel.name)
        self._ready.set()
        for row in outgoing:
            self._spawn(self._resend(row))
        warm_up = getattr(self.agent.llm, "warm_up", None)
        if warm_up is not None:
            self._spawn(warm_up())
        if self.scheduler is not None:
            self.scheduler.start(self.scheduled_jobs())
            self.control = ControlServer(self.config.state / "control.sock", self)
            try:
                await self.control.start()
            except OSError as exc:
                log.warning("control socket unavailable (%s); `corvid jobs run` is off", exc)

    def scheduled_jobs(self) -> list[Job]:
        """The jobs the configuration asks for."""
        jobs: list[Job] = []
        ds = self.config.schedule.daily_summary
        if ds.enabled and ds.target:
            hour, minute = ds.time.split(":")
            jobs.append(
                Job(
                    id=DAILY_SUMMARY,
                    kind="cron",
                    spec=f"{int(minute)} {int(hour)} * * *",
                    timezone=ds.timezone or self.config.timezone,
                    target=ds.target,
                    created=self.agent.clock(),
                    grace=timedelta(hours=ds.grace_hours),
                )
            )
        hb = self.config.schedule.heartbeat
        if hb.enabled and hb.target:
            jobs.append(
                Job(
                    id=HEARTBEAT,
                    kind="interval",
                    spec=str(hb.every_minutes * 60),
                    timezone=self.config.timezone,
                    target=hb.target,
                    created=self.scheduler.clock.now() if self.scheduler else self.agent.clock(),
                    # A heartbeat is only worth it on time: missed beats are not caught up.
                    grace=timedelta(minutes=min(hb.every_minutes, 5)),
                )
            )
        if self.jobs is not None:
            jobs.extend(self.jobs.load())
        return jobs

    async def run_job(self, job: Job, slot: str) -> None:
        origin = f"job:{job.id}:{slot}"
        row = self.journal.by_origin(origin) if self.journal is not None else None
        if row is not None:
            # The run was claimed again after a crash, and had already written its message.
            if row.status not in (SENT, UNCERTAIN):
                await self._push(row.out, row.id)
            log.info("job %s: run %s already produced its message (%s)", job.id, slot, row.status)
            return
        token = _ORIGIN.set(origin)
        try:
            with turn_scope(f"cron:{job.id}"):
                await self._run_job(job, slot)
        finally:
            _ORIGIN.reset(token)

    async def _run_job(self, job: Job, slot: str) -> None:
        if job.id == DAILY_SUMMARY:
            await DailySummary(self, self.config.schedule.daily_summary.skip_inactive)(job, slot)
        elif job.id == HEARTBEAT:
            await run_heartbeat(self, job, slot, self.config.schedule.heartbeat.active_hours)
        else:
            await run_reminder(self, job, slot)

    async def wait_failed(self) -> str:
        """Wait until a channel reports that it cannot go on; returns its reason."""
        failures = [c.failure for c in self._started if c.failure is not None]
        if not failures:
            await asyncio.Event().wait()  # nothing can fail: wait until cancelled
        done, _ = await asyncio.wait(failures, return_when=asyncio.FIRST_COMPLETED)
        return next(iter(done)).result()

    async def stop(self, grace: float | None = None) -> None:
        """Finish (or cancel and record) turns in flight, then close the channels and the client.

        ``grace`` defaults to ``gateway.shutdown_grace``; 0 cancels running turns at once.
        """
        if self.control is not None:
            await self.control.stop()
        if self.scheduler is not None:
            await self.scheduler.stop()
        await self.router.drain(self.config.gateway.shutdown_grace if grace is None else grace)
        for task in list(self._side_tasks):
            task.cancel()
        if self._side_tasks:
            await asyncio.wait(self._side_tasks, timeout=5)
        for channel in reversed(self._started):
            try:
                await channel.stop()
            except Exception:
                log.exception("channel %s did not stop cleanly", channel.name)
        self._started.clear()
        close = getattr(self.agent.llm, "close", None)
        if close is not None:
            await close()
        if self.agent.memory is not None:
            self.agent.memory.index.close()
        if self.scheduler is not None:
            self.scheduler.ledger.close()
        if self.journal is not None:
            self.journal.close()

    # -- crash recovery -----------------------------------------------------------------------

    def _durable(self, key: SessionKey) -> bool:
        channel = self.channels.get(key.channel)
        return self.journal is not None and channel is not None and channel.journaled

    def _recover(self) -> list[Outgoing]:
        """Queue the messages a crash (or a restart) left unanswered; return the replies a
        crash left unsent. Only for channels this process runs."""
        if self.journal is None:
            return []
        self.journal.prune()
        resumed = 0
        for msg in self.journal.unanswered():
            if self._durable(msg.key):
                ordered = commands.parse_command(msg.text) is not None
                self.router.submit(msg, ordered_command=ordered)
                resumed += 1
        if resumed:
            log.warning("answering %d message(s) left unanswered by the last run", resumed)
        outgoing: list[Outgoing] = []
        for row in self.journal.unsettled():
            channel = self.channels.get(row.out.key.channel)
            if channel is None or not self._durable(row.out.key):
                continue
            if row.status == SENDING and not channel.idempotent_sends:
                # It may have arrived: a note instead of a possible duplicate.
                self.journal.settle(row.id, UNCERTAIN, "interrupted while sending")
                log.warning("%s: a message may not have arrived (interrupted)", row.out.key)
                if row.origin is None:
                    note = OutboundMessage(row.out.key, UNCERTAIN_NOTE)
                    oid = self.journal.queue(note)
                    outgoing.append(Outgoing(oid, note, "pending", 0, "", None, ""))
            elif row.origin is None:
                outgoing.append(row)
            # A scheduled run's message is finished by the run itself, claimed again on start.
        return outgoing

    async def _resend(self, row: Outgoing) -> None:
        await self._send(row.out, row.id)

    # -- inbound ------------------------------------------------------------------------------

    def handle(self, msg: InboundMessage) -> asyncio.Future[None]:
        """Entry point for channels. Returns a future that resolves when ``msg`` is answered.

        A message for the agent is in the journal before this returns, so from then on it is
        owed an answer, whatever happens to the process.
        """
        if self._durable(msg.key):
            assert self.journal is not None
            if not self.journal.first_time(msg):
                log.info("%s: message %s came again; ignored", msg.key, msg.message_id)
                return _answered()
        cmd = commands.parse_command(msg.text)
        channel = self.channels.get(msg.key.channel)
        own_name = channel.bot_username if channel is not None else ""
        if (
            cmd is not None
            and cmd.target
            and own_name
            and cmd.target.casefold() != own_name.casefold()
        ):
            return _answered()  # addressed to another bot in the same group
        if cmd is not None and cmd.name in commands.IMMEDIATE:
            return self._spawn(self._run_immediate(msg, cmd))
        if cmd is not None and cmd.name not in commands.ORDERED:
            return self._spawn(
                self._reply(msg, f"Unknown command /{cmd.name}. Send /help for the list.")
            )
        limit = self.config.agent.max_input_chars
        if cmd is None and len(msg.text) > limit:
            return self._spawn(
                self._reply(
                    msg,
                    f"That message is too long for me ({len(msg.text):,} characters; the limit is "
                    f"{limit:,}). Send it in parts, or as a file.",
                )
            )
        if self._durable(msg.key):
            assert self.journal is not None
            msg = self.journal.take(msg)
        try:
            return self.router.submit(msg, ordered_command=cmd is not None)
        except RouterClosed:
            text = (
                "I'm restarting right now; I'll answer this as soon as I'm back."
                if msg.seq is not None
                else "I'm restarting right now. Please send that again in a minute."
            )
            return self._spawn(self._send(OutboundMessage(msg.key, text, msg.message_id)))

    def _spawn(self, coro) -> asyncio.Future[None]:  # type: ignore[no-untyped-def]
        task = asyncio.ensure_future(coro)
        self._side_tasks.add(task)
        task.add_done_callback(self._side_tasks.discard)
        return task

    async def _run_immediate(self, msg: InboundMessage, cmd: commands.Command) -> None:
        try:
            await self._immediate(msg, cmd)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("%s: /%s failed", msg.key, cmd.name)
            await self._reply(msg, f"/{cmd.name} failed on my side; the details are in the log.")

    async def _immediate(self, msg: InboundMessage, cmd: commands.Command) -> None:
        key = msg.key
        if cmd.name == "stop":
            stopped = self.router.stop_turn(key)
            await self._reply(msg, "Stopped." if stopped else "Nothing is running.")
        elif cmd.name in ("help", "start"):
            await self._reply(msg, commands.HELP)
        elif cmd.name == "status":
            await self._reply(
                msg,
                commands.status_text(
                    model=self.agent.llm.model,
                    context_window=self.agent.llm.context_window,
                    state=self.agent.peek(key),
                    key=str(key),
                    private=key.private,
                    running=self.router.busy(key),
                    queued=self.router.queued(key),
                ),
            )

    async def _run_ordered(self, key: SessionKey, msg: InboundMessage) -> None:
        await self._ready.wait()
        try:
            with turn_scope(key):
                await self._ordered(key, msg)
        except asyncio.CancelledError:
            if not self.router.closed and self.journal is not None:
                self.journal.drop([msg])
            raise
        except Exception:
            log.exception("%s: %s failed", key, msg.text.split()[0])
            await self._reply(msg, "That command failed on my side; the details are in the log.")

    async def _ordered(self, key: SessionKey, msg: InboundMessage) -> None:
        cmd = commands.parse_command(msg.text)
        if cmd is not None and cmd.name == "compact":
            await self._reply(msg, await self._compact(key))
            return
        # /new and /reset
        note = ""
        maintenance = self.agent.maintenance
        if maintenance is not None:
            try:
                if await maintenance.end_session(key):
                    note = " A summary of it is in today's log."
            except LLMError as exc:
                log.warning("%s: could not summarise the ending session: %s", key, exc)
                note = " (I couldn't save a summary of it to the log this time.)"
        archived = self.agent.reset(key)
        kept = " The previous conversation is kept on disk." if archived else ""
        await self._reply(msg, "Started a new session." + kept + note)

    async def _compact(self, key: SessionKey) -> str:
        state = self.agent.peek(key)
        if state is None or self.agent.maintenance is None:
            return "Nothing to compact yet."
        try:
            done = await self.agent.maintenance.compact(state, self.agent.context(key), True)
        except LLMError as exc:
            return "Compaction failed: " + exc.user_message()
        if done is None:
            return "Nothing to compact yet: the conversation is all recent."
        return (
            f"Compacted: {done.summarised} older messages replaced by a summary, "
            f"{done.kept} recent ones kept. Context ~{done.tokens_before:,} → "
            f"~{done.tokens_after:,} tokens."
        )

    def _unanswered(self, key: SessionKey, msgs: list[InboundMessage]) -> None:
        if all(m.seq is not None for m in msgs):
            log.warning("%s: shutting down; %d message(s) to answer on restart", key, len(msgs))
            return
        self.agent.record_unanswered(key, msgs)
        log.warning("%s: shutting down; %d message(s) saved without an answer", key, len(msgs))

    async def _run_batch(self, key: SessionKey, batch: list[InboundMessage]) -> None:
        await self._ready.wait()
        with turn_scope(key):
            await self._turn(key, batch)
        await self._maintain(key)

    async def _turn(self, key: SessionKey, batch: list[InboundMessage]) -> None:
        channel = self.channels[key.channel]
        began = time.monotonic()
        queued = max(0.0, (utc_now() - batch[0].received_at).total_seconds())
        outcome = None
        try:
            async with channel.typing(key):
                outcome = await self.agent.run_turn(key, batch)
            text, status = outcome.text, outcome.status
        except LLMError as exc:
            text, status = exc.user_message(), f"error:{exc.kind}"
        except asyncio.CancelledError:
            log.info("%s: turn cancelled", key)
            if not self.router.closed and self.journal is not None:
                self.journal.drop(batch)  # /stop: the person asked for no answer
            raise
        except Exception:
            log.exception("%s: turn failed", key)
            text, status = INTERNAL_ERROR, "error:internal"
        out = None
        if not text or text.strip() == NO_REPLY:
            status += ":no-reply"
        else:
            out = OutboundMessage(key, text, reply_to=batch[-1].message_id)
        answered = time.monotonic()
        delivered = await self._answer(batch, out)
        done = time.monotonic()
        usage = outcome.usage if outcome is not None else Usage()
        fields = {
            "event": "turn",
            "status": status if delivered is not False else status + ":undelivered",
            "messages": len(batch),
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
            key, fields["status"], len(batch), fields["turn_ms"], fields["model_ms"],
            fields["model_calls"], fields["tool_calls"], fields["send_ms"],
            usage.input + usage.cache_write, usage.cache_read, usage.output,
            extra={"fields": fields},
        )  # fmt: skip

    async def _maintain(self, key: SessionKey) -> None:
        """Silent flush and compaction, after the reply is out; never visible in the chat."""
        if self.agent.maintenance is None:
            return
        try:
            await self.agent.maintenance.after_turn(key)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("%s: flush/compaction failed; will try again after the next turn", key)

    # -- outbound -----------------------------------------------------------------------------

    async def _reply(self, msg: InboundMessage, text: str) -> None:
        await self._answer([msg], OutboundMessage(msg.key, text, reply_to=msg.message_id))

    async def _answer(
        self, msgs: Sequence[InboundMessage], out: OutboundMessage | None
    ) -> bool | None:
        """The messages are answered with ``out`` (None: no reply), durably, then it is sent.
        Returns whether it was delivered (None when there was nothing to send)."""
        key = out.key if out is not None else msgs[0].key
        if not self._durable(key):
            return None if out is None else await self._send(out)
        assert self.journal is not None
        oid = self.journal.answer(msgs, out)
        if out is None or oid is None:
            return None
        return await self._send(out, oid)

    async def deliver(self, out: OutboundMessage) -> None:
        """Send, and raise ``DeliveryError`` if the platform did not take it (for jobs, which
        must know). Within a scheduled run the message is kept under the run's name, so the run
        claimed again after a crash finds it rather than sending another."""
        if self.channels.get(out.key.channel) is None:
            raise DeliveryError(f"no channel {out.key.channel!r} is running for {out.key}")
        oid = None
        if self._durable(out.key):
            assert self.journal is not None
            oid = self.journal.queue(out, _ORIGIN.get())
        await self._push(out, oid)

    async def _send(self, out: OutboundMessage, oid: int | None = None) -> bool:
        """Send; a failure is logged and kept for ``corvid status``, never raised."""
        try:
            await self._push(out, oid)
        except DeliveryError as exc:
            log.error("%s: could not deliver %d characters: %s", out.key, len(out.text), exc)
            return False
        return True

    async def _push(self, out: OutboundMessage, oid: int | None) -> None:
        channel = self.channels.get(out.key.channel)
        if channel is None:
            error = f"no channel {out.key.channel!r} is running"
            if oid is not None and self.journal is not None:
                self.journal.settle(oid, FAILED, error)
            raise DeliveryError(error)
        if oid is not None:
            assert self.journal is not None
            out = replace(out, ident=f"c{oid}")
            self.journal.sending(oid)
        try:
            await channel.send(out)
        except asyncio.CancelledError:
            raise  # stays "sending": after a restart it counts as possibly delivered
        except Exception as exc:
            error = self._mask(f"{type(exc).__name__}: {exc}")[:500]
            if oid is not None and self.journal is not None:
                self.journal.settle(oid, FAILED, error)
            raise DeliveryError(error) from exc
        if oid is not None and self.journal is not None:
            self.journal.settle(oid, SENT)

    def channel_states(self) -> list[dict[str, str]]:
        states = []
        for name, channel in self.channels.items():
            failure = channel.failure
            if failure is not None and failure.done():
                state = "stopped: " + failure.result()
            elif channel in self._started:
                state = "connected"
            else:
                state = "not started"
            states.append({"name": name, "state": state})
        return states

    def undelivered(self, limit: int = 20) -> list[Outgoing]:
        """Recent messages that failed or may not have arrived, newest first."""
        return self.journal.undelivered(limit) if self.journal is not None else []


def _answered() -> asyncio.Future[None]:
    """A future already resolved: the message needs nothing more."""
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    done.set_result(None)
    return done


def build_channels(config: Config, clock: Clock = utc_now) -> list[Channel]:
    """The adapters for every enabled chat platform, sharing one pairing store."""
    from channels.access import Access
    from channels.inbox import Intake
    from channels.pairing import PairingStore

    pairing = PairingStore(config.state / "pairing.json")

    def intake(cfg: ChannelConfig) -> Intake:
        return Intake(
            config.workspace.resolve(),
            cfg.max_image_bytes,
            cfg.max_file_bytes,
            today=lambda: clock().astimezone(config.tz).date(),
        )

    def access(name: str, cfg: ChannelConfig) -> Access:
        return Access(
            name,
            allow_from=cfg.allow_from,
            groups=cfg.groups,
            pairing=pairing,
            context_messages=cfg.group_context_messages,
        )

    channels: list[Channel] = []
    tg = config.channels.telegram
    if tg.enabled:
        from channels.telegram import TelegramChannel, Webhook

        if tg.token is None:
            raise ConfigError("channels.telegram.token", "required when Telegram is enabled")
        hook = tg.webhook
        webhook = None
        if hook.url:
            if hook.secret_token is None:
                raise ConfigError(
                    "channels.telegram.webhook.secret_token", "required when webhook.url is set"
                )
            webhook = Webhook(hook.url, hook.listen, hook.port, hook.path, hook.secret_token.value)
        channels.append(
            TelegramChannel(
                tg.token.value,
                access("telegram", tg),
                intake=intake(tg),
                base_url=tg.base_url,
                base_file_url=tg.base_file_url,
                poll_timeout=tg.poll_timeout,
                webhook=webhook,
            )
        )
    dc = config.channels.discord
    if dc.enabled:
        from channels.discord import DiscordChannel

        if dc.token is None:
            raise ConfigError("channels.discord.token", "required when Discord is enabled")
        channels.append(
            DiscordChannel(
                dc.token.value,
                access("discord", dc),
                intake=intake(dc),
                api_base_url=dc.api_base_url,
                gateway_url=dc.gateway_url,
            )
        )
    return channels


def build_app(
    config: Config,
    channels: Sequence[Channel],
    *,
    llm: LLM | None = None,
    clock: Clock = utc_now,
    scheduler_clock: SchedulerClock | None = None,
    with_scheduler: bool = True,
) -> Gateway:
    """``with_scheduler=False`` for a second process beside ``corvid run`` (``corvid chat``):
    scheduled jobs run in one process only."""
    store = SessionStore(config.state / "sessions")
    m = config.memory
    workspace = config.workspace.resolve()
    index = open_index(config)
    memory = Memory(workspace, index, m)
    jobs = JobStore(config.state / "jobs.json")
    runner: list[Gateway] = []  # the gateway, once built: jobs run through it

    async def run_job(job: Job, slot: str) -> None:
        await runner[0].run_job(job, slot)

    scheduler = Scheduler(
        Ledger(config.state / "scheduler.sqlite"),
        scheduler_clock or SystemClock(),
        run_job,
        finished=lambda job: jobs.remove(job.id),
    )
    tools = ToolRegistry(
        (
            *FILE_TOOLS,
            *memory_tools(memory),
            *reminder_tools(jobs, scheduler, scheduler.clock.now),
        ),
        max_output_chars=config.agent.tool_output_max_chars,
    )
    agent = Agent(
        config=config,
        llm=llm or AnthropicLLM(config.llm),
        tools=tools,
        store=store,
        memory=memory,
        clock=clock,
    )
    agent.maintenance = Maintenance(agent, config.compaction)
    gateway = Gateway(
        config,
        agent,
        channels,
        scheduler if with_scheduler else None,
        jobs,
        Journal(config.state / "gateway.sqlite"),
    )
    runner.append(gateway)
    return gateway
