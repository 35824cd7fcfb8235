"""Per-session figures for the sessions page, read from each transcript once and kept until the
file changes (by its size and modification time), so an open page stays cheap however many
sessions there are."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from agent.transcript import SessionState, SessionStore
from gateway.events import SessionKey


@dataclass(frozen=True)
class Summary:
    key: SessionKey
    turns: int
    context_tokens: int
    cache_share: float | None  # of all input tokens, the share read from cache
    last_active: float


class Summaries:
    """Per-session figures, read from a transcript once per change of the file."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self._seen: dict[SessionKey, tuple[tuple[int, float], Summary | None]] = {}

    def all(self, loaded: Callable[[SessionKey], SessionState | None]) -> list[Summary]:
        out = []
        for key in self.store.session_keys():
            try:
                st = self.store.path(key).stat()
            except FileNotFoundError:
                continue
            stamp = (st.st_size, st.st_mtime)
            seen = self._seen.get(key)
            if seen is None or seen[0] != stamp:
                state = loaded(key) or self.store.read(key)
                seen = (stamp, None if state is None else _summary(state, st.st_mtime))
                self._seen[key] = seen
            if seen[1] is not None:
                out.append(seen[1])
        out.sort(key=lambda s: s.last_active, reverse=True)
        return out


def _summary(state: SessionState, mtime: float) -> Summary:
    u = state.usage_total
    total = u.input + u.cache_read + u.cache_write
    share = u.cache_read / total if total else None
    return Summary(state.key, state.turns, state.context_tokens, share, mtime)
