"""A shell command in a box made by bubblewrap (``bwrap``): the system read-only, the workspace
(or an empty scratch folder) writable, nothing else of the machine there (not Corvid's home,
its state, config or secrets, nor anyone's home folder), no network but its own loopback unless
the owner allows it, an empty environment, and limits on time, memory, processes and output.

The number of processes is bounded by ``RLIMIT_NPROC``, which the kernel counts per user
namespace (bubblewrap makes one when run by an ordinary user), and by a ``pids`` control group
where one can be made (as root, where ``RLIMIT_NPROC`` does not hold). Run as root without
such a group, the box could not stop a fork bomb: it is then not offered at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agent.settings import ExecSettings

BWRAP = "bwrap"
# Where a control group for the box's processes can be made (cgroup v1 and v2 layouts).
PIDS_ROOTS = (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup"))
INSIDE = "/workspace"  # where the writable folder is, seen from inside
SYSTEM = ("/usr", "/etc")
MERGED = ("/bin", "/lib", "/lib64", "/sbin")  # links into /usr on a merged-/usr system
PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"
READ_CHUNK = 65536


@dataclass(frozen=True, slots=True)
class Ran:
    """How a command ended: its exit status (None when it was stopped), its output (stdout and
    stderr together, cut at the limit) and why it was stopped, if it was."""

    status: int | None
    output: str
    seconds: float
    stopped: str = ""  # "time", "output"; "" when it ended by itself
    cut: int = 0  # bytes of output left out


def bwrap_path() -> str | None:
    return shutil.which(BWRAP)


class Sandbox:
    """Runs commands in the box; ``problem()`` says why it cannot, or None."""

    def __init__(self, settings: ExecSettings, workspace: Path) -> None:
        self.settings = settings
        self.workspace = workspace.resolve()
        self._bwrap = bwrap_path()
        self._pids_root = _pids_root() if os.geteuid() == 0 else None
        self._problem: str | None = None
        self._tried = False

    def problem(self) -> str | None:
        """Why commands cannot run in the box here, or None; found once (a trial run)."""
        if not self._tried:
            self._problem, self._tried = self._find_problem(), True
        return self._problem

    def _find_problem(self) -> str | None:
        if self._bwrap is None:
            return "bubblewrap (bwrap) is not installed: `apt-get install bubblewrap`"
        if os.geteuid() == 0 and self._pids_root is None:
            return (
                "Corvid runs as root and cannot make a pids control group, so a command's "
                "processes could not be limited; run Corvid as an ordinary user"
            )
        try:
            trial = subprocess.run(
                self.argv("true"), env={}, capture_output=True, timeout=10, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"bubblewrap could not be started ({type(exc).__name__})"
        if trial.returncode != 0:
            said = trial.stderr.decode(errors="replace").strip().splitlines()
            return "bubblewrap cannot make its box here" + (f" ({said[0][:200]})" if said else "")
        return None

    def argv(self, command: str) -> list[str]:
        """The bubblewrap command line that runs ``command`` with ``/bin/sh -c``."""
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
        args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
        if cfg.writable == "workspace":
            args += ["--bind", str(self.workspace), INSIDE]
        else:
            args += ["--dir", INSIDE]
        args += ["--chdir", INSIDE, "--clearenv"]
        for name, value in (("PATH", PATH), ("HOME", INSIDE), ("LANG", "C.UTF-8")):
            args += ["--setenv", name, value]
        return [*args, "--", "/bin/sh", "-c", command]

    async def run(self, command: str) -> Ran:
        problem = self.problem()
        if problem is not None:
            raise RuntimeError(problem)
        cfg = self.settings
        group = self._group()
        limit = cfg.max_output_kb * 1024
        began = time.monotonic()
        proc = await asyncio.create_subprocess_exec(
            *self.argv(command),
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
        await _remove_group(group)
        return Ran(
            None if stopped else status,
            kept.decode("utf-8", errors="replace"),
            time.monotonic() - began,
            stopped,
            max(0, seen - len(kept)),
        )

    def _group(self) -> Path | None:
        """A pids control group for one run (as root only), limited to the box's processes."""
        if self._pids_root is None:
            return None
        group = self._pids_root / f"corvid-exec-{secrets.token_hex(4)}"
        group.mkdir()
        (group / "pids.max").write_text(str(self.settings.max_processes))
        return group


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


async def _remove_group(group: Path | None) -> None:
    """Remove a run's control group once its last process is gone (bounded)."""
    if group is None:
        return
    for _ in range(100):
        if _emptied(group):
            return
        await asyncio.sleep(0.05)  # the kernel is still reaping the killed processes


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
