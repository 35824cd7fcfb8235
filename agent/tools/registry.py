"""Tools the model may call: a handler, its typed arguments, and the registry that offers them.

A tool's JSON schema is derived from its arguments' ``TypedDict`` (``schema_of``), so the two
cannot drift apart; everything about the turn arrives in the ``TurnContext`` argument, never
in shared state, so concurrent sessions cannot see each other's context. A ``ToolSource``
offers tools that come and go (MCP servers).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import typing
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NotRequired, Protocol, Required, get_args, get_origin

from agent.approvals.policy import Policy
from agent.tools.context import Grant, TurnContext
from agent.workspace.changes import Author, authored
from gateway.contract.errors import ToolError

log = logging.getLogger(__name__)

# A handler takes the turn's context and the tool's arguments (a TypedDict, checked against the
# derived schema before the call), and gives text, or a ToolResult for images or an error.
Handler = Callable[["TurnContext", Any], "str | ToolResult | Awaitable[str | ToolResult]"]

_JSON_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "array": list,
    "object": dict,
}


_SCHEMA_TYPES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def schema_of(args: type) -> dict[str, Any]:
    """The JSON schema of a TypedDict of tool arguments: each field's JSON type, its
    description (from ``Annotated``), ``enum`` for a ``Literal``; required fields in order.

    Required-ness is read from the resolved hints, not ``__required_keys__``: with postponed
    annotations Python 3.11 cannot see ``NotRequired`` when the class is made."""
    hints = typing.get_type_hints(args, include_extras=True)
    total = getattr(args, "__total__", True)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, hint in hints.items():
        optional = not total
        while get_origin(hint) in (NotRequired, Required):
            optional = get_origin(hint) is NotRequired
            hint = get_args(hint)[0]
        if not optional:
            required.append(name)
        properties[name] = _property(hint)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def _property(hint: Any) -> dict[str, Any]:
    description = None
    if get_origin(hint) is typing.Annotated:
        hint, *meta = get_args(hint)
        description = next((m for m in meta if isinstance(m, str)), None)
    prop: dict[str, Any]
    if get_origin(hint) is Literal:
        prop = {"type": "string", "enum": list(get_args(hint))}
    else:
        prop = {"type": _SCHEMA_TYPES[hint]}
    if description is not None:
        prop["description"] = description
    return prop


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    description: str
    input_schema: dict[str, Any]
    handler: Handler
    # Offered only in the owner's private sessions (a tool that reaches out, unless the
    # owner lets shared chats use it); anywhere else it is neither shown nor run.
    private_only: bool = False
    # Arguments checked against input_schema before the call. An MCP server's schema may use
    # any JSON Schema, and the server checks its own arguments.
    checked: bool = True
    # A tool the API runs itself (a server tool): this is its whole definition in the request,
    # and the handler never runs.
    definition: dict[str, Any] | None = None
    # What it brings in from outside the owner's audience, whatever its arguments ("a web
    # page"): every call marks the session as having read it (``Exposure``).
    outside: str | None = None
    # A synchronous handler whose disk work can take long (walking a large folder): it runs in
    # a worker thread, so every other chat is still answered meanwhile.
    blocking: bool = False
    # Whether a call runs at once, waits for the owner's yes, or is refused (``agent/approvals``);
    # the owner's configuration may say otherwise.
    policy: Policy = Policy.ALLOW
    # The MCP server it comes from, whose tools the owner may set a policy for together.
    server: str | None = None
    # Calls of an ``ask`` tool the owner allowed in advance, by their arguments (``exec``'s
    # allow patterns); never in a conversation that read text from outside.
    allowed: Callable[[Any], bool] | None = None
    # Whether a call could carry what the model composed off the machine: how, in a few words,
    # or None when this call cannot (``egress``).
    sends_out: Callable[[Any, TurnContext], str | None] | None = None

    @classmethod
    def typed(
        cls,
        name: str,
        description: str,
        args: type,
        handler: Handler,
        *,
        private_only: bool = False,
        outside: str | None = None,
        blocking: bool = False,
        policy: Policy = Policy.ALLOW,
        allowed: Callable[[Any], bool] | None = None,
        sends_out: Callable[[Any, TurnContext], str | None] | None = None,
    ) -> Tool:
        """A tool whose input schema is derived from ``args``, the TypedDict its handler takes."""
        return cls(
            name,
            description,
            schema_of(args),
            handler,
            private_only=private_only,
            outside=outside,
            blocking=blocking,
            policy=policy,
            allowed=allowed,
            sends_out=sends_out,
        )

    def schema(self) -> dict[str, Any]:
        if self.definition is not None:
            return self.definition
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
        }


# Why a call that could carry data off the machine is asked (shown in the request).
EGRESS_RULE = (
    "This conversation holds your private memory and has read text from outside your own "
    "chats, so it asks before anything that could carry what the model wrote off this machine: "
    "a web address that is neither one you wrote nor a link on a page it fetched, an MCP tool "
    "that does not say it stays in its own world, a command with network access."
)


def egress(tool: Tool, args: Any, ctx: TurnContext) -> str | None:
    """How this call could carry what the model composed off the machine, or None."""
    return None if tool.sends_out is None else tool.sends_out(args, ctx)


@dataclass(frozen=True, slots=True)
class ToolResult:
    text: str
    is_error: bool = False
    # Content blocks after the text (images), as the Messages API takes them in a tool_result.
    blocks: tuple[dict[str, Any], ...] = ()

    def content(self) -> str | list[dict[str, Any]]:
        """The tool_result's content: the text alone, or a text block and the others."""
        if not self.blocks:
            return self.text
        head = [{"type": "text", "text": self.text}] if self.text.strip() else []
        return [*head, *self.blocks]


