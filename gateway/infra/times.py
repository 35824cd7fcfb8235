"""Times as the owner reads them: in the configured time zone, with the zone's short name."""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo


def local_time(when: datetime, tz: tzinfo, *, seconds: bool = False, zone: bool = True) -> str:
    """``when`` in ``tz`` as ``YYYY-MM-DD HH:MM[:SS] ZONE``; a naive ``when`` is UTC."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    shown = when.astimezone(tz)
    text = f"{shown:%Y-%m-%d %H:%M:%S}" if seconds else f"{shown:%Y-%m-%d %H:%M}"
    return f"{text} {shown:%Z}" if zone else text


def local_iso(iso: str, tz: tzinfo, *, seconds: bool = False) -> str:
    """``local_time`` of an ISO timestamp as the state files keep them ("" for none, and the
    text as it is when it is not one)."""
    if not iso:
        return ""
    try:
        when = datetime.fromisoformat(iso)
    except ValueError:
        return iso
    return local_time(when, tz, seconds=seconds)


def local_stamp(ts: float, tz: tzinfo) -> str:
    """``local_time`` of a POSIX timestamp (a file's modification time)."""
    return local_time(datetime.fromtimestamp(ts, UTC), tz)
