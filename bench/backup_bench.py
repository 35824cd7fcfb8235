"""Backup and restore benchmark, run on demand: ``python bench/backup_bench.py``. Prints a table.

Builds a home the size of a year of steady use (365 daily logs, 200 transcripts of 500 lines,
a 20,000-row journal and a 5,000-row ledger in WAL mode), then times ``make_backup`` while a
writer keeps appending to a database, and a restore into a new home (unpack, every checksum and
database check, the swap), each the median of three.
"""

from __future__ import annotations

import json
import random
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gateway.backups.archive import make_backup
from gateway.backups.restore import restore
from gateway.config.home import init_home
from gateway.config.layout import Layout


def build_home(root: Path) -> Layout:
    rng = random.Random(7)
    layout = Layout(root / "home")
    init_home(layout.home, {})
    words = [f"w{i}" for i in range(2000)]
    for day in range(365):
        text = "\n".join(" ".join(rng.choices(words, k=12)) for _ in range(40))
        (
            layout.workspace / "memory" / f"2026-{day // 28 + 1:02d}-{day % 28 + 1:02d}.md"
        ).write_text(text)
    for n in range(200):
        lines = [
            json.dumps(
                {"t": "msg", "msg": {"role": "user", "content": " ".join(rng.choices(words, k=30))}}
            )
            for _ in range(500)
        ]
        (layout.sessions / f"telegram:private:{n}.jsonl").write_text("\n".join(lines) + "\n")
    for name, rows in (("gateway.sqlite", 20_000), ("scheduler.sqlite", 5_000)):
        db = sqlite3.connect(layout.state / name)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)")
        db.executemany(
            "INSERT INTO t (body) VALUES (?)",
            [(" ".join(rng.choices(words, k=20)),) for _ in range(rows)],
        )
        db.commit()
        db.close()
    return layout


def size_of(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def writer(path: Path, stop: threading.Event) -> None:
    """Another connection writing all the while, as the gateway does."""
    db = sqlite3.connect(path, timeout=30)
    while not stop.is_set():
        db.execute("INSERT INTO t (body) VALUES ('written during the backup')")
        db.commit()
    db.close()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        layout = build_home(root)
        home_mb = size_of(layout.home) / 1e6
        backups, restores = [], []
        for i in range(3):
            stop = threading.Event()
            thread = threading.Thread(target=writer, args=(layout.journal, stop))
            thread.start()
            archive = root / f"b{i}.tar.gz"
            started = time.perf_counter()
            make_backup(layout, archive, backup_dir=layout.backups)
            backups.append(time.perf_counter() - started)
            stop.set()
            thread.join()
            fresh = Layout(root / f"fresh{i}")
            started = time.perf_counter()
            restore(fresh, archive, fresh.backups)
            restores.append(time.perf_counter() - started)
        archive_mb = archive.stat().st_size / 1e6
    print("| metric | value |")
    print("|---|---|")
    print(f"| home size | {home_mb:.1f} MB |")
    print(f"| archive size | {archive_mb:.1f} MB |")
    backup_s, restore_s = statistics.median(backups), statistics.median(restores)
    print(f"| backup, a database written meanwhile, median of 3 | {backup_s:.2f} s |")
    print(f"| restore into a new home (checked whole), median of 3 | {restore_s:.2f} s |")


if __name__ == "__main__":
    main()
