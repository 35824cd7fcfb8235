"""Spending caps, daily and monthly: overall, per shared chat and per job (``budget``)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from agent.model.charge import Charge
from agent.settings import BudgetSettings
from agent.usage.ledger import Call, Period, UsageLedger
from agent.usage.prices import usd
from gateway.contract.errors import LLMError, LLMErrorKind
from gateway.contract.events import NO_REPLY
from gateway.contract.ports import Clock

log = logging.getLogger(__name__)

# Costs are sums of floats: a cap spent to the last billionth is spent.
EPSILON = 1e-9

# What the owner is told: a line and its buttons ((label, chat command) pairs).
Tell = Callable[[str, tuple[tuple[str, str], ...]], None]


@dataclass(frozen=True, slots=True)
class Cap:
    kind: str  # "all", "chat" (one shared chat) or "job" (one job)
    subject: str  # the chat's audience or the job's id; "" for all
    daily: bool
    period: str  # the local day or month it is counted in
    limit: float

    @property
    def name(self) -> str:
        """How the owner command names it: ``daily``, ``chat_monthly:<chat>``,
        ``job_daily:<id>``."""
        span = "daily" if self.daily else "monthly"
        return span if self.kind == "all" else f"{self.kind}_{span}:{self.subject}"

    def describe(self) -> str:
        span = "daily" if self.daily else "monthly"
        if self.kind == "all":
            return f"the {span} budget"
        what = "the chat" if self.kind == "chat" else "the job"
        return f"the {span} budget of {what} {self.subject}"


class BudgetSpent(LLMError):
    """A cap is reached: the call was not made."""

    def __init__(self, cap: Cap, spent: float, owner_private: bool) -> None:
        super().__init__(LLMErrorKind.BUDGET, f"{cap.name} {spent:.4f} of {cap.limit:g}")
        self.cap = cap
        self.spent = spent
        self.owner_private = owner_private

    def user_message(self) -> str:
        # Shared chats hear nothing: what the owner spends is the owner's business.
        if not self.owner_private:
            return NO_REPLY
        return (
            f"I've reached {self.cap.describe()} ({usd(self.spent)} of ${self.cap.limit:g}), "
            f"so I can't answer until it renews. To go on now, send /budget {self.cap.name} AMOUNT "
            f"(until the {'day' if self.cap.daily else 'month'} ends) or raise budget in "
            "config.yaml."
        )


class Budget:
    def __init__(
        self,
        cfg: BudgetSettings,
        ledger: UsageLedger,
        clock: Clock,
        tell: Tell | None = None,
    ) -> None:
        self.cfg = cfg
        self.ledger = ledger
        self.clock = clock
        self.tell = tell
        self._spent: dict[tuple[str, str, bool, str], float] = {}
        self._pending: dict[tuple[str, str, bool, str], list[float]] = {}
        self._changed = asyncio.Event()

    def apply(self, cfg: BudgetSettings) -> None:
        """New caps (``corvid reload``): calls waiting on the old ones look again."""
        self.cfg = cfg
        self._wake()

    # -- which caps a call counts against --------------------------------------------------

    def caps(self, charge: Charge) -> list[Cap]:
        period = Period.of(self.clock.now(), self.ledger.tz)
        c = self.cfg
        wanted = [("all", "", True, c.daily), ("all", "", False, c.monthly)]
        if charge.audience != "owner":
            wanted += [
                ("chat", charge.audience, True, c.chat_daily),
                ("chat", charge.audience, False, c.chat_monthly),
            ]
        if charge.job is not None:
            wanted += [
                ("job", charge.job, True, c.job_daily),
                ("job", charge.job, False, c.job_monthly),
            ]
        caps = []
        for kind, subject, daily, limit in wanted:
            when = period.day if daily else period.month
            cap = Cap(kind, subject, daily, when, limit)
            raised = self.ledger.raised(cap.name, when) if limit > 0 else None
            if raised is not None:
                cap = Cap(kind, subject, daily, when, raised)
            if cap.limit > 0:
                caps.append(cap)
        return caps

    def spent(self, cap: Cap) -> float:
        key = _key(cap)
        if key not in self._spent:
            self._spent[key] = self.ledger.spent(
                cap.period,
                audience=cap.subject if cap.kind == "chat" else None,
                job=cap.subject if cap.kind == "job" else None,
            )
        return self._spent[key]

    # -- admitting and counting calls --------------------------------------------------------

    # Calls in flight have not said what they cost yet, so near a cap they go one at a time and
    # a cap is passed by one call at most.
    @contextlib.asynccontextmanager
    async def admit(self, charge: Charge, most: float) -> AsyncIterator[None]:
        """Run a call that may cost up to ``most`` once its caps allow it; raise
        ``BudgetSpent`` when one is reached."""
        caps = self.caps(charge)
        if not caps:
            yield
            return
        while True:
            for cap in caps:
                spent = self.spent(cap)
                if spent >= cap.limit - EPSILON:
                    self._reached(cap, spent)
                    raise BudgetSpent(cap, spent, charge.owner_private)
            if all(self._fits(cap, most) for cap in caps):
                break
            changed = self._changed
            await changed.wait()
            caps = self.caps(charge)  # the period may have rolled over, or a cap been raised
        for cap in caps:
            self._pending.setdefault(_key(cap), []).append(most)
        try:
            yield
        finally:
            for cap in caps:
                pending = self._pending[_key(cap)]
                pending.remove(most)
                if not pending:
                    del self._pending[_key(cap)]
            self._wake()

    def _fits(self, cap: Cap, most: float) -> bool:
        pending = self._pending.get(_key(cap))
        if not pending:
            return True  # alone, it may pass the cap: by this one call at most
        return self.spent(cap) + sum(pending) + most < cap.limit

    def _wake(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    def recorded(self, call: Call) -> None:
        """Count a call the ledger has just kept, and tell the owner what it crossed."""
        for cap in self.caps(call.charge):
            key = _key(cap)
            if key in self._spent:
                self._spent[key] += call.cost
            spent = self.spent(cap)
            if spent >= cap.limit - EPSILON:
                self._reached(cap, spent)
            elif self.cfg.warn_at and spent >= cap.limit * self.cfg.warn_at - EPSILON:
                self._warn(cap, spent)

    def raised_now(self) -> dict[str, float]:
        """The caps raised for the current day or month, by name (``Cap.name``)."""
        period = Period.of(self.clock.now(), self.ledger.tz)
        return self.ledger.raised_in([period.day, period.month])

    def raise_cap(self, name: str, amount: float) -> Cap:
        """The owner's command: ``name`` (as ``Cap.name``) is ``amount`` until its period ends."""
        kind, _, subject = name.partition(":")
        kind, _, span = kind.rpartition("_") if "_" in kind else ("all", "", kind)
        if span not in ("daily", "monthly") or kind not in ("all", "chat", "job"):
            raise ValueError(f"no cap named {name!r}")
        if (kind == "all") != (not subject):
            raise ValueError(f"no cap named {name!r}")
        period = Period.of(self.clock.now(), self.ledger.tz)
        when = period.day if span == "daily" else period.month
        cap = Cap(kind, subject, span == "daily", when, amount)
        self.ledger.raise_cap(cap.name, when, amount)
        log.info("%s raised to %g until %s ends", cap.name, amount, when)
        self._wake()
        return cap

    def _warn(self, cap: Cap, spent: float) -> None:
        level = round(self.cfg.warn_at * 100)
        if self.tell is not None and self.ledger.first_telling(cap.name, cap.period, level):
            self.tell(
                f"{cap.describe().capitalize()} is {spent / cap.limit:.0%} spent "
                f"({usd(spent)} of ${cap.limit:g}).",
                (),
            )

    def _reached(self, cap: Cap, spent: float) -> None:
        if self.tell is None or not self.ledger.first_telling(cap.name, cap.period, 100):
            return
        log.warning("%s reached: %.4f of %g", cap.name, spent, cap.limit)
        double = f"{cap.limit * 2:g}"
        self.tell(
            f"{cap.describe().capitalize()} is reached ({usd(spent)} of ${cap.limit:g}): model "
            f"calls it covers stop until the {'day' if cap.daily else 'month'} ends. "
            f"/budget {cap.name} AMOUNT raises it until then; budget in config.yaml for good.",
            ((f"Raise to ${double}", f"/budget {cap.name} {double}"),),
        )


def _key(cap: Cap) -> tuple[str, str, bool, str]:
    return (cap.kind, cap.subject, cap.daily, cap.period)
