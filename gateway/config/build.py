"""Turns the YAML of ``config.yaml`` into the typed settings, naming the dotted key of any fault."""

from __future__ import annotations

import dataclasses
import math
import re
import types
import typing
from collections.abc import Iterator, Mapping
from typing import Any

from gateway.contract.errors import ConfigError
from gateway.contract.ports import Secret

# ``${VAR}`` in a config value: replaced by the environment variable.
ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclasses.dataclass
class Missing:
    """A ``${VAR}`` whose variable is not set."""

    var: str


def substitute(node: Any, key: str, environ: Mapping[str, str], missing: dict[str, str]) -> Any:
    """``node`` with every ``${VAR}`` resolved; unset ones become ``Missing`` and are recorded
    in ``missing`` by dotted key."""
    if isinstance(node, dict):
        return {k: substitute(v, join(key, str(k)), environ, missing) for k, v in node.items()}
    if isinstance(node, list):
        return [substitute(v, f"{key}[{i}]", environ, missing) for i, v in enumerate(node)]
    if isinstance(node, str) and "${" in node:
        unset = [m.group(1) for m in ENV_REF.finditer(node) if not environ.get(m.group(1))]
        if unset:
            missing[key] = unset[0]
            return Missing(unset[0])
        return FromEnv(ENV_REF.sub(lambda m: environ[m.group(1)], node))
    return node


class FromEnv(str):
    """A config value that came from the environment (``${VAR}``): a secret by choice."""

    __slots__ = ()


# An entry of an MCP server's env whose name says it holds a secret.
_SECRET_NAME = re.compile(r"key|token|secret|passw|auth|cred|cookie|session|private", re.I)


def masked_entry(key: str, name: str, value: Any) -> bool:
    """Whether a secret-typed entry of a mapping is blanked in logs: one given as ``${VAR}``,
    every header (Authorization and its kind), and entries whose name says secret. A plain
    ``NODE_ENV: production`` is not."""
    from_env = isinstance(value, FromEnv) or (isinstance(value, str) and "${" in value)
    return from_env or key.endswith(".headers") or bool(_SECRET_NAME.search(name))


