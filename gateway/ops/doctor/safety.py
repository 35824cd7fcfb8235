"""``corvid doctor``'s checks of acting safely: whether the ``exec`` sandbox can run."""

from __future__ import annotations

from gateway.config.loader import Config
from gateway.contract.ports import Check, Status


def check_exec(config: Config) -> list[Check]:
    """The ``exec`` tool when it is on: offered only when bubblewrap can box its commands."""
    if not config.tools.exec.enabled:
        return []
    from agent.sandbox.bwrap import Sandbox

    problem = Sandbox(config.tools.exec, config.workspace).problem()
    if problem is not None:
        return [
            Check(
                Status.FAIL,
                "exec",
                f"tools.exec is on but the tool is not offered: {problem}",
                "install bubblewrap, or set tools.exec.enabled: false",
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
