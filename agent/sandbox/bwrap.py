"""A shell command in a bubblewrap box: the system read-only, the workspace writable, bounded."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import resource
import secrets
import shutil
import signal
import stat
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agent.settings import ExecSettings
from agent.workspace.audience import PROMPT_FILES, PROMPT_FOLDERS, WRITTEN_AFTER_OUTSIDE
from agent.workspace.visible import inside
from gateway.infra.tasks import settle

log = logging.getLogger(__name__)

BWRAP = "bwrap"
# Where a control group for the box's processes can be made (cgroup v1 and v2 layouts).
PIDS_ROOTS = (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup"))
# How long a run's control group is waited for to empty (the kernel reaping what was killed)
# before it is left, with a warning.
GROUP_REMOVAL_SECONDS = 60.0
INSIDE = "/workspace"  # where the writable folder is, seen from inside
SYSTEM = ("/usr",)
MERGED = ("/bin", "/lib", "/lib64", "/sbin")  # links into /usr on a merged-/usr system
# What commands read of /etc: the users and groups (names for ids), the dynamic linker's cache,
# name resolution, the time zone, certificates, the alternatives that /usr/bin links through.
# Each is bound only when every user may read it, all of it, so that a box run by root reads
# no password hashes and no secrets kept in /etc.
ETC = (
    "alternatives",
    "ca-certificates",
    "ca-certificates.conf",
    "debian_version",
    "gai.conf",
    "group",
    "host.conf",
    "hosts",
    "inputrc",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "locale.alias",
    "localtime",
    "magic",
    "magic.mime",
    "mime.types",
    "nsswitch.conf",
    "os-release",
    "passwd",
    "protocols",
    "resolv.conf",
    "services",
    "ssl/certs",
    "ssl/openssl.cnf",
    "timezone",
)
# Entries looked at under a folder of ETC before it is bound: a larger one is left out.
MAX_ETC_ENTRIES = 5000
PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"
READ_CHUNK = 65536
TRIAL_SECONDS = 10.0
# Why the box cannot start: no bubblewrap, root with no way to bound processes, or bubblewrap
# there but refused what it needs (namespaces, mounts) by the kernel or a sandbox around Corvid.
MISSING, AS_ROOT, REFUSED = "missing", "root", "refused"


@dataclass(frozen=True, slots=True)
class Ran:
    """How a command ended: its exit status (None when it was stopped), its output (stdout and
    stderr together, cut at the limit) and why it was stopped, if it was."""

    status: int | None
    output: str
    seconds: float
    stopped: str = ""  # "time", "output"; "" when it ended by itself
    cut: int = 0  # bytes of output left out
    group: Path | None = None  # the pids control group it ran in (as root), removed after


def bwrap_path() -> str | None:
    return shutil.which(BWRAP)


class Sandbox:
    """Runs commands in the box; ``problem()`` says why it cannot, or None."""

    def __init__(self, settings: ExecSettings, workspace: Path) -> None:
        self.settings = settings
        self.workspace = workspace.resolve()
        self._bwrap = bwrap_path()
        self._pids_root = _pids_root() if os.geteuid() == 0 else None
        self._problem: tuple[str, str] | None = None
        self._tried = False
        self._etc_entries: list[str] | None = None
        # Removals of past runs' control groups still waiting for the kernel to reap the last
        # of their processes (``cleaned``).
        self._removals: set[asyncio.Task[None]] = set()

    def problem(self) -> str | None:
        """Why commands cannot run in the box here, or None; found once (a trial run)."""
        return None if (found := self._found()) is None else found[1]

    def problem_kind(self) -> str | None:
        """``MISSING``, ``AS_ROOT`` or ``REFUSED`` when commands cannot run here, else None."""
        return None if (found := self._found()) is None else found[0]

    def _found(self) -> tuple[str, str] | None:
        if not self._tried:
            self._problem, self._tried = self._find_problem(), True
        return self._problem

    def _find_problem(self) -> tuple[str, str] | None:
        if self._bwrap is None:
            return MISSING, "bubblewrap (bwrap) is not installed: `apt-get install bubblewrap`"
        # RLIMIT_NPROC is counted per user namespace and does not hold for root: without a
        # pids group the box could not stop a fork bomb, so it is not offered.
        if os.geteuid() == 0 and self._pids_root is None:
            return AS_ROOT, (
                "Corvid runs as root and cannot make a pids control group, so a command's "
                "processes could not be limited; run Corvid as an ordinary user"
            )
        try:
            status, said = _trial(self.argv("true"))
        except OSError as exc:
            return REFUSED, f"bubblewrap could not be started ({exc.strerror or exc})"
        if status is None:
            # Seen when a system-call filter refuses it capset: it waits for a box never made.
            return REFUSED, f"bubblewrap did not finish a trial run in {TRIAL_SECONDS:g} s"
        if status != 0:
            return REFUSED, "bubblewrap cannot make its box here" + (f" ({said})" if said else "")
        return None

    def argv(self, command: str, *, sealed: bool = False) -> list[str]:
        """The bubblewrap command line that runs ``command`` with ``/bin/sh -c``; ``sealed``:
        the places later prompts read are read-only."""
        assert self._bwrap is not None
        cfg = self.settings
        args = [self._bwrap, "--unshare-all", "--die-with-parent", "--new-session"]
        args += ["--cap-drop", "ALL"]
        if cfg.network:
            args.append("--share-net")
        for folder in SYSTEM:
            if Path(folder).is_dir():
                args += ["--ro-bind", folder, folder]
        for folder in MERGED:
            path = Path(folder)
            if path.is_symlink():
                args += ["--symlink", os.readlink(path), folder]
            elif path.is_dir():
                args += ["--ro-bind", folder, folder]
        for entry in self._etc():
            args += ["--ro-bind", entry, entry]
        args += ["--proc", "/proc", "--dev", "/dev"]
        # tmpfs pages are not counted as the command's memory: the folder has a size of its own.
        args += ["--size", str(cfg.memory_mb * 1024 * 1024), "--tmpfs", "/tmp"]
        if cfg.writable == "workspace":
            args += ["--bind", str(self.workspace), INSIDE]
            # Sealed: an order hidden in a page read cannot rewrite later prompts by a command.
            for place in sealed_places(self.workspace) if sealed else ():
                inner = f"{INSIDE}/{place.relative_to(self.workspace).as_posix()}"
                args += ["--ro-bind", str(place), inner]
        else:
            args += ["--dir", INSIDE]
        # Nothing else writable: not the box's own root, not /dev (a tmpfs each, unbounded).
        args += ["--remount-ro", "/dev", "--remount-ro", "/"]
        args += ["--chdir", INSIDE, "--clearenv"]
        for name, value in (("PATH", PATH), ("HOME", INSIDE), ("LANG", "C.UTF-8")):
            args += ["--setenv", name, value]
        return [*args, "--", "/bin/sh", "-c", command]

    def _etc(self) -> list[str]:
        """The entries of ``ETC`` this machine has that every user may read, all of them
        (looked at once)."""
        if self._etc_entries is None:
            self._etc_entries = [f"/etc/{name}" for name in ETC if _public(Path("/etc", name))]
        return self._etc_entries

    async def run(self, command: str, *, sealed: bool = False) -> Ran:
        problem = self.problem()
        if problem is not None:
            raise RuntimeError(problem)
        cfg = self.settings
        group = self._group()
        limit = cfg.max_output_kb * 1024
        began = time.monotonic()
        proc = await asyncio.create_subprocess_exec(
            *self.argv(command, sealed=sealed),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env={},
            start_new_session=True,
            preexec_fn=_limits(cfg.memory_mb, cfg.max_processes, group),
        )
        assert proc.stdout is not None
        kept = bytearray()
        seen, stopped = 0, ""
        try:
            async with asyncio.timeout(cfg.timeout):
                while chunk := await proc.stdout.read(READ_CHUNK):
                    seen += len(chunk)
                    kept += chunk[: max(0, limit - len(kept))]
                    if seen > limit:
                        stopped = "output"
                        break
        except TimeoutError:
            stopped = "time"
        if stopped:
            _kill(proc.pid)
        try:
            async with asyncio.timeout(5):
                # What is left in the pipe is read to its end, which closes it (a pipe left
                # open with data in it outlives the process).
                while await proc.stdout.read(READ_CHUNK):
                    pass
                status = await proc.wait()
        except TimeoutError:  # bounded: a box that will not die is killed again
            _kill(proc.pid)
            status = await proc.wait()
        if stopped == "output":
            # What was still coming is counted only up to the moment it was stopped.
            seen = max(seen, len(kept) + 1)
        self._remove(group)
        return Ran(
            None if stopped else status,
            kept.decode("utf-8", errors="replace"),
            time.monotonic() - began,
            stopped,
            max(0, seen - len(kept)),
            group,
        )

    async def cleaned(self) -> None:
        """Return once the control groups of the runs so far are removed (or left, with a
        warning, when one would not empty in time)."""
        await settle(self._removals, None)

    def _group(self) -> Path | None:
        """A pids control group for one run (as root only), limited to the box's processes."""
        if self._pids_root is None:
            return None
        group = self._pids_root / f"corvid-exec-{secrets.token_hex(4)}"
        group.mkdir()
        (group / "pids.max").write_text(str(self.settings.max_processes))
        return group

    def _remove(self, group: Path | None) -> None:
        """Remove a run's control group now, or once its last process is gone: the processes
        are killed, but the kernel reaps them in its own time (on a busy machine, seconds)."""
        if group is None or _emptied(group):
            return
        task = asyncio.create_task(_remove_group(group), name=f"remove {group.name}")
        self._removals.add(task)
        task.add_done_callback(self._removals.discard)


