"""The channel port: a chat platform's adapter, platform events in as ``InboundMessage``s and
``OutboundMessage``s out; channels know nothing of the agent.

The gateway calls ``bind(sink)``, then enters the channel (``start``; leaving calls ``stop``).
Each platform message goes to the final ``admit`` as an ``Arrival``, so no adapter can skip the
access policy. ``send`` raises on failure; an adapter that cannot go on calls ``fail(reason)``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Coroutine
from types import TracebackType
from typing import Any, ClassVar, Self, TypeVar, final

from channels.access import Access, Action, Arrival
from channels.live import LiveReply
from gateway.contract.events import (
    Attachment,
    InboundMessage,
    OutboundMessage,
    SessionKey,
    parse_command,
)
from gateway.contract.ports import Check, Clock, SystemClock
from gateway.infra.tasks import settle

Sink = Callable[[InboundMessage], "asyncio.Future[None]"]

log = logging.getLogger(__name__)

T = TypeVar("T")
# How long stopping waits for sends and typing requests still under way.
FINISHING_SECONDS = 5.0
# Messages sent with buttons that are remembered, so an answered question loses its buttons.
BUTTONED_KEEP = 200


class ChannelStartError(Exception):
    """The channel cannot start; the message says why and what to do (no secrets in it)."""


class Channel(ABC):
    name: ClassVar[str]
    # The bot's own handle on the platform, once known: "/new@other_bot" is not for us.
    bot_username: str = ""
    # Messages are kept in the gateway's journal until answered, so a crash loses none. Off for
    # a local terminal, where the person who pressed Ctrl-C is not waiting for a late answer.
    journaled: ClassVar[bool] = True
    # The platform drops a repeated send with the same ``OutboundMessage.ident`` (Discord's
    # nonce), so a send interrupted by a crash can simply be sent again.
    idempotent_sends: ClassVar[bool] = False
    # Receives by a loop of its own that sets ``receiving`` when its first request is out.
    polls: ClassVar[bool] = False

    def __init__(self, access: Access | None = None, clock: Clock | None = None) -> None:
        self.access = access
        self.clock = clock or SystemClock()
        self._sink: Sink | None = None
        self._failure: asyncio.Future[str] | None = None
        self._lanes: dict[object, asyncio.Task[None]] = {}
        self._lane_tasks: set[asyncio.Task[None]] = set()
        # Sends and typing loops under way, which stopping lets finish (``run_to_end``).
        self._finishing: set[asyncio.Future[Any]] = set()
        # Set once the channel is asking its platform for messages (its first long poll is
        # out): start-up work that can wait (MCP servers) waits for it, not to delay it.
        self.receiving = asyncio.Event()
        # Messages sent with buttons, by each button's command: the chat and message id.
        self._buttoned: dict[str, tuple[SessionKey, str]] = {}

    @final
    def bind(self, sink: Sink) -> None:
        self._sink = sink
        self._failure = asyncio.get_running_loop().create_future()

    @abstractmethod
    async def start(self) -> None: ...

    @abstractmethod
    async def stop(self) -> None: ...

    async def __aenter__(self) -> Self:
        try:
            await self.start()
        except BaseException:
            # What start() got going before it failed (a client, a poller, a server) is
            # stopped here, once for every adapter, so nothing is left half running.
            await self._stop_logged()
            raise
        if not self.polls:
            self.receiving.set()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.requests_done(FINISHING_SECONDS)
        await self._stop_logged()

    async def _stop_logged(self) -> None:
        try:
            await self.stop()
        except Exception:
            log.exception("channel %s did not stop cleanly", self.name)

    async def probe(self, limit: float, token_source: str) -> Check:
        """Check the platform accepts this channel's credentials, without receiving anything
        (``corvid doctor``). ``token_source`` says where the token comes from, for the fix."""
        raise NotImplementedError(f"channel {self.name} has nothing to probe")

    @abstractmethod
    async def send(self, msg: OutboundMessage) -> None: ...

    def sent_buttons(self, msg: OutboundMessage, ref: str) -> None:
        """``msg`` went out, its buttons under platform message ``ref`` (called by ``send``)."""
        for _, command in msg.buttons:
            self._buttoned[command] = (msg.key, ref)
        while len(self._buttoned) > BUTTONED_KEEP:
            del self._buttoned[next(iter(self._buttoned))]

    def pressed_under(self, command: str, key: SessionKey, ref: str) -> None:
        """A button for ``command`` was pressed under message ``ref``: kept like a message
        sent, so one sent before a restart can be settled too."""
        self._buttoned.setdefault(command, (key, ref))

    async def settle_buttons(self, command: str, text: str) -> bool:
        """The message with a button for ``command`` now reads ``text``, without buttons: the
        question they asked was answered. False when this channel knows no such message."""
        found = self._buttoned.get(command)
        if found is None:
            return False
        for other in [c for c, where in self._buttoned.items() if where == found]:
            del self._buttoned[other]
        await self.replace_text(*found, text)
        return True

    async def replace_text(self, key: SessionKey, ref: str, text: str) -> None:
        """Replace the text of message ``ref`` in ``key``'s chat, dropping its buttons (for
        channels that send buttons)."""
        return None

    def health(self) -> dict[str, int]:
        """Figures on the platform client for ``corvid status`` (its connection pool)."""
        return {}

    def transient(self, exc: BaseException) -> bool:
        """Did ``send`` fail for now only (the platform unreachable, timing out, overloaded),
        so that the same message may go through later? A refusal is not transient."""
        return isinstance(exc, (ConnectionError, TimeoutError))

    def maybe_sent(self, exc: BaseException) -> bool:
        """Did ``send`` fail after the platform may have posted the message (it took the
        request, its answer came too late)? Where sends are not idempotent, sending it again
        could show it twice."""
        return False

    # -- streamed replies ------------------------------------------------------------------------

    # From the channel's config (``apply``): show replies while they are written, and which
    # tools run.
    streaming: bool = True
    show_tool_progress: bool = True

    def apply(self, *, streaming: bool, show_tool_progress: bool) -> None:
        """The options of what shows while a reply is written, at start and on reload; the
        access policy applies its own."""
        self.streaming, self.show_tool_progress = streaming, show_tool_progress

    def live(
        self, key: SessionKey, reply_to: str | None, placed: Callable[[str], None]
    ) -> LiveReply[Any] | None:
        """A reply to show while it is written, or None where this chat gets whole replies."""
        return None

    async def take_back(self, key: SessionKey, ref: str) -> None:
        """A streamed message a crash left half-written: remove it (the answer comes again).
        A channel that never streams has none to take back."""
        return None

    # Seconds between typing requests (a platform shows "typing…" a few seconds after each);
    # 0: no typing indicator.
    typing_every: ClassVar[float] = 0.0
    # Seconds a turn runs before the first typing request: an answer that comes sooner needs
    # no indicator (Telegram's Bot API asks for chat actions only when the answer takes a
    # noticeable time), and a burst of turns sends its model calls first.
    typing_after: float = 0.5

    async def show_typing(self, key: SessionKey) -> bool:
        """Show "typing…" in ``key``'s chat, with one request; False: stop for this turn (the
        bot may not write there)."""
        return False

    @contextlib.asynccontextmanager
    async def typing(self, key: SessionKey) -> AsyncIterator[None]:
        """Show that a reply is being written while the block runs, once it has run for
        ``typing_after`` seconds. The requests run in a task of their own that ends between two
        of them, never in the middle of one."""
        if self.typing_every <= 0:
            yield
            return
        done = asyncio.Event()

        def begin() -> None:
            self._track(asyncio.ensure_future(self._keep_typing(key, done)))

        later = asyncio.get_running_loop().call_later(self.typing_after, begin)
        try:
            yield
        finally:
            done.set()
            later.cancel()

    # The loop ends between requests, never cancelling one (see ``run_to_end``).
    async def _keep_typing(self, key: SessionKey, done: asyncio.Event) -> None:
        while not done.is_set():
            try:
                if not await self.show_typing(key):
                    return
            except Exception as exc:  # the indicator never costs the reply
                log.debug("%s: typing indicator failed: %s", key, exc)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.typing_every):
                    await done.wait()

    # No platform request is cancelled once started: one cancelled while it waits for a
    # connection can leave the client's pool a connection short for good, silencing the bot.
    @final
    async def run_to_end(self, work: Coroutine[Any, Any, T]) -> T:
        """Await ``work``, which runs to its end even if the caller is cancelled meanwhile: a
        send (with its record) started is finished, whoever stops waiting for it."""
        task = asyncio.ensure_future(work)
        self._track(task)
        try:
            return await asyncio.shield(task)
        finally:
            # A failed task holds its exception, whose traceback holds this frame: without
            # this the chain (and the connection it failed on) waits for the cycle collector.
            del task

    @final
    async def requests_done(self, within: float) -> None:
        """Return once the sends and typing requests under way have finished (or ``within``
        seconds have passed), those started meanwhile too."""
        await settle(self._finishing, within)

    def _track(self, task: asyncio.Future[Any]) -> None:
        self._finishing.add(task)

        def done(t: asyncio.Future[Any]) -> None:
            self._finishing.discard(t)
            if not t.cancelled():
                t.exception()  # seen: whoever awaited it has it, or nobody is left to tell

        task.add_done_callback(done)

    # -- shared policy ---------------------------------------------------------------------------

    @final
    async def admit(self, a: Arrival) -> asyncio.Future[None] | None:
        """Apply the access policy to ``a``; deliver it, answer it, or keep it as context.

        Returns the sink's future when the message went to the agent.
        """
        if self._sink is None:
            raise RuntimeError(f"channel {self.name} was not bound to a gateway")
        key = a.key
        if self.access is None:  # a local channel: the person at the keyboard is the owner
            verdict_action, notice = Action.DELIVER, ""
        else:
            verdict = self.access.decide(a)
            verdict_action, notice = verdict.action, verdict.text
            key = verdict.key or a.key
        if verdict_action is Action.DROP:
            log.debug("%s: ignored a message from %s", a.key, a.sender_id)
            return None
        if verdict_action is Action.CONTEXT:
            assert self.access is not None
            self.access.remember(a)
            return None
        if verdict_action is Action.REPLY:
            log.info("%s: answered %s with a notice instead of the agent", a.key, a.sender_id)
            try:
                await self.send(OutboundMessage(a.key, notice, reply_to=a.message_id))
            except Exception as exc:
                log.warning("%s: could not send a notice: %s", a.key, exc)
            return None
        attachments: tuple[Attachment, ...] = ()
        text = a.text
        if a.fetch is not None:
            attachments, notes = await a.fetch(key)
            if notes:
                text = "\n".join(filter(None, (text, *notes)))
        if not text.strip() and not attachments:
            return None
        command = parse_command(text)
        # Commands never reach the model, so they leave the group's context for the next question.
        is_command = a.is_command or command is not None
        context = () if self.access is None or is_command else self.access.take_context(a.key)
        return self._sink(
            InboundMessage(
                key,
                text,
                sender_id=a.sender_id,
                sender_name=a.sender_name,
                message_id=a.message_id,
                received_at=self.clock.now(),
                attachments=attachments,
                context=context,
                command=command,
                chat_title=a.chat_title,
            )
        )

    # -- ordering --------------------------------------------------------------------------------

    @final
    def in_order(self, lane: object, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run ``coro`` after everything queued earlier on ``lane`` (a chat), and concurrently
        with other lanes: one chat's slow download or flood wait never holds up another chat,
        and a chat's messages still reach the gateway in the order they were sent."""
        previous = self._lanes.get(lane)

        async def run() -> None:
            if previous is not None:
                await asyncio.wait([previous])
            try:
                await coro
            except Exception:
                log.exception("%s: handling a message failed", self.name)

        task = asyncio.create_task(run())
        self._lanes[lane] = task
        self._lane_tasks.add(task)

        def done(t: asyncio.Task[None]) -> None:
            self._lane_tasks.discard(t)
            if self._lanes.get(lane) is t:
                del self._lanes[lane]

        task.add_done_callback(done)
        return task

    @final
    def taking_in(self) -> bool:
        """Are messages still being taken in (downloaded, checked, passed on)?"""
        return bool(self._lane_tasks)

    @final
    async def settled(self) -> None:
        """Return once every message taken in so far has been handled (passed on or not)."""
        await settle(self._lane_tasks, None)

    @final
    async def cancel_pending(self) -> None:
        """Cancel messages still being taken in (on stop)."""
        await settle(self._lane_tasks, 5, cancel=True)

    # -- fatal errors -----------------------------------------------------------------------------

    @final
    def fail(self, reason: str) -> None:
        """Report that this channel cannot go on; the gateway shuts down with ``reason``."""
        log.error("channel %s stopped: %s", self.name, reason)
        if self._failure is not None and not self._failure.done():
            self._failure.set_result(reason)

    @property
    def failure(self) -> asyncio.Future[str] | None:
        return self._failure
