"""``corvid memory history|undo|restore``: the workspace's changes, and going back, as the owner."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path

from agent.workspace.changes import Author
from agent.workspace.history import History
from gateway.contract.errors import ToolError
from gateway.contract.events import OWNER, printable
from gateway.infra.times import local_time
from gateway.ops.home import prepare

TERMINAL = "the owner, in the terminal"


def _open(home: Path, environ: Mapping[str, str]) -> History:
    config = prepare(home, environ)
    return History(config.workspace, config.layout.history, config.tz)


def memory_history(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    history = _open(home, environ)
    try:
        history.look()
        changes = history.changes(OWNER, args.file, limit=max(1, args.limit))
        if not changes:
            print("No changes recorded" + (f" to {args.file}." if args.file else "."))
            return 0
        for change in changes:
            print(change.describe(history.tz))
            if args.diff:
                print(printable(history.diff(change)), end="")
        return 0
    finally:
        history.close()


def memory_undo(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    history = _open(home, environ)
    try:
        change = history.undo(OWNER, Author(TERMINAL))
    except ToolError as exc:
        print(f"corvid: {exc}")
        return 1
    finally:
        history.close()
    print(f"Undid {change.describe(history.tz)}")
    return 0


def memory_restore(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    history = _open(home, environ)
    try:
        change = history.restore(OWNER, args.file, args.at, Author(TERMINAL))
    except ToolError as exc:
        print(f"corvid: {exc}")
        return 1
    finally:
        history.close()
    when = local_time(change.at, history.tz, seconds=True)
    print(f"Restored {args.file} as it was after #{change.id} ({when}).")
    return 0
