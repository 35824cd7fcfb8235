"""The audit trail in ``state/``: approvals asked and answered, sandbox runs, tools allowed."""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gateway.contract.events import printable
from gateway.infra.atomic import private_file

# The most of a call (its arguments as shown, and a file's change) one request may show the
# owner: a longer one is refused rather than shown in part (``gate.py``).
MAX_SHOWN = 8000
# Blanks in a row beyond this are counted in what the owner is shown, not drawn one by one.
_BLANKS = re.compile(r" {8,}")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS actions (
    id INTEGER PRIMARY KEY,
    at TEXT NOT NULL,
    event TEXT NOT NULL,
    tool TEXT NOT NULL,
    chat TEXT NOT NULL,
    arguments TEXT NOT NULL,
    sources TEXT NOT NULL,
    detail TEXT NOT NULL,
    request TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS always (
    tool TEXT PRIMARY KEY,
    at TEXT NOT NULL
);
"""


@dataclass(frozen=True, slots=True)
class Action:
    """One line of the trail. ``event``: asked, approved, always, denied, unanswered,
    refused (no way to ask), blocked (the policy says deny), ran (a command in the sandbox)."""

    id: int
    at: str  # ISO 8601, UTC
    event: str
    tool: str
    chat: str
    arguments: str
    sources: str  # what untrusted text the turn had read, "" for none
    detail: str
    request: str  # the approval request it belongs to, "" for none

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def shown_arguments(args: Any) -> str:
    """Arguments as the owner reads them, whole: JSON with nothing invisible (control and
    format characters spelled out, a long run of blanks counted), so no part of a call can
    hide behind another."""
    return visible(whole_arguments(args))


def visible(text: str) -> str:
    """``text`` with nothing invisible: control and format characters spelled out
    (``printable``), a long run of blanks counted."""
    return _BLANKS.sub(lambda m: f" ⟨{len(m.group())} spaces⟩ ", printable(text))


def whole_arguments(args: Any) -> str:
    """Arguments as the trail keeps them: JSON, every character."""
    return json.dumps(args, ensure_ascii=False, sort_keys=True)


class AuditLog:
    """The trail, shared by every turn (a lock: tools may run in worker threads)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        private_file(path)
        self._lock = threading.Lock()
        self.db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self.db.executescript(_SCHEMA)

    def record(
        self,
        event: str,
        tool: str,
        chat: str,
        *,
        arguments: str = "",
        sources: Iterable[str] = (),
        detail: str = "",
        request: str = "",
    ) -> None:
        at = datetime.now(UTC).isoformat(timespec="seconds")
        with self._lock:
            self.db.execute(
                "INSERT INTO actions (at, event, tool, chat, arguments, sources, detail, request)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (at, event, tool, chat, arguments, ", ".join(sources), detail, request),
            )

    def always(self, tool: str) -> bool:
        with self._lock:
            row = self.db.execute("SELECT 1 FROM always WHERE tool = ?", (tool,)).fetchone()
        return row is not None

    def allow_always(self, tool: str) -> None:
        at = datetime.now(UTC).isoformat(timespec="seconds")
        with self._lock:
            self.db.execute("INSERT OR REPLACE INTO always (tool, at) VALUES (?, ?)", (tool, at))

    def close(self) -> None:
        with self._lock:
            self.db.close()


def forget_always(path: Path, tool: str) -> bool:
    """Take back "always" for ``tool`` (from the command line, beside a running gateway: the
    gateway reads the table at each call). False when it was not allowed always."""
    if not path.exists():
        return False
    db = sqlite3.connect(path, isolation_level=None)
    try:
        return db.execute("DELETE FROM always WHERE tool = ?", (tool,)).rowcount > 0
    except sqlite3.OperationalError:
        return False
    finally:
        db.close()


def recent(path: Path, limit: int = 100) -> list[Action]:
    """The newest ``limit`` lines of the trail at ``path``, newest first (read-only: for the
    command line and the control page); none when there is no trail yet."""
    if not path.exists():
        return []
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = db.execute(
            "SELECT id, at, event, tool, chat, arguments, sources, detail, request FROM actions"
            " ORDER BY id DESC LIMIT ?",
            (limit,),
        ).fetchall()
    except sqlite3.OperationalError:  # made by a later version, or not a trail at all
        return []
    finally:
        db.close()
    return [Action(*row) for row in rows]


def always_allowed(path: Path) -> list[str]:
    """The tools the owner allowed for good (read-only)."""
    if not path.exists():
        return []
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return [r[0] for r in db.execute("SELECT tool FROM always ORDER BY tool")]
    except sqlite3.OperationalError:
        return []
    finally:
        db.close()
