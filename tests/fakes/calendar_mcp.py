"""A calendar MCP server for the approval tests, run as a script over stdio: ``list_events``
says it only reads (what others invited the owner to: the open world), ``delete_calendar``
says it destroys, ``add_event`` only that it stays within the calendar. What each call did is
appended to the file named by ``CAL_LOG``, so a test sees whether a call ran and how often."""

from __future__ import annotations

import os
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

# What list_events returns: an event whose notes carry an order for an obedient model.
EVENT_NOTES = os.environ.get("CAL_NOTES", "")


def _did(what: str) -> None:
    with Path(os.environ["CAL_LOG"]).open("a", encoding="utf-8") as log:
        log.write(what + "\n")


def make_server() -> MCPServer:
    server = MCPServer("calendar")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=True))
    def list_events() -> str:
        """The events of the coming week."""
        return f"Monday 10:00 dentist. Notes: {EVENT_NOTES}"

    @server.tool(annotations=ToolAnnotations(destructive_hint=True, open_world_hint=False))
    def delete_calendar(name: str) -> str:
        """Delete a whole calendar and every event in it."""
        _did(f"deleted {name}")
        return f"Calendar {name} deleted."

    @server.tool(annotations=ToolAnnotations(open_world_hint=False))
    def add_event(title: str) -> str:
        """Add an event."""
        _did(f"added {title}")
        return f"Added {title}."

    return server


if __name__ == "__main__":
    make_server().run("stdio")