def _trial(argv: list[str]) -> tuple[int | None, str]:
    """Run ``argv`` once: its exit status (None if it did not end in time, when it and all it
    started are killed) and the first sentence of what it said on stderr."""
    with subprocess.Popen(
        argv, env={}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    ) as proc:
        try:
            _, err = proc.communicate(timeout=TRIAL_SECONDS)
        except subprocess.TimeoutExpired:
            _kill(proc.pid)  # not read to the end: what left the group may hold the pipe
            proc.wait()
            return None, ""
    lines = err.decode(errors="replace").strip().splitlines()
    said = lines[0].removeprefix("bwrap: ").split(". ")[0] if lines else ""
    return proc.returncode, said[:200]


def sealed_places(workspace: Path) -> list[Path]:
    """What a sealed box binds read-only: each place later prompts read that is there (a link
    that leads elsewhere in the workspace, where it leads; one that leads out, nothing: no
    reader follows it), and the record of what was written after reading from outside."""
    found: dict[Path, None] = {}
    for name in (*PROMPT_FILES, *PROMPT_FOLDERS, WRITTEN_AFTER_OUTSIDE):
        path = workspace / name
        if os.path.lexists(path) and (target := inside(workspace, path)) is not None:
            found[target] = None
    return list(found)


def _public(path: Path) -> bool:
    """Can every user read ``path`` (a folder: and everything in it, a link: where it
    leads)? False when it is not there, or too large a folder to look through."""
    try:
        st = path.stat()
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode):
        return stat.S_ISREG(st.st_mode) and bool(st.st_mode & stat.S_IROTH)
    if st.st_mode & 0o005 != 0o005:
        return False
    seen = 0
    for folder, dirs, files in os.walk(path):
        for name in (*dirs, *files):
            seen += 1
            try:
                mode = os.lstat(os.path.join(folder, name)).st_mode
            except OSError:
                return False
            need = 0o005 if stat.S_ISDIR(mode) else 0o004
            if seen > MAX_ETC_ENTRIES or (not stat.S_ISLNK(mode) and mode & need != need):
                return False
    return True


