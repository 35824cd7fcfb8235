"""``corvid status``: sessions, their context use, recent problems, undelivered messages."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from agent.sessions.state import SessionState
from agent.sessions.transcript import SessionStore
from gateway.config.loader import Config
from gateway.contract.events import SessionKey
from gateway.infra.times import local_iso
from gateway.runtime.journal import Journal
from gateway.services import logs
from gateway.services.index_status import index_line
from gateway.services.naming import names

MAX_SESSIONS = 20
PREVIEW_CHARS = 60


Loaded = Callable[[SessionKey], SessionState | None]


@dataclass(frozen=True)
class Figures:
    """One session as the status report and the control page show it."""

    key: SessionKey
    turns: int
    context_tokens: int
    compactions: int
    cache_share: float | None  # of all input tokens, the share read from the prompt cache
    last_active: float  # the transcript's modification time


class SessionFigures:
    """Each session's figures, read from its transcript once per change of the file (its size
    and modification time), so a report stays cheap however many sessions there are."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self._seen: dict[SessionKey, tuple[tuple[int, int], Figures | None]] = {}

    def all(
        self, loaded: Callable[[SessionKey], SessionState | None] | None = None
    ) -> list[Figures]:
        """Newest first; ``loaded`` gives the sessions the running process holds."""
        out = []
        keys = self.store.session_keys()
        # Sessions ended by /new (or gone) since the last report are forgotten.
        for gone in self._seen.keys() - set(keys):
            del self._seen[gone]
        for key in keys:
            try:
                st = self.store.path(key).stat()
            except FileNotFoundError:  # moved aside by /new meanwhile
                continue
            stamp = (st.st_size, st.st_mtime_ns)
            seen = self._seen.get(key)
            if seen is None or seen[0] != stamp:
                state = (loaded(key) if loaded is not None else None) or self.store.read(key)
                seen = (stamp, None if state is None else _figures(state, st.st_mtime))
                self._seen[key] = seen
            if seen[1] is not None:
                out.append(seen[1])
        out.sort(key=lambda f: f.last_active, reverse=True)
        return out


def _figures(state: SessionState, mtime: float) -> Figures:
    u = state.usage_total
    total = u.input + u.cache_read + u.cache_write
    share = u.cache_read / total if total else None
    return Figures(state.key, state.turns, state.context_tokens, state.compactions, share, mtime)


@dataclass(frozen=True)
class Live:
    """What only the running process knows."""

    pid: int
    uptime_seconds: int
    channels: list[dict[str, Any]]
    loaded: Callable[[SessionKey], SessionState | None]
    busy: Callable[[SessionKey], bool]
    queued: Callable[[SessionKey], int]


def report(
    config: Config,
    store: SessionStore,
    journal: Journal | None,
    live: Live | None = None,
    figures: SessionFigures | None = None,
) -> dict[str, Any]:
    window = config.llm.context_window
    figures = figures or SessionFigures(store)
    found = figures.all(live.loaded if live is not None else None)
    named = names(config)
    sessions = [
        {
            "key": str(f.key),
            "name": named.of_key(str(f.key)),
            "private": f.key.private,
            "turns": f.turns,
            "context_tokens": f.context_tokens,
            "context_pct": round(100 * f.context_tokens / window, 1),
            "compactions": f.compactions,
            "last_active": _iso(f.last_active),
            "running": live.busy(f.key) if live is not None else False,
            "queued": live.queued(f.key) if live is not None else 0,
        }
        for f in found[:MAX_SESSIONS]
    ]
    out: dict[str, Any] = {
        "running": live is not None,
        "timezone": config.timezone,  # the times below are UTC; people read them in this
        "model": config.llm.model,
        "context_window": window,
        "sessions_total": len(found),
        "sessions": sessions,
        "unanswered": 0,
        "undelivered": [],
        "problems": [],
    }
    if journal is not None:
        out["unanswered"] = len(journal.unanswered())
        out["undelivered"] = [
            {
                "key": str(row.out.key),
                "name": named.of_key(str(row.out.key)),
                "status": row.status,
                "error": row.error,
                "when": row.updated,
                "text": _preview(row.out.text),
            }
            for row in journal.undelivered(10)
        ]
    if live is not None:
        out["pid"] = live.pid
        out["uptime_seconds"] = live.uptime_seconds
        out["channels"] = live.channels
        out["problems"] = list(logs.RECENT.records) if logs.RECENT is not None else []
    return out


