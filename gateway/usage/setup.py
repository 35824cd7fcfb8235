"""Wiring of the usage ledger and the budget: what ``build_app`` needs to meter model calls
and to tell the owner about spending caps."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from agent.usage.budget import Budget, Tell
from agent.usage.ledger import UsageLedger
from agent.usage.meter import Meter
from agent.usage.prices import PriceTable
from gateway.config.loader import Config
from gateway.contract.events import TERMINAL, OutboundMessage
from gateway.contract.ports import Clock
from gateway.runtime.gateway import Gateway

log = logging.getLogger(__name__)


def open_meter(config: Config, clock: Clock, resources: contextlib.AsyncExitStack) -> Meter:
    ledger = UsageLedger(config.layout.usage, config.tz)
    resources.callback(ledger.close)
    budget = Budget(config.budget, ledger, clock)
    return Meter(ledger, PriceTable(config.llm.prices), clock, budget)


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
