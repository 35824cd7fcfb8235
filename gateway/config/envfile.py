"""The home's environment file (``corvid.env``): the secrets ``config.yaml`` names as ``${VAR}``."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path

from gateway.infra.atomic import write_atomic

log = logging.getLogger(__name__)

_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


def read_env_file(path: Path) -> dict[str, str]:
    """The variables in ``path``; none when it is missing. Quotes around a value are taken off."""
    try:
        text = path.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        log.warning("%s cannot be read (%s); its secrets are not used", path, exc)
        return {}
    found = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if m is None:
            continue
        value = m.group(2).strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        found[m.group(1)] = value
    return found


def with_env_file(path: Path, environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` over what ``path`` sets: a variable set in the environment wins."""
    return {**read_env_file(path), **environ}


def update_env_file(path: Path, values: Mapping[str, str]) -> list[str]:
    """Set ``values`` in ``path`` (mode 0600), keeping its other lines as they are; returns the
    names whose value changed."""
    current = read_env_file(path)
    changed = [k for k, v in values.items() if current.get(k) != v]
    if not changed:
        return []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        lines = ["# Corvid's secrets: NAME=value, one a line (written by corvid setup)."]
    done = set()
    for i, line in enumerate(lines):
        m = _LINE.match(line)
        if m and m.group(1) in values:
            lines[i] = f"{m.group(1)}={values[m.group(1)]}"
            done.add(m.group(1))
    lines += [f"{k}={v}" for k, v in values.items() if k not in done]
    write_atomic(path, "\n".join(lines) + "\n", mode=0o600)
    os.chmod(path, 0o600)
    return changed
