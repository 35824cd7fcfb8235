"""The anthropic SDK loaded without its clients for other clouds and its tool runner: Corvid's
calls, the key check and the tools' check work through it, nothing left out or of the API's
resource classes is loaded, and what was left out says so or loads for real when asked for.

Each test runs in a new interpreter: this one imported the SDK whole long ago."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]

CALLS = """
import asyncio, json, sys
from agent.model import sdk
from agent.model.charge import Charge, Purpose
from agent.model.llm import AnthropicLLM
from agent.settings import LLMSettings
from gateway.contract.ports import Secret
from tests.fakes.anthropic_api import FakeAnthropic, Reply

async def main():
    api = FakeAnthropic(brain=lambda body: Reply("hello back"))
    await api.start()
    llm = AnthropicLLM(LLMSettings(api_key=Secret("sk-test"), base_url=api.base_url))
    try:
        refused = await llm.refused(5, "ANTHROPIC_API_KEY")
        tools_ok = await llm.accepts_tools([{"type": "web_search_20250305", "name": "web_search"}])
        msgs = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
        got = await llm.complete("sys", msgs, [], charge=Charge(Purpose.CHAT))
    finally:
        await llm.close()
        await api.close()
    anthropic = sys.modules["anthropic"]
    loaded = sorted(m for m in sdk.LEFT_OUT if m in sys.modules)
    try:
        anthropic.AnthropicFoundry(api_key="x")
        refusal = None
    except ImportError as exc:
        refusal = str(exc)
    try:
        anthropic.beta_tool(print)
        tool_refusal = None
    except ImportError as exc:
        tool_refusal = str(exc)
    resources = "anthropic.resources" in sys.modules
    docstrings = "docstring_parser" in sys.modules
    from anthropic.lib.vertex import AnthropicVertex  # asked for: the real one
    print(json.dumps({
        "refused": refused is not None, "tools_ok": tools_ok, "text": got.content[0]["text"],
        "paths": [r.path for r in api.requests], "platforms_loaded": loaded,
        "resources": resources, "has_vertex_name": hasattr(anthropic, "AnthropicVertex"),
        "refusal": refusal, "vertex_real": AnthropicVertex.__module__,
        "tool_refusal": tool_refusal, "docstring_parser": docstrings,
    }))

asyncio.run(main())
"""

FALLBACK = """
import json, logging, sys
from agent.model import sdk
logging.basicConfig(level=logging.INFO, stream=sys.stderr)
sdk.LEFT_OUT["anthropic.types"] = "a module the SDK cannot do without"
anthropic = sdk.load()
print(json.dumps({"message": anthropic.types.Message.__name__,
                  "stand_ins_left": [m for m in sdk.LEFT_OUT
                                     if type(sys.modules.get(m)).__name__ == "_StandIn"]}))
"""


def _run(script: str) -> tuple[dict[str, Any], str]:
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


def test_corvid_s_calls_work_without_the_other_clients_or_the_resource_classes():
    got, _ = _run(CALLS)
    assert got["refused"] is False and got["tools_ok"] is True
    assert got["text"] == "hello back"
    assert got["paths"] == ["/v1/messages/count_tokens"] * 2 + ["/v1/messages"]
    assert got["platforms_loaded"] == [] and got["resources"] is False
    assert got["docstring_parser"] is False


def test_what_was_left_out_says_so_or_loads_for_real_when_asked_for():
    got, _ = _run(CALLS)
    assert got["has_vertex_name"] is False
    assert got["refusal"] is not None
    assert "AnthropicFoundry (the Microsoft Foundry client) is not loaded" in got["refusal"]
    assert got["vertex_real"] == "anthropic.lib.vertex._client"
    assert "beta_tool (the SDK's tool runner) is not loaded" in got["tool_refusal"]


def test_an_sdk_that_will_not_import_so_is_imported_whole():
    got, said = _run(FALLBACK)
    assert got == {"message": "Message", "stand_ins_left": []}
    assert "did not import without its other clients" in said
