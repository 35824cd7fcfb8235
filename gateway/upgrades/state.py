"""The versions of the state files, checked at start: older carried forward, newer refused."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

from agent.usage import ledger as usage
from agent.workspace import history
from gateway.config.layout import Layout
from gateway.infra.atomic import write_atomic
from gateway.runtime import journal
from gateway.scheduling import ledger


def databases(layout: Layout) -> dict[Path, int]:
    """The schema version this Corvid writes, by database (each module stamps a database it
    makes: gateway/statefiles.stamp_schema)."""
    return {
        layout.journal: journal.SCHEMA_VERSION,
        layout.ledger: ledger.SCHEMA_VERSION,
        layout.usage: usage.SCHEMA_VERSION,
        layout.history: history.SCHEMA_VERSION,
    }


# The version of the JSON state files and transcripts (Layout.state_version).
STATE_LAYOUT = 1

# How a database reaches a version from the one before: (file name, version) → the change.
# Version 1 is what every Corvid before versions wrote: each database's tables are made (when
# missing) by the module that opens it, so reaching it only records the number.
DatabaseStep = Callable[[sqlite3.Connection], None]
DATABASE_STEPS: dict[tuple[str, int], DatabaseStep] = {}
# How the JSON state reaches a version from the one before.
LayoutStep = Callable[[Path], None]
LAYOUT_STEPS: dict[int, LayoutStep] = {}


class NewerState(Exception):
    """State written by a newer Corvid; the message names each file and what to do."""


def upgrade_state(layout: Layout) -> list[str]:
    """Check every versioned state file, refuse (``NewerState``) before changing anything if
    one is newer than this Corvid, then carry the older ones forward. Returns a sentence per
    file changed."""
    known = databases(layout)
    found: dict[Path, int] = {}
    for path in known:
        if (version := _user_version(path)) is not None:
            found[path] = version
    state_layout = _layout_version(layout.state_version)
    newer = [
        f"state/{path.name} has schema {v}, this Corvid knows up to {known[path]}"
        for path, v in sorted(found.items())
        if v > known[path]
    ]
    if state_layout > STATE_LAYOUT:
        newer.append(
            f"state/{layout.state_version.name} says {state_layout}, "
            f"this Corvid knows {STATE_LAYOUT}"
        )
    if newer:
        raise NewerState(
            "the state was written by a newer Corvid ("
            + "; ".join(newer)
            + "): install that version again, or restore a backup made before it "
            "(corvid restore FILE)"
        )
    changes = []
    for path, version in sorted(found.items()):
        if version < known[path]:
            _upgrade_database(path, version, known[path])
            changes.append(f"state/{path.name}: schema {version} → {known[path]}")
    if layout.state.is_dir() and state_layout < STATE_LAYOUT:
        # Made just now (empty folders, and the lock of the process starting): nothing to
        # carry forward, nothing to say.
        fresh = not any(
            p.is_file() and p not in layout.only_while_running for p in layout.state.rglob("*")
        )
        for step in range(state_layout + 1, STATE_LAYOUT + 1):
            if step in LAYOUT_STEPS and not fresh:
                LAYOUT_STEPS[step](layout.state)
        write_atomic(layout.state_version, json.dumps({"layout": STATE_LAYOUT}) + "\n")
        if not fresh:
            changes.append(f"state/: layout {state_layout} → {STATE_LAYOUT}")
    return changes


def _user_version(path: Path) -> int | None:
    """A database's schema version; None when there is none to read (missing, damaged: the
    module that opens it deals with that)."""
    if not path.is_file():
        return None
    try:
        db = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True, timeout=10)
        try:
            return int(db.execute("PRAGMA user_version").fetchone()[0])
        finally:
            db.close()
    except sqlite3.DatabaseError:
        return None


def _upgrade_database(path: Path, version: int, target: int) -> None:
    db = sqlite3.connect(path, isolation_level=None, timeout=10)
    try:
        db.execute("BEGIN IMMEDIATE")
        try:
            for to in range(version + 1, target + 1):
                step = DATABASE_STEPS.get((path.name, to))
                if step is not None:
                    step(db)
            db.execute(f"PRAGMA user_version = {target}")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
    finally:
        db.close()


def _layout_version(path: Path) -> int:
    """``state/layout.json``'s version; 0 when there is none (state from before versions)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return 0
    version = data.get("layout") if isinstance(data, dict) else None
    return version if isinstance(version, int) and not isinstance(version, bool) else 0
