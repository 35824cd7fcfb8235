"""Spending caps on the metered model port: the owner told at 80 % and 100 %, calls stopped at
100 % for the owner, a shared chat and a job, the day rolling over at local midnight, raising a
cap until the period ends, and concurrent calls passing a cap by one call at most."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from agent.model.charge import Charge, Purpose
from agent.model.port import LLMResponse, PlainModel
from agent.sessions.state import Usage
from agent.settings import BudgetSettings, LLMSettings, PriceSettings
from agent.stream import Deltas
from agent.usage.budget import Budget, BudgetSpent
from agent.usage.ledger import Call, Period, UsageLedger
from agent.usage.meter import Meter, Metered
from agent.usage.prices import PriceTable
from gateway.contract.events import NO_REPLY, SessionKey, job_key
from tests.fakes.clock import FakeClock

BERLIN = ZoneInfo("Europe/Berlin")
PRIVATE = SessionKey("telegram", "private", "42")
GROUP = SessionKey("telegram", "group", "-100")
OTHER_GROUP = SessionKey("telegram", "group", "-200")
# 1,000 input tokens at 100 per million: 0.1 a call.
PRICES = {"tenth": PriceSettings(input=100.0)}


class Tenth(PlainModel):
    """Every call costs 0.1; ``gate``, when set, holds each call until it is opened."""

    model = "tenth"

    def __init__(self) -> None:
        self.calls = 0
        self.gate: asyncio.Event | None = None
        self.in_flight = 0
        self.most_in_flight = 0

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
        self.calls += 1
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if self.gate is not None:
                await self.gate.wait()
        finally:
            self.in_flight -= 1
        return LLMResponse([{"type": "text", "text": "ok"}], "end_turn", Usage(1000, 0, 0, 0))


def metered(
    tmp_path: Path, clock: FakeClock, **caps: float
) -> tuple[Metered, Tenth, list[str], Budget]:
    told: list[str] = []
    ledger = UsageLedger(tmp_path / "usage.sqlite", BERLIN)
    budget = Budget(BudgetSettings(**caps), ledger, clock, lambda text, _b: told.append(text))
    model = Tenth()
    meter = Meter(ledger, PriceTable(PRICES), clock, budget)
    # Tiny answers, so what a call may cost at most is close to what it costs.
    return Metered(model, meter, max_tokens=1), model, told, budget


async def call(llm: Metered, key: SessionKey, purpose: Purpose = Purpose.CHAT) -> LLMResponse:
    # A request of 1,000 bytes: at most 1,000 tokens, what the model charges.
    request = [{"role": "user", "content": "x" * 960}]
    return await llm.complete("s", request, [], charge=Charge(purpose, key))


async def test_the_owner_hears_at_80_and_100_percent_once_and_calls_stop(tmp_path):
    llm, model, told, _ = metered(tmp_path, FakeClock(), daily=1.0)
    for _ in range(7):
        await call(llm, PRIVATE)
    assert told == []
    await call(llm, PRIVATE)  # 0.8
    assert len(told) == 1 and "80%" in told[0]
    await call(llm, GROUP)
    await call(llm, PRIVATE)  # 1.0: reached
    assert len(told) == 2 and "reached" in told[1] and "/budget daily" in told[1]
    with pytest.raises(BudgetSpent) as private:
        await call(llm, PRIVATE)
    assert "/budget daily" in private.value.user_message()
    assert "config.yaml" in private.value.user_message()
    with pytest.raises(BudgetSpent) as group:
        await call(llm, GROUP)
    assert group.value.user_message() == NO_REPLY  # a shared chat hears nothing of it
    with pytest.raises(BudgetSpent):
        await call(llm, job_key("heartbeat", PRIVATE), Purpose.HEARTBEAT)
    assert model.calls == 10
    assert len(told) == 2  # once each, however many calls are refused


async def test_a_shared_chats_cap_stops_that_chat_alone(tmp_path):
    llm, model, told, _ = metered(tmp_path, FakeClock(), chat_daily=0.3)
    for _ in range(3):
        await call(llm, GROUP)
    with pytest.raises(BudgetSpent) as refused:
        await call(llm, GROUP)
    assert refused.value.cap.name == "chat_daily:telegram-group--100"
    # A job reporting to that chat counts as the chat too.
    with pytest.raises(BudgetSpent):
        await call(llm, job_key("r1", GROUP), Purpose.REMINDER)
    await call(llm, OTHER_GROUP)
    await call(llm, PRIVATE)
    assert model.calls == 5
    # From 67 % straight to 100 %: told once, that it is reached.
    [reached] = told
    assert reached.startswith("The daily budget of the chat telegram-group--100 is reached")


async def test_a_jobs_cap_stops_that_job_alone(tmp_path):
    llm, model, told, _ = metered(tmp_path, FakeClock(), job_monthly=0.2)
    job = job_key("weather", PRIVATE)
    await call(llm, job, Purpose.REMINDER)
    await call(llm, job, Purpose.REMINDER)
    with pytest.raises(BudgetSpent) as refused:
        await call(llm, job, Purpose.REMINDER)
    assert refused.value.cap.name == "job_monthly:weather"
    assert not refused.value.owner_private
    await call(llm, job_key("other", PRIVATE), Purpose.REMINDER)
    await call(llm, PRIVATE)
    assert model.calls == 4
    [reached] = told
    assert reached.startswith("The monthly budget of the job weather is reached")


async def test_the_day_rolls_over_at_local_midnight(tmp_path):
    # 23:59:30 in Berlin (UTC+1 in November).
    clock = FakeClock(datetime(2026, 11, 22, 22, 59, 30, tzinfo=UTC))
    llm, model, _told, _ = metered(tmp_path, clock, daily=0.2)
    await call(llm, PRIVATE)
    await call(llm, PRIVATE)
    with pytest.raises(BudgetSpent):
        await call(llm, PRIVATE)
    clock.tick(29)  # 23:59:59: still the same day
    with pytest.raises(BudgetSpent):
        await call(llm, PRIVATE)
    clock.tick(1)  # local midnight: a new day, though UTC's day has an hour to go
    await call(llm, PRIVATE)
    assert model.calls == 3


async def test_raising_a_cap_lasts_until_the_period_ends(tmp_path):
    clock = FakeClock(datetime(2026, 11, 22, 12, 0, tzinfo=UTC))
    llm, model, _, budget = metered(tmp_path, clock, daily=0.1)
    await call(llm, PRIVATE)
    with pytest.raises(BudgetSpent):
        await call(llm, PRIVATE)
    budget.raise_cap("daily", 0.3)
    await call(llm, PRIVATE)
    await call(llm, PRIVATE)
    with pytest.raises(BudgetSpent):
        await call(llm, PRIVATE)
    clock.tick(timedelta(days=1).total_seconds())
    await call(llm, PRIVATE)  # a new day: the configured cap again
    with pytest.raises(BudgetSpent):
        await call(llm, PRIVATE)
    with pytest.raises(ValueError):
        budget.raise_cap("weekly", 1)
    assert model.calls == 4


async def test_concurrent_calls_pass_a_cap_by_one_call_at_most(tmp_path):
    llm, model, _, budget = metered(tmp_path, FakeClock(), daily=0.55)
    model.gate = asyncio.Event()
    calls = [asyncio.create_task(call(llm, PRIVATE)) for _ in range(12)]
    # Let every call that can be admitted start, then let them all finish.
    for _ in range(20):
        await asyncio.sleep(0)
    model.gate.set()
    results = await asyncio.wait_for(asyncio.gather(*calls, return_exceptions=True), 5)
    made = [r for r in results if isinstance(r, LLMResponse)]
    refused = [r for r in results if isinstance(r, BudgetSpent)]
    assert len(made) + len(refused) == 12
    spent = budget.ledger.spent(budget.caps(Charge(Purpose.CHAT, PRIVATE))[0].period)
    assert spent == pytest.approx(0.1 * len(made))
    assert 0.55 <= spent < 0.55 + 0.1 + 1e-9  # past the cap by one call at most
    assert model.most_in_flight > 1  # far from the cap, calls did run at once


async def test_an_answer_the_ledger_has_already_is_not_counted_against_a_cap_again(tmp_path):
    """The same answer told again (its id is the API's) is kept once, and a cap's running
    total grows by it once."""
    llm, model, told, _ = metered(tmp_path, FakeClock(), daily=0.25)
    charge = Charge(Purpose.CHAT, PRIVATE)
    for _ in range(3):
        llm.meter.count(charge, "tenth", (1000, 0, 0, 0), call_id="msg_01same")
    assert told == []  # 0.1 of 0.25 spent: not even the warning at 80 %
    await call(llm, PRIVATE)  # admitted: 0.2 spent, not 0.4
    assert model.calls == 1 and len(told) == 1 and "80%" in told[0]


WEATHER, OTHER_JOB = job_key("weather", PRIVATE), job_key("other", PRIVATE)
# Each cap: what it covers, something it does not (None: it covers everything), its name.
CAPS = {
    "daily": (PRIVATE, None, "daily"),
    "monthly": (PRIVATE, None, "monthly"),
    "chat_daily": (GROUP, OTHER_GROUP, "chat_daily:telegram-group--100"),
    "chat_monthly": (GROUP, OTHER_GROUP, "chat_monthly:telegram-group--100"),
    "job_daily": (WEATHER, OTHER_JOB, "job_daily:weather"),
    "job_monthly": (WEATHER, OTHER_JOB, "job_monthly:weather"),
}


@pytest.mark.parametrize("cap", CAPS)
async def test_each_cap_stops_what_it_covers_until_its_period_ends(tmp_path, cap):
    covered, other, name = CAPS[cap]
    clock = FakeClock(datetime(2026, 11, 22, 12, 0, tzinfo=UTC))
    llm, model, _, _ = metered(tmp_path, clock, **{cap: 0.2})

    def purpose(key: SessionKey) -> Purpose:
        return Purpose.REMINDER if key.job else Purpose.CHAT

    await call(llm, covered, purpose(covered))
    await call(llm, covered, purpose(covered))
    with pytest.raises(BudgetSpent) as refused:
        await call(llm, covered, purpose(covered))
    assert refused.value.cap.name == name
    if other is not None:
        await call(llm, other, purpose(other))  # not what this cap covers
    clock.tick(timedelta(days=1).total_seconds())  # the next day, the same month
    if cap.endswith("daily"):
        await call(llm, covered, purpose(covered))
    else:
        with pytest.raises(BudgetSpent):
            await call(llm, covered, purpose(covered))
    clock.tick(timedelta(days=8).total_seconds())  # 1 December: a new month
    await call(llm, covered, purpose(covered))
    assert model.calls == 3 + (other is not None) + cap.endswith("daily")


@pytest.mark.parametrize(
    ("model", "prices"),
    [
        ("claude-sonnet-5-5", {}),  # writing the cache costs more than plain input
        (  # every rate set, so that a token miscounted under any of them shows
            "dear-input",
            {"dear-input": PriceSettings(input=10.0, cache_write=2.0, cache_read=1.0, output=5.0)},
        ),
        ("unpriced", {}),
    ],
)
def test_what_a_call_may_cost_at_most_is_its_dearest_reading(tmp_path, model, prices):
    """Every byte of the request counted as a token at the dearer of the two input rates, and
    the longest answer: no call carrying that request can cost more."""
    meter = Meter(UsageLedger(tmp_path / "u.sqlite", BERLIN), PriceTable(prices), FakeClock())
    most = meter.most(model, 1000, 200)
    table = PriceTable(prices)
    plain, cached = table.cost(model, 1000, 0, 0, 200), table.cost(model, 0, 1000, 0, 200)
    assert most == max(plain, cached)
    assert (most > 0) == (model != "unpriced")
    meter.ledger.close()


async def test_the_metered_port_is_the_models_in_all_but_the_counting(tmp_path):
    class Inner(Tenth):
        model, context_window = "inner-1", 1234

        def __init__(self) -> None:
            super().__init__()
            self.done: list[str] = []

        async def warm_up(self) -> None:
            self.done.append("warm_up")

        def apply(self, cfg: object) -> None:
            self.done.append("apply")

        async def accepts_tools(self, tools: list[dict[str, Any]], limit: float = 10.0) -> bool:
            self.done.append("accepts_tools")
            return False

        async def refused(self, limit: float, key_source: Any) -> Any:
            self.done.append("refused")
            return "refused-check"

    inner = Inner()
    ledger = UsageLedger(tmp_path / "usage.sqlite", BERLIN)
    llm = Metered(inner, Meter(ledger, PriceTable(PRICES), FakeClock()), max_tokens=1)
    assert (llm.model, llm.context_window) == ("inner-1", 1234)
    await llm.warm_up()
    llm.apply(LLMSettings(max_tokens=77))
    assert llm.max_tokens == 77
    assert await llm.accepts_tools([]) is False
    assert (await llm.probe(1.0, "k")).message.startswith("inner-1")
    assert await llm.refused(1.0, lambda: "k") == "refused-check"
    assert inner.done == ["warm_up", "apply", "accepts_tools", "refused"]
    llm.timeout = 5.0  # set through the wrapper: the model's own
    assert inner.timeout == 5.0  # type: ignore[attr-defined]
    # Without a budget, calls go straight through and are counted all the same.
    await call(llm, PRIVATE)
    assert inner.calls == 1
    assert ledger.summary(Period.of(FakeClock().now(), BERLIN).day)["calls"] == 1
    ledger.close()


async def test_what_a_calls_system_prompt_and_note_carry_counts_in_what_it_may_cost(tmp_path):
    """Near a cap, a call waits while the calls in flight may cost the rest: the one in flight
    carries a long system note, which may cost the whole cap by itself."""
    llm, model, _, _ = metered(tmp_path, FakeClock(), daily=1.0)
    model.gate = asyncio.Event()
    request = [{"role": "user", "content": "x" * 960}]
    charge = Charge(Purpose.CHAT, PRIVATE)
    first = asyncio.create_task(
        llm.complete("s", request, [], system_note="n" * 9000, charge=charge)
    )
    second = asyncio.create_task(call(llm, PRIVATE))
    for _ in range(20):
        await asyncio.sleep(0)  # yields only: each call runs up to its next wait
    assert model.in_flight == 1  # the second waits for the first to say what it cost
    model.gate.set()
    await asyncio.wait_for(asyncio.gather(first, second), 5)
    assert model.calls == 2 and model.most_in_flight == 1


async def test_an_answer_the_ledger_cannot_keep_still_goes_out(tmp_path, caplog):
    """A full disk, say: the call is logged as not kept, and its answer is used all the same."""
    llm, model, _, budget = metered(tmp_path, FakeClock())
    budget.ledger.close()  # every write now fails
    answer = await call(llm, PRIVATE)
    assert answer.content == [{"type": "text", "text": "ok"}] and model.calls == 1
    assert "could not write a chat call to the usage ledger" in caplog.text


# -- a call waiting near a cap (the mutation bench's survivors) --------------------------------


class _Held:
    """A call admitted by the budget that stays in flight until ``release`` is set."""

    def __init__(self, budget: Budget, most: float) -> None:
        self.admitted, self.release = asyncio.Event(), asyncio.Event()
        self.task = asyncio.create_task(self._run(budget, most))

    async def _run(self, budget: Budget, most: float) -> None:
        async with budget.admit(Charge(Purpose.CHAT, PRIVATE), most):
            self.admitted.set()
            await self.release.wait()

    async def settled(self) -> bool:
        """Whether it was admitted once every task that can run has run."""
        for _ in range(20):
            await asyncio.sleep(0)
        return self.admitted.is_set()


def _budget(tmp_path: Path, daily: float) -> Budget:
    return Budget(
        BudgetSettings(daily=daily), UsageLedger(tmp_path / "u.sqlite", BERLIN), FakeClock()
    )


async def test_a_call_that_would_reach_the_cap_with_those_in_flight_waits_for_them(tmp_path):
    budget = _budget(tmp_path, daily=1.0)
    first = _Held(budget, 0.5)
    assert await first.settled()
    second = _Held(budget, 0.5)  # 0.5 in flight and 0.5 more: exactly the cap, not below it
    assert not await second.settled()
    first.release.set()
    await asyncio.wait_for(second.admitted.wait(), 5)
    second.release.set()
    await asyncio.wait_for(asyncio.gather(first.task, second.task), 5)
    third = _Held(budget, 0.25)
    fourth = _Held(budget, 0.5)  # 0.25 + 0.5 < 1: both at once
    assert await third.settled() and await fourth.settled()
    third.release.set(), fourth.release.set()
    await asyncio.wait_for(asyncio.gather(third.task, fourth.task), 5)
    budget.ledger.close()


@pytest.mark.parametrize("how", ["raised", "reloaded"])
async def test_a_waiting_call_goes_on_at_once_when_the_cap_is_raised_or_reloaded(tmp_path, how):
    budget = _budget(tmp_path, daily=1.0)
    first = _Held(budget, 0.75)
    assert await first.settled()
    second = _Held(budget, 0.75)
    assert not await second.settled()
    if how == "raised":
        cap = budget.raise_cap("daily", 5.0)
        assert (cap.name, cap.limit, cap.daily) == ("daily", 5.0, True)
    else:
        budget.apply(BudgetSettings(daily=5.0))
    await asyncio.wait_for(second.admitted.wait(), 5)  # the first still in flight
    assert not first.task.done()
    first.release.set(), second.release.set()
    await asyncio.wait_for(asyncio.gather(first.task, second.task), 5)
    budget.ledger.close()


def test_only_a_cap_that_exists_can_be_raised(tmp_path):
    budget = _budget(tmp_path, daily=1.0)
    for name in (
        "weekly",
        "team_daily:x",
        "chat_daily",
        "daily:telegram-group--100",
        "job_monthly",
    ):
        with pytest.raises(ValueError, match="no cap named"):
            budget.raise_cap(name, 2.0)
    assert budget.raise_cap("chat_daily:telegram-group--100", 2.0).subject == "telegram-group--100"
    budget.ledger.close()


async def test_a_cap_found_reached_at_a_call_is_told_once_with_a_button_that_doubles_it(tmp_path):
    """Spent before this process counted it (a restart, another process's calls): the first
    call refused tells the owner, with a button that raises the cap to twice its size."""
    ledger = UsageLedger(tmp_path / "u.sqlite", BERLIN)
    clock = FakeClock()
    ledger.record(Call(Charge(Purpose.CHAT, PRIVATE), "m", cost=1.5), clock.now())
    told: list[tuple[str, tuple]] = []
    budget = Budget(BudgetSettings(daily=1.5), ledger, clock, lambda t, b: told.append((t, b)))
    for _ in range(2):
        with pytest.raises(BudgetSpent):
            async with budget.admit(Charge(Purpose.CHAT, PRIVATE), 0.1):
                raise AssertionError("not admitted")
    assert len(told) == 1 and told[0][0].startswith("The daily budget is reached ($1.50 of $1.5)")
    assert told[0][1] == (("Raise to $3", "/budget daily 3"),)
    ledger.close()
