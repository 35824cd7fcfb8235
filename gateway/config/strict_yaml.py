"""Reading ``config.yaml`` strictly: no key twice, and a YAML mistake told where it starts."""

from __future__ import annotations

from typing import Any

import yaml

from gateway.contract.errors import ConfigError


def strict_load(text: str) -> Any:
    """The YAML document in ``text``; raises ConfigError for a key given twice and
    yaml.YAMLError for anything YAML itself refuses."""
    return _load(text, _FastStrictLoader, _StrictLoader)


def safe_load(text: str) -> Any:
    """``yaml.safe_load``, with libyaml's parser when there is one; raises yaml.YAMLError."""
    return _load(text, _CSafeLoader, yaml.SafeLoader)


# libyaml's parser (``fast``) is much quicker, and every start reads the file twice; PyYAML's
# own (``slow``) says better what is wrong (libyaml: a tab "cannot start any token").
def _load(text: str, fast: type[yaml.CSafeLoader] | None, slow: type[yaml.SafeLoader]) -> Any:
    if fast is not None:
        try:
            return yaml.load(text, Loader=fast)
        except yaml.YAMLError:
            pass  # read again, for PyYAML's account of what is wrong
    return yaml.load(text, Loader=slow)


def yaml_problem(exc: yaml.MarkedYAMLError) -> str:
    """Where a YAML problem starts and what it is: a bracket opened on line 15 and never
    closed is reported at line 15, and a tab is called a tab."""
    problem = exc.problem or "not valid YAML"
    mark = exc.problem_mark
    if "'\\t'" in problem and mark is not None:
        return (
            f"a tab character at line {mark.line + 1}, column {mark.column + 1}: YAML indents "
            "with spaces, not tabs"
        )
    start = exc.context_mark or mark
    if start is None:
        return f"not valid YAML: {problem}"
    where = f"line {start.line + 1}, column {start.column + 1}"
    if exc.context and exc.context_mark is not None and mark is not None:
        opened = exc.context.removeprefix("while parsing ").removeprefix("while scanning ")
        return (
            f"not valid YAML at {where}: {opened} is not closed ({problem} at line {mark.line + 1})"
        )
    return f"not valid YAML at {where}: {problem}"


class _StrictLoader(yaml.SafeLoader):
    """Safe YAML, but a key given twice in one mapping is an error (YAML would silently keep
    the last one: a pasted snippet would override what is above it)."""


def _unique_mapping(
    loader: yaml.SafeLoader | yaml.CSafeLoader, node: yaml.MappingNode
) -> dict[Any, Any]:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        line = key_node.start_mark.line + 1
        if key in seen:
            raise ConfigError(
                str(key), f"given twice, on lines {seen[key]} and {line}; keep one of them"
            )
        seen[key] = line
    return loader.construct_mapping(node)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _unique_mapping)


def _with_libyaml() -> tuple[type[yaml.CSafeLoader], type[yaml.CSafeLoader]] | tuple[None, None]:
    """libyaml's safe loader and ``_StrictLoader`` on its parser, if PyYAML was built with it."""
    if not getattr(yaml, "__with_libyaml__", False):
        return None, None

    class FastStrictLoader(yaml.CSafeLoader):
        """``_StrictLoader`` on libyaml's parser."""

    FastStrictLoader.add_constructor(
        yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _unique_mapping
    )
    return yaml.CSafeLoader, FastStrictLoader


_CSafeLoader, _FastStrictLoader = _with_libyaml()