class ToolSource(Protocol):
    """Tools that come and go while Corvid runs (an MCP server's, while it is connected)."""

    @property
    def generation(self) -> int:
        """Changes whenever ``tools()`` would give something different."""
        ...

    def tools(self) -> Sequence[Tool]: ...

    async def settle(self) -> None:
        """Return once the tools that are still starting have had their chance (bounded)."""
        ...


class ToolRegistry:
    def __init__(
        self,
        tools: Iterable[Tool],
        max_output_chars: int = 50_000,
        extra: Sequence[ToolSource] = (),
    ) -> None:
        self._fixed = tuple(tools)
        self._extra = tuple(extra)
        self.max_output_chars = max_output_chars
        self._generation: tuple[int, ...] = ()
        self._build()

    def _build(self) -> None:
        """The tool lists, built again only when the extra tools changed: the tool list is
        the first part of every request and must stay byte-identical for the prompt cache."""
        extra = [t for source in self._extra for t in source.tools()]
        self._generation = tuple(source.generation for source in self._extra)
        self._tools = {t.name: t for t in (*self._fixed, *extra)}
        self._schemas = [t.schema() for t in self._tools.values()]
        self._shared = [t.schema() for t in self._tools.values() if not t.private_only]

    def _current(self) -> dict[str, Tool]:
        if tuple(source.generation for source in self._extra) != self._generation:
            self._build()
        return self._tools

    def schemas(self, private: bool = True, grant: Grant | None = None) -> list[dict[str, Any]]:
        """The tools a session is offered: every one in the owner's private sessions, the
        others in shared ones; a turn with a ``grant`` only those it grants. Each list of a
        session is built once, so it stays byte-identical."""
        tools = self._current()
        offered = self._schemas if private else self._shared
        if grant is None:
            return offered
        kept = [
            s
            for s in offered
            if grant.permits(str(s["name"]))
            or (grant.show_all and tools[str(s["name"])].definition is None)
        ]
        return offered if len(kept) == len(offered) else kept

    def __contains__(self, name: str) -> bool:
        return name in self._current()

    def tool(self, name: str) -> Tool | None:
        return self._current().get(name)

    async def settle(self) -> None:
        await asyncio.gather(*(source.settle() for source in self._extra))

    async def call(self, name: str, args: Any, ctx: TurnContext) -> ToolResult:
        what = name if ctx.grant is None else f"{name}, {ctx.grant.purpose}"
        with authored(Author(str(ctx.key), what)):  # whatever the call writes is theirs
            result = await self._call(name, args, ctx)
        # Errors too: a refusal quotes the model's arguments, and those can be huge.
        text = result.text
        limit = self.max_output_chars
        if len(text) > limit:
            cut = len(text) - limit
            text = text[:limit] + f"\n[... output cut: {cut} more characters not shown]"
        return ToolResult(text, result.is_error, result.blocks)

    async def _call(self, name: str, args: Any, ctx: TurnContext) -> ToolResult:
        tools = self._current()
        tool = tools.get(name)
        if tool is None:
            # Only what this session is offered: a shared chat does not learn the owner's tools.
            offered = ", ".join(t.name for t in tools.values() if ctx.private or not t.private_only)
            return ToolResult(f"Unknown tool {name!r}. Available: {offered or 'none'}", True)
        if tool.private_only and not ctx.private:
            log.info("tool %s refused in shared %s: not offered there", name, ctx.key)
            return ToolResult(f"{name} is not available in this chat.", True)
        grant = ctx.grant
        if grant is not None and not grant.permits(name):
            log.info("tool %s refused in %s of %s", name, grant.purpose, ctx.key)
            return ToolResult(f"{name} cannot be used in {grant.purpose}.", True)
        if tool.outside is not None:
            # Marked before the call: a result cut short by an error can carry text too.
            ctx.saw(tool.outside)
        try:
            if tool.checked:
                _check_args(tool.input_schema, args)
            elif not isinstance(args, dict):
                raise ToolError("Tool input must be a JSON object.")
            if tool.blocking:
                out = await asyncio.to_thread(tool.handler, ctx, args)
            else:
                out = tool.handler(ctx, args)
            if inspect.isawaitable(out):
                out = await out
        except ToolError as exc:
            log.info("tool %s refused in %s: %s", name, ctx.key, exc)
            return ToolResult(str(exc), True)
        except OSError as exc:
            # Say what went wrong without the host's absolute paths.
            log.warning("tool %s failed in %s: %s", name, ctx.key, exc)
            where = ""
            if exc.filename:
                path = Path(exc.filename)
                inside = path.is_relative_to(ctx.workspace)
                where = f" ({path.relative_to(ctx.workspace) if inside else path.name})"
            return ToolResult(
                f"Tool {name} failed: {exc.strerror or type(exc).__name__}{where}", True
            )
        except Exception as exc:
            # A bug or an OS error: the model gets a short description, the log the traceback.
            log.exception("tool %s failed in %s", name, ctx.key)
            return ToolResult(f"Tool {name} failed: {type(exc).__name__}: {exc}", True)
        return out if isinstance(out, ToolResult) else ToolResult(str(out))


def _check_args(schema: dict[str, Any], args: Any) -> None:
    if not isinstance(args, dict):
        raise ToolError("Tool input must be a JSON object.")
    props: dict[str, Any] = schema.get("properties", {})
    missing = [k for k in schema.get("required", []) if k not in args]
    if missing:
        raise ToolError(f"Missing required argument(s): {', '.join(missing)}.")
    for key, value in args.items():
        spec = props.get(key)
        if spec is None:
            raise ToolError(f"Unknown argument {key!r}. Known: {', '.join(props) or 'none'}.")
        expected = _JSON_TYPES.get(spec.get("type", ""))
        bad_bool = isinstance(value, bool) and spec.get("type") in ("integer", "number")
        if expected and (not isinstance(value, expected) or bad_bool):
            raise ToolError(f"Argument {key!r} must be of type {spec['type']}.")
