"""The gateway: channels in, one turn at a time per session, replies out."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine, Mapping
from typing import TYPE_CHECKING, Any

from agent.loop import Agent
from agent.model.charge import Purpose
from agent.tools.context import Grant
from channels.base import Channel
from channels.pairing import PairingStore
from gateway.chat_names import ChatNames
from gateway.contract.events import InboundMessage, OutboundMessage, SessionKey
from gateway.contract.ports import Clock
from gateway.infra.tasks import settle
from gateway.runtime.commands import ChatCommands
from gateway.runtime.delivery import Delivery
from gateway.runtime.journal import Journal, Outgoing
from gateway.runtime.router import Router, RouterClosed
from gateway.runtime.turns import Turns

if TYPE_CHECKING:
    from gateway.config.sections import GatewayConfig

log = logging.getLogger(__name__)


class Gateway:
    def __init__(
        self,
        *,
        agent: Agent,
        channels: Mapping[str, Channel],
        delivery: Delivery,
        clock: Clock,
        max_input_chars: int,
        shutdown_grace: float,
        pairing: PairingStore | None = None,
    ) -> None:
        self.agent = agent
        self.channels = channels
        self.delivery = delivery
        self.max_input_chars = max_input_chars
        self.shutdown_grace = shutdown_grace
        self.router = Router(
            self._run_batch,
            self._run_ordered,
            self._unanswered,
            max_batch_chars=max_input_chars,
            # Sessions with no turn running or waiting leave memory (the most recently used
            # stay) as each turn ends: a burst's last turns end together, so not from inside
            # a turn, where the others still look busy.
            turn_over=self._turn_over,
        )
        # What a burst of turns freed goes back to the system once all is quiet.
        self.commands = ChatCommands(agent, self.router, pairing)
        # What the platforms call the shared chats, kept as messages come (for the pages).
        self.names: ChatNames | None = None
        self.clock = clock
        self.turns = Turns(agent, delivery, channels, clock, lambda: self.router.closed)
        self._side_tasks: set[asyncio.Task[None]] = set()
        self._started: list[Channel] = []
        self._stack = contextlib.AsyncExitStack()
        # A session's turns wait for its channel to be up, so work recovered from the journal
        # runs once it can be answered; a channel still connecting holds up only its own chats.
        self._ready = {name: asyncio.Event() for name in channels}
        self._all_ready = asyncio.Event()

    def apply(self, cfg: GatewayConfig) -> None:
        """Take the options that change while running: how long stopping waits for turns (the
        retry window waits for a restart)."""
        self.shutdown_grace = cfg.shutdown_grace

    # -- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        for channel in self.channels.values():
            channel.bind(self.handle)
        # Queued before any channel receives, so what a crash left is answered first, in order.
        self._requeue()
        outgoing = self.delivery.recover()
        starting = [
            asyncio.ensure_future(self._start_channel(name, channel, outgoing))
            for name, channel in self.channels.items()
        ]
        try:
            # Side by side: one platform slow to connect does not hold up the others' chats.
            done: set[asyncio.Future[None]] = set()
            if starting:  # none at all in a process that only runs jobs or the terminal
                done, _ = await asyncio.wait(starting, return_when=asyncio.FIRST_EXCEPTION)
            for task in done:
                if (error := task.exception()) is not None:
                    raise error
        finally:
            # A channel still connecting when another could not start is stopped, not left
            # half up (its own start stops what it began when cancelled).
            for task in starting:
                task.cancel()
            await asyncio.gather(*starting, return_exceptions=True)
        self._all_ready.set()
        self._spawn(self._warm_up())

    async def _warm_up(self) -> None:
        """Load the model's SDK before the first turn needs it."""
        await self.agent.llm.warm_up()

    async def _start_channel(self, name: str, channel: Channel, outgoing: list[Outgoing]) -> None:
        await self._stack.enter_async_context(channel)
        self._started.append(channel)
        log.info("channel %s started", channel.name)
        # Replies a crash cut off mid-stream go before the answers owed come again.
        await self.delivery.take_back(name)
        self._ready[name].set()
        self.delivery.resend([row for row in outgoing if row.out.key.channel == name])

    async def stop(self, grace: float | None = None) -> None:
        """Finish (or cancel and record) turns in flight, then close the channels.

        ``grace`` defaults to ``gateway.shutdown_grace``; 0 cancels running turns at once.
        """
        await self.router.drain(self.shutdown_grace if grace is None else grace)
        # With any started meanwhile (a message that came in during the stop is answered by one).
        await settle(self._side_tasks, 5, cancel=True)
        await self.delivery.stop()
        self._started.clear()
        await self._stack.aclose()  # every channel's stop, in reverse order

    async def wait_failed(self) -> str:
        """Wait until a channel reports that it cannot go on; returns its reason."""
        failures = [c.failure for c in self._started if c.failure is not None]
        if not failures:
            await asyncio.Event().wait()  # nothing can fail: wait until cancelled
        done, _ = await asyncio.wait(failures, return_when=asyncio.FIRST_COMPLETED)
        return next(iter(done)).result()

    def channel_states(self) -> list[dict[str, Any]]:
        states: list[dict[str, Any]] = []
        for name, channel in self.channels.items():
            failure = channel.failure
            if failure is not None and failure.done():
                state = "stopped: " + failure.result()
            elif channel in self._started:
                state = self.delivery.trouble(name) or "connected"
            else:
                state = "not started"
            states.append({"name": name, "state": state, **_pool(channel)})
        return states

    def _requeue(self) -> None:
        """Queue the messages a crash (or a restart) left unanswered, for channels this process
        runs."""
        journal = self.delivery.journal
        if journal is None:
            return
        journal.prune()
        resumed = 0
        for msg in journal.unanswered():
            if self.delivery.durable(msg.key):
                self.router.submit(msg, ordered_command=msg.command is not None)
                resumed += 1
        if resumed:
            log.warning("answering %d message(s) left unanswered by the last run", resumed)

    # -- inbound ------------------------------------------------------------------------------

    def handle(self, msg: InboundMessage) -> asyncio.Future[None]:
        """Entry point for channels. Returns a future that resolves when ``msg`` is answered.

        A message for the agent is in the journal before this returns, so from then on it is
        owed an answer, whatever happens to the process.
        """
        if self.names is not None and msg.chat_title:
            self.names.heard(msg.key, msg.chat_title)
        journal = self.delivery.journal if self.delivery.durable(msg.key) else None
        if journal is None:
            admitted = self._admit(msg, None)
        else:
            # Seen and taken in one commit: no moment where a message is marked seen (so a
            # redelivery is ignored) but not yet owed an answer.
            unstarted: list[Coroutine[Any, Any, object]] = []
            try:
                with journal.transaction():
                    admitted = self._admit(msg, journal)
                    if asyncio.iscoroutine(admitted):
                        unstarted.append(admitted)
            except BaseException:
                for coro in unstarted:
                    coro.close()  # the message is not taken: nothing answers it
                raise
        if asyncio.iscoroutine(admitted):
            return self._spawn(admitted)
        if not isinstance(admitted, InboundMessage):
            return admitted
        msg = admitted
        try:
            return self.router.submit(msg, ordered_command=msg.command is not None)
        except RouterClosed:
            text = (
                "I'm restarting right now; I'll answer this as soon as I'm back."
                if msg.seq is not None
                else "I'm restarting right now. Please send that again in a minute."
            )
            return self._spawn(self.delivery.send(OutboundMessage(msg.key, text, msg.message_id)))

    def _admit(
        self, msg: InboundMessage, journal: Journal | None
    ) -> InboundMessage | asyncio.Future[None] | Coroutine[Any, Any, object]:
        """``msg`` as taken into the journal, for the agent; or what answers it here instead
        (seen before, another bot's command, a command run out of turn, too long), as a
        coroutine that ``handle`` starts once the journal has committed. Writes to the journal,
        nothing else."""
        if journal is not None and not journal.first_time(msg):
            log.info("%s: message %s came again; ignored", msg.key, msg.message_id)
            return _answered()
        cmd = msg.command
        channel = self.channels.get(msg.key.channel)
        own_name = channel.bot_username if channel is not None else ""
        if cmd and cmd.target and own_name and cmd.target.casefold() != own_name.casefold():
            return _answered()  # addressed to another bot in the same group
        command = self.commands.get(cmd.name) if cmd is not None else None
        if command is not None and not command.ordered:
            return self.turns.ordered(msg.key, msg, command)
        if cmd is not None and command is None:
            return self._reply(msg, f"Unknown command /{cmd.name}. Send /help for the list.")
        if cmd is None and len(msg.text) > self.max_input_chars:
            return self._reply(msg, _too_long(len(msg.text), self.max_input_chars))
        return msg if journal is None else journal.take(msg)

    async def _reply(self, msg: InboundMessage, text: str) -> None:
        await self.delivery.answer([msg], OutboundMessage(msg.key, text, reply_to=msg.message_id))

    def _spawn(self, coro: Coroutine[Any, Any, object]) -> asyncio.Future[None]:
        async def run() -> None:
            await coro

        task = asyncio.ensure_future(run())
        self._side_tasks.add(task)
        task.add_done_callback(self._side_tasks.discard)
        return task

    # -- what the router runs -----------------------------------------------------------------

    async def _channel_up(self, key: SessionKey) -> None:
        await self._ready.get(key.channel, self._all_ready).wait()

    async def _run_batch(self, key: SessionKey, batch: list[InboundMessage]) -> None:
        await self._channel_up(key)
        await self.turns.batch(key, batch)

    async def _run_ordered(self, key: SessionKey, msg: InboundMessage) -> None:
        await self._channel_up(key)
        command = self.commands.get(msg.command.name) if msg.command is not None else None
        assert command is not None, "only known commands are queued as ordered"
        await self.turns.ordered(key, msg, command)

    def _unanswered(self, key: SessionKey, msgs: list[InboundMessage]) -> None:
        self.turns.unanswered(key, msgs)

    # -- for scheduled jobs (scheduling.host.JobHost) -----------------------------------------

    async def isolated_turn(
        self, key: SessionKey, prompt: str, grant: Grant, purpose: Purpose
    ) -> str:
        self.agent.sessions.reset(key)  # each run starts afresh
        # Stamped by the gateway's clock, as a chat's messages are: the time the model is told.
        asked = InboundMessage(
            key,
            prompt,
            sender_id="scheduler",
            sender_name="scheduler",
            received_at=self.clock.now(),
        )
        try:
            outcome = await self.agent.run_turn(key, [asked], grant=grant, purpose=purpose)
        finally:
            self.agent.sessions.forget(key)  # the next run starts afresh from its prompt
        return outcome.text.strip()

    async def deliver(self, out: OutboundMessage, origin: str | None = None) -> None:
        await self.delivery.deliver(out, origin)

    async def finish_delivery(self, origin: str) -> bool:
        return await self.delivery.finish(origin)

    def busy(self, key: SessionKey) -> bool:
        return self.router.busy(key)

    def _turn_over(self) -> None:
        self.agent.sessions.let_go(lambda key: self.router.busy(key) or self.router.queued(key) > 0)


def _pool(channel: Channel) -> dict[str, Any]:
    health = channel.health()
    return {"pool": health} if health else {}


def _too_long(length: int, limit: int) -> str:
    return (
        f"That message is too long for me ({length:,} characters; the limit is {limit:,}). "
        "Send it in parts, or as a file."
    )


def _answered() -> asyncio.Future[None]:
    """A future already resolved: the message needs nothing more."""
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    done.set_result(None)
    return done
