"""The sessions this process has loaded, over the transcript store."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from agent.sessions.state import SessionState
from agent.sessions.transcript import SessionStore
from gateway.contract.events import SessionKey
from gateway.infra.atomic import write_atomic

log = logging.getLogger(__name__)

# Sessions kept in memory beyond those in use; the others come back from disk on their next
# message, so memory does not grow with the number of chats.
KEEP_LOADED = 32


# A snapshot is kept until compaction, so the cached prompt prefix holds, unless the owner
# edited its files by hand since: the assistant then works from what the owner wrote.
class HandEdits:
    """When the owner last edited the workspace by hand, in a file that outlives restarts."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._seen: tuple[int, datetime | None] = (-1, None)

    def mark(self, when: datetime) -> None:
        write_atomic(self.path, when.isoformat(timespec="milliseconds") + "\n")

    def last(self) -> datetime | None:
        """The last edit's time; read again only when the file changed."""
        try:
            mtime = self.path.stat().st_mtime_ns
        except FileNotFoundError:
            return None
        if mtime != self._seen[0]:
            when = None
            with contextlib.suppress(OSError, ValueError):
                when = datetime.fromisoformat(self.path.read_text(encoding="utf-8").strip())
            self._seen = (mtime, when)
        return self._seen[1]

    def outdated(self, state: SessionState) -> bool:
        last = self.last()
        if last is None or not state.snapshot_at:
            return False
        try:
            return datetime.fromisoformat(state.snapshot_at) < last
        except ValueError:
            return False


class Sessions:
    def __init__(
        self,
        store: SessionStore,
        prompt: Callable[[SessionKey], str],
        edits: HandEdits | None = None,
    ) -> None:
        self.store = store
        self._prompt = prompt
        self.edits = edits
        self._loaded: dict[SessionKey, SessionState] = {}

    def get(self, key: SessionKey) -> SessionState:
        """The session's state, loaded from disk or started with a fresh prompt snapshot."""
        state = self._loaded.pop(key, None)  # back in last: the most recently used
        if state is None:
            state = self.store.load(key)
            if state is None:
                state = self.store.create(key, self._prompt(key))
                log.info("%s: new session %s", key, state.session_id)
        self._loaded[key] = state
        if self.edits is not None and self.edits.outdated(state):
            self.store.renew_prompt(state, self._prompt(key))
            log.info("%s: fresh prompt snapshot after a hand edit", key)
        return state

    def loaded(self, key: SessionKey) -> SessionState | None:
        """The session if this process has it in memory; never reads the disk."""
        return self._loaded.get(key)

    def peek(self, key: SessionKey) -> SessionState | None:
        """The session if it exists in memory or on disk, without creating one."""
        if key in self._loaded:
            return self._loaded[key]
        if self.store.path(key).exists():
            return self.get(key)
        return None

    def let_go(self, in_use: Callable[[SessionKey], bool], keep: int = KEEP_LOADED) -> int:
        """Let sessions not in use leave memory, the least recently used first, until at most
        ``keep`` of them remain; their transcripts bring them back. Returns how many left."""
        extra = len(self._loaded) - keep
        gone = 0
        for key in list(self._loaded):
            if gone >= extra:
                break
            if not in_use(key):
                del self._loaded[key]
                gone += 1
        return gone

    def forget(self, key: SessionKey) -> None:
        """This session leaves memory now (a scheduled job's run is over)."""
        self._loaded.pop(key, None)

    def reset(self, key: SessionKey) -> Path | None:
        """End the session: its transcript is archived and the next message starts afresh."""
        self._loaded.pop(key, None)
        return self.store.archive(key)
