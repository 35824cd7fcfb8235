"""``state/proposals.json``: consolidation's proposals, and how far it has read each log."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from agent.memory.proposals import PENDING, Item, Proposal
from agent.workspace.writers import locked
from gateway.contract.errors import ToolError
from gateway.infra.atomic import write_atomic

log = logging.getLogger(__name__)

JOURNAL = 200  # the last marks kept for runs still out: far more than one run's model call


@dataclass
class Store:
    """``state/proposals.json``: the proposals, and how far each log has been read."""

    path: Path
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @contextmanager
    def _held(self) -> Iterator[None]:
        """The file to one reader-writer at a time: this process's threads (the lock) and
        other processes (the terminal's ``corvid memory`` beside the gateway: an ``flock`` on
        a file next to it, as the file itself is replaced on every write)."""
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with locked(self.path.with_name(self.path.name + ".lock")):
                yield

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

    def _save(self, data: dict[str, Any]) -> None:  # held: its folder is made
        write_atomic(self.path, json.dumps(data, indent=1, ensure_ascii=False))

    def marks(self) -> dict[str, int]:
        with self._held():
            return {str(k): int(v) for k, v in self._load().get("marks", {}).items()}

    def set_marks(self, marks: dict[str, int]) -> None:
        with self._held():
            data = self._load()
            data["marks"] = marks
            self._save(data)

    def places(self) -> tuple[dict[str, int], int]:
        """How far each log has been read, and how many marks have been written so far: a
        run that reads the logs now stores its places moved by the marks after."""
        with self._held():
            data = self._load()
            return {str(k): int(v) for k, v in data.get("marks", {}).items()}, _count(data)

    def read_up_to(self, marks: dict[str, int], seen: int | None = None) -> None:
        """A run has read these logs up to these bytes when ``seen`` marks had been written
        (``places``; None: as the store is now): stored moved by the marks written since into
        the part read. The others' places stay (another run may have moved them meanwhile)."""
        with self._held():
            data = self._load()
            data["marks"] = {**data.get("marks", {}), **_since(data, marks, seen)}
            self._save(data)

    def shifted(self, rel: str, before: str, after: str) -> None:
        """``rel`` was changed from ``before`` to ``after`` (a mark): where it has been read
        up to moves with the bytes when the change is in the part read, so that the next run
        reads on from the same place, not from the middle of a line it has read. So do the
        places a pending proposal reads again from if it is refused; and the change is kept
        for a run still out, in this process or another, to move its places by."""
        old, new = before.encode(), after.encode()
        at = next((i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), len(old))
        # Line breaks alone before it (a log with none at its end, appended to): still its end.
        start, by = len(old[:at].rstrip(b"\r\n")), len(new) - len(old)
        with self._held():
            data = self._load()
            pending = [
                p.get("marks_before", {})
                for p in data.get("proposals", [])
                if p.get("status", PENDING) == PENDING
            ]
            for m in (data.get("marks", {}), *pending):
                _move(m, rel, start, at, by)
            kept = data.get("shifts")
            journal = [*(kept if isinstance(kept, list) else []), [rel, start, at, by]]
            data["shifts"] = journal[-JOURNAL:]
            data["shifted"] = _count(data) + 1
            self._save(data)

    def all(self) -> list[Proposal]:
        with self._held():
            return [_proposal(p) for p in self._load().get("proposals", [])]

    def get(self, pid: str) -> Proposal:
        for p in self.all():
            if p.id == pid:
                return p
        raise ToolError(f"There is no memory proposal {pid}.")

    def add(self, proposal: Proposal, marks: dict[str, int], seen: int | None = None) -> Proposal:
        """Keep ``proposal`` and the marks of the logs it read together: both or neither;
        each place moved as ``read_up_to`` moves it. The proposal as kept."""
        with self._held():
            data = self._load()
            data["marks"] = {**data.get("marks", {}), **_since(data, marks, seen)}
            kept = replace(proposal, marks_before=_since(data, proposal.marks_before, seen))
            data["proposals"] = [*data.get("proposals", []), asdict(kept)][-50:]
            self._save(data)
        return kept

    def put(self, proposal: Proposal, reread: bool = False) -> None:
        """Store ``proposal`` as answered, with where its part of each log began as stored
        (moved by the marks written since it was loaded); ``reread``: those parts are read
        again next run, from there."""
        with self._held():
            data = self._load()
            marks = data.setdefault("marks", {})
            for n, raw in enumerate(data.get("proposals", [])):
                if raw.get("id") != proposal.id:
                    continue
                before = raw.get("marks_before", {})
                data["proposals"][n] = {**asdict(proposal), "marks_before": before}
                for rel, start in before.items() if reread else ():
                    now = marks.get(rel, start)
                    marks[rel] = min(now, start) if isinstance(now, int) else start
            self._save(data)


def _move(positions: dict[str, Any], rel: str, start: int, at: int, by: int) -> None:
    """Move where ``rel`` was read up to by a change of ``by`` bytes at byte ``at`` when the
    change is in the part read, or starts where it ends (``start``: only line breaks lie
    between; a mark is the end of an entry whose heading was read, never the start of one):
    to just after the change then. A value not a number stays."""
    read = positions.get(rel)
    if isinstance(read, int) and read >= start:
        positions[rel] = max(read, at) + by


def _count(data: dict[str, Any]) -> int:
    """How many marks have been written into the logs, ever (the journal keeps the last)."""
    count = data.get("shifted", 0)
    return count if isinstance(count, int) else 0


def _journal(data: dict[str, Any]) -> list[tuple[int, list[Any]]]:
    """The last marks written, each with its number: its log, where its line breaks begin,
    the byte it changed from and the bytes added (one a hand edit spoilt is left out, and
    the others keep their numbers)."""
    kept = data.get("shifts", [])
    kept = kept if isinstance(kept, list) else []
    first = _count(data) - len(kept)  # the number of the first mark kept, less one
    return [
        (first + n, s)
        for n, s in enumerate(kept, start=1)
        if isinstance(s, list) and len(s) == 4 and all(isinstance(x, int) for x in s[1:])
    ]


def _since(data: dict[str, Any], places: dict[str, int], seen: int | None) -> dict[str, int]:
    """``places`` (logs' places, read when ``seen`` marks had been written) moved by the
    marks written into their logs since: where they are now."""
    count, kept = _count(data), data.get("shifts")
    seen = count if seen is None else seen
    if places and seen < count - (len(kept) if isinstance(kept, list) else 0):
        log.warning(
            "more marks since %s were read than are kept: their places may be off",
            ", ".join(places),
        )
    moved = dict(places)
    for n, (rel, start, at, by) in _journal(data):
        if rel in moved and n > seen:
            _move(moved, rel, start, at, by)
    return moved


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
