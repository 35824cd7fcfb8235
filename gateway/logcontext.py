"""Which session and turn a log line belongs to."""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import Iterator
from contextvars import ContextVar

_SESSION: ContextVar[str | None] = ContextVar("log_session", default=None)
_TURN: ContextVar[str | None] = ContextVar("log_turn", default=None)


@contextlib.contextmanager
def turn_scope(session: object) -> Iterator[str]:
    """Log lines written inside (and in tasks started inside) name this session and a new
    turn id, which is returned."""
    turn = secrets.token_hex(4)
    tokens = (_SESSION.set(str(session)), _TURN.set(turn))
    try:
        yield turn
    finally:
        _TURN.reset(tokens[1])
        _SESSION.reset(tokens[0])


class ContextFilter(logging.Filter):
    """Sets ``session``, ``turn`` and ``turn_suffix`` on every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        turn = _TURN.get()
        record.session = _SESSION.get()
        record.turn = turn
        record.turn_suffix = f" [turn {turn}]" if turn else ""
        return True
