"""``state/proposals.json``: consolidation's proposals, and how far it has read each log."""

from __future__ import annotations

import fcntl
import json
import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agent.memory.proposals import PENDING, Item, Proposal
from gateway.contract.errors import ToolError
from gateway.infra.atomic import write_atomic

log = logging.getLogger(__name__)


@dataclass
class Store:
    """``state/proposals.json``: the proposals, and how far each log has been read."""

    path: Path
    _lock: threading.Lock = field(default_factory=threading.Lock)
    # The read positions of runs still out (asking the model), which marks written meanwhile
    # move as they move the stored ones.
    _moving: list[dict[str, int]] = field(default_factory=list)

    @contextmanager
    def _held(self) -> Iterator[None]:
        """The file to one reader-writer at a time: this process's threads (the lock) and
        other processes (the terminal's ``corvid memory`` beside the gateway: an ``flock`` on
        a file next to it, as the file itself is replaced on every write)."""
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            lock = self.path.with_name(self.path.name + ".lock")
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                os.close(fd)

    def _load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {"marks": {}, "proposals": []}
        except ValueError:
            aside = self.path.with_name(self.path.name + ".unreadable")
            self.path.rename(aside)
            log.warning("%s could not be read; set aside as %s", self.path.name, aside.name)
            return {"marks": {}, "proposals": []}
        return data if isinstance(data, dict) else {"marks": {}, "proposals": []}

    def _save(self, data: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(self.path, json.dumps(data, indent=1, ensure_ascii=False))

    def marks(self) -> dict[str, int]:
        with self._held():
            return {str(k): int(v) for k, v in self._load().get("marks", {}).items()}

    def set_marks(self, marks: dict[str, int]) -> None:
        with self._held():
            data = self._load()
            data["marks"] = marks
            self._save(data)

    def read_up_to(self, marks: dict[str, int]) -> None:
        """A run has read these logs up to these bytes; the others' marks stay (another run
        may have moved them meanwhile)."""
        with self._held():
            data = self._load()
            data["marks"] = {**data.get("marks", {}), **marks}
            self._save(data)

    def shifted(self, rel: str, before: str, after: str) -> None:
        """``rel`` was changed from ``before`` to ``after`` (a mark): where it has been read
        up to moves with the bytes when the change is in the part read, so that the next run
        reads on from the same place, not from the middle of a line it has read. So do the
        places a run still out will store, and those a pending proposal reads again from if
        it is refused."""
        old, new = before.encode(), after.encode()
        at = next((i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), len(old))
        by = len(new) - len(old)
        with self._held():
            for positions in self._moving:
                _move(positions, rel, at, by)
            data = self._load()
            pending = [
                p.get("marks_before", {})
                for p in data.get("proposals", [])
                if p.get("status", PENDING) == PENDING
            ]
            moved = [_move(m, rel, at, by) for m in (data.get("marks", {}), *pending)]
            if any(moved):
                self._save(data)

    @contextmanager
    def moving(self, *positions: dict[str, int]) -> Iterator[None]:
        """While a run is out, the read positions it will store (``positions``, changed in
        place) move with the marks written meanwhile, as the stored ones do."""
        with self._lock:
            self._moving.extend(positions)
        try:
            yield
        finally:
            with self._lock:
                self._moving[:] = [p for p in self._moving if all(p is not q for q in positions)]

    def all(self) -> list[Proposal]:
        with self._held():
            return [_proposal(p) for p in self._load().get("proposals", [])]

    def get(self, pid: str) -> Proposal:
        for p in self.all():
            if p.id == pid:
                return p
        raise ToolError(f"There is no memory proposal {pid}.")

    def add(self, proposal: Proposal, marks: dict[str, int]) -> None:
        """Keep ``proposal`` and the marks of the logs it read together: both or neither."""
        with self._held():
            data = self._load()
            data["marks"] = {**data.get("marks", {}), **marks}
            data["proposals"] = [*data.get("proposals", []), asdict(proposal)][-50:]
            self._save(data)

    def put(self, proposal: Proposal, marks: dict[str, int] | None = None) -> None:
        with self._held():
            data = self._load()
            data["proposals"] = [
                asdict(proposal) if p.get("id") == proposal.id else p
                for p in data.get("proposals", [])
            ]
            if marks is not None:
                data["marks"] = marks
            self._save(data)


def _move(positions: dict[str, Any], rel: str, at: int, by: int) -> bool:
    """Move where ``rel`` was read up to by ``by`` bytes when a change at byte ``at`` is in
    the part read or starts right where it ends (a mark is the end of an entry whose heading
    was read, never the start of one); whether it moved (a value not a number stays)."""
    read = positions.get(rel)
    if not isinstance(read, int) or read < at:
        return False
    positions[rel] = read + by
    return True


def _proposal(raw: dict[str, Any]) -> Proposal:
    items = tuple(
        Item(
            op=str(i["op"]),
            text=str(i["text"]),
            old=tuple(i["old"]),
            reason=str(i["reason"]),
            sources=tuple(i["sources"]),
            origin=str(i.get("origin", "")),
            status=str(i.get("status", PENDING)),
            section=str(i.get("section", "")),
            replaces=str(i.get("replaces", "")),
            was=str(i.get("was", "")),
        )
        for i in raw.get("items", [])
    )
    return Proposal(
        id=str(raw["id"]),
        made=str(raw["made"]),
        base=str(raw["base"]),
        items=items,
        marks_before={str(k): int(v) for k, v in raw.get("marks_before", {}).items()},
        status=str(raw.get("status", PENDING)),
        note=str(raw.get("note", "")),
        target=str(raw.get("target", "MEMORY.md")),
    )
