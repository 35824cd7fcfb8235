"""When each line of a curated memory file was written, read from the workspace's history."""

from __future__ import annotations

import difflib
import logging
import sqlite3
import threading
from collections.abc import Sequence
from datetime import datetime, tzinfo
from pathlib import Path

from agent.workspace.history import History
from gateway.contract.errors import ToolError
from gateway.contract.events import OWNER

log = logging.getLogger(__name__)

MAX_VERSIONS = 5_000  # of one file, followed at most


def carried(
    before: Sequence[tuple[str, str]], lines: Sequence[str], day: str
) -> list[tuple[str, str]]:
    """``lines`` with their dates: those kept from ``before`` (line, date) keep theirs, the
    others take ``day``."""
    out = [(line, day) for line in lines]
    matcher = difflib.SequenceMatcher(None, [b for b, _ in before], list(lines), autojunk=False)
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            out[block.b + k] = before[block.a + k]
    return out


class HistoryDates:
    """Line dates of curated files from the history at ``db`` (opened for each look, so that
    it needs no closing; a missing history dates nothing). Safe to call from several threads;
    what was followed is kept, so a file's next version costs one more step."""

    def __init__(self, workspace: Path, db: Path, tz: tzinfo) -> None:
        self.workspace = workspace
        self.db = db
        self.tz = tz
        self._lock = threading.Lock()
        self._followed: dict[str, tuple[int, list[tuple[str, str]]]] = {}

    def __call__(self, rel: str, text: str, mtime_ns: int) -> list[str]:
        """The date of each line of ``text``, the file ``rel`` as it is now."""
        lines = text.splitlines()
        with self._lock:
            try:
                known = self._follow(rel)
            except (sqlite3.Error, OSError, ToolError) as exc:
                log.warning("the dates of %s could not be read from the history: %s", rel, exc)
                known = None
        if known is None:  # never recorded: written before the history began, or elsewhere
            return ["" for _ in lines]
        touched = datetime.fromtimestamp(mtime_ns / 1e9, self.tz).date().isoformat()
        return [day for _, day in carried(known, lines, touched)]

    def _follow(self, rel: str) -> list[tuple[str, str]] | None:
        """The file's last recorded version with the date of each line; None when the
        history has none."""
        if not self.db.is_file():
            return None
        last, blame = self._followed.get(rel, (0, []))
        history = History(self.workspace, self.db)
        try:
            changes = [c for c in history.changes(OWNER, rel, limit=MAX_VERSIONS) if c.id > last]
            for change in reversed(changes):
                if not last:  # the first version seen: what was there before is undated
                    before = history.content(change.before)
                    blame = [(line, "") for line in _lines(before)]
                day = change.at.astimezone(self.tz).date().isoformat()
                blame = carried(blame, _lines(history.content(change.after)), day)
                last = change.id
        finally:
            history.close()
        self._followed[rel] = (last, blame)
        return blame if last else None


def _lines(data: bytes | None) -> list[str]:
    return [] if data is None else data.decode("utf-8", errors="replace").splitlines()
