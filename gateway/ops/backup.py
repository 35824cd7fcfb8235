"""``corvid backup`` and ``corvid restore``: a home into one archive and back."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from gateway.backups.archive import BackupError, make_backup
from gateway.backups.names import backup_folder, default_name
from gateway.backups.restore import RestoreError, restore, undo_restore
from gateway.config.layout import Layout
from gateway.ops.home import read_config


def backup_dir(home: Path, environ: Mapping[str, str]) -> Path:
    """Where backups go: ``backup.dir``, else ``state/backups``."""
    layout = Layout(home)
    if not layout.config_file.exists():
        return layout.backups
    config, _ = read_config(home, environ)
    return backup_folder(layout, config.backup.dir)


def cmd_backup(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    layout = Layout(home)
    if not layout.home.is_dir():
        print(f"corvid: there is no Corvid home at {home}", file=sys.stderr)
        return 1
    folder = backup_dir(home, environ)
    dest = Path(args.file).expanduser() if args.file else folder / default_name(datetime.now(UTC))
    try:
        manifest = make_backup(layout, dest, backup_dir=folder, with_secrets=args.with_secrets)
    except BackupError as exc:
        print(f"corvid: backup failed: {exc}", file=sys.stderr)
        return 1
    databases = sum(1 for e in manifest.files if e.sqlite)
    size = dest.stat().st_size
    print(
        f"Backed up {home} to {dest} ({len(manifest.files)} files, {databases} databases, "
        f"{size / 1e6:.1f} MB)"
    )
    if args.with_secrets:
        print("It holds your secrets (the environment file and the control page's token).")
    else:
        print(
            f"Secrets are not in it: keep your environment file ({layout.env_file} or your "
            "service's) apart, or back up with --with-secrets."
        )
    return 0


def cmd_restore(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    layout = Layout(home)
    folder = backup_dir(home, environ) if layout.home.is_dir() else layout.backups
    try:
        if args.undo:
            note = undo_restore(layout, folder)
            print(
                f"Swapped {home} with what the last restore (of {note['archive']}) set aside; "
                "`corvid restore --undo` again swaps them back."
            )
            return 0
        if not args.file:
            print("corvid: restore needs a backup file (or --undo)", file=sys.stderr)
            return 2
        manifest = restore(
            layout, Path(args.file).expanduser().absolute(), folder, with_secrets=args.with_secrets
        )
    except RestoreError as exc:
        print(f"corvid: cannot restore: {exc}; nothing was changed", file=sys.stderr)
        return 1
    print(
        f"Restored {home} from {args.file} (made {manifest['created']}, "
        f"{len(manifest['files'])} files checked). The home as it was is in "
        f"{layout.restore_undo}; `corvid restore --undo` puts it back."
    )
    if not manifest.get("with_secrets"):
        print("The secrets were not in the backup: the environment file was left as it was.")
    elif not manifest.get("secrets_taken"):
        print(
            "The backup holds secrets (the environment file, the control page's token and "
            "sign-ins); they were left out and yours kept: restore with --with-secrets to take "
            "them."
        )
    else:
        print("The backup's secrets were taken; yours are in the undo folder.")
    return 0
