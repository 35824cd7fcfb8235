"""The sessions this process has loaded, over the transcript store.

A session is loaded from its transcript the first time it is needed, or started with a fresh
prompt snapshot; from then on it lives in memory, touched only by its own turn (the gateway
runs one turn at a time per session).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from agent.transcript import SessionState, SessionStore
from gateway.events import SessionKey

log = logging.getLogger(__name__)


class Sessions:
    def __init__(self, store: SessionStore, prompt: Callable[[SessionKey], str]) -> None:
        self.store = store
        self._prompt = prompt
        self._loaded: dict[SessionKey, SessionState] = {}

    def get(self, key: SessionKey) -> SessionState:
        """The session's state, loaded from disk or started with a fresh prompt snapshot."""
        state = self._loaded.get(key)
        if state is None:
            state = self.store.load(key)
            if state is None:
                state = self.store.create(key, self._prompt(key))
                log.info("%s: new session %s", key, state.session_id)
            self._loaded[key] = state
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

    def reset(self, key: SessionKey) -> Path | None:
        """End the session: its transcript is archived and the next message starts afresh."""
        self._loaded.pop(key, None)
        return self.store.archive(key)
