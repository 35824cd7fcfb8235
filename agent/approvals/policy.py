"""What a tool may do without asking (``allow``, ``ask``, ``deny``), MCP tools by their hints."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from agent.settings import setting
from gateway.contract.errors import ConfigError


class Policy(StrEnum):
    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"


POLICIES = tuple(p.value for p in Policy)


def from_annotations(annotations: Any) -> Policy:
    """An MCP tool's default: a tool that says it only reads runs; one that may change or
    delete something, reach the open world, or says nothing about itself asks first."""
    if annotations is None:
        return Policy.ASK
    if isinstance(annotations, Mapping):
        read_only = annotations.get("readOnlyHint", annotations.get("read_only_hint"))
    else:
        read_only = getattr(annotations, "read_only_hint", None)
    return Policy.ALLOW if read_only is True else Policy.ASK


def open_world(annotations: Any) -> bool:
    """Does an MCP tool's answer bring in text from outside the owner's world (the web, other
    people's messages)? Unless it says otherwise, as the protocol's default has it."""
    if annotations is None:
        return True
    if isinstance(annotations, Mapping):
        hint = annotations.get("openWorldHint", annotations.get("open_world_hint"))
    else:
        hint = getattr(annotations, "open_world_hint", None)
    return hint is not False


def chosen(
    name: str, default: Policy, overrides: Mapping[str, str], server: str | None = None
) -> Policy:
    """A tool's policy: the owner's word for the tool by its full name, else for its server
    (``<server>__*``), else its default."""
    given = overrides.get(name)
    if given is None and server is not None:
        given = overrides.get(f"{server}__*")
    return Policy(given) if given is not None else default


@dataclass(frozen=True)
class ApprovalSettings:
    """``approvals`` in config.yaml: how long a turn waits for the owner's answer, and the
    owner's policy for tools by name (``web_fetch``, ``calendar__delete_event``) or for all of
    one MCP server's (``calendar__*``)."""

    timeout: float = setting(300.0, minimum=5)
    tools: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name, value in self.tools.items():
            if value not in POLICIES:
                raise ConfigError(
                    f"approvals.tools.{name}", f"expected one of {', '.join(POLICIES)}"
                )
