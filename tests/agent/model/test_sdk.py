"""The anthropic SDK loaded without its clients for other clouds, its tool runner, its helpers
for streamed messages, its fallback for beta refusals and its transport over aiohttp, its types
and its tracing as they are used, its error classes with the first refusal: Corvid's calls, the
key check and the tools' check work through it, nothing left out or of the API's resource
classes is loaded, what was left out says so or loads for real when asked for, a lazy package
gives the names it would give whole, a refusal raises the class the SDK as it comes raises,
and a call the SDK traces still has its span finished.

Each test runs in a new interpreter: this one imported the SDK whole long ago."""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent.model import sdk

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
        refused = await llm.refused(5, lambda: "ANTHROPIC_API_KEY")
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
    admin = "anthropic.types.organization.analytics_connector_activity" in sys.modules
    modules = len([m for m in sys.modules if m.startswith("anthropic")])
    from anthropic.lib.vertex import AnthropicVertex  # asked for: the real one
    print(json.dumps({
        "refused": refused is not None, "tools_ok": tools_ok, "text": got.content[0]["text"],
        "paths": [r.path for r in api.requests], "platforms_loaded": loaded,
        "resources": resources, "has_vertex_name": hasattr(anthropic, "AnthropicVertex"),
        "refusal": refusal, "vertex_real": AnthropicVertex.__module__,
        "tool_refusal": tool_refusal, "docstring_parser": docstrings,
        "admin_types": admin, "anthropic_modules": modules,
    }))

asyncio.run(main())
"""

FALLBACK = """
import json, logging, sys
from agent.model import sdk
logging.basicConfig(level=logging.INFO, stream=sys.stderr)
if sys.argv[1] == "left out":
    sdk.LEFT_OUT["anthropic.types"] = "a module the SDK cannot do without"
else:  # an SDK that takes a name the stand-in does not give
    sdk.ON_REFUSAL["anthropic._error_classes"] = ()
anthropic = sdk.load()
print(json.dumps({"message": anthropic.types.Message.__name__,
                  "error_classes": "anthropic._error_classes" in sys.modules,
                  "stand_ins_left": [m for m in sdk.LEFT_OUT
                                     if type(sys.modules.get(m)).__name__ == "_StandIn"]}))
"""


def _run(script: str, *args: str, stdin: str | None = None) -> tuple[dict[str, Any], str]:
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


@pytest.fixture(scope="module")
def calls() -> dict[str, Any]:
    """What the calls script saw: one run serves every test that reads it."""
    return _run(CALLS)[0]


def test_corvid_s_calls_work_without_the_other_clients_or_the_resource_classes(calls):
    got = calls
    assert got["refused"] is False and got["tools_ok"] is True
    assert got["text"] == "hello back"
    assert got["paths"] == ["/v1/messages/count_tokens"] * 2 + ["/v1/messages"]
    assert got["platforms_loaded"] == [] and got["resources"] is False
    assert got["docstring_parser"] is False


def test_what_was_left_out_says_so_or_loads_for_real_when_asked_for(calls):
    got = calls
    assert got["has_vertex_name"] is False
    assert got["refusal"] is not None
    assert "AnthropicFoundry (the Microsoft Foundry client) is not loaded" in got["refusal"]
    assert got["vertex_real"] == "anthropic.lib.vertex._client"
    assert "beta_tool (the SDK's tool runner) is not loaded" in got["tool_refusal"]


@pytest.mark.parametrize("breakage", ["left out", "deferred"])
def test_an_sdk_that_will_not_import_so_is_imported_whole(breakage):
    got, said = _run(FALLBACK, breakage)
    assert got == {"message": "Message", "error_classes": True, "stand_ins_left": []}
    assert "did not import in its lighter form" in said


WITHOUT_AIOHTTP = """
import json, sys
from agent.model import sdk
anthropic = sdk.load()
seen = {"aiohttp": "aiohttp" in sys.modules,
        "transport": [m for m in sdk.ABSENT if m in sys.modules]}
try:
    anthropic.DefaultAioHttpClient()
    seen["refusal"] = None
except RuntimeError as exc:
    seen["refusal"] = str(exc)
from anthropic._vendor.httpx_aiohttp import Httpx2AiohttpClient  # asked for: the real one
seen["real"] = Httpx2AiohttpClient.__module__
seen["aiohttp_after"] = "aiohttp" in sys.modules
print(json.dumps(seen))
"""


def test_the_sdk_loads_without_aiohttp_and_its_transport_loads_for_real_when_asked_for():
    got, _ = _run(WITHOUT_AIOHTTP)
    assert got["aiohttp"] is False and got["transport"] == []
    # the SDK's own answer when its aiohttp extra is missing
    assert got["refusal"] is not None and "aiohttp" in got["refusal"]
    assert got["real"] == "anthropic._vendor.httpx_aiohttp.client"
    assert got["aiohttp_after"] is True


REFUSED = """
import asyncio, json, sys
from tests.fakes.anthropic_api import FakeAnthropic, Fault
if sys.argv[1] == "lazy":
    from agent.model import sdk
    anthropic = sdk.load()
