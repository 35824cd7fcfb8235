"""``corvid pairing``: pending codes and the people approved; approving, denying, revoking."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from gateway.contract.events import shown
from gateway.ops.home import read_config

if TYPE_CHECKING:
    from channels.pairing import PairingStore


def _pairing(home: Path, environ: Mapping[str, str]) -> PairingStore:
    from dataclasses import asdict

    from channels.pairing import PairingStore
    from gateway.services.control import tell

    layout = read_config(home, environ)[0].layout
    store = PairingStore(layout.pairing)
    sock = layout.control_socket  # the running gateway updates its notice
    store.on_handled = lambda req, ok: tell(
        sock, {"cmd": "paired", "request": asdict(req), "approved": ok}
    )
    return store


def pairing_list(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    from channels.pairing import PairingError

    store = _pairing(home, environ)
    try:
        pending = store.pending()
        approved = store.approved()
    except PairingError as exc:
        print(f"corvid: {exc} (corvid run moves it aside when it starts)", file=sys.stderr)
        return 1
    now = store.now()
    if pending:
        print("Pending (approve with `corvid pairing approve CODE`):")
        for req in pending:
            left = max(1, round((req.expires - now) / 60))
            who = f"{shown(req.name)} " if req.name else ""
            print(f"  {req.code}  {req.channel} user {who}(id {req.user_id}), {left} min left")
        print("(deny one with `corvid pairing deny CODE`, all with `corvid pairing clear`)")
    else:
        print("No pending pairing codes.")
    if any(approved.values()):
        print("Approved:")
        for channel, users in sorted(approved.items()):
            for uid, info in sorted(users.items()):
                name = shown(str(info.get("name") or ""))
                print(f"  {channel} user {name + ' ' if name else ''}(id {uid})")
    return 0


def pairing_deny(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    from channels.pairing import PairingError

    try:
        req = _pairing(home, environ).deny(args.code)
    except PairingError as exc:
        print(f"corvid: {exc}", file=sys.stderr)
        return 1
    print(f"Denied {req.code} ({req.channel} user {shown(req.name)}, id {req.user_id}).")
    return 0


def pairing_clear(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    from channels.pairing import PairingError

    try:
        dropped = _pairing(home, environ).clear()
    except PairingError as exc:
        print(f"corvid: {exc}", file=sys.stderr)
        return 1
    print(f"Dropped {dropped} pending pairing request(s).")
    return 0


def pairing_approve(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    from channels.pairing import PairingError

    store = _pairing(home, environ)
    try:
        req = store.approve(args.code)
    except PairingError as exc:
        print(f"corvid: {exc}", file=sys.stderr)
        return 1
    who = f"{shown(req.name)} (id {req.user_id})" if req.name else f"id {req.user_id}"
    print(
        f"Approved {req.channel} user {who}. Their next message will be answered, in a chat of "
        "their own that does not see your long-term memory (MEMORY.md). To give someone the "
        f"owner's access instead, add their id to channels.{req.channel}.allow_from."
    )
    return 0


def pairing_revoke(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    from channels.pairing import PairingError

    store = _pairing(home, environ)
    try:
        removed = store.revoke(args.channel, args.user_id)
    except PairingError as exc:
        print(f"corvid: {exc}", file=sys.stderr)
        return 1
    if not removed:
        print(
            f"{args.channel} user {args.user_id} was not approved by pairing "
            "(users in allow_from are removed by editing config.yaml).",
            file=sys.stderr,
        )
        return 1
    print(f"Revoked {args.channel} user {args.user_id}.")
    return 0
