"""Wiring of the usage ledger and the budget, for ``build_app``."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import replace

from agent.model.charge import Charge, Purpose
from agent.usage.budget import Budget, Tell
from agent.usage.ledger import UsageLedger
from agent.usage.meter import Meter
from agent.usage.prices import PriceTable
from channels.base import Channel
from channels.voice import Hearing, OpenAITranscriber
from gateway.config.loader import Config
from gateway.contract.events import TERMINAL, OutboundMessage, SessionKey
from gateway.contract.ports import Clock
from gateway.runtime.gateway import Gateway
from gateway.statefiles import opened

log = logging.getLogger(__name__)


def open_meter(config: Config, clock: Clock, resources: contextlib.AsyncExitStack) -> Meter:
    path = config.layout.usage
    lost = (
        "what the calls so far cost is in the old copy: the budget's caps count this day "
        "and month from nothing"
    )
    ledger = opened(path, lambda: UsageLedger(path, config.tz), lost)
    resources.callback(ledger.close)
    budget = Budget(config.budget, ledger, clock)
    return Meter(ledger, PriceTable(config.llm.prices), clock, budget)


def embeddings_counter(meter: Meter) -> Callable[[str, int], None]:
    """What a paid embedding service's answers are counted with (from the embedding thread:
    kept in the ledger, and in the caps' sums once they are next read from it)."""

    def embedded(model: str, tokens: int) -> None:
        meter.count(Charge(Purpose.EMBEDDING), model, (tokens, 0, 0, 0), budget=False)

    return embedded


def meter_hearing(channels: Sequence[Channel], meter: Meter, config: Config) -> None:
    """Recordings a paid service transcribes are counted, at ``price_per_minute``."""
    price = config.transcription.price_per_minute
    model = config.transcription.model

    def heard(key: SessionKey, seconds: float | None) -> None:
        cost = (seconds or 0.0) / 60 * price
        meter.count(Charge(Purpose.TRANSCRIPTION, key), model, cost=cost)

    for channel in channels:
        hearing = getattr(channel, "hearing", None)
        if isinstance(hearing, Hearing) and isinstance(hearing.transcriber, OpenAITranscriber):
            channel.hearing = replace(hearing, heard=heard)  # type: ignore[attr-defined]


def owner_line(config: Config, gateway: Gateway) -> Tell:
    """A line to the owner's private chat (on the first platform that has one), sent in the
    background: the call that crossed a cap does not wait for it."""
    owner = next(iter(config.channels.owner_chats().values()), None)
    if owner is None and TERMINAL.channel in gateway.channels:
        owner = TERMINAL
    sending: set[asyncio.Task[bool]] = set()

    def tell(text: str, buttons: tuple[tuple[str, str], ...]) -> None:
        if owner is None:
            log.warning("budget: %s (no private chat of the owner to say it in)", text)
            return
        out = OutboundMessage(owner, text, buttons=buttons)
        task = asyncio.get_running_loop().create_task(gateway.delivery.send(out))
        sending.add(task)
        task.add_done_callback(sending.discard)

    return tell
