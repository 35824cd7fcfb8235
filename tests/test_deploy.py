"""The deployment files: the systemd unit keeps its sandbox and, with the exec drop-in, lets
bubblewrap make the exec tool's box; the container keeps the downloaded model on a volume.

The unit cannot be started here (no systemd manager), so what bubblewrap asks of the kernel is
traced (``strace``) while it makes the real box, and held against what the unit's settings
allow, read the way systemd reads them, with ``systemd-analyze`` naming each system-call group.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent.sandbox.bwrap import Sandbox
from agent.settings import ExecSettings
from gateway.config.layout import Layout

ROOT = Path(__file__).resolve().parent.parent
UNIT = ROOT / "deploy" / "corvid.service"
EXEC_DROP_IN = ROOT / "deploy" / "corvid.service.d" / "exec.conf"
NAMESPACES = {
    "NEWNS": "mnt",
    "NEWUSER": "user",
    "NEWPID": "pid",
    "NEWNET": "net",
    "NEWIPC": "ipc",
    "NEWUTS": "uts",
    "NEWCGROUP": "cgroup",
    "NEWTIME": "time",
}
ALL_NAMESPACES = frozenset(NAMESPACES.values())


def _service_settings(*files: Path) -> list[tuple[str, str]]:
    """The ``[Service]`` assignments of a unit and its drop-ins, in the order systemd reads
    them."""
    out = []
    for path in files:
        section = ""
        for line in path.read_text().splitlines():
            line = line.strip()
            if line.startswith("["):
                section = line
            elif section == "[Service]" and "=" in line and not line.startswith("#"):
                key, _, value = line.partition("=")
                out.append((key, value))
    return out


def _groups() -> dict[str, list[str]]:
    listing = subprocess.run(
        ["systemd-analyze", "syscall-filter"], capture_output=True, text=True, check=True
    ).stdout
    groups: dict[str, list[str]] = {}
    current: list[str] = []
    for line in listing.splitlines():
        if line.startswith("@"):
            current = groups.setdefault(line.strip(), [])
        elif line.strip() and not line.strip().startswith("#"):
            current.append(line.strip())
    return groups


def _expand(names: Iterable[str], groups: dict[str, list[str]]) -> set[str]:
    out: set[str] = set()
    for name in names:
        out |= _expand(groups[name], groups) if name.startswith("@") else {name}
    return out


@dataclass(frozen=True)
class Policy:
    """What a unit lets its processes do, of what bubblewrap needs."""

    syscalls: frozenset[str]
    namespaces: frozenset[str]
    families: frozenset[str]
    proc_subset_pid: bool


def _policy(settings: list[tuple[str, str]]) -> Policy:
    groups = _groups()
    syscalls: set[str] | None = None  # None: no filter
    namespaces: set[str] | None = None  # None: as yet unset, all allowed
    families: set[str] | None = None
    subset_pid = False
    for key, value in settings:
        words = value.split()
        if key == "SystemCallFilter":
            assert syscalls is not None or not value.startswith("~"), "an allow list first"
            named = _expand((w.lstrip("~") for w in words), groups)
            if syscalls is None:
                syscalls = named | _expand(["@default"], groups)
            elif value.startswith("~"):
                syscalls -= named
            else:
                syscalls |= named
        elif key == "RestrictNamespaces":
            assert not value.startswith("~")
            if value == "":
                namespaces = None
            elif value in ("yes", "no"):
                namespaces = set() if value == "yes" else set(ALL_NAMESPACES)
            else:  # a list: the first is what is allowed, later ones add to it
                namespaces = set(words) | (namespaces or set())
        elif key == "RestrictAddressFamilies":
            assert value and not value.startswith("~")
            families = set(words) | (families or set())
        elif key == "ProcSubset":
            subset_pid = value == "pid"
    assert syscalls is not None and families is not None
    allowed = ALL_NAMESPACES if namespaces is None else frozenset(namespaces)
    return Policy(frozenset(syscalls), allowed, frozenset(families), subset_pid)


@dataclass(frozen=True)
class Traced:
    """What a traced process tree asked of the kernel."""

    syscalls: frozenset[str]
    namespaces: frozenset[str]
    families: frozenset[str]
    proc_files: frozenset[str]  # under /proc, not a process's own


def _trace(argv: list[str], log: Path) -> Traced:
    done = subprocess.run(
        [shutil.which("strace") or "strace", "-f", "-qq", "-s", "200", "-o", str(log), *argv],
        env={},
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    text = log.read_text()
    calls = re.findall(r"^\d+\s+(?:<\.\.\. )?([a-z0-9_]+)\(", text, re.M)
    # A number strace cannot name (seen once on a loaded machine: the number -10) is no call
    # the kernel has: it answers ENOSYS to it whatever a unit's filter says.
    calls = [c for c in calls if not c.startswith("syscall_0x")]
    made = {NAMESPACES[f] for f in re.findall(r"CLONE_(NEW[A-Z]+)", text)}
    families = set(re.findall(r"socket\((AF_[A-Z0-9]+)", text))
    proc = {
        path
        for path in re.findall(r"\"(/proc/[^\"]+)\"", text)
        if not re.match(r"/proc/(self|thread-self|\d+)(/|$)", path)
    }
    return Traced(frozenset(calls), frozenset(made), frozenset(families), frozenset(proc))


def _refused(policy: Policy, traced: Traced) -> list[str]:
    """What the unit would refuse the traced processes, each named."""
    out = [f"syscall {c}" for c in sorted(traced.syscalls - policy.syscalls)]
    out += [f"namespace {n}" for n in sorted(traced.namespaces - policy.namespaces)]
    out += [f"socket {f}" for f in sorted(traced.families - policy.families)]
    if policy.proc_subset_pid:
        out += [f"read {p} (ProcSubset=pid)" for p in sorted(traced.proc_files)]
    return out


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> Traced:
    """The real box made, traced: no network (its loopback brought up) and with network."""
    missing = [t for t in ("strace", "systemd-analyze", "bwrap") if shutil.which(t) is None]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)}")
    where = tmp_path_factory.mktemp("box")
    (where / "workspace").mkdir()
    runs = []
    for network in (False, True):
        box = Sandbox(ExecSettings(enabled=True, network=network), where / "workspace")
        if box.problem() is not None:
            pytest.skip(f"the box cannot be made here: {box.problem()}")
        runs.append(_trace(box.argv("ls / >/dev/null"), where / f"trace-{network}.txt"))
    return Traced(
        frozenset().union(*(r.syscalls for r in runs)),
        frozenset().union(*(r.namespaces for r in runs)),
        frozenset().union(*(r.families for r in runs)),
        frozenset().union(*(r.proc_files for r in runs)),
    )


def test_with_the_exec_drop_in_the_service_lets_bubblewrap_make_its_box(traced: Traced):
    assert {"mount", "pivot_root", "capset"} <= traced.syscalls  # the trace saw the box made
    assert {"user", "mnt", "pid", "net"} <= traced.namespaces
    policy = _policy(_service_settings(UNIT, EXEC_DROP_IN))
    assert _refused(policy, traced) == []


def test_without_it_the_service_keeps_its_sandbox_whole(traced: Traced):
    policy = _policy(_service_settings(UNIT))
    assert policy.namespaces == frozenset()
    refused = _refused(policy, traced)
    for expected in ("syscall capset", "syscall mount", "syscall pivot_root", "namespace user"):
        assert expected in refused
    # The drop-in opens only what bubblewrap needs: every other setting stays as it was.
    assert {k for k, _ in _service_settings(EXEC_DROP_IN)} == {
        "RestrictNamespaces",
        "SystemCallFilter",
        "RestrictAddressFamilies",
        "ProcSubset",
    }
    opened = _policy(_service_settings(UNIT, EXEC_DROP_IN))
    assert opened.syscalls - policy.syscalls <= _expand(["@mount", "capset"], _groups())
    assert opened.families - policy.families == {"AF_NETLINK"}


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd is not installed")
def test_systemd_analyze_verify_finds_nothing_to_say(tmp_path: Path):
    """The unit and its drop-in as installed, with ``ExecStart=`` pointing at this checkout's
    ``corvid`` (verify checks that it is there)."""
    corvid = Path(sys.executable).with_name("corvid")
    unit = tmp_path / "corvid.service"
    unit.write_text(re.sub(r"^ExecStart=\S+", f"ExecStart={corvid}", UNIT.read_text(), flags=re.M))
    (tmp_path / "corvid.service.d").mkdir()
    shutil.copy(EXEC_DROP_IN, tmp_path / "corvid.service.d" / "exec.conf")
    done = subprocess.run(
        ["systemd-analyze", "verify", str(unit)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout + done.stderr) == (0, "")


def test_the_container_keeps_the_downloaded_model_on_a_volume():
    dockerfile = (ROOT / "Dockerfile").read_text()
    [home] = re.findall(r"^\s*CORVID_HOME=(\S+)$", dockerfile, re.M)
    [volumes] = re.findall(r"^VOLUME (\[.*\])$", dockerfile, re.M)
    assert str(Layout(Path(home)).models) in volumes
