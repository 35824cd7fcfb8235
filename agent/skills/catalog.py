"""The skills the assistant can use: ``workspace/skills/<name>/SKILL.md`` and a few bundled
with Corvid, in the open SKILL.md format (YAML front matter with ``name`` and ``description``,
then the instructions; other files beside it are the skill's own).

The system prompt lists each skill's name and description only, sorted, so the list is the
same bytes in every request and the prompt cache holds; the model reads a skill's body with
``read_skill`` when a task needs it. A skill is for the owner's private chats unless its front
matter says ``shared: true``. A skill in the workspace replaces a bundled one of the same name.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypedDict

import yaml

from agent.tools.context import TurnContext
from agent.tools.registry import Tool
from gateway.contract.errors import ToolError

log = logging.getLogger(__name__)

BUNDLED = Path(__file__).parent / "bundled"
SKILL_FILE = "SKILL.md"
NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_BODY_CHARS = 50_000
MAX_FILES_LISTED = 50


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    body: str
    folder: Path
    shared: bool = False
    bundled: bool = False

    def files(self) -> list[str]:
        """The skill's other files, relative to its folder."""
        found = sorted(
            str(p.relative_to(self.folder))
            for p in self.folder.rglob("*")
            if p.is_file() and p.name != SKILL_FILE and not p.is_symlink()
        )
        return found[:MAX_FILES_LISTED]


class SkillError(ValueError):
    """A SKILL.md that does not follow the format; the message says what is wrong."""


def parse(folder: Path, *, bundled: bool = False) -> Skill:
    """The skill in ``folder``, or ``SkillError`` saying what is wrong with it."""
    path = folder / SKILL_FILE
    if path.is_symlink() or not path.is_file():
        raise SkillError(f"{folder.name}: no {SKILL_FILE}")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SkillError(f"{folder.name}: {SKILL_FILE} cannot be read ({exc})") from None
    if not text.startswith("---"):
        raise SkillError(f"{folder.name}: {SKILL_FILE} must start with YAML front matter (---)")
    _, _, rest = text.partition("---")
    front, sep, body = rest.partition("\n---")
    if not sep:
        raise SkillError(f"{folder.name}: the front matter is not closed with ---")
    try:
        meta: Any = yaml.safe_load(front) or {}
    except yaml.YAMLError:
        raise SkillError(f"{folder.name}: the front matter is not valid YAML") from None
    if not isinstance(meta, dict):
        raise SkillError(f"{folder.name}: the front matter must be a mapping")
    name, description = meta.get("name"), meta.get("description")
    if not isinstance(name, str) or not NAME.match(name) or len(name) > MAX_NAME:
        raise SkillError(
            f"{folder.name}: name must be lowercase letters, digits and hyphens "
            f"(at most {MAX_NAME})"
        )
    if name != folder.name:
        raise SkillError(f"{folder.name}: name {name!r} differs from its folder's name")
    if not isinstance(description, str) or not description.strip():
        raise SkillError(f"{name}: description is missing")
    description = " ".join(description.split())
    if len(description) > MAX_DESCRIPTION:
        raise SkillError(f"{name}: description is longer than {MAX_DESCRIPTION} characters")
    shared = meta.get("shared", False)
    if not isinstance(shared, bool):
        raise SkillError(f"{name}: shared must be true or false")
    body = body.removeprefix("-").strip()
    if len(body) > MAX_BODY_CHARS:
        raise SkillError(f"{name}: the instructions are longer than {MAX_BODY_CHARS} characters")
    return Skill(name, description, body, folder, shared, bundled)


class SkillCatalog:
    """The skills of one workspace, looked at whenever asked (each new session's prompt lists
    them); a SKILL.md is parsed again only once it has changed. The bundled skills are looked
    at once."""

    def __init__(self, workspace: Path, bundled: Path = BUNDLED) -> None:
        self.folder = workspace / "skills"
        self.bundled = bundled
        # Per folder: SKILL.md's modification time, size and inode when it was parsed, and
        # the skill, or what is wrong with it.
        self._parsed: dict[Path, tuple[tuple[int, int, int], Skill | str]] = {}
        # The bundled skills, looked at once: they change only with Corvid itself.
        self._bundled: list[tuple[str, Skill | str]] | None = None

    def all(self) -> tuple[dict[str, Skill], list[str]]:
        """Every valid skill by name, and what is wrong with the others."""
        skills: dict[str, Skill] = {}
        problems: list[str] = []
        if self._bundled is None:
            self._bundled = self._look(self.bundled, bundled=True)
        for name, found in (*self._bundled, *self._look(self.folder, bundled=False)):
            if isinstance(found, Skill):
                skills[name] = found
            else:
                problems.append(found)
        return skills, problems

    def _look(self, root: Path, *, bundled: bool) -> list[tuple[str, Skill | str]]:
        """Each skill folder in ``root`` by name, with its skill or what is wrong with it."""
        if not root.is_dir():
            return []
        return [
            (folder.name, self._read(folder, bundled))
            for folder in sorted(root.iterdir())
            if folder.is_dir() and not folder.name.startswith(".")
        ]

    def _read(self, folder: Path, bundled: bool) -> Skill | str:
        """The skill in ``folder``, or what is wrong with it; parsed again only if its
        SKILL.md has changed since."""
        try:
            st = (folder / SKILL_FILE).lstat()
        except OSError:
            st = None
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino) if st is not None else None
        known = self._parsed.get(folder)
        if stamp is not None and known is not None and known[0] == stamp:
            return known[1]
        try:
            found: Skill | str = parse(folder, bundled=bundled)
        except SkillError as exc:
            found = str(exc)
        if stamp is not None:
            self._parsed[folder] = (stamp, found)
        return found

    def offered(self, private: bool) -> list[Skill]:
        skills, _ = self.all()
        return [s for _, s in sorted(skills.items()) if private or s.shared]

    def section(self, private: bool) -> str:
        """The system prompt's list of skills; "" when there are none."""
        offered = self.offered(private)
        if not offered:
            return ""
        lines = [
            "## Skills",
            "Instructions for particular tasks. When a task matches a skill's description, read "
            "the skill with read_skill first and follow it.",
        ]
        lines += [f"- {s.name}: {s.description}" for s in offered]
        return "\n".join(lines)

    def tool(self) -> Tool:
        catalog = self

        def read_skill(ctx: TurnContext, args: ReadSkillArgs) -> str:
            name = args["name"].strip()
            skill = {s.name: s for s in catalog.offered(ctx.private)}.get(name)
            if skill is None:
                known = ", ".join(s.name for s in catalog.offered(ctx.private)) or "none"
                raise ToolError(f"No skill {name!r} here. Skills: {known}.")
            files = skill.files()
            listed = ""
            if files:
                where = f"skills/{name}/" if not skill.bundled else "(bundled with Corvid)"
                listed = f"\n\nThe skill's other files, {where}: " + ", ".join(files)
            return f"# Skill: {name}\n\n{skill.body}{listed}"

        return Tool.typed(
            "read_skill",
            "Read a skill's instructions (the skills are listed in the system prompt).",
            ReadSkillArgs,
            read_skill,
            blocking=True,
        )


class ReadSkillArgs(TypedDict):
    name: Annotated[str, "The skill's name, as listed."]
