"""The control page's token, signed-in browsers and address, as files: what needs no server."""

from __future__ import annotations

import contextlib
import hmac
import json
import secrets
import time
from collections.abc import Callable
from pathlib import Path

from gateway.infra.atomic import write_atomic

SESSION_DAYS = 14


def load_token(path: Path) -> str:
    """The page's access token (kept at ``path``), made (readable by the owner's user alone) if
    there is none."""
    with contextlib.suppress(FileNotFoundError):
        token = path.read_text(encoding="ascii").strip()
        if len(token) >= 32:
            return token
    return new_token(path)


def new_token(path: Path) -> str:
    """A fresh access token at ``path`` in place of the old one (which stops working)."""
    token = secrets.token_urlsafe(32)
    write_atomic(path, token + "\n", keep_mode=False)
    return token


def new_access(token: Path, sessions: Path) -> str:
    """A new access token at ``token``, every browser signed in (``sessions``) signed out: the
    old address stops working. Where no server holds them in memory (``Guard.rotate`` does)."""
    made = new_token(token)
    SignedIn(sessions).end(None)
    return made


class SignedIn:
    """The browsers signed in: random session ids and when each expires, in a file (0600)."""

    def __init__(self, path: Path, now: Callable[[], float] = time.time) -> None:
        self.path = path
        self._now = now
        self._ids: dict[str, float] = {}
        with contextlib.suppress(OSError, ValueError, AttributeError):
            loaded = json.loads(path.read_text(encoding="utf-8"))
            self._ids = {str(k): float(v) for k, v in loaded.items()}

    def new(self) -> str:
        sid = secrets.token_urlsafe(32)
        self._ids = {k: v for k, v in self._ids.items() if v > self._now()}
        self._ids[sid] = self._now() + SESSION_DAYS * 86400
        self._save()
        return sid

    def valid(self, sid: str) -> bool:
        # compare_digest over every id, so the answer takes as long whichever one matched
        hits = [hmac.compare_digest(sid.encode(), k.encode()) for k in self._ids]
        return any(hits) and self._ids.get(sid, 0) > self._now()

    def end(self, sid: str | None) -> None:
        """Sign one browser out, or (None) every browser."""
        self._ids = {} if sid is None else {k: v for k, v in self._ids.items() if k != sid}
        self._save()

    def _save(self) -> None:
        write_atomic(self.path, json.dumps(self._ids), keep_mode=False)


def wildcard(host: str) -> bool:
    return host in ("0.0.0.0", "::", "")


def address(host: str, port: int | None) -> str:
    """The page's base address: a wildcard host is reached on loopback."""
    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    return f"http://{f'[{host}]' if ':' in host else host}:{port}/"
