"""The skills the assistant can use (SKILL.md format): the prompt's list and ``read_skill``."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any, TypedDict

import yaml

from agent.tools.context import TurnContext
from agent.tools.registry import Tool
from agent.workspace.audience import SKILLS, WRITTEN_AFTER, untrusted, written_after_outside
from agent.workspace.reading import NotPlainFile, read_plain, text_of
from agent.workspace.visible import Unreadable, inside, read_visible
from gateway.contract.errors import ToolError
from gateway.contract.events import OWNER

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
    # What a conversation that wrote it had read from outside; "" when none did.
    written_after: str = ""

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


def parse(folder: Path, *, bundled: bool = False, text: str | None = None) -> Skill:
    """The skill in ``folder`` (its SKILL.md's ``text`` when the caller read it), or
    ``SkillError`` saying what is wrong with it."""
    path = folder / SKILL_FILE
    if text is None:
        try:
            text = text_of(read_plain(path), strict=True) if not path.is_symlink() else None
        except FileNotFoundError:
            text = None
        except (OSError, UnicodeDecodeError) as exc:
            what = "not a regular file" if isinstance(exc, NotPlainFile) else str(exc)
            raise SkillError(f"{folder.name}: {SKILL_FILE} cannot be read ({what})") from None
        if text is None:
            raise SkillError(f"{folder.name}: no {SKILL_FILE}")
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
        self.workspace = workspace.resolve()
        self.folder = self.workspace / SKILLS
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
        for name, found in self._bundled:
            if isinstance(found, Skill):
                skills[name] = found
            else:
                problems.append(found)
        noted = written_after_outside(self.workspace)
        for name, found in self._look(self.folder, bundled=False):
            if isinstance(found, str):
                problems.append(found)
            elif name in skills:
                problems.append(
                    f"{name}: has the name of a skill that comes with Corvid, which it may not "
                    "replace; rename its folder and its name"
                )
            else:
                skills[name] = replace(found, written_after=self._noted(found, noted))
        return skills, problems

    def _noted(self, skill: Skill, noted: dict[str, str]) -> str:
        """What had been read when a conversation wrote one of the skill's files; ""."""
        where = inside(self.workspace, skill.folder)
        if where is None:
            return ""
        prefix = where.relative_to(self.workspace).as_posix() + "/"
        return ", ".join(sorted({read for rel, read in noted.items() if rel.startswith(prefix)}))

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
            found: Skill | str = (
                parse(folder, bundled=True) if bundled else parse(folder, text=self._text(folder))
            )
        except SkillError as exc:
            found = str(exc)
        if stamp is not None:
            self._parsed[folder] = (stamp, found)
        return found

    def _text(self, folder: Path) -> str:
        """A workspace skill's SKILL.md, as the file tools would read it."""
        rel = f"{SKILLS}/{folder.name}/{SKILL_FILE}"
        try:
            return read_visible(self.workspace, rel, OWNER, strict=True, quoted=False)
        except FileNotFoundError:
            raise SkillError(f"{folder.name}: no {SKILL_FILE}") from None
        except Unreadable as exc:
            raise SkillError(f"{folder.name}: {SKILL_FILE} is {exc.why}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise SkillError(f"{folder.name}: {SKILL_FILE} cannot be read ({exc})") from None

    # Sorted, so the prompt's list is the same bytes in every request and the cache holds.
    def offered(self, private: bool) -> list[Skill]:
        skills, _ = self.all()
        return [s for _, s in sorted(skills.items()) if private or s.shared]

    def section(self, private: bool) -> str:
        """The system prompt's list of skills; "" when there are none. Skills written after
        reading from outside are listed apart, quoted."""
        offered = self.offered(private)
        if not offered:
            return ""
        lines = [
            "## Skills",
            "Instructions for particular tasks. When a task matches a skill's description, read "
            "the skill with read_skill first and follow it.",
        ]
        lines += [f"- {s.name}: {s.description}" for s in offered if not s.written_after]
        outside = [s for s in offered if s.written_after]
        if outside:
            listed = "\n".join(f"- {s.name}: {s.description}" for s in outside)
            read = ", ".join(sorted({s.written_after for s in outside}))
            lines += ["", untrusted(f"skills written after reading {read}", listed, WRITTEN_AFTER)]
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
            body = skill.body
            if skill.written_after:
                source = f"skills/{name}, written after reading {skill.written_after}"
                ctx.saw(source)
                body = untrusted(source, body, WRITTEN_AFTER)
            return f"# Skill: {name}\n\n{body}{listed}"

        return Tool.typed(
            "read_skill",
            "Read a skill's instructions (the skills are listed in the system prompt).",
            ReadSkillArgs,
            read_skill,
            blocking=True,
        )


class ReadSkillArgs(TypedDict):
    name: Annotated[str, "The skill's name, as listed."]
