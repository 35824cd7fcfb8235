"""``corvid run`` as a real process, for tests that signal or kill it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

API_KEY = "sk-run-test-key"
ROOT = Path(__file__).resolve().parents[2]
# How long a test waits for a fresh process's first model call: a bound, not a target. The
# process imports the SDK at that call, which takes seconds while other tests use the cores.
FIRST_CALL = 60.0


def probe(script: str, *args: str, timeout: float = 60) -> Any:
    """Run ``script`` in a fresh interpreter from the project's folder (an import there is
    its first), and return the JSON it printed last."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


class CorvidProcess:
    """A running ``corvid run``; with ``watch``, its log lines are read as they come, so a test
    can wait for one (and the pipe never fills)."""

    def __init__(self, proc: asyncio.subprocess.Process, watch: bool) -> None:
        self.proc = proc
        self.lines: list[str] = []
        self._changed = asyncio.Condition()
        self._reader = asyncio.create_task(self._read()) if watch else None

    async def _read(self) -> None:
        assert self.proc.stderr is not None
        async for raw in self.proc.stderr:
            async with self._changed:
                self.lines.append(raw.decode(errors="replace").rstrip("\n"))
                self._changed.notify_all()

    async def wait_line(self, pattern: str, timeout: float = 30) -> str:
        """The first log line matching ``pattern`` (a regular expression)."""
        rx = re.compile(pattern)

        def found() -> str | None:
            return next((line for line in self.lines if rx.search(line)), None)

        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(lambda: found() is not None)
        line = found()
        assert line is not None
        return line

    async def stop(self) -> int:
        """SIGTERM, as systemd or Ctrl-C would stop it; returns the exit code."""
        self.proc.terminate()
        code = await asyncio.wait_for(self.proc.wait(), 30)
        if self._reader is not None:
            await asyncio.wait_for(self._reader, 30)
        return code

    async def kill(self) -> None:
        """SIGKILL: no handler runs, nothing is flushed or closed."""
        self.proc.kill()
        await asyncio.wait_for(self.proc.wait(), 30)
        if self._reader is not None:
            await asyncio.wait_for(self._reader, 30)


@contextlib.asynccontextmanager
async def corvid_process(
    home: Path,
    secrets: dict[str, str],
    watch: bool = False,
    args: tuple[str, ...] = (),
    prelude: str = "",
) -> AsyncIterator[CorvidProcess]:
    """``corvid run`` for ``home``; killed on the way out if still running. ``prelude``: Python
    run in the process first (to report on it, say)."""
    env = {**os.environ, "CORVID_HOME": str(home), "ANTHROPIC_API_KEY": API_KEY, **secrets}
    env.pop("ANTHROPIC_AUTH_TOKEN", None)
    run = ("-m", "gateway.ops.cli", "run")
    if prelude:
        main = "import sys\nfrom gateway.ops.cli import main\nsys.exit(main(sys.argv[1:]))"
        run = ("-c", f"{prelude}\n{main}", "run")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, *run, *args, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    running = CorvidProcess(proc, watch)
    try:
        yield running
    finally:
        if proc.returncode is None:
            await running.kill()
