"""Tool policies: MCP defaults from the hints a server publishes, and the owner's overrides."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_types import Tool as McpTool
from mcp_types import ToolAnnotations

from agent.approvals.audit import AuditLog, always_allowed, forget_always, recent
from agent.approvals.policy import Policy, chosen, from_annotations, open_world
from agent.mcp.wire import mcp_tool
from gateway.config.loader import parse_config
from gateway.contract.errors import ConfigError


async def _never(ctx: object, args: object) -> str:
    raise AssertionError("not called")


def _tool(annotations: ToolAnnotations | None) -> McpTool:
    return McpTool(name="t", input_schema={"type": "object"}, annotations=annotations)


@pytest.mark.parametrize(
    ("annotations", "policy", "outside"),
    [
        (None, Policy.ASK, True),  # says nothing: asks, and its answer is from outside
        (ToolAnnotations(read_only_hint=True), Policy.ALLOW, True),
        (ToolAnnotations(read_only_hint=True, open_world_hint=False), Policy.ALLOW, False),
        (ToolAnnotations(destructive_hint=True, open_world_hint=False), Policy.ASK, False),
        (ToolAnnotations(read_only_hint=False), Policy.ASK, True),
        (ToolAnnotations(open_world_hint=True), Policy.ASK, True),
    ],
)
def test_an_mcp_tool_runs_without_asking_only_when_it_says_it_only_reads(
    annotations: ToolAnnotations | None, policy: Policy, outside: bool
) -> None:
    tool = mcp_tool("cal", _tool(annotations), _never, shared=False)
    assert tool is not None
    assert tool.policy is policy and tool.server == "cal"
    assert (tool.outside is not None) is outside
    assert from_annotations(annotations) is policy and open_world(annotations) is outside


def test_the_owner_overrides_a_tool_by_name_or_a_whole_server() -> None:
    overrides = {"cal__*": "deny", "cal__list": "allow", "web_fetch": "ask"}
    assert chosen("cal__list", Policy.ASK, overrides, "cal") is Policy.ALLOW
    assert chosen("cal__delete", Policy.ASK, overrides, "cal") is Policy.DENY
    assert chosen("web_fetch", Policy.ALLOW, overrides) is Policy.ASK
    assert chosen("memory_get", Policy.ALLOW, overrides) is Policy.ALLOW
    assert chosen("mail__send", Policy.ASK, overrides, "mail") is Policy.ASK


def test_a_policy_that_is_not_one_names_its_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"approvals\.tools\.web_fetch: expected one of"):
        parse_config({"approvals": {"tools": {"web_fetch": "maybe"}}}, home=tmp_path, environ={})
    config = parse_config({"approvals": {"timeout": 30}}, home=tmp_path, environ={})
    assert config.approvals.timeout == 30 and config.approvals.tools == {}


def test_the_trail_is_private_and_keeps_what_the_owner_allowed_for_good(tmp_path: Path) -> None:
    path = tmp_path / "state" / "actions.sqlite"
    audit = AuditLog(path)
    audit.record("asked", "cal__x", "test:private:1", arguments='{"a": 1}', request="r1")
    audit.allow_always("cal__x")
    assert audit.always("cal__x") and not audit.always("cal__y")
    audit.close()
    assert path.stat().st_mode & 0o777 == 0o600
    [action] = recent(path)
    assert (action.event, action.tool, action.request) == ("asked", "cal__x", "r1")
    assert always_allowed(path) == ["cal__x"]
    assert recent(tmp_path / "none.sqlite") == []
    assert forget_always(path, "cal__x") and not forget_always(path, "cal__x")
    assert always_allowed(path) == []


async def test_a_gate_told_of_no_owner_takes_nobody_for_the_owner(tmp_path: Path) -> None:
    """Until the app says who the owner is, no one is: a shared chat's request asks nobody."""
    from datetime import UTC, datetime
    from zoneinfo import ZoneInfo

    from agent.approvals.gate import Answer, ApprovalRequest, Gate
    from agent.tools.context import TurnContext
    from agent.tools.registry import Tool
    from gateway.contract.events import SessionKey

    class Asker:
        def __init__(self) -> None:
            self.asked: list[ApprovalRequest] = []

        async def ask(self, request: ApprovalRequest) -> Answer:
            self.asked.append(request)
            return Answer.ONCE

    asker = Asker()
    audit = AuditLog(tmp_path / "actions.sqlite")
    gate = Gate(audit, asker)
    tool = Tool("cal__delete", "d", {"type": "object"}, _never, policy=Policy.ASK)
    group = SessionKey("telegram", "group", "-100")
    ctx = TurnContext(
        group, tmp_path, datetime.now(UTC), ZoneInfo("UTC"), senders=frozenset({"42"})
    )
    review = await gate.review(tool, {}, ctx)
    assert review.refusal is not None and "only the owner's own requests" in review.refusal
    assert asker.asked == []
    audit.close()
