"""``corvid loops``: each audience's loops, read from the workspace."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from dataclasses import asdict
from datetime import datetime
from pathlib import Path

from agent.loops.store import Loops, loops_path, open_loops
from agent.loops.views import describe, lateness
from gateway.ops.home import read_config


def loops(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    config, _ = read_config(home, environ)
    books = Loops(config.workspace.resolve()).every()
    now = datetime.now(config.tz)
    if getattr(args, "json", False):
        rows = [
            {
                "chat": audience.chat,
                "file": loops_path(audience),
                "loops": [
                    {**asdict(lp), "quote": asdict(lp.quote) if lp.quote else None}
                    for lp in (book.loops() if args.all else open_loops(book))
                ],
                "problems": book.problems,
            }
            for audience, book in books
        ]
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    printed = False
    for audience, book in books:
        shown = book.loops() if args.all else open_loops(book)
        if not shown and not book.problems:
            continue
        printed = True
        whose = "Yours" if audience.private else f"The chat {audience.chat}"
        print(f"{whose} ({loops_path(audience)}):")
        for loop in shown:
            late = "!" if lateness(loop, now) == " (overdue)" else " "
            print(f" {late} {describe(loop, now)}")
        for problem in book.problems:
            print(f"   not read as a loop: {problem}")
        print()
    if not printed:
        print("No open loops." if not args.all else "No loops.")
    return 0
