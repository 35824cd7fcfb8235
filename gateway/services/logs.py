"""Logging set-up for the CLI: one handler, text or JSON lines, secrets masked in every line."""

from __future__ import annotations

import json
import logging
import sys
from collections import deque
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any, Protocol

from gateway.logcontext import ContextFilter

FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s%(turn_suffix)s"
FORMATS = ("text", "json")
# Libraries that log request URLs at INFO; the Telegram Bot API puts the token in the URL.
_CHATTY = (
    # The SDK logs each request's options at DEBUG: the whole prompt, MEMORY.md included.
    "anthropic",
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
    # The MCP SDK logs every message to and from a server (tools' arguments and results).
    "mcp",
    "apscheduler.executors",
)


class Masker:
    """Replaces secret values with *** in text: log lines, stored errors, doctor's report.
    Longest first, so a secret containing another is masked whole; values shorter than
    ``min_len`` are left alone, as they would mask ordinary words."""

    def __init__(self, secrets: Iterable[str], min_len: int = 6) -> None:
        self._secrets = sorted({s for s in secrets if len(s) >= min_len}, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, "***")
        return text


class RedactingFormatter(logging.Formatter):
    """Replaces any configured secret value with *** in the final text, tracebacks included."""

    def __init__(self, fmt: str | None, secrets: Iterable[str]) -> None:
        super().__init__(fmt)
        self.redact = Masker(secrets)

    def format(self, record: logging.LogRecord) -> str:
        if not hasattr(record, "turn_suffix"):
            record.turn_suffix = ""
        return self.redact(super().format(record))


class JsonFormatter(RedactingFormatter):
    """One JSON object per line: ts, level, logger, msg, session, turn, and the fields a
    line was given with ``extra={"fields": {...}}``."""

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__(None, secrets)

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for name in ("session", "turn"):
            value = getattr(record, name, None)
            if value:
                entry[name] = value
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            entry.update({k: v for k, v in fields.items() if k not in entry})
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        # Masked value by value, so a secret is found even where JSON would escape it.
        return json.dumps(_redact_all(entry, self.redact), ensure_ascii=False, default=str)


def _redact_all(value: Any, redact: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: _redact_all(v, redact) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_redact_all(v, redact) for v in value]
    return value


class RecentProblems(logging.Handler):
    """Keeps the last warnings and errors (masked) for ``corvid status``."""

    def __init__(self, formatter: RedactingFormatter, size: int = 20) -> None:
        super().__init__(logging.WARNING)
        self._redact = formatter.redact
        self.records: deque[dict[str, str]] = deque(maxlen=size)

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(
            {
                "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="seconds"),
                "level": record.levelname,
                "logger": record.name,
                "msg": self._redact(record.getMessage())[:500],
            }
        )


# Set by setup_logging: what ``corvid status`` shows as the last problems.
RECENT: RecentProblems | None = None


class Stream(Protocol):
    """Where log lines go: standard error, or ``corvid chat``'s screen."""

    def write(self, text: str, /) -> int: ...

    def flush(self) -> None: ...


def setup_logging(
    level: str,
    secrets: Iterable[str] = (),
    fmt: str = "text",
    stream: Stream | None = None,
    *,
    log_bodies: bool = False,
) -> None:
    """One handler on ``stream`` (standard error by default) for the whole process. The
    libraries that log request bodies or URLs with tokens stay at WARNING unless
    ``log_bodies`` (``logging.log_bodies``) lets them follow ``level``."""
    global RECENT
    secrets = list(secrets)
    formatter = JsonFormatter(secrets) if fmt == "json" else RedactingFormatter(FORMAT, secrets)
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(formatter)
    handler.addFilter(ContextFilter())
    RECENT = RecentProblems(formatter)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.addHandler(RECENT)
    root.setLevel(level)
    for name in _CHATTY:
        floor = logging.getLevelName(level) if log_bodies else logging.WARNING
        logging.getLogger(name).setLevel(max(floor, logging.getLevelName(level)))