else:
    import anthropic

async def main():
    api = FakeAnthropic()
    await api.start()
    seen = {"before": "anthropic._error_classes" in sys.modules, "errors": []}
    api.enqueue(Fault(404, "not_found_error", error_code="file_expired"),
                Fault(529, "overloaded_error"), Fault(418, "teapot_error"))
    client = anthropic.AsyncAnthropic(api_key="sk-test", base_url=api.base_url, max_retries=0)
    try:
        for _ in range(3):
            try:
                await client.messages.create(
                    model="claude-x", max_tokens=10,
                    messages=[{"role": "user", "content": "hi"}])
            except anthropic.APIStatusError as exc:
                kind = type(exc)
                seen["errors"].append([f"{kind.__module__}.{kind.__qualname__}",
                                       exc.status_code, isinstance(exc, anthropic.NotFoundError)])
    finally:
        await client.close()
        await api.close()
    seen["after"] = "anthropic._error_classes" in sys.modules
    print(json.dumps(seen))

asyncio.run(main())
"""


def test_the_sdk_s_error_classes_load_with_the_first_refusal_and_are_the_ones_it_gives_whole():
    lazy, _ = _run(REFUSED, "lazy")
    assert lazy["before"] is False  # the load left them out (237 modules with anthropic 2.14)
    assert lazy["after"] is True
    plain, _ = _run(REFUSED, "plain")
    assert lazy["errors"] == plain["errors"]
    assert [kind for kind, _, _ in lazy["errors"]] == [
        "anthropic.types.file_expired_error.FileExpiredError",  # by the API's finer code
        "anthropic.OverloadedError",
        "anthropic.APIStatusError",
    ]
    assert lazy["errors"][0][1:] == [404, True]


SAME_NAMES = """
import importlib, json, sys
def describe(obj):
    if hasattr(obj, "__qualname__") and hasattr(obj, "__module__"):
        return f"{obj.__module__}.{obj.__qualname__}"
    return repr(obj)
if sys.argv[1] == "lazy":
    from agent.model import sdk
    sdk.load()
    lazy = {m: list(mod.__all__) for m, mod in list(sys.modules.items())
            if m.startswith(sdk.LAZY) and "__getattr__" in vars(mod)}
    seen = {m: {n: describe(getattr(sys.modules[m], n)) for n in names}
            for m, names in lazy.items()}
    print(json.dumps({"loaded": len([m for m in sys.modules if m.startswith("anthropic")]),
                      "names": seen}))
else:
    import anthropic
    asked = json.loads(sys.stdin.read())
    seen = {m: {n: describe(getattr(importlib.import_module(m), n)) for n in names}
            for m, names in asked.items()}
    import __future__  # its `annotations` is in a package's names, and no re-export
    public = {m: sorted(n for n, v in vars(importlib.import_module(m)).items()
                        if not n.startswith("_") and not isinstance(v, type(sys))
                        and not isinstance(v, __future__._Feature))
              for m in asked}
    print(json.dumps({"loaded": len([m for m in sys.modules if m.startswith("anthropic")]),
                      "names": seen, "public": public}))
"""


def test_a_lazy_types_package_gives_every_name_its_package_as_it_comes_gives():
    lazy, _ = _run(SAME_NAMES, "lazy")
    assert {
        "anthropic.types",
        "anthropic.types.beta",
        "anthropic.types.shared",
        "anthropic.lib._tracing",
    } <= set(lazy["names"])
    asked = {m: sorted(names) for m, names in lazy["names"].items()}
    plain, _ = _run(SAME_NAMES, "plain", stdin=json.dumps(asked))
    assert lazy["names"] == plain["names"]
    # and no name the package as it comes has, its modules aside, is missing
    assert {m: sorted(names) for m, names in lazy["names"].items()} == plain["public"]
    assert lazy["loaded"] < plain["loaded"]


def test_the_types_are_loaded_as_they_are_used(calls):
    got = calls
    # (3,154 modules as it comes, with anthropic 2.14: the admin API's types among them;
    # 95 with Corvid's calls made)
    assert got["admin_types"] is False and got["anthropic_modules"] < 150


TRACED = """
import asyncio, json, sys
from opentelemetry import trace
from agent.model import sdk
from tests.fakes.anthropic_api import FakeAnthropic, Reply

