"""Logging set-up for the CLI: one handler, and secrets masked in every line it writes."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable

FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"
# Libraries that log request URLs at INFO; the Telegram Bot API puts the token in the URL.
_CHATTY = (
    "httpx",
    "httpcore",
    "httpx2",
    "httpcore2",
    # python-telegram-bot logs every request's parameters (message texts, webhook secret) at DEBUG.
    "telegram",
    "discord.http",
    # At DEBUG these log whole gateway events and follow-up URLs, interaction tokens included.
    "discord.gateway",
    "discord.webhook",
    "apscheduler.executors",
)


class RedactingFormatter(logging.Formatter):
    """Replaces any configured secret value with *** in the final text, tracebacks included."""

    def __init__(self, fmt: str, secrets: Iterable[str]) -> None:
        super().__init__(fmt)
        self._secrets = sorted({s for s in secrets if s and len(s) >= 6}, key=len, reverse=True)

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, "***")
        return text


def setup_logging(level: str, secrets: Iterable[str] = ()) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(RedactingFormatter(FORMAT, secrets))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    for name in _CHATTY:
        logging.getLogger(name).setLevel(max(logging.WARNING, logging.getLevelName(level)))
