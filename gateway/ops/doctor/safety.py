"""``corvid doctor``'s checks of acting safely: the sandbox, the skills, odd workspace files."""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Mapping
from pathlib import Path

from gateway.config.loader import Config
from gateway.contract.events import printable
from gateway.contract.ports import Check, Status

MAX_LOOKED_AT = 50_000
MAX_SECONDS = 5.0
MAX_NAMED = 20


def check_exec(config: Config, environ: Mapping[str, str]) -> list[Check]:
    """The ``exec`` tool when it is on: offered only when bubblewrap can box its commands."""
    if not config.tools.exec.enabled:
        return []
    from agent.sandbox.bwrap import Sandbox
    from gateway.tool_setup import exec_fix

    box = Sandbox(config.tools.exec, config.workspace)
    problem = box.problem()
    if problem is not None:
        return [
            Check(
                Status.FAIL,
                "exec",
                f"tools.exec is on but the tool is not offered: {problem}",
                exec_fix(box.problem_kind(), environ),
            )
        ]
    network = "with network" if config.tools.exec.network else "no network"
    return [Check(Status.OK, "exec", f"commands run under bubblewrap ({network})")]


def check_skills(config: Config) -> list[Check]:
    """The skills installed in the workspace follow the format: one line for those that do
    (none when only the bundled ones are there), one for each that does not."""
    from agent.skills.catalog import SkillCatalog

    skills, problems = SkillCatalog(config.workspace).all()
    mine = sorted(name for name, skill in skills.items() if not skill.bundled)
    checks = [Check(Status.OK, "skills", f"yours: {', '.join(mine)}")] if mine else []
    checks += [
        Check(
            Status.WARN,
            "skills",
            f"not loaded: {problem}",
            f"fix or remove its SKILL.md in {config.workspace / 'skills'}",
        )
        for problem in problems
    ]
    return checks


def check_links(workspace: Path) -> list[Check]:
    """Every link in the workspace (Corvid's readers follow none out of it, and none into
    a place the reading chat may not see, but the owner should know what is there) and every
    FIFO, socket or device (which no reader opens): one line naming them, or none."""
    try:
        root = workspace.resolve()
    except (OSError, RuntimeError):
        return []
    found: list[str] = []
    seen, deadline = 0, time.monotonic() + MAX_SECONDS
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in (*dirs, *files):
            seen += 1
            path = Path(folder, name)
            try:
                mode = path.lstat().st_mode
            except OSError:
                continue
            rel = printable(path.relative_to(root).as_posix())
            if stat.S_ISLNK(mode):
                found.append(f"{rel} → {_leads(root, path)}")
            elif not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                found.append(f"{rel} (not a regular file)")
        if seen > MAX_LOOKED_AT or time.monotonic() > deadline:
            break
    if not found:
        return []
    named = ", ".join(found[:MAX_NAMED]) + (
        f" and {len(found) - MAX_NAMED} more" if len(found) > MAX_NAMED else ""
    )
    out = any("outside the workspace" in f or "not a regular file" in f for f in found)
    return [
        Check(
            Status.FAIL if out else Status.WARN,
            "workspace links",
            f"{named}: Corvid reads none of them through a link out of the workspace or off a "
            "FIFO, and a chat never through a link into what it may not see",
            f"if you did not make them, remove them (ls -la {workspace})",
        )
    ]


def _leads(root: Path, link: Path) -> str:
    """Where a link leads, as the doctor names it."""
    try:
        target = link.resolve()
    except (OSError, RuntimeError):
        return "a loop of links"
    if target != root and not target.is_relative_to(root):
        return "outside the workspace"
    return printable(target.relative_to(root).as_posix() or ".")
