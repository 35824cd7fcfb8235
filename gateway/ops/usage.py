"""``corvid usage``: what model calls cost, grouped by day, chat, job, model or purpose."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from datetime import date, datetime, timedelta
from pathlib import Path

from gateway.ops.home import read_config
from gateway.services.naming import names
from gateway.usage.report import FIGURES, figures, money

DEFAULT_DAYS = 30


def usage(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    config, _ = read_config(home, environ)
    since = args.since or (datetime.now(config.tz).date() - timedelta(days=DEFAULT_DAYS - 1))
    path = config.layout.usage
    if not path.exists():
        rows = []
    else:
        from agent.usage.ledger import UsageLedger

        ledger = UsageLedger(path, config.tz)
        try:
            rows = ledger.totals(args.by, since.isoformat())
        finally:
            ledger.close()
    if args.json:
        print(json.dumps({"by": args.by, "since": since.isoformat(), "rows": rows}, indent=2))
        return 0
    what = {"chat": "chat", "job": "job (-: not a job)"}.get(args.by, args.by)
    print(f"Model calls since {since.isoformat()}, by {what}:")
    if not rows:
        print("  none")
        return 0
    head = ("", *(f.lower() for f in FIGURES))
    named = names(config)

    def label(key: object) -> str:
        if key is None:
            return "-"
        return named.of_audience(str(key)) if args.by == "chat" else str(key)

    table = [head] + [(label(r["key"]), *figures(r)) for r in rows]
    total = sum(r["cost"] for r in rows)
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    for row in table:
        first = row[0].ljust(widths[0])
        print(
            "  "
            + "  ".join([first, *(c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True))])
        )
    print(f"  total {money(total)}")
    return 0


def day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a day (YYYY-MM-DD): {text!r}") from None
