"""``corvid mcp list``: every configured MCP server, its state and its tools."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gateway.contract.events import printable
from gateway.ops.home import read_config
from gateway.services.status import server_lines


def mcp_list(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    from gateway.services.control import ask_running

    config, unreadable = read_config(home, environ)
    try:
        report = ask_running(config.layout.control_socket, {"cmd": "status"}, 10)["report"]
        servers: list[dict[str, Any]] = report.get("mcp", [])
        where = "the running gateway"
    except (ConnectionError, TimeoutError, KeyError):
        if unreadable is not None:  # no gateway to ask, and the servers cannot be started
            raise unreadable from None
        servers = asyncio.run(probe_all(config.mcp.servers, config.layout.mcp, args.timeout))
        where = "a test start of each server"
    if not servers:
        print("No MCP servers are configured (mcp.servers in config.yaml).")
        return 0
    if args.json:
        print(json.dumps(servers, indent=2, ensure_ascii=False))
    else:
        print(f"MCP servers (from {where}):")
        print(printable("\n".join(server_lines(servers, with_tools=True))))
    failed = [s for s in servers if s["state"] not in ("ready", "off")]
    if failed:
        print(f"corvid: {len(failed)} server(s) not ready", file=sys.stderr)
    return 1 if failed else 0


async def probe_all(servers: Mapping[str, Any], logs: Path, limit: float) -> list[dict[str, Any]]:
    """Start each server once, at the same time, and say what it offers."""
    from agent.mcp.probe import probe

    views = await asyncio.gather(*(probe(n, s, logs, limit) for n, s in servers.items()))
    return [v.as_dict() for v in views]
