"""``corvid actions`` (the audit trail) and ``corvid approvals`` (the requests waiting)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agent.approvals.audit import always_allowed, forget_always, recent
from gateway.contract.events import printable, shown
from gateway.infra.times import local_iso
from gateway.ops.home import read_config
from gateway.services.naming import names


def actions(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    config, _ = read_config(home, environ)
    trail = recent(config.layout.actions, args.limit)
    if args.json:
        doc = {
            "actions": [a.as_dict() for a in trail],
            "always_allowed": always_allowed(config.layout.actions),
        }
        print(json.dumps(doc, indent=2, ensure_ascii=False))
        return 0
    if not trail:
        print("Nothing recorded yet: no approval was asked and no command was run.")
    named = names(config)
    for action in reversed(trail):
        when = local_iso(action.at, config.tz, seconds=True)
        line = f"{when}  {action.event:<10} {action.tool}  in {named.of_key(action.chat)}"
        print(line + (f"  [{action.request}]" if action.request else ""))
        if action.arguments:
            more = " (whole: corvid actions --json)" if len(action.arguments) > 300 else ""
            print(f"    arguments: {shown(action.arguments, 300)}{more}")
        if action.sources:
            print(f"    had read: {shown(action.sources, 300)}")
        if action.detail:
            print(f"    {shown(action.detail, 300)}")
    allowed = always_allowed(config.layout.actions)
    if allowed:
        print(
            "Allowed always (in conversations that read nothing from outside): "
            + ", ".join(allowed)
        )
    return 0


def approvals(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    answer = _ask(home, environ, {"cmd": "approvals"})
    if answer is None:
        return 1
    waiting: list[dict[str, Any]] = answer.get("waiting") or []
    if not waiting:
        print("No request is waiting for your answer.")
    for req in waiting:
        # Whole, as the owner's chat shows it: what is approved is what runs.
        print(f"{req['id']}  {req['tool']}  from {req['chat']}")
        print(f"    arguments: {printable(str(req['arguments']))}")
        if req.get("why"):
            print(f"    asked because: {printable(str(req['why']))}")
        if req.get("sources"):
            print(f"    had read: {printable(', '.join(req['sources']))}")
        if req.get("diff"):
            print("    change:")
            for line in str(req["diff"]).splitlines():
                print(f"      {printable(line)}")
    if waiting:
        print("Answer with: corvid approvals approve ID [--always] | corvid approvals deny ID")
    return 0


def approvals_approve(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    return _decide(home, environ, args.request_id, "always" if args.always else "once")


def approvals_deny(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    return _decide(home, environ, args.request_id, "deny")


def approvals_forget(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    config, _ = read_config(home, environ)
    if not forget_always(config.layout.actions, args.tool):
        print(f"corvid: {args.tool} is not allowed always", file=sys.stderr)
        return 1
    print(f"{args.tool} asks again from now on.")
    return 0


def _decide(home: Path, environ: Mapping[str, str], request_id: str, answer: str) -> int:
    reply = _ask(home, environ, {"cmd": "decide", "id": request_id, "answer": answer})
    if reply is None:
        return 1
    if not reply.get("ok"):
        print(f"corvid: not taken: {reply.get('error')}", file=sys.stderr)
        return 1
    print(
        {
            "once": "Approved once.",
            "always": "Approved, and allowed from now on.",
            "deny": "Denied.",
        }[answer]
    )
    return 0


def _ask(home: Path, environ: Mapping[str, str], request: dict[str, Any]) -> dict[str, Any] | None:
    from gateway.services.control import ask_running

    config, _ = read_config(home, environ)
    try:
        return ask_running(config.layout.control_socket, request, 10)
    except (ConnectionError, TimeoutError):
        print(
            "corvid: Corvid is not running here; requests to act wait in the gateway "
            "(`corvid run`).",
            file=sys.stderr,
        )
        return None
