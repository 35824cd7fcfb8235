"""Failover between models: ``llm.fallbacks``, tried in order when a model fails or overloads."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from agent.settings import FallbackSettings
from gateway.contract.errors import LLMError, LLMErrorKind

log = logging.getLogger(__name__)

# Never when the API refused the request itself: another model would refuse it too.
FAILS_OVER = frozenset(
    {LLMErrorKind.OVERLOADED, LLMErrorKind.SERVER, LLMErrorKind.TIMEOUT, LLMErrorKind.CONNECTION}
)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Route:
    """A model on an endpoint: ``base_url`` and ``api_key`` None are the primary's own."""

    model: str
    base_url: str | None = None
    api_key: str | None = None

    def __str__(self) -> str:
        return self.model if self.base_url is None else f"{self.model} at {self.base_url}"


class Failover:
    def __init__(
        self,
        fallbacks: Sequence[FallbackSettings],
        minutes: float,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.fallbacks = [
            Route(f.model, f.base_url or None, f.api_key.value if f.api_key else None)
            for f in fallbacks
            if f.model
        ]
        self.minutes = minutes
        self.monotonic = monotonic
        self._on = 0  # the route calls start from: 0 the model asked for, else a fallback
        self._until = 0.0
        self.why = ""  # what made calls leave the first model

    def routes(self, model: str) -> list[Route]:
        return [Route(model), *self.fallbacks]

    # Calls stay on a fallback that answered for ``minutes``, so an outage costs one slow call
    # rather than one per message.
    def start(self) -> int:
        if self._on and self.monotonic() >= self._until:
            log.info("trying the first model again after %g minutes on a fallback", self.minutes)
            self._on = 0
        return self._on

    async def run(self, model: str, attempt: Callable[[Route], Awaitable[T]]) -> T:
        routes = self.routes(model)
        for i in range(self.start(), len(routes)):
            try:
                answer = await attempt(routes[i])
            except LLMError as exc:
                if exc.kind not in FAILS_OVER or i == len(routes) - 1:
                    raise
                log.warning("%s failed (%s); trying %s", routes[i], exc.kind, routes[i + 1])
                if i == 0:
                    self.why = f"{routes[0]}: {exc.kind}"
                continue
            if i and i != self._on:
                log.warning(
                    "answering on the fallback %s for the next %g minutes", routes[i], self.minutes
                )
                self._on, self._until = i, self.monotonic() + self.minutes * 60
            return answer
        raise AssertionError("unreachable: the last route raises")

    def note(self) -> str | None:
        """For /status: the fallback calls are on, and why; None on the first model."""
        if not self.start():
            return None
        left = max(0.0, self._until - self.monotonic()) / 60
        route = self.fallbacks[self._on - 1]
        return f"on the fallback {route} ({self.why}); the first model again in {left:.0f} min"