class Span(trace.NonRecordingSpan):
    def __init__(self, name, attributes):
        super().__init__(trace.SpanContext(1, len(spans) + 1, False))
        self.name, self.attributes, self.ended = name, dict(attributes or {}), False
    def is_recording(self): return True
    def set_attribute(self, key, value): self.attributes[key] = value
    def set_attributes(self, attributes): self.attributes.update(attributes)
    def end(self, end_time=None): self.ended = True

spans = []

class Tracer(trace.NoOpTracer):
    def start_span(self, name, context=None, kind=None, attributes=None, *args, **kwargs):
        spans.append(Span(name, attributes))
        return spans[-1]

class Provider(trace.NoOpTracerProvider):
    def get_tracer(self, *args, **kwargs): return Tracer()

async def main():
    api = FakeAnthropic(brain=lambda body: Reply("traced"))
    await api.start()
    anthropic = sdk.load()
    before = "anthropic.lib._tracing._api_call" in sys.modules
    client = anthropic.AsyncAnthropic(api_key="sk-test", base_url=api.base_url,
                                      open_telemetry={"tracer_provider": Provider()})
    try:
        message = await client.messages.create(
            model="claude-x", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    finally:
        await client.close()
        await api.close()
    print(json.dumps({"before": before, "text": message.content[0].text,
                      "after": "anthropic.lib._tracing._api_call" in sys.modules,
                      "spans": [[s.name, s.ended, sorted(s.attributes)] for s in spans]}))

asyncio.run(main())
"""


def test_the_sdk_s_tracing_loads_when_a_call_is_traced_and_finishes_the_call_s_span():
    got, _ = _run(TRACED)
    assert got["before"] is False  # the load left it out
    assert got["text"] == "traced"
    assert got["after"] is True
    (name, ended, attributes), *_ = got["spans"]
    assert name == "anthropic.messages.create" and ended is True
    # what the call's start and its finish (the module loaded late) wrote on the span
    assert "gen_ai.request.model" in attributes and "gen_ai.usage.input_tokens" in attributes


def _reexports_by_ast(init: Path) -> dict[str, tuple[str, str]] | None:
    """What ``sdk._reexports`` reads, read by Python's own parser."""
    names: dict[str, tuple[str, str]] = {}
    try:
        tree = ast.parse(init.read_text(encoding="utf-8"))
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue
        if not (isinstance(node, ast.ImportFrom) and node.level == 1 and node.module):
            return None
        if "." in node.module or any(alias.name == "*" for alias in node.names):
            return None
        for alias in node.names:
            names[alias.asname or alias.name] = (node.module, alias.name)
    return names


def test_a_package_s_reexports_are_read_as_python_reads_them(tmp_path: Path):
    anthropic = Path(importlib.util.find_spec("anthropic").origin).parent  # type: ignore[arg-type, union-attr]
    inits = sorted(anthropic.rglob("__init__.py"))
    read = {str(p): sdk._reexports(str(p)) for p in inits}
    assert read == {str(p): _reexports_by_ast(p) for p in inits}
    assert len(read[str(anthropic / "types" / "beta" / "__init__.py")] or {}) > 500
    shapes = {
        "plain": '# a header\n"""Doc, with a # in it."""\nfrom __future__ import annotations\n'
        "from .a import A as A, B  # trailing\nfrom .b import (\n    C as D,\n    E,\n)\n",
        "star": "from .a import *\n",
        "code": "from .a import A\nVERSION = 1\n",
        "absolute": "from a import A\n",
        "nested": "from .a.b import A\n",
        "empty": '"""Only a docstring."""\n',
        # not Python at all, which must not pass for re-exports
        "no_names": "from .a import ()\n",
        "loose_comma": "from .a import A,\n",
        "two_commas": "from .a import (A,, B)\n",
        "keyword": "from .a import None\n",
        "digit": "from .1a import A\n",
        "indented": '  """Doc."""\nfrom .a import A\n',
    }
    # A backslash in the docstring: read as Python reads it, the first is a re-export and the
    # second a docstring alone; either way the package is imported as it comes.
    escaped = {
        "escaped": '"""Doc \\""" ends later."""\nfrom .a import A\n',
        "escaped_to_the_end": '"""Doc \\"""\nfrom .a import A\n# """\n',
    }
    for name, source in (shapes | escaped).items():
        init = tmp_path / name / "__init__.py"
        init.parent.mkdir()
        init.write_text(source)
        expected = None if name in escaped else _reexports_by_ast(init)
        assert sdk._reexports(str(init)) == expected, name
    assert sdk._reexports(str(tmp_path / "plain" / "__init__.py")) == {
        "A": ("a", "A"), "B": ("a", "B"), "D": ("b", "C"), "E": ("b", "E"),
    }  # fmt: skip
    assert sdk._reexports(str(tmp_path / "missing.py")) is None
