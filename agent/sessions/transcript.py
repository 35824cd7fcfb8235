"""Session transcripts: ``state/sessions/<key>.jsonl``, append-only, one JSON object per line."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import uuid
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from agent.model.wire import check_message
from agent.sessions.history import History
from agent.sessions.jsonl import HeldFiles, cut_torn_tail, fsync_path
from agent.sessions.state import SessionState, TurnEnd, Usage, estimate_tokens, summary_message
from gateway.contract.events import SessionKey
from gateway.contract.ports import Clock, SystemClock
from gateway.infra.tasks import settle

log = logging.getLogger(__name__)

# Each line reaches the OS with its own write, so a killed process loses nothing; a power cut
# may take the last moment, as the journal's SQLite (synchronous=NORMAL) may. An fsync before
# each reply made the reply wait for the disk.
SYNC_WITHIN = 1.0  # seconds: the most of a transcript a power cut may take
OPEN_KEPT = 64  # transcripts held open until the next flush; more are opened for each line


# ``<key>.<UTC stamp>.jsonl``: a transcript moved aside by /new.
_ARCHIVED = re.compile(r"\.\d{8}T\d{12}Z$")


class SessionStore:
    def __init__(self, directory: Path, clock: Clock | None = None) -> None:
        self.dir = directory
        self.clock = clock or SystemClock()
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._unsynced: set[Path] = set()  # written since the last fsync
        # Transcripts held open until the flush that is due closes them, by the event loop's
        # thread only (``_write`` on another thread opens its own).
        self._files = HeldFiles(OPEN_KEPT)
        # The flush to come: its loop, so that one left on a loop that has ended is not
        # waited for.
        self._syncing: tuple[asyncio.AbstractEventLoop, asyncio.TimerHandle] | None = None
        self._flushes: set[asyncio.Task[None]] = set()
        self._closed = False

    def _now(self) -> str:
        return self.clock.now().isoformat(timespec="milliseconds")

    def path(self, key: SessionKey) -> Path:
        return self.dir / f"{key}.jsonl"

    def create(self, key: SessionKey, system: str) -> SessionState:
        now = self._now()
        state = SessionState(key, uuid.uuid4().hex, now, system, snapshot_at=now)
        header = {
            "t": "session",
            "id": state.session_id,
            "key": str(key),
            "created": state.created,
            "system": system,
        }
        self._write(key, header)
        return state

    def load(self, key: SessionKey) -> SessionState | None:
        path = self.path(key)
        if not path.exists():
            return None
        if not path.is_file():  # a folder or a device in its place: every write would fail
            self._files.let_go(key)
            aside = path.with_name(f"{path.name}.unreadable-{self.clock.now():%Y%m%dT%H%M%SZ}")
            os.replace(path, aside)
            log.error(
                "%s: %s is not a file; moved aside to %s, a new session starts",
                key,
                path,
                aside.name,
            )
            return None
        cut_torn_tail(path)
        state: SessionState | None = None
        with path.open("rb") as f:
            for number, raw in enumerate(f, 1):
                try:
                    entry = json.loads(raw.decode("utf-8"))
                    state = _replay(key, state, entry)
                except (ValueError, KeyError, TypeError, AttributeError):
                    # ValueError covers bad JSON and bad UTF-8 alike.
                    log.warning("%s: skipping unreadable line %d of %s", key, number, path)
        if state is None:
            log.warning("%s: %s has no session header; starting a new session", key, path)
            self.archive(key)
        return state

    def read(self, key: SessionKey) -> SessionState | None:
        """The session as on disk, without repairing or moving anything (for ``corvid status``
        beside a running gateway). Unreadable lines, a torn last one included, are skipped."""
        path = self.path(key)
        state: SessionState | None = None
        try:
            with path.open("rb") as f:
                for raw in f:
                    with contextlib.suppress(ValueError, KeyError, TypeError, AttributeError):
                        state = _replay(key, state, json.loads(raw.decode("utf-8")))
        except FileNotFoundError:
            return None
        return state

    def session_keys(self) -> list[SessionKey]:
        """Every session with a current transcript (archived ones are not sessions any more)."""
        found = []
        for path in self.dir.glob("*.jsonl"):
            stem = path.name.removesuffix(".jsonl")
            if not _ARCHIVED.search(stem):
                with contextlib.suppress(ValueError):
                    found.append(SessionKey.parse(stem))
        return found

    def append_message(
        self, state: SessionState, message: dict[str, Any], seqs: Sequence[int] = ()
    ) -> None:
        entry: dict[str, Any] = {"t": "msg", "ts": self._now(), "msg": message}
        if seqs:
            entry["in"] = list(seqs)
        self._write(state.key, entry)
        state.seqs.update(seqs)
        state.messages.append(message)
        if message["role"] == "user":  # assistant output is in the next usage report already
            state.added_tokens += estimate_tokens(message["content"])

    def append_usage(self, state: SessionState, usage: Usage) -> None:
        entry = {
            "t": "usage",
            "ts": self._now(),
            "input": usage.input,
            "cache_read": usage.cache_read,
            "cache_write": usage.cache_write,
            "output": usage.output,
        }
        self._write(state.key, entry)
        state.usage_total += usage
        state.last_usage = usage
        state.added_tokens = 0

    def end_turn(self, state: SessionState, status: TurnEnd, detail: str = "") -> None:
        entry = {"t": "turn", "ts": self._now(), "status": str(status)}
        if detail:
            entry["detail"] = detail
        self._write(state.key, entry)
        state.turns += 1
        self.sync_soon(state.key)

    def withdraw(self, state: SessionState, count: int) -> None:
        """The last ``count`` messages leave the conversation (a turn stopped with /stop: the
        person asked for no answer, so the request must not come back with the next one).
        They stay in the file, above the line that withdraws them."""
        if count <= 0:
            return
        self._write(state.key, {"t": "withdrawn", "ts": self._now(), "count": count})
        _withdraw(state, count)

    def mark_flushed(self, state: SessionState) -> None:
        self._write(state.key, {"t": "flush", "ts": self._now()})
        state.flushed = True

    def mark_exposed(self, state: SessionState, source: str) -> None:  # see tools/context.py
        self._write(state.key, {"t": "exposed", "ts": self._now(), "source": source})

    def compact(self, state: SessionState, summary: str, keep: int, system: str) -> None:
        """Record a compaction: from here on the session is the summary plus the last ``keep``
        messages, under a fresh system-prompt snapshot. Earlier lines stay in the file."""
        now = self._now()
        entry = {
            "t": "compaction",
            "ts": now,
            "summary": summary,
            "keep": keep,
            "system": system,
        }
        self._write(state.key, entry)
        _apply_compaction(state, summary, keep, system)
        state.snapshot_at = now

    def renew_prompt(self, state: SessionState, system: str) -> None:
        """Record a fresh system-prompt snapshot; the conversation goes on under it."""
        now = self._now()
        self._write(state.key, {"t": "prompt", "ts": now, "system": system})
        state.system, state.snapshot_at = system, now

    def archive(self, key: SessionKey) -> Path | None:
        """Move the current transcript aside (kept on disk); the next turn starts afresh."""
        path = self.path(key)
        if not path.exists():
            return None
        self._files.let_go(key)  # the lines written through it are under the new name
        when = self.clock.now()
        target = self.dir / f"{key}.{when:%Y%m%dT%H%M%S%fZ}.jsonl"
        while target.exists():  # two /new within one tick of the clock: never overwrite
            when += timedelta(microseconds=1)
            target = self.dir / f"{key}.{when:%Y%m%dT%H%M%S%fZ}.jsonl"
        os.replace(path, target)
        # Whatever of it is still to be made durable (a flush may have the old name in hand
        # already) is under the new name now.
        self._unsynced.discard(path)
        self._unsynced.add(target)
        self._schedule()
        return target

    def prune_job_runs(self, older_than: timedelta) -> int:
        """Delete the transcripts of scheduled jobs' past runs (one archived per run) older
        than ``older_than``: what a run produced is in the log and the outbox."""
        cutoff = (self.clock.now() - older_than).timestamp()
        gone = 0
        for path in self.dir.glob("cron:*.jsonl"):
            with contextlib.suppress(OSError):
                if _ARCHIVED.search(path.name[:-6]) and path.stat().st_mtime < cutoff:
                    path.unlink()
                    gone += 1
        return gone

    def sync_soon(self, key: SessionKey) -> None:
        """Have what was written to ``key``'s transcript made durable within ``SYNC_WITHIN``
        seconds, without blocking the event loop (each turn's end does)."""
        self._unsynced.add(self.path(key))
        self._schedule()

    def _schedule(self) -> None:
        if self._closed:  # a write after the stop's flush: nothing will come after it
            paths, self._unsynced = self._unsynced, set()
            _fsync_all(paths)
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (a command's own use): the next flush does it
            return
        if self._syncing is None or self._syncing[0] is not loop:
            self._syncing = (loop, loop.call_later(SYNC_WITHIN, self._start_flush))

    def _start_flush(self) -> None:
        self._syncing = None
        task = asyncio.get_running_loop().create_task(self.flush())
        self._flushes.add(task)
        task.add_done_callback(self._flushed)

    def _flushed(self, task: asyncio.Task[None]) -> None:
        self._flushes.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("making transcripts durable failed", exc_info=task.exception())

    async def flush(self) -> None:
        """Make durable now every transcript written since the last flush."""
        self._files.let_go_all()
        paths, self._unsynced = self._unsynced, set()
        if not paths:
            return
        try:
            await asyncio.to_thread(_fsync_all, paths)
        except BaseException:
            self._unsynced |= paths  # the next flush does them (again)
            self._schedule()
            raise

    async def close(self) -> None:
        """At shutdown: what is still to be made durable is, before the process ends; a
        write after this is made durable at once."""
        # One under way finishes; one that fails has logged and put its files back. A write
        # while waiting (a turn ending during the stop) may have started another, or set the
        # timer again: both until neither is left, so nothing is still being made durable once
        # this returns.
        while True:
            if self._syncing is not None:
                self._syncing[1].cancel()
                self._syncing = None
            await settle(self._flushes, None)
            if self._syncing is None:
                break
        self._closed = True
        await self.flush()

    def _write(self, key: SessionKey, entry: dict[str, Any]) -> None:
        data = (json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        # Only the loop's thread holds files open; a tool's thread (``mark_exposed``) opens
        # its own, as a held one may be closed by the flush under it.
        self._files.append(key, self.path(key), data, hold=self._flush_due())

    def _flush_due(self) -> bool:
        """Whether a flush is due on the loop running in this thread (False in any other
        thread), which will close what is held open."""
        if self._syncing is None:
            return False
        try:
            return self._syncing[0] is asyncio.get_running_loop()
        except RuntimeError:
            return False


def _fsync_all(paths: set[Path]) -> None:
    for path in paths:
        try:
            fsync_path(path)
        except OSError as exc:  # the lines are written; only their durability is in doubt
            log.warning("could not make %s durable: %s", path.name, exc)


def _replay(key: SessionKey, state: SessionState | None, entry: Any) -> SessionState | None:
    """Apply one transcript line to the state being rebuilt; raises on a malformed line."""
    kind = entry["t"]
    if kind == "session":
        created = entry["created"]
        system = str(entry.get("system", ""))
        return SessionState(key, entry["id"], created, system, snapshot_at=created)
    if state is None:
        return None
    if kind == "msg":
        msg = entry["msg"]
        check_message(msg)
        state.messages.append(msg)
        state.seqs.update(int(s) for s in entry.get("in", ()))
        if msg["role"] == "user":
            state.added_tokens += estimate_tokens(msg["content"])
    elif kind == "usage":
        u = Usage(
            int(entry["input"]),
            int(entry["cache_read"]),
            int(entry["cache_write"]),
            int(entry["output"]),
        )
        state.usage_total += u
        state.last_usage = u
        state.added_tokens = 0
    elif kind == "turn":
        state.turns += 1
    elif kind == "flush":
        state.flushed = True
    elif kind == "withdrawn":
        _withdraw(state, int(entry["count"]))
    elif kind == "compaction":
        _apply_compaction(state, str(entry["summary"]), int(entry["keep"]), str(entry["system"]))
        state.snapshot_at = str(entry["ts"])
    elif kind == "prompt":
        state.system, state.snapshot_at = str(entry["system"]), str(entry["ts"])
    elif kind == "exposed":
        state.exposed.append(str(entry["source"]))  # written once per source
    return state


def _withdraw(state: SessionState, count: int) -> None:
    del state.messages[max(0, len(state.messages) - count) :]
    state.added_tokens = sum(estimate_tokens(m["content"]) for m in state.messages)
    state.last_usage = None


def _apply_compaction(state: SessionState, summary: str, keep: int, system: str) -> None:
    in_turn = len(state.messages) - state.turn_start
    kept = state.messages[len(state.messages) - keep :] if keep else []
    state.messages = History([summary_message(summary), *kept])
    # A compaction in the middle of a turn (the API said the context was too long) keeps the
    # turn's messages that were not folded into the summary withdrawable by /stop.
    state.turn_start = max(1, len(state.messages) - in_turn)
    state.system = system
    state.flushed = False
    state.compactions += 1
    state.last_usage = None
    state.added_tokens = sum(estimate_tokens(m["content"]) for m in state.messages)
