"""Per-session serial, cross-session concurrent scheduling of turns."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from gateway.contract.events import InboundMessage, SessionKey

log = logging.getLogger(__name__)

RunBatch = Callable[[SessionKey, list[InboundMessage]], Awaitable[None]]
RunOrdered = Callable[[SessionKey, InboundMessage], Awaitable[None]]
Unanswered = Callable[[SessionKey, list[InboundMessage]], None]


@dataclass(slots=True)
class _Item:
    msg: InboundMessage
    ordered_command: bool
    done: asyncio.Future[None]


@dataclass(slots=True)
class _Worker:
    pending: deque[_Item] = field(default_factory=deque)
    task: asyncio.Task[None] | None = None
    turn: asyncio.Task[None] | None = None
    started: bool = False  # the current turn's code has begun to run


class RouterClosed(Exception):
    pass


class Router:
    def __init__(
        self,
        run_batch: RunBatch,
        run_ordered: RunOrdered,
        unanswered: Unanswered,
        max_batch: int = 25,
        max_batch_chars: int = 32_000,
        max_batch_image_bytes: int = 16 << 20,
        turn_over: Callable[[], None] = lambda: None,
    ) -> None:
        self._run_batch = run_batch
        # A flood is answered in several turns rather than one request too big for the model.
        self._max_batch = max_batch
        self._max_batch_chars = max_batch_chars
        # The API refuses requests over 32 MB, and images travel base64-encoded (4/3 larger).
        self._max_batch_image_bytes = max_batch_image_bytes
        self._run_ordered = run_ordered
        # Called with messages that shutdown left without a turn, so they can be recorded.
        self._unanswered = unanswered
        # Called each time a turn has ended and its session is no longer busy.
        self._turn_over = turn_over
        # A worker task only while a session has work: an idle one costs no task, nothing polls.
        self._workers: dict[SessionKey, _Worker] = {}
        self._closed = False
        self._forced = asyncio.Event()

    def submit(self, msg: InboundMessage, ordered_command: bool = False) -> asyncio.Future[None]:
        """Queue a message; the future resolves when the turn that answers it has finished."""
        if self._closed:
            raise RouterClosed
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        worker = self._workers.get(msg.key)
        if worker is None:
            worker = self._workers[msg.key] = _Worker()
        worker.pending.append(_Item(msg, ordered_command, done))
        if worker.task is None:
            worker.task = asyncio.create_task(
                self._drain(msg.key, worker), name=f"session {msg.key}"
            )
        return done

    @property
    def closed(self) -> bool:
        """Shutting down: a turn cancelled now is owed an answer after the restart."""
        return self._closed

    def busy(self, key: SessionKey) -> bool:
        worker = self._workers.get(key)
        return worker is not None and worker.turn is not None

    def queued(self, key: SessionKey) -> int:
        worker = self._workers.get(key)
        return len(worker.pending) if worker else 0

    def active_sessions(self) -> list[SessionKey]:
        return [k for k, w in self._workers.items() if w.task is not None]

    async def idle(self) -> None:
        """Return once no session has a turn running or a message waiting."""
        while tasks := [w.task for w in self._workers.values() if w.task is not None]:
            await asyncio.wait(tasks)

    def stop_turn(self, key: SessionKey) -> bool:
        """Cancel the turn running in this session, if any. Queued messages are kept."""
        worker = self._workers.get(key)
        if worker is None or worker.turn is None or worker.turn.done() or not worker.started:
            return False
        worker.turn.cancel()
        return True

    async def _drain(self, key: SessionKey, worker: _Worker) -> None:
        try:
            while worker.pending:
                items = [worker.pending.popleft()]
                chars, images = _size(items[0].msg)
                if not items[0].ordered_command:
                    while (
                        worker.pending
                        and not worker.pending[0].ordered_command
                        and len(items) < self._max_batch
                    ):
                        more_chars, more_images = _size(worker.pending[0].msg)
                        if (
                            chars + more_chars > self._max_batch_chars
                            or images + more_images > self._max_batch_image_bytes
                        ):
                            break
                        chars, images = chars + more_chars, images + more_images
                        items.append(worker.pending.popleft())
                worker.started = False
                worker.turn = asyncio.create_task(
                    self._turn(key, worker, items), name=f"turn {key}"
                )
                try:
                    # wait() rather than await: a /stop cancels the turn, not this worker.
                    await asyncio.wait({worker.turn})
                except asyncio.CancelledError:
                    worker.turn.cancel()
                    await asyncio.wait({worker.turn})
                    raise
                finally:
                    turn, worker.turn = worker.turn, None
                    if not worker.started:  # cancelled before it began: nothing recorded them
                        self._report_unanswered(key, items)
                    for item in items:
                        if not item.done.done():
                            item.done.set_result(None)
                    self._over()
                if not turn.cancelled() and (exc := turn.exception()) is not None:
                    log.error("%s: turn failed", key, exc_info=exc)
        finally:
            worker.task = None
            if worker.pending:  # only when this worker was cancelled (shutdown)
                left = list(worker.pending)
                worker.pending.clear()
                self._report_unanswered(key, left)
                for item in left:
                    if not item.done.done():
                        item.done.set_result(None)
            self._workers.pop(key, None)

    async def _turn(self, key: SessionKey, worker: _Worker, items: list[_Item]) -> None:
        worker.started = True
        if items[0].ordered_command:
            await self._run_ordered(key, items[0].msg)
        else:
            await self._run_batch(key, [i.msg for i in items])

    def _over(self) -> None:
        try:
            self._turn_over()
        except Exception:
            log.exception("tidying up after a turn failed")

    def _report_unanswered(self, key: SessionKey, items: list[_Item]) -> None:
        msgs = [i.msg for i in items if not i.ordered_command]
        if not msgs:
            return
        try:
            self._unanswered(key, msgs)
        except Exception:
            log.exception("%s: could not record %d unanswered message(s)", key, len(msgs))

    def running_turns(self) -> int:
        return sum(1 for w in self._workers.values() if w.turn is not None)

    def force(self) -> None:
        """End a ``drain`` now: the turns still running are cancelled (a third Ctrl-C)."""
        self._forced.set()

    async def drain(self, grace: float) -> None:
        """Stop taking messages, let running turns finish for ``grace`` seconds (or until
        ``force``), cancel the rest."""
        self._closed = True
        tasks = [w.task for w in self._workers.values() if w.task is not None]
        if not tasks:
            return
        finished = asyncio.ensure_future(asyncio.wait(tasks))
        forced = asyncio.ensure_future(self._forced.wait())
        await asyncio.wait((finished, forced), timeout=grace, return_when=asyncio.FIRST_COMPLETED)
        for waiter in (finished, forced):
            waiter.cancel()
        still = {t for t in tasks if not t.done()}
        if still:
            # At grace 0 (Ctrl-C in a terminal chat) cancelling is what was asked for.
            log.log(
                logging.WARNING if grace else logging.INFO,
                "shutdown: cancelling %d turn(s) still running after %.0fs",
                len(still),
                grace,
            )
            for t in still:
                t.cancel()
            await asyncio.wait(still, timeout=10)


def _size(msg: InboundMessage) -> tuple[int, int]:
    """What a message adds to a model request: characters (its text and the group context
    that comes with it) and bytes of images."""
    chars = len(msg.text) + sum(len(line) for line in msg.context)
    images = sum(len(a.data) for a in msg.attachments if a.data is not None)
    return chars, images
