"""Router: per-session order, batching of messages that arrive mid-turn, shutdown."""

from __future__ import annotations

import asyncio

import pytest

from gateway.contract.events import InboundMessage, SessionKey
from gateway.runtime.router import Router, RouterClosed

A = SessionKey("t", "private", "a")
B = SessionKey("t", "private", "b")


def msg(key: SessionKey, text: str) -> InboundMessage:
    return InboundMessage(key, text, sender_id="u")


class Recorder:
    def __init__(self) -> None:
        self.batches: list[tuple[str, list[str]]] = []
        self.gates: dict[str, asyncio.Event] = {}
        self.unanswered: list[tuple[str, list[str]]] = []
        self.began = asyncio.Event()

    def record_unanswered(self, key, msgs):
        self.unanswered.append((key.id, [m.text for m in msgs]))

    async def run_batch(self, key, batch):
        self.batches.append((key.id, [m.text for m in batch]))
        gate = self.gates.get(batch[0].text)
        if gate is not None:
            self.began.set()  # a gated turn is now running
            await gate.wait()

    async def run_ordered(self, key, m):
        self.batches.append((key.id, ["<" + m.text + ">"]))


async def test_batches_split_at_ordered_commands_and_keep_order():
    rec = Recorder()
    rec.gates["x0"] = asyncio.Event()
    router = Router(rec.run_batch, rec.run_ordered, rec.record_unanswered)
    futures = [router.submit(msg(A, "x0"))]
    await asyncio.sleep(0)  # let the worker pick up x0 (a scheduling step, not a timed wait)
    futures += [
        router.submit(msg(A, "x1")),
        router.submit(msg(A, "x2")),
        router.submit(msg(A, "/new"), ordered_command=True),
        router.submit(msg(A, "x3")),
    ]
    assert router.busy(A) and router.queued(A) == 4
    rec.gates["x0"].set()
    await asyncio.wait_for(asyncio.gather(*futures), 5)
    assert rec.batches == [("a", ["x0"]), ("a", ["x1", "x2"]), ("a", ["</new>"]), ("a", ["x3"])]
    assert router.active_sessions() == []


async def test_drain_lets_turns_finish_then_cancels_the_rest():
    rec = Recorder()
    rec.gates["slow"] = asyncio.Event()  # never set
    router = Router(rec.run_batch, rec.run_ordered, rec.record_unanswered)
    quick = router.submit(msg(A, "quick"))
    slow = router.submit(msg(B, "slow"))
    await asyncio.wait_for(rec.began.wait(), 5)
    queued = [router.submit(msg(B, "q1")), router.submit(msg(B, "q2"))]
    await asyncio.wait_for(router.drain(grace=0.2), 5)
    assert quick.done() and not quick.cancelled()
    assert slow.done() and not slow.cancelled()
    # Messages that never got a turn are handed over to be recorded, and their futures resolve.
    assert all(f.done() and not f.cancelled() for f in queued)
    assert rec.unanswered == [("b", ["q1", "q2"])]
    with pytest.raises(RouterClosed):
        router.submit(msg(A, "late"))


async def test_stop_before_a_turn_has_started_cancels_nothing():
    rec = Recorder()
    router = Router(rec.run_batch, rec.run_ordered, rec.record_unanswered)
    done = router.submit(msg(A, "first"))
    assert router.stop_turn(A) is False  # the turn has not begun: nothing to stop
    await asyncio.wait_for(done, 5)
    assert rec.batches == [("a", ["first"])] and rec.unanswered == []


async def test_a_flood_is_answered_in_bounded_batches_in_order():
    rec = Recorder()
    router = Router(rec.run_batch, rec.run_ordered, rec.record_unanswered, 10, 1000)
    texts = [f"m{i}" for i in range(35)] + ["x" * 600, "y" * 600]
    futures = [router.submit(msg(A, t)) for t in texts]
    await asyncio.wait_for(asyncio.gather(*futures), 10)
    # At most 10 messages or 1,000 characters a turn (one longer message still goes alone).
    assert [len(batch) for _, batch in rec.batches] == [10, 10, 10, 6, 1]
    assert [t for _, batch in rec.batches for t in batch] == texts


async def test_images_in_a_batch_stay_under_the_request_limit():
    from gateway.contract.events import Attachment

    rec = Recorder()
    router = Router(rec.run_batch, rec.run_ordered, rec.record_unanswered, 25, 10_000, 10 << 20)
    photo = Attachment("image", "image/jpeg", data=b"\xff" * (3 << 20))
    futures = [
        router.submit(InboundMessage(A, f"p{i}", sender_id="u", attachments=(photo,)))
        for i in range(7)
    ]
    await asyncio.wait_for(asyncio.gather(*futures), 10)
    # 3 MiB each under a 10 MiB cap: three to a turn.
    assert [len(batch) for _, batch in rec.batches] == [3, 3, 1]


async def test_each_ended_turn_is_reported_once_its_session_is_no_longer_busy():
    rec = Recorder()
    seen: list[tuple[bool, bool, int]] = []
    router: Router

    def over() -> None:  # what the gateway does here: let go of sessions not in use
        seen.append((router.busy(A), router.busy(B), router.queued(A)))

    router = Router(rec.run_batch, rec.run_ordered, rec.record_unanswered, turn_over=over)
    rec.gates["a0"] = asyncio.Event()
    first = router.submit(msg(A, "a0"))
    await asyncio.wait_for(rec.began.wait(), 5)
    queued = router.submit(msg(A, "a1"))
    await asyncio.wait_for(router.submit(msg(B, "b0")), 5)
    rec.gates["a0"].set()
    await asyncio.wait_for(asyncio.gather(first, queued), 5)
    # B's turn ended while A's ran; A's first ended with a1 waiting, then a1's.
    assert seen == [(True, False, 1), (False, False, 1), (False, False, 0)]
