"""``corvid skills``: list the skills, add one from a folder or a git repository, remove one."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from agent.skills.catalog import NAME, SKILL_FILE, Skill, SkillCatalog, SkillError, parse
from agent.workspace.audience import forget_written
from gateway.contract.events import printable
from gateway.ops.home import read_config

MAX_FILES = 100
MAX_BYTES = 1_000_000
GIT_TIMEOUT = 120


def skills_list(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    config, _ = read_config(home, environ)
    skills, problems = SkillCatalog(config.workspace).all()
    if not skills:
        print("No skills.")
    for skill in sorted(skills.values(), key=lambda s: s.name):
        where = "bundled" if skill.bundled else f"skills/{skill.name}"
        who = "every chat" if skill.shared else "private chats"
        print(f"{skill.name}  ({where}; {who})")
        print(f"    {printable(skill.description)}")
    for problem in problems:
        print(f"not loaded: {printable(problem)}", file=sys.stderr)
    return 1 if problems else 0


def skills_add(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    config, _ = read_config(home, environ)
    target = config.workspace / "skills"
    with tempfile.TemporaryDirectory(prefix="corvid-skill-") as scratch:
        try:
            source = _fetched(args.source, Path(scratch))
            found = _skills_in(source, Path(scratch))
        except SkillError as exc:
            print(f"corvid: {exc}", file=sys.stderr)
            return 1
        installed, _ = SkillCatalog(config.workspace).all()
        bundled = [s.name for s in found if s.name in installed and installed[s.name].bundled]
        taken = [s.name for s in found if s.name in installed and s.name not in bundled]
        if bundled:
            print(
                f"corvid: {', '.join(bundled)}: the name of a skill that comes with Corvid, "
                "which an installed skill may not replace; rename it",
                file=sys.stderr,
            )
            return 1
        if taken:
            print(
                f"corvid: already installed: {', '.join(taken)} "
                "(`corvid skills remove NAME` first)",
                file=sys.stderr,
            )
            return 1
        for skill in found:
            _show(skill)
        if not args.yes and not _agreed(f"Install {len(found)} skill(s) into {target}?"):
            print("Nothing was installed.")
            return 1
        target.mkdir(parents=True, exist_ok=True, mode=0o700)
        for skill in found:
            shutil.copytree(skill.folder, target / skill.name, ignore=_ignored)
            print(f"Installed {skill.name}: listed from the next conversation on (/new).")
    return 0


def skills_remove(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    config, _ = read_config(home, environ)
    folder = config.workspace / "skills" / args.name
    if args.name.startswith(".") or "/" in args.name or not (folder / SKILL_FILE).is_file():
        print(f"corvid: no skill {args.name!r} in {folder.parent}", file=sys.stderr)
        return 1
    shutil.rmtree(folder)
    forget_written(config.workspace.resolve(), f"skills/{args.name}")
    print(f"Removed {args.name}.")
    return 0


def _fetched(source: str, scratch: Path) -> Path:
    """The folder ``source`` names: a local folder, or a git repository cloned into
    ``scratch`` (shallow, nothing of it run)."""
    if "://" in source or source.startswith("git@") or source.endswith(".git"):
        git = shutil.which("git")
        if git is None:
            raise SkillError("git is not installed, so a repository cannot be fetched")
        clone = scratch / "clone"
        try:
            done = subprocess.run(
                [git, "clone", "--depth", "1", "--no-tags", "--", source, str(clone)],
                capture_output=True,
                timeout=GIT_TIMEOUT,
                check=False,
                env={"GIT_TERMINAL_PROMPT": "0", "PATH": "/usr/bin:/bin"},
            )
        except subprocess.TimeoutExpired:
            raise SkillError(f"git clone took longer than {GIT_TIMEOUT} s") from None
        if done.returncode != 0:
            said = done.stderr.decode(errors="replace").strip().splitlines()
            raise SkillError("git clone failed" + (f": {said[-1]}" if said else ""))
        shutil.rmtree(clone / ".git", ignore_errors=True)
        return clone
    folder = Path(source).expanduser()
    if not folder.is_dir():
        raise SkillError(f"{source} is not a folder (nor a git URL)")
    return folder


def _skills_in(source: Path, scratch: Path) -> list[Skill]:
    """The skill ``source`` is, or the skills in its subfolders: each checked, and staged in
    ``scratch`` under its own name (what is shown is exactly what is installed)."""
    if (source / SKILL_FILE).exists():
        folders = [source]
    else:
        folders = sorted(p for p in source.iterdir() if (p / SKILL_FILE).exists())
    if not folders:
        raise SkillError(f"no {SKILL_FILE} in {source} or its folders")
    found = []
    for folder in folders:
        files = [p for p in folder.rglob("*") if not _ignored_path(p.relative_to(folder))]
        if any(p.is_symlink() for p in files):
            raise SkillError(f"{folder.name}: holds symbolic links, which are not installed")
        size = sum(p.stat().st_size for p in files if p.is_file())
        if len(files) > MAX_FILES or size > MAX_BYTES:
            raise SkillError(f"{folder.name}: more than {MAX_FILES} files or {MAX_BYTES} bytes")
        name = _name_in(folder)
        # A name that is not one stages under the folder's, and parse says what is wrong.
        staged = scratch / "staged" / (name if NAME.match(name) else folder.name)
        if staged.exists():
            raise SkillError(f"two skills are named {staged.name!r}")
        shutil.copytree(folder, staged, ignore=_ignored)
        found.append(parse(staged))
    return found


def _name_in(folder: Path) -> str:
    for line in (folder / SKILL_FILE).read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("name:"):
            return line.partition(":")[2].strip().strip("\"'")
    return folder.name


def _show(skill: Skill) -> None:
    """What would be installed, as it is: control sequences and invisible characters spelled
    out (``printable``), so no line can hide another from the review."""
    who = "every chat, groups included" if skill.shared else "your private chats only"
    print(f"== {skill.name} (for {who})")
    print(f"   {printable(skill.description)}")
    files = skill.files()
    print(f"   files: {SKILL_FILE}" + printable("".join(f", {f}" for f in files)))
    print("   instructions:")
    for line in skill.body.splitlines():
        print(f"   | {printable(line)}")
    print()


def _agreed(question: str) -> bool:
    try:
        return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")
    except EOFError:
        return False


def _ignored_path(path: Path) -> bool:
    return any(part in (".git", "__pycache__") for part in path.parts)


def _ignored(folder: str, names: list[str]) -> set[str]:
    return {n for n in names if n in (".git", "__pycache__")}
