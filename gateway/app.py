"""The gateway: wires channels to the router and the agent, and owns start-up and shutdown.

``build_app(config, channels)`` is the one place where the parts are put together; the CLI only
parses arguments and calls it.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from agent.compaction import Maintenance
from agent.files import FILE_TOOLS
from agent.llm import LLM, AnthropicLLM
from agent.loop import Agent, Clock, utc_now
from agent.memory import Memory, memory_tools
from agent.memory_index import open_index
from agent.tools import ToolRegistry
from agent.transcript import SessionStore
from channels.base import Channel
from gateway import commands
from gateway.config import ChannelConfig, Config
from gateway.control import ControlServer
from gateway.errors import ConfigError, LLMError
from gateway.events import InboundMessage, OutboundMessage, SessionKey
from gateway.jobs import DailySummary, JobStore, reminder_tools, run_heartbeat, run_reminder
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


@dataclass
class DeliveryFailure:
    key: str
    error: str
    text_chars: int


class Gateway:
    def __init__(
        self,
        config: Config,
        agent: Agent,
        channels: Sequence[Channel],
        scheduler: Scheduler | None = None,
        jobs: JobStore | None = None,
    ) -> None:
        self.config = config
        self.agent = agent
        self.scheduler = scheduler
        self.jobs = jobs
        self.control: ControlServer | None = None
        self.channels = {c.name: c for c in channels}
        self.router = Router(self._run_batch, self._run_ordered, self._unanswered)
        # The most recent failed deliveries; older ones are only in the log.
        self.failed_sends: deque[DeliveryFailure] = deque(maxlen=100)
        self._side_tasks: set[asyncio.Task[None]] = set()
        self._started: list[Channel] = []

    # -- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        for channel in self.channels.values():
            channel.bind(self.handle)
            await channel.start()
            self._started.append(channel)
            log.info("channel %s started", channel.name)
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

    # -- inbound ------------------------------------------------------------------------------

    def handle(self, msg: InboundMessage) -> asyncio.Future[None]:
        """Entry point for channels. Returns a future that resolves when ``msg`` is answered."""
        cmd = commands.parse_command(msg.text)
        channel = self.channels.get(msg.key.channel)
        own_name = channel.bot_username if channel is not None else ""
        if (
            cmd is not None
            and cmd.target
            and own_name
            and cmd.target.casefold() != own_name.casefold()
        ):
            done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            done.set_result(None)  # addressed to another bot in the same group
            return done
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
        try:
            return self.router.submit(msg, ordered_command=cmd is not None)
        except RouterClosed:
            return self._spawn(
                self._reply(msg, "I'm restarting right now. Please send that again in a minute.")
            )

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
        try:
            await self._ordered(key, msg)
        except asyncio.CancelledError:
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
        self.agent.record_unanswered(key, msgs)
        log.warning("%s: shutting down; %d message(s) saved without an answer", key, len(msgs))

    async def _run_batch(self, key: SessionKey, batch: list[InboundMessage]) -> None:
        channel = self.channels[key.channel]
        try:
            async with channel.typing(key):
                outcome = await self.agent.run_turn(key, batch)
            text = outcome.text
        except LLMError as exc:
            text = exc.user_message()
        except asyncio.CancelledError:
            log.info("%s: turn cancelled", key)
            raise
        except Exception:
            log.exception("%s: turn failed", key)
            text = INTERNAL_ERROR
        if not text or text.strip() == NO_REPLY:
            log.info("%s: turn ended without a reply to send", key)
        else:
            await self._send(OutboundMessage(key, text, reply_to=batch[-1].message_id))
        await self._maintain(key)

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
        await self._send(OutboundMessage(msg.key, text, reply_to=msg.message_id))

    async def deliver(self, out: OutboundMessage) -> None:
        """Send, and raise if the platform did not take it (for jobs that must know)."""
        channel = self.channels.get(out.key.channel)
        if channel is None:
            raise LookupError(f"no channel {out.key.channel!r} is running to deliver to {out.key}")
        try:
            await channel.send(out)
        except Exception as exc:
            self.failed_sends.append(
                DeliveryFailure(str(out.key), type(exc).__name__, len(out.text))
            )
            raise

    async def _send(self, out: OutboundMessage) -> None:
        channel = self.channels.get(out.key.channel)
        if channel is None:
            log.error("%s: no channel %r to deliver a reply", out.key, out.key.channel)
            return
        try:
            await channel.send(out)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.failed_sends.append(
                DeliveryFailure(str(out.key), type(exc).__name__, len(out.text))
            )
            log.error(
                "%s: could not deliver a reply of %d characters: %s: %s",
                out.key,
                len(out.text),
                type(exc).__name__,
                exc,
            )


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
    gateway = Gateway(config, agent, channels, scheduler if with_scheduler else None, jobs)
    runner.append(gateway)
    return gateway
