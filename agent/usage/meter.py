"""The meter on the model port: every call admitted by the budget and kept in the ledger."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

from agent.model.charge import Charge
from agent.model.port import LLM, LLMResponse
from agent.sessions.history import History
from agent.settings import LLMSettings
from agent.stream import Deltas
from agent.usage.budget import Budget
from agent.usage.ledger import Call, UsageLedger
from agent.usage.prices import PriceTable
from gateway.contract.ports import Check, Clock

log = logging.getLogger(__name__)


class Meter:
    """Counts paid calls of every kind: the model's, and a transcription's or an embedding's."""

    def __init__(
        self, ledger: UsageLedger, prices: PriceTable, clock: Clock, budget: Budget | None = None
    ) -> None:
        self.ledger = ledger
        self.prices = prices
        self.clock = clock
        self.budget = budget

    def count(
        self,
        charge: Charge,
        model: str,
        tokens: tuple[int, int, int, int] = (0, 0, 0, 0),
        web_searches: int = 0,
        call_id: str = "",
        cost: float | None = None,
        budget: bool = True,
    ) -> Call:
        """Keep one call: ``tokens`` are input, cache write, cache read and output; ``cost``,
        when given, is what it cost (priced otherwise). ``budget`` False: from another thread
        (an embedding), so it only counts in the caps' sums from the next period's reading."""
        inp, cw, cr, out = tokens
        if cost is None:
            cost = self.prices.cost(model, inp, cw, cr, out, web_searches)
        call = Call(charge, model, inp, cw, cr, out, web_searches, cost, call_id)
        try:
            fresh = self.ledger.record(call, self.clock.now())
        except Exception:  # a full disk, say: the answer still goes out
            log.exception("could not write a %s call to the usage ledger", charge.purpose)
            return call
        if fresh and budget and self.budget is not None:
            self.budget.recorded(call)
        return call

    def most(self, model: str, request_bytes: int, max_tokens: int) -> float:
        """What a call may cost at most: every byte a token written to the cache, and the
        longest answer."""
        price = self.prices.get(model)
        if price is None:
            return 0.0
        # A token is a byte or more of the request's JSON; each at the dearer input rate.
        if price.input >= price.cache_write:
            return price.cost(request_bytes, 0, 0, max_tokens)
        return price.cost(0, request_bytes, 0, max_tokens)


class Metered:
    """The model port, metered. Everything but the port's own methods is the wrapped model's
    (its settings, its admission of calls), read and set through the wrapper as on the model."""

    _OWN = frozenset({"inner", "meter", "max_tokens"})

    def __init__(self, inner: LLM, meter: Meter, max_tokens: int) -> None:
        self.inner = inner
        self.meter = meter
        self.max_tokens = max_tokens

    def __getattr__(self, name: str) -> Any:
        if name in Metered._OWN:  # not set yet: never the inner model's
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in Metered._OWN:
            object.__setattr__(self, name, value)
        else:
            setattr(self.inner, name, value)

    @property
    def model(self) -> str:
        return self.inner.model

    @property
    def context_window(self) -> int:
        return self.inner.context_window

    async def complete(
        self,
        system: str,
        messages: Sequence[dict[str, Any]],
        tools: list[dict[str, Any]],
        system_note: str | None = None,
        deltas: Deltas | None = None,
        *,
        charge: Charge,
    ) -> LLMResponse:
        budget = self.meter.budget
        if budget is None or not budget.caps(charge):
            return self._count(
                charge,
                await self.inner.complete(
                    system, messages, tools, system_note, deltas, charge=charge
                ),
            )
        size = messages.nbytes if isinstance(messages, History) else len(json.dumps(messages))
        size += len(system.encode()) + len((system_note or "").encode())
        size += len(json.dumps(tools)) if tools else 0
        most = self.meter.most(self.inner.model, size, self.max_tokens)
        async with budget.admit(charge, most):
            resp = await self.inner.complete(
                system, messages, tools, system_note, deltas, charge=charge
            )
            return self._count(charge, resp)

    def _count(self, charge: Charge, resp: LLMResponse) -> LLMResponse:
        u = resp.usage
        self.meter.count(
            charge,
            resp.model or self.inner.model,
            (u.input, u.cache_write, u.cache_read, u.output),
            resp.web_searches,
            resp.id,
        )
        return resp

    async def warm_up(self) -> None:
        await self.inner.warm_up()

    async def close(self) -> None:
        await self.inner.close()

    def apply(self, cfg: LLMSettings) -> None:
        self.max_tokens = cfg.max_tokens
        self.inner.apply(cfg)

    async def accepts_tools(self, tools: list[dict[str, Any]], limit: float = 10.0) -> bool | None:
        return await self.inner.accepts_tools(tools, limit)

    async def probe(self, limit: float, key_source: str) -> Check:
        return await self.inner.probe(limit, key_source)

    async def refused(self, limit: float, key_source: Callable[[], str]) -> Check | None:
        return await self.inner.refused(limit, key_source)
