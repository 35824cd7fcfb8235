"""The owner hears of pairing requests: once per person an hour, and a digest for a flood."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from channels.pairing import PairingRequest
from gateway.contract.events import OutboundMessage, telegram_private
from gateway.runtime.pairing_notices import BURST, WINDOW, PairingNotices
from tests.fakes.clock import FakeClock

OWNER = telegram_private(42)


def _req(n: int, channel: str = "telegram", name: str = "") -> PairingRequest:
    return PairingRequest(channel, str(100 + n), name or f"Person {n}", f"CODE{n:04d}", 0.0, 3600.0)


async def _settled(notices: PairingNotices) -> None:
    """Until every notice sent at once has gone (the digest waits for the clock)."""
    sending = [t for t in notices._tasks if t is not notices._digest]
    if sending:
        async with asyncio.timeout(5):
            await asyncio.wait(sending)


async def test_a_flood_of_strangers_becomes_one_digest():
    clock, sent = FakeClock(), []

    async def send(msg: OutboundMessage) -> None:
        sent.append(msg)

    notices = PairingNotices(send, {"telegram": OWNER}, clock)
    for n in range(BURST + 4):
        notices.requested(_req(n))
    await _settled(notices)
    assert [m.text.split(" wants")[0] for m in sent] == [
        f"Person {n} (Telegram id {100 + n})" for n in range(BURST)
    ]
    assert all(m.key == OWNER and m.buttons[0][1] == f"/approve CODE{i:04d}"
               for i, m in enumerate(sent))  # fmt: skip
    due = clock.now() + timedelta(seconds=WINDOW)
    await clock.idle_until(due)
    await clock.set(due)
    async with asyncio.timeout(5):
        await notices._digest if notices._digest else asyncio.sleep(0)
    digest = sent[-1].text
    assert len(sent) == BURST + 1 and digest.startswith("4 more people asked")
    assert all(f"code CODE{n:04d}" in digest for n in range(BURST, BURST + 4))
    await notices.close()


async def test_one_notice_per_person_an_hour_and_none_without_an_owner():
    clock, sent = FakeClock(), []

    async def send(msg: OutboundMessage) -> None:
        sent.append(msg)

    notices = PairingNotices(send, {"telegram": OWNER}, clock)
    notices.requested(_req(1))
    notices.requested(_req(1))
    clock.tick(3599)
    notices.requested(_req(1))
    await _settled(notices)
    assert len(sent) == 1
    clock.tick(2)
    notices.requested(_req(1))
    await _settled(notices)
    assert len(sent) == 2
    # A Discord stranger is announced on Telegram when the owner is only there.
    notices.requested(_req(2, channel="discord", name="Bob\u202e\n"))
    await _settled(notices)
    assert sent[-1].key == OWNER and sent[-1].text.startswith("Bob (Discord id 102)")
    nobody = PairingNotices(send, {}, clock)
    nobody.requested(_req(3))
    assert len(sent) == 3
    await notices.close()


def test_a_strangers_name_is_shown_as_text_not_as_a_link():
    from gateway.runtime.pairing_notices import notice

    req = _req(1, name="[Security team](https://evil.example/login) **VERIFIED**")
    text = notice(req, OWNER).text
    assert "](https://" not in text and "**VERIFIED**" not in text
    assert "\\[Security team\\]" in text
