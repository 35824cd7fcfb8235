"""``config.yaml`` carried forward: its ``version``, and the options renamed, moved or dropped."""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from gateway.config.yaml_lines import KEY, find_key, key_span
from gateway.contract.errors import ConfigError

CONFIG_VERSION = 2


@dataclass(frozen=True)
class Step:
    """What changed in ``config.yaml`` to reach version ``to``."""

    to: int
    # (old dotted key, new dotted key): the value moves, in its section or to another.
    renamed: tuple[tuple[str, str], ...] = ()
    # (dotted key, why it is gone): the value is dropped.
    dropped: tuple[tuple[str, str], ...] = ()


STEPS: tuple[Step, ...] = (
    Step(
        2,
        dropped=(
            (
                "llm.parallel_calls",
                "model calls are admitted by the size of the conversations in flight now, "
                "not by a count",
            ),
        ),
    ),
)


def version_of(raw: Any) -> int:
    """The version a parsed ``config.yaml`` says it is; 1 when it does not say."""
    if not isinstance(raw, dict) or "version" not in raw:
        return 1
    found = raw["version"]
    if isinstance(found, bool) or not isinstance(found, int) or found < 1:
        raise ConfigError("version", f"expected a whole number from 1 up, got {found!r}")
    return found


def upgrade(
    raw: Any, steps: Sequence[Step] = STEPS, current: int = CONFIG_VERSION
) -> tuple[Any, list[str]]:
    """``raw`` (a parsed ``config.yaml``) as the current version reads it, without its
    ``version`` key, and a sentence for each change made. Raises ``ConfigError`` for a file
    from a newer Corvid."""
    if not isinstance(raw, dict):
        return raw, []
    found = version_of(raw)
    if found > current:
        raise ConfigError(
            "version",
            f"config.yaml is version {found}, written for a newer Corvid; this one reads up to "
            f"version {current}: upgrade Corvid, or put back the config.yaml.v{current} kept "
            "beside it when it was upgraded",
        )
    out = copy.deepcopy({k: v for k, v in raw.items() if k != "version"})
    changes: list[str] = []
    for step in steps:
        if step.to <= found:
            continue
        for old, new in step.renamed:
            if _pop(out, old, into=new):
                changes.append(f"{old} is now {new} (version {step.to})")
        for key, why in step.dropped:
            if _pop(out, key):
                changes.append(f"{key} was removed: {why} (version {step.to})")
    return out, changes


def _pop(raw: dict[str, Any], dotted: str, into: str | None = None) -> bool:
    """Take ``dotted`` out of ``raw``; with ``into``, put its value there (unless that key is
    already set, which wins). Returns whether the key was there."""
    *parents, leaf = dotted.split(".")
    node: Any = raw
    for part in parents:
        node = node.get(part) if isinstance(node, dict) else None
    if not isinstance(node, dict) or leaf not in node:
        return False
    value = node.pop(leaf)
    if into is not None:
        *new_parents, new_leaf = into.split(".")
        target = raw
        for part in new_parents:
            nxt = target.get(part)
            if not isinstance(nxt, dict):
                nxt = target[part] = {}
            target = nxt
        target.setdefault(new_leaf, value)
    return True


def rewrite(text: str, steps: Sequence[Step] = STEPS, current: int = CONFIG_VERSION) -> str:
    """``config.yaml``'s text carried to the current version, comments kept where the file
    allows it; the text as it is when it is current already."""
    raw = yaml.safe_load(text) or {}
    if not isinstance(raw, dict) or version_of(raw) >= current:
        return text
    wanted, _ = upgrade(raw, steps, current)
    edited = _edit(text, raw, steps)
    if edited is not None:
        edited = _with_version(edited, current)
        if _same(edited, wanted, current):
            return edited
    # Too unusual to edit line by line: written whole, the old file kept beside it.
    body = yaml.safe_dump(wanted, sort_keys=False, allow_unicode=True)
    return f"# Corvid configuration (rewritten when it was upgraded).\nversion: {current}\n{body}"


def _same(text: str, wanted: dict[str, Any], current: int) -> bool:
    try:
        back = yaml.safe_load(text)
    except yaml.YAMLError:
        return False
    return isinstance(back, dict) and back.pop("version", None) == current and back == wanted


def _edit(text: str, raw: dict[str, Any], steps: Sequence[Step]) -> str | None:
    lines = text.splitlines(keepends=True)
    found = version_of(raw)
    for step in steps:
        if step.to <= found:
            continue
        for old, new in step.renamed:
            if not _rename_lines(lines, old, new):
                return None
        for key, _why in step.dropped:
            span = key_span(lines, key.split("."))
            if span is not None:
                del lines[span[0] : span[1]]
    return "".join(lines)


def _rename_lines(lines: list[str], old: str, new: str) -> bool:
    """Rename ``old`` to ``new`` in place when both are in one section; False when the file
    needs writing whole for it."""
    at = find_key(lines, old.split("."))
    if at is None:
        return True  # not in the file: nothing to do
    *old_parents, _ = old.split(".")
    *new_parents, new_leaf = new.split(".")
    if old_parents != new_parents or find_key(lines, new.split(".")) is not None:
        return False
    m = KEY.match(lines[at])
    assert m is not None  # _find matched it
    lines[at] = f"{m['indent']}{new_leaf}:{m['rest']}" + ("\n" if lines[at].endswith("\n") else "")
    return True


def _with_version(text: str, current: int) -> str:
    """``version: N`` as the first key of the file (replacing one that is there)."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if re.match(r"^version\s*:", line):
            lines[i] = f"version: {current}\n"
            return "".join(lines)
    # After the file's opening comments (up to the first blank line).
    at = 0
    while at < len(lines) and lines[at].lstrip().startswith("#"):
        at += 1
    if at < len(lines) and not lines[at].strip():
        at += 1
    note = "# The layout of this file; Corvid carries an older one forward when it starts.\n"
    return "".join([*lines[:at], note, f"version: {current}\n\n", *lines[at:]])
