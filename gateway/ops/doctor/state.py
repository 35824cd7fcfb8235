"""``corvid doctor``'s look at the files in ``state/``: private to the owner, and each readable."""

from __future__ import annotations

import json
import shlex
import sqlite3
import stat
from pathlib import Path

from gateway.config.layout import Layout
from gateway.contract.ports import Check, Status
from gateway.runtime.journal import unreadable_rows

WARN, FAIL = Status.WARN, Status.FAIL


def check_env_file(layout: Layout) -> list[Check]:
    """``corvid.env`` holds the API keys and tokens: any access for the group or other users is
    a failure (``corvid setup`` writes it 0600)."""
    path = layout.env_file
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return []
    if not mode & 0o077:
        return []
    return [
        Check(
            FAIL,
            "secrets file",
            f"{path.name} ({mode:04o}) can be read by other users; it holds the API keys",
            f"chmod 600 {shlex.quote(str(path))}",
        )
    ]


def check_state_files(layout: Layout) -> list[Check]:
    """Files Corvid writes as 0600 (and sessions/ as 0700). ``state/`` being 0700 already keeps
    them private, so a loose mode here is a warning, not a failure."""
    state, sessions = layout.state, layout.sessions
    if not state.is_dir():
        return []
    paths = [layout.pairing, layout.jobs, sessions]
    try:
        if sessions.is_dir():
            paths.extend(sorted(sessions.glob("*.jsonl")))
    except OSError:
        pass
    loose: list[str] = []
    for path in paths:
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
        except OSError:
            continue
        if mode & 0o077:
            loose.append(f"{path.relative_to(state)} ({mode:04o})")
    if not loose:
        return []
    shown = ", ".join(loose[:3]) + (f" and {len(loose) - 3} more" if len(loose) > 3 else "")
    return [
        Check(
            WARN,
            "state files",
            f"readable by other users: {shown}",
            f"chmod -R go-rwx {shlex.quote(str(state))}",
        )
    ]


def _read_only(path: Path) -> sqlite3.Connection:
    wal = any(Path(f"{path}{end}").exists() for end in ("-wal", "-shm"))
    uri = f"{path.absolute().as_uri()}?{'mode=ro' if wal else 'immutable=1'}"
    return sqlite3.connect(uri, uri=True)


def _sqlite_problem(path: Path) -> str | None:
    """Why a SQLite file cannot be read, or None; opened read only, nothing is written."""
    if not path.exists():
        return None
    try:
        db = _read_only(path)
        try:
            found = db.execute("PRAGMA quick_check").fetchone()[0]
        finally:
            db.close()
    except sqlite3.Error as exc:
        return str(exc)
    return None if found == "ok" else f"damaged: {found}"


def _check_journal_rows(path: Path) -> list[Check]:
    """Messages in a readable journal that cannot be read back (a hand edit, a bad sector)."""
    try:
        db = _read_only(path)
        try:
            bad = unreadable_rows(db)
        finally:
            db.close()
    except sqlite3.Error:
        return []  # said by the file's own check
    if not bad:
        return []
    message = f"{bad} message(s) in state/gateway.sqlite cannot be read (a damaged or edited row)"
    fix = "nothing to do: corvid run skips them, and corvid status lists replies never sent"
    return [Check(WARN, "journal", message, fix)]


def _json_problem(path: Path) -> str | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None if isinstance(data, dict) else "not a JSON object"


def check_state_data(layout: Layout) -> list[Check]:
    """Every state file opened (read only): what cannot be read, what that means, the fix."""
    if not layout.state.is_dir():
        return []
    moves = "corvid run moves it aside when it starts and goes on with a new one"
    files = [
        (layout.journal, _sqlite_problem, FAIL, "messages owed an answer", moves),
        (layout.ledger, _sqlite_problem, FAIL, "which runs were sent", moves),
        (layout.usage, _sqlite_problem, FAIL, "what model calls cost, which caps count", moves),
        (layout.history, _sqlite_problem, FAIL, "the earlier versions of files", moves),
        (layout.actions, _sqlite_problem, FAIL, "the approvals trail", moves),
        (layout.jobs, _json_problem, FAIL, "the reminders made in chat", moves),
        (layout.pairing, _json_problem, FAIL, "guests' approvals", moves),
        (layout.index, _sqlite_problem, WARN, "nothing: it is derived", "corvid memory reindex"),
        (
            layout.embeddings,
            _sqlite_problem,
            WARN,
            "the memory's vectors, which can be made again",
            "corvid run starts a new one and embeds the memory again",
        ),
    ]
    checks = []
    for path, probe, status, holds, fix in files:
        name = path.name
        problem = probe(path)
        if problem is not None:
            message = f"state/{name} cannot be read ({problem}); it holds {holds}"
            checks.append(Check(status, name, message, fix))
        elif path == layout.journal and path.exists():
            checks += _check_journal_rows(path)
    return checks