def _pids_root() -> Path | None:
    """A folder where a pids control group can be made, or None."""
    for root in PIDS_ROOTS:
        probe = root / f"corvid-probe-{secrets.token_hex(4)}"
        try:
            probe.mkdir()
        except OSError:
            continue
        try:
            if (probe / "pids.max").exists():
                return root
        finally:
            with contextlib.suppress(OSError):
                probe.rmdir()
    return None


def _limits(memory_mb: int, processes: int, group: Path | None) -> Callable[[], None]:
    def apply() -> None:  # in the child, before bubblewrap starts
        if group is not None:
            (group / "cgroup.procs").write_text("0")
        memory = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


def _kill(pid: int) -> None:
    # The whole session: bubblewrap and what it started (which also dies with it).
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def _remove_group(group: Path) -> None:
    """Remove a run's control group once its last process is gone (bounded)."""
    loop = asyncio.get_running_loop()
    until = loop.time() + GROUP_REMOVAL_SECONDS
    while loop.time() < until:
        await asyncio.sleep(0.05)  # the kernel gives no word when it has reaped them
        if _emptied(group):
            return
    log.warning("the control group %s still holds processes; it is left in place", group)


def _emptied(group: Path) -> bool:
    """Kill what is left in ``group`` and remove it; False while it still holds processes."""
    with contextlib.suppress(OSError):
        for line in (group / "cgroup.procs").read_text().split():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(line), signal.SIGKILL)
    try:
        group.rmdir()
    except OSError:
        return False
    return True