def build_fields(
    cls: type, data: Any, prefix: str, skip: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """The converted values of the fields of ``cls`` that ``data`` sets; unknown keys are
    errors that list the known ones."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(prefix, f"expected a mapping, got {kind(data)}")
    hints = typing.get_type_hints(cls)
    known = {f.name: f for f in dataclasses.fields(cls) if f.name not in skip}
    for k in data:
        if k not in known:
            options = ", ".join(sorted(known))
            raise ConfigError(join(prefix, str(k)), f"unknown option (known here: {options})")
    return {
        name: _convert(hints[name], data[name], join(prefix, name), f.metadata)
        for name, f in known.items()
        if name in data
    }


def _convert(tp: Any, value: Any, key: str, meta: Mapping[str, Any]) -> Any:
    optional = False
    if isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        optional = len(args) < len(typing.get_args(tp))
        tp = args[0]
    if isinstance(value, Missing):
        if tp is Secret or optional:
            return None
        raise ConfigError(key, f"environment variable {value.var} is not set")
    if value is None:
        if optional:
            return None
        raise ConfigError(key, f"must not be empty (expected {_expect(tp)})")
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return tp(**build_fields(tp, value, key))
    if tp is Secret:
        if not isinstance(value, str | int):
            raise ConfigError(key, f"expected a string, got {kind(value)}")
        return Secret(str(value))
    if typing.get_origin(tp) is dict:
        if not isinstance(value, dict):
            raise ConfigError(key, f"expected a mapping, got {kind(value)}")
        inner = typing.get_args(tp)[1]
        for k, v in value.items():
            if isinstance(v, Missing):  # an entry cannot be left out quietly
                raise ConfigError(join(key, str(k)), f"environment variable {v.var} is not set")
        out = {str(k): _convert(inner, v, join(key, str(k)), {}) for k, v in value.items()}
        if inner is Secret:
            out = {k: Secret(s.value, masked_entry(key, k, value[k])) for k, s in out.items()}
        return out
    if typing.get_origin(tp) is list:
        if not isinstance(value, list):
            raise ConfigError(key, f"expected a list, got {kind(value)}")
        return [_convert(typing.get_args(tp)[0], v, f"{key}[{i}]", {}) for i, v in enumerate(value)]
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(key, f"expected true or false, got {kind(value)}")
        return value
    if tp is int or tp is float:
        return _number(tp, value, key, meta)
    if tp is str:
        return _string(value, key, meta)
    raise TypeError(f"unsupported config type {tp!r} at {key}")  # a bug in the settings classes


def _number(tp: type, value: Any, key: str, meta: Mapping[str, Any]) -> int | float:
    ok = isinstance(value, int) if tp is int else isinstance(value, int | float)
    if not ok or isinstance(value, bool):
        raise ConfigError(key, f"expected {_expect(tp)}, got {kind(value)}")
    if not math.isfinite(value):
        raise ConfigError(key, f"expected a finite number, got {value}")
    if meta.get("min") is not None and value < meta["min"]:
        raise ConfigError(key, f"must be at least {meta['min']}, got {value}")
    return int(value) if tp is int else float(value)


def _string(value: Any, key: str, meta: Mapping[str, Any]) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ConfigError(key, f"expected a string, got {kind(value)}")
    text = str(value)
    choices = meta.get("choices")
    if choices:
        # Matched without regard to case, and given back as the choice is spelled.
        spelled = {str(c).casefold(): str(c) for c in choices}.get(text.casefold())
        if spelled is None:
            shown = ", ".join(c or '"" (off)' for c in choices)
            raise ConfigError(key, f"expected one of {shown}, got {text!r}")
        return spelled
    return text


def secret_keys(cls: type, prefix: str = "", raw: Any = None) -> Iterator[str]:
    """Dotted keys of every ``Secret`` option, found from the settings classes themselves, so a
    secret added later is masked without anyone having to list it. Options under a mapping
    (``mcp.servers.NAME.env.VAR``) have keys only the YAML knows: they are listed when ``raw``,
    the YAML as written, is given."""
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        key = join(prefix, f.name)
        below = raw.get(f.name) if isinstance(raw, dict) else None
        if typing.get_origin(tp) is dict:
            inner = typing.get_args(tp)[1]
            if not isinstance(below, dict):
                continue
            for name, value in below.items():
                if inner is Secret and masked_entry(key, str(name), value):
                    yield join(key, str(name))
                elif isinstance(inner, type) and dataclasses.is_dataclass(inner):
                    yield from secret_keys(inner, join(key, str(name)), value)
        elif tp is Secret or Secret in typing.get_args(tp):
            yield key
        elif isinstance(tp, type) and dataclasses.is_dataclass(tp):
            yield from secret_keys(tp, key, below)


def secrets_in(obj: object) -> Iterator[Secret]:
    """Every ``Secret`` value set in a tree of settings dataclasses (and mappings of them)."""
    if isinstance(obj, Secret):
        if obj.masked:
            yield obj
        return
    if isinstance(obj, dict):
        for value in obj.values():
            yield from secrets_in(value)
        return
    if not dataclasses.is_dataclass(obj) or isinstance(obj, type):
        return
    for f in dataclasses.fields(obj):
        yield from secrets_in(getattr(obj, f.name))


def _expect(tp: Any) -> str:
    return {int: "a whole number", float: "a number", bool: "true or false"}.get(tp, "a value")


def kind(value: Any) -> str:
    """What a YAML value is, for an error message."""
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"{type(value).__name__} {value!r}"


def join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


# Secrets that, unless config.yaml says otherwise, come from these environment variables.
ENV_DEFAULTS = {
    ("llm", "api_key"): "${ANTHROPIC_API_KEY}",
    ("channels", "telegram", "token"): "${TELEGRAM_BOT_TOKEN}",
    ("channels", "discord", "token"): "${DISCORD_BOT_TOKEN}",
}


def with_env_defaults(raw: dict[str, Any]) -> dict[str, Any]:
    """``raw`` with the secrets it leaves out read from their usual environment variables."""
    out = dict(raw)
    for path, ref in ENV_DEFAULTS.items():
        node = out
        for part in path[:-1]:
            child = node.get(part, {})
            if child is None:
                child = {}
            if not isinstance(child, dict):
                break  # a wrong type: the loader names it
            node[part] = child = dict(child)
            node = child
        else:
            node.setdefault(path[-1], ref)
    return out
