"""``/usage`` and ``/budget`` in chat: the figures, and the owner raising a cap for its period."""

from __future__ import annotations

from collections.abc import Callable

from agent.usage.budget import Budget
from agent.usage.meter import Meter
from gateway.contract.events import InboundMessage, audience_of
from gateway.usage.report import chat_report, money


class UsageCommands:
    def __init__(self, meter: Meter, name: Callable[[str], str] = str) -> None:
        self.meter = meter
        self.name = name  # a shared chat of the ledger by what it is called

    def usage(self, msg: InboundMessage) -> str:
        """The owner's private chats see everything; a shared chat only its own figures."""
        audience = None if msg.key.private else audience_of(msg.key).chat
        return chat_report(self.meter.ledger, self.meter.clock.now(), audience, self.name)

    def budget(self, msg: InboundMessage) -> str:
        if not msg.key.private:
            return "Only my owner can see and raise the budget, in a private chat with me."
        budget = self.meter.budget
        if budget is None:
            return "There is no budget here."
        words = (msg.command.args if msg.command is not None else "").split()
        if not words:
            return _caps(budget)
        if len(words) != 2:
            return "Use /budget CAP AMOUNT (US dollars), e.g. /budget daily 5 (until the day ends)."
        try:
            amount = float(words[1])
        except ValueError:
            return f"{words[1]!r} is not an amount."
        if amount <= 0:
            return "The amount must be more than 0."
        try:
            cap = budget.raise_cap(words[0], amount)
        except ValueError as exc:
            return (
                f"{exc}. The caps are daily, monthly, chat_daily:CHAT, chat_monthly:CHAT, "
                "job_daily:JOB and job_monthly:JOB."
            )
        span = "day" if cap.daily else "month"
        return (
            f"{cap.describe().capitalize()} is {cap_amount(amount)} until this {span} ends "
            f"({money(budget.spent(cap))} spent so far)."
        )


def cap_amount(amount: float) -> str:
    """A cap as configured: whole dollars as they are written ($5, $0.5)."""
    return f"${amount:g}"


def _caps(budget: Budget) -> str:
    """The caps in force now: as configured, or as raised until their day or month ends."""
    c = budget.cfg
    configured = [
        ("daily", "daily", c.daily),
        ("monthly", "monthly", c.monthly),
        ("each shared chat, daily", "chat_daily", c.chat_daily),
        ("each shared chat, monthly", "chat_monthly", c.chat_monthly),
        ("each job, daily", "job_daily", c.job_daily),
        ("each job, monthly", "job_monthly", c.job_monthly),
    ]
    raised = budget.raised_now()
    lines = []
    for label, name, limit in configured:
        if limit <= 0:
            continue  # no cap of this kind: a raise of it holds nothing either
        span = "day" if name.endswith("daily") else "month"
        if name in raised:
            lines.append(
                f"{label}: {cap_amount(raised[name])}, raised from {cap_amount(limit)} "
                f"until this {span} ends"
            )
        else:
            lines.append(f"{label}: {cap_amount(limit)}")
        for one, amount in sorted(raised.items()):
            if one.startswith(f"{name}:"):
                lines.append(
                    f"  {one}: {cap_amount(amount)}, raised from {cap_amount(limit)} "
                    f"until this {span} ends"
                )
    if not lines:
        return "No spending caps are set (budget in config.yaml)."
    return "\n".join(
        [
            "Spending caps, in US dollars (budget in config.yaml):",
            *lines,
            "/budget CAP AMOUNT raises one.",
        ]
    )
