"""The small values every port shares besides messages: the clock, secrets, and health checks.
One ``Clock`` is injected wherever time matters, so tests move time instead of waiting; a
``Secret`` never shows itself in logs or reprs; a ``Check`` is one line of ``corvid doctor``."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, aware, in UTC."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back, for intervals."""
        ...

    async def sleep(self, seconds: float) -> None: ...

    async def sleep_until(self, when: datetime) -> None: ...


class SystemClock:
    """The real clock. Long sleeps go in slices, so a suspended machine or a clock change is
    noticed."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    async def sleep_until(self, when: datetime) -> None:
        while (left := (when - self.now()).total_seconds()) > 0:  # noqa: ASYNC110
            await asyncio.sleep(min(left, 60.0))


class Secret:
    """A string that never shows itself in logs, reprs or tracebacks. ``masked``: its value is
    also blanked wherever it appears in log lines and reports (False for a setting that only
    might be secret, such as an MCP server's ``NODE_ENV: production``)."""

    __slots__ = ("masked", "value")

    def __init__(self, value: str, masked: bool = True) -> None:
        self.value = value
        self.masked = masked

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Secret) and other.value == self.value and other.masked == self.masked
        )

    def __hash__(self) -> int:
        return hash(self.value)


class Status(StrEnum):
    OK = "ok"
    WARN = "warn"
    FAIL = "FAIL"


@dataclass(frozen=True)
class Check:
    """One line of ``corvid doctor``: how it went, what was checked, what is wrong, the fix."""

    status: Status
    name: str
    message: str
    fix: str = ""
    details: tuple[str, ...] = ()

    def lines(self) -> list[str]:
        head = f"{self.status:<4}  {self.name}: {self.message}"
        if self.fix:
            head += f" — fix: {self.fix}"
        return [head, *(f"        {line}" for line in self.details)]

    @classmethod
    def no_answer(cls, name: str, where: str, limit: float) -> Check:
        return cls(
            Status.FAIL,
            name,
            f"no answer from {where} within {limit:g} s",
            "check the network (a proxy or firewall?) and the base URL",
        )

    @classmethod
    def unreachable(cls, name: str, where: str, exc: BaseException, key: str) -> Check:
        return cls(
            Status.FAIL,
            name,
            f"cannot reach {where} ({type(exc).__name__})",
            f"check the network, and {key}",
        )
