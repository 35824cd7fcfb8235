"""Pairing: how someone not on a channel's allowlist asks for access, and the owner grants it."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from gateway.contract.ports import Clock, SystemClock
from gateway.infra.atomic import write_atomic

# No 0/O, 1/I/L: codes are read off a phone screen and typed into a terminal.
ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 8
CODE_TTL = 3600.0
MAX_PENDING = 50  # per channel: bounds the file, while one stranger holds one code at most


@dataclass(frozen=True)
class PairingRequest:
    channel: str
    user_id: str
    name: str
    code: str
    created: float
    expires: float


class PairingError(Exception):
    """A code that does not exist or has expired (the message says which)."""


class PairingStore:
    def __init__(
        self,
        path: Path,
        *,
        clock: Clock | None = None,
        ttl: float = CODE_TTL,
        max_pending: int = MAX_PENDING,
    ) -> None:
        self.path = path
        self.clock = clock or SystemClock()
        self.ttl = ttl
        self.max_pending = max_pending
        self._cache_stamp: tuple[int, ...] | None = None
        self._approved: dict[str, dict[str, Any]] = {}
        # Told of each request this store approved (True) or denied (False), once written.
        self.on_handled: Callable[[PairingRequest, bool], None] | None = None

    def now(self) -> float:
        """Seconds since the epoch, as codes' ``created`` and ``expires`` are kept."""
        return self.clock.now().timestamp()

    # -- reading --------------------------------------------------------------------------------

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {"pending": [], "approved": {}}
        except (OSError, ValueError) as exc:
            # Never silently start from scratch: that would forget who was approved.
            raise PairingError(f"{self.path} cannot be read ({exc}); fix or remove it") from None
        if not isinstance(data, dict):
            raise PairingError(f"{self.path} is not a JSON object; fix or remove it")
        data.setdefault("pending", [])
        data.setdefault("approved", {})
        return data

    def is_approved(self, channel: str, user_id: str) -> bool:
        """Cheap on the message path: the file is parsed again only after it changed."""
        try:
            st = self.path.stat()
            # Every write replaces the file, so a new inode means new contents even when the
            # clock's granularity leaves mtime unchanged.
            stamp = (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)
        except FileNotFoundError:
            stamp = None
        if stamp != self._cache_stamp:
            self._approved = self._read()["approved"] if stamp else {}
            self._cache_stamp = stamp
        return user_id in self._approved.get(channel, {})

    def approved(self) -> dict[str, dict[str, Any]]:
        approved: dict[str, dict[str, Any]] = self._read()["approved"]
        return approved

    def pending(self) -> list[PairingRequest]:
        now = self.now()
        return [PairingRequest(**p) for p in self._read()["pending"] if p["expires"] > now]

    # -- changing -------------------------------------------------------------------------------

    # Locked, because the gateway (issuing codes) and the CLI (approving them) are separate
    # processes sharing the file.
    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, Any]]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock = self.path.with_suffix(".lock")
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            data = self._read()
            before = json.dumps(data, sort_keys=True)
            now = self.now()
            data["pending"] = [p for p in data["pending"] if p["expires"] > now]
            yield data
            if json.dumps(data, sort_keys=True) != before:
                self._write(data)
        finally:
            os.close(fd)  # releases the lock

    def _write(self, data: dict[str, Any]) -> None:
        # Who may talk to the bot: always the owner's alone, whatever the file was set to.
        write_atomic(self.path, json.dumps(data, indent=2, sort_keys=True), keep_mode=False)

    def request(self, channel: str, user_id: str, name: str) -> tuple[PairingRequest | None, bool]:
        """The pending request for this user, creating one if there is room.

        Returns ``(request, created)``. When the channel already has ``max_pending`` codes
        waiting, the oldest gives way: a crowd of strangers cannot keep a friend out (they
        can ask again, and the owner has heard of each of them already).
        """
        with self._locked() as data:
            for p in data["pending"]:
                if p["channel"] == channel and p["user_id"] == user_id:
                    return PairingRequest(**p), False
            waiting = [p for p in data["pending"] if p["channel"] == channel]
            # The oldest gives way, so a crowd of strangers cannot keep a friend out.
            if len(waiting) >= self.max_pending:
                oldest = min(waiting, key=lambda p: p["created"])
                data["pending"].remove(oldest)
            taken = {p["code"] for p in data["pending"]}
            code = _new_code(taken)
            now = self.now()
            req = PairingRequest(channel, user_id, name, code, now, now + self.ttl)
            data["pending"].append(asdict(req))
            return req, True

    def approve(self, code: str) -> PairingRequest:
        wanted = normalize_code(code)
        req = None
        with self._locked() as data:
            for p in data["pending"]:
                if p["code"] == wanted:
                    data["pending"].remove(p)
                    req = PairingRequest(**p)
                    data["approved"].setdefault(req.channel, {})[req.user_id] = {
                        "name": req.name,
                        "approved_at": self.now(),
                    }
                    break
        if req is not None:
            self._handled(req, True)
            return req
        raise PairingError(
            f"no pending pairing code {wanted!r}: it may have expired (codes last "
            f"{int(self.ttl // 60)} minutes) or been used; `corvid pairing list` shows the "
            "pending ones"
        )

    def deny(self, code: str) -> PairingRequest:
        """Drop one pending request; its code no longer works."""
        wanted = normalize_code(code)
        req = None
        with self._locked() as data:
            for p in data["pending"]:
                if p["code"] == wanted:
                    data["pending"].remove(p)
                    req = PairingRequest(**p)
                    break
        if req is None:
            raise PairingError(
                f"no pending pairing code {wanted!r}; `corvid pairing list` shows them"
            )
        self._handled(req, False)
        return req

    def _handled(self, req: PairingRequest, approved: bool) -> None:
        if self.on_handled is not None:
            self.on_handled(req, approved)

    def clear(self) -> int:
        """Drop every pending request; returns how many there were."""
        with self._locked() as data:
            dropped = len(data["pending"])
            data["pending"] = []
            return dropped

    def revoke(self, channel: str, user_id: str) -> bool:
        with self._locked() as data:
            users = data["approved"].get(channel, {})
            return users.pop(user_id, None) is not None


def normalize_code(code: str) -> str:
    return "".join(code.split()).upper().replace("-", "")


def _new_code(taken: set[str]) -> str:
    while True:
        code = "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))
        if code not in taken:
            return code