def report_from_files(config: Config) -> dict[str, Any]:
    """The report without a running gateway: read only, nothing repaired or moved."""
    path = config.layout.journal
    try:
        journal = Journal(path, repair=False) if path.exists() else None
    except sqlite3.DatabaseError as exc:
        out = report(config, SessionStore(config.layout.sessions), None)
        out["problems"] = [
            {
                "ts": "",
                "level": "ERROR",
                "logger": "status",
                "msg": f"state/gateway.sqlite cannot be read ({exc}); corvid run moves it "
                "aside when it starts",
            }
        ]
        return out
    try:
        return report(config, SessionStore(config.layout.sessions), journal)
    finally:
        if journal is not None:
            journal.close()


def render(r: dict[str, Any]) -> str:
    tz = zone_of(r)
    lines = []
    if r["running"]:
        up = duration(r["uptime_seconds"])
        lines.append(f"Corvid is running (pid {r['pid']}, up {up}), model {r['model']}.")
        for ch in r["channels"]:
            lines.append(f"  {ch['name']}: {ch['state']}")
            if pool := ch.get("pool"):
                lines.append(
                    f"    requests to the platform under way: {pool['requests']}"
                    + (f"; client replaced {pool['replaced']} time(s)" if pool["replaced"] else "")
                )
        if r.get("mcp"):
            lines += ["", "MCP servers:", *server_lines(r["mcp"])]
        if r.get("memory_search"):
            lines += ["", index_line(r["memory_search"])]
    else:
        lines.append("Corvid is not running; this is what its files in state/ say.")
    lines.append("")
    shown, total = len(r["sessions"]), r["sessions_total"]
    more = f" (the {shown} most recent)" if total > shown else ""
    lines.append(f"Sessions: {total}{more}")
    for s in r["sessions"]:
        now = ""
        if s["running"]:
            now = ", answering" + (f", {s['queued']} queued" if s["queued"] else "")
        lines.append(
            f"  {s.get('name') or s['key']} ({s['key']}): context {s['context_tokens']:,} tokens"
            f" ({s['context_pct']:.0f}%), {s['turns']} turns, last "
            f"{local_iso(s['last_active'], tz)}{now}"
        )
    if r["unanswered"]:
        lines += ["", f"Messages waiting for an answer: {r['unanswered']}"]
    lines += ["", f"Undelivered messages: {len(r['undelivered'])}"]
    for u in r["undelivered"]:
        why = u["error"] or u["status"]
        if u["status"] == "waiting":
            why = f"waiting to be sent again ({why})"
        lines.append(f"  {local_iso(u['when'], tz)} {u.get('name') or u['key']}: {why}")
        lines.append(f"    {u['text']!r}")
    if r["running"] or r["problems"]:
        lines += ["", f"Recent warnings and errors: {len(r['problems'])}"]
        for p in r["problems"][-10:]:
            when = local_iso(p["ts"], tz, seconds=True)
            lines.append(f"  {when + ' ' if when else ''}{p['level']} {p['msg']}")
    return "\n".join(lines)


def server_lines(servers: Sequence[Mapping[str, Any]], *, with_tools: bool = False) -> list[str]:
    """One line per server (and one per tool with ``with_tools``), for people."""
    lines = []
    for s in servers:
        who = "every chat" if s["shared"] else "private chats only"
        state = s["state"]
        if s["error"]:
            state += f": {s['error']}"
        restarts = f", restarted {s['restarts']}x" if s["restarts"] else ""
        lines.append(
            f"  {s['name']} ({s['transport']}, {who}): {state}, {len(s['tools'])} tool(s){restarts}"
        )
        if with_tools:
            lines += [f"    {tool}" for tool in s["tools"]]
            if s["skipped"]:
                lines.append(f"    left out (name not allowed): {', '.join(s['skipped'])}")
    return lines


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"


def zone_of(r: Mapping[str, Any]) -> tzinfo:
    """The time zone a report's times are shown in (UTC for a report without one)."""
    try:
        return ZoneInfo(str(r.get("timezone") or "UTC"))
    except (ZoneInfoNotFoundError, ValueError):
        return UTC


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


def duration(seconds: int) -> str:
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"
