"""Bot API calls that wait out flood limits (429) and retry network failures with backoff."""

from __future__ import annotations

import datetime as dt
import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from gateway.contract.ports import Clock

log = logging.getLogger(__name__)

# Opt in to PTB's coming behaviour (time periods as timedelta); otherwise every flood-limit
# error (RetryAfter) raises a deprecation warning when it is built.
os.environ.setdefault("PTB_TIMEDELTA", "1")

T = TypeVar("T")

MAX_ATTEMPTS = 5
LONGEST_FLOOD_WAIT = 300.0


async def call(
    request: Callable[[], Awaitable[T]], clock: Clock, backoff: float = 1.0, repeatable: bool = True
) -> T:
    """Run a Bot API request, waiting out flood limits and retrying network failures. A
    request that is not ``repeatable`` (one that posts a message) is not tried again once
    Telegram may have carried it out: its answer came too late (``AnswerLate``)."""
    from telegram.error import BadRequest, NetworkError, RetryAfter

    from channels.telegram.transport import AnswerLate

    for attempt in range(1, MAX_ATTEMPTS + 1):
        try:
            return await request()
        except RetryAfter as exc:
            wait = retry_after_seconds(exc)
            if attempt == MAX_ATTEMPTS or wait > LONGEST_FLOOD_WAIT:
                raise
            log.info("telegram: flood limit, waiting %.0f s", wait)
        except BadRequest:
            raise
        except NetworkError as exc:  # includes TimedOut
            if attempt == MAX_ATTEMPTS or (isinstance(exc, AnswerLate) and not repeatable):
                raise
            wait = backoff * 2 ** (attempt - 1)
            log.info("telegram: %s; retrying in %.1f s", exc, wait)
        # The wait is out of the handler, so the failed request (its traceback's frames, the
        # connection it failed on) is freed now, not kept through the wait.
        await clock.sleep(wait)
    raise AssertionError("unreachable")


def retry_after_seconds(exc: Any) -> float:
    value = exc.retry_after
    return value.total_seconds() if isinstance(value, dt.timedelta) else float(value)
