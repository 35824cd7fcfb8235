"""Corvid's home folder: where it is, and ``corvid init``, which creates it without overwriting."""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import os
import stat
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from agent.workspace.reading import read_plain, text_of
from gateway.config.layout import Layout
from gateway.config.loader import DEFAULT_MODEL
from gateway.infra.atomic import write_atomic


class AlreadyRunning(Exception):
    """Another process holds this home (or its terminal chat); the message names its pid."""


def lock_home(home: Path) -> int:
    """Take this home for one ``corvid run`` (two would fight over Telegram's updates and each
    other's control socket). Returns the lock's file descriptor, held until the process ends;
    raises ``AlreadyRunning`` if another process holds it."""
    return _lock(Layout(home), Layout(home).run_lock, "already running for this home")


def lock_terminal_chat(home: Path) -> int:
    """Take the home's terminal conversation for one ``corvid chat``: every terminal is the same
    session, and two processes answering it at once would each write its transcript. A
    ``corvid run`` beside it is fine (it has no terminal)."""
    layout = Layout(home)
    return _lock(layout, layout.chat_lock, "a corvid chat is already open for this home")


def _lock(layout: Layout, path: Path, held: str) -> int:
    layout.state.mkdir(mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        raise AlreadyRunning(f"{held} (pid {holder})") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def resolve_home(cli_home: str | None, environ: Mapping[str, str]) -> Path:
    if cli_home:
        return Path(cli_home).expanduser().absolute()
    if environ.get("CORVID_HOME"):
        return Path(environ["CORVID_HOME"]).expanduser().absolute()
    return Path.home() / ".corvid"


def init_home(home: Path, environ: Mapping[str, str]) -> list[str]:
    """Create what is missing under ``home``; return the paths created. Never overwrites."""
    created: list[str] = []
    home.mkdir(parents=True, exist_ok=True)

    layout = Layout(home)
    config = layout.config_file
    if not config.exists():
        template = resources.files("gateway.config").joinpath("template.yaml").read_text("utf-8")
        text = template.replace("@TIMEZONE@", detect_timezone(environ)).replace(
            "@MODEL@", DEFAULT_MODEL
        )
        _write_new(config, text, mode=0o600)
        created.append(str(config))

    workspace = layout.workspace
    if not workspace.exists():
        # Everything in it is the owner's to read: kept from other users of the machine.
        workspace.mkdir(mode=0o700)
        workspace.chmod(0o700)
    for entry in sorted(template_dir().glob("*.md")):
        target = workspace / entry.name
        if not target.exists():
            # Even the files every chat reads say who the owner's assistant is: the owner's.
            _write_new(target, entry.read_text("utf-8"), mode=0o600)
            created.append(str(target))
    for sub in ("memory", "inbox"):
        if not (workspace / sub).exists():
            (workspace / sub).mkdir(mode=0o700)
            (workspace / sub).chmod(0o700)
            created.append(str(workspace / sub))

    state = layout.state
    if not state.exists():
        state.mkdir(mode=0o700)
        created.append(str(state))
    state.chmod(0o700)  # mkdir's mode is filtered by the umask
    layout.sessions.mkdir(mode=0o700, exist_ok=True)
    return created


def template_dir() -> Path:
    """The installed ``workspace_template`` folder (a data-only package without __init__)."""
    spec = importlib.util.find_spec("workspace_template")
    for location in (spec.submodule_search_locations or []) if spec else []:
        if Path(location, "AGENTS.md").is_file():
            return Path(location)
    raise RuntimeError("workspace_template is missing from this installation of Corvid")


def _write_new(path: Path, text: str, mode: int) -> None:
    # O_EXCL: if the user created the file a moment ago, theirs wins.
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    except FileExistsError:
        return
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)


def detect_timezone(environ: Mapping[str, str]) -> str:
    """The machine's IANA time zone name, or UTC when it cannot be told."""
    candidates = [environ.get("TZ", "").lstrip(":")]
    try:
        link = os.readlink("/etc/localtime")
        if "zoneinfo/" in link:
            candidates.append(link.split("zoneinfo/", 1)[1])
    except OSError:
        pass
    with contextlib.suppress(OSError):
        candidates.append(Path("/etc/timezone").read_text().strip())
    for name in candidates:
        if not name:
            continue
        try:
            ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            continue
        return name
    return "UTC"


# Sentences of earlier templates that are no longer true, and what they say now.
_OUTDATED = {
    "AGENTS.md": (
        "Daily logs are visible in group chats too.",
        "Each chat has its own log; your owner's log stays private.",
    ),
}


def mend_workspace(workspace: Path) -> list[str]:
    """Correct what an earlier template said wrongly in a workspace made from it (only that
    exact sentence, only if still there); returns the files changed."""
    changed = []
    for name, (old, new) in _OUTDATED.items():
        path = workspace / name
        try:
            if not stat.S_ISREG(path.lstat().st_mode):
                continue  # a link or a FIFO is not the template's: left as it is, unread
            # Opened without waiting: a FIFO put there meanwhile cannot hold up the start.
            text = text_of(read_plain(path), strict=True)
        except (OSError, UnicodeDecodeError):
            continue
        if old in text:
            write_atomic(path, text.replace(old, new))
            changed.append(name)
    return changed
