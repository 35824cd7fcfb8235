"""A local control socket, ``state/control.sock``, for commands that act on the running gateway."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from channels.pairing import PairingRequest
from gateway.config.layout import Layout
from gateway.runtime.approvals import OwnerApprovals

log = logging.getLogger(__name__)

# Unix socket paths are limited to about 108 bytes.
MAX_SOCKET_PATH = 100

StatusReport = Callable[[], dict[str, Any]]
RunJob = Callable[[str], Awaitable[tuple[str | None, str | None]]]
CancelJob = Callable[[str], str | None]
Reload = Callable[[], dict[str, Any]]
Paired = Callable[[PairingRequest, bool], None]
RotateToken = Callable[[], bool]


class ControlServer:
    """Answers ``ping``, ``status`` (from ``status()``), ``run_job`` (through ``run_job``,
    which returns the recorded status, None for no such job, and the error) and
    ``cancel_job`` (through ``cancel_job``, which returns None or why it could not) and
    ``reload`` (config.yaml read again: what was applied, what waits for a restart) and
    ``paired`` (``corvid pairing`` answered a request: its notice and the person are told) and
    ``rotate_token`` (the control page's new access token; False when the page is not up) and
    ``approvals`` (the requests to act waiting for the owner) and ``decide`` (an answer to
    one)."""

    def __init__(
        self,
        path: Path,
        *,
        status: StatusReport,
        run_job: RunJob,
        cancel_job: CancelJob,
        reload: Reload | None = None,
        paired: Paired | None = None,
        rotate_token: RotateToken | None = None,
        approvals: OwnerApprovals | None = None,
    ) -> None:
        self.path = path
        self._approvals = approvals
        self._status = status
        self._reload = reload
        self._paired = paired
        self._rotate_token = rotate_token
        self._run_job = run_job
        self._cancel_job = cancel_job
        self._server: asyncio.Server | None = None
        self._inode: tuple[int, int] | None = None  # of the socket file this server made

    async def start(self) -> None:
        if len(str(self.path).encode()) > MAX_SOCKET_PATH:
            log.warning("control socket path too long (%s); `corvid jobs run` is off", self.path)
            return
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()  # left over from a process that was killed
        self._server = await asyncio.start_unix_server(self._serve, path=str(self.path))
        os.chmod(self.path, 0o600)  # the owner's user alone, in a state/ that is 0700 too
        st = self.path.stat()
        self._inode = (st.st_dev, st.st_ino)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
            # Only the socket this server made: another process's may be there now.
            with contextlib.suppress(FileNotFoundError):
                st = self.path.stat()
                if (st.st_dev, st.st_ino) == self._inode:
                    self.path.unlink()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), 10)
            try:
                request = json.loads(line)
                answer = await self._handle(request)
            except (ValueError, KeyError, TypeError) as exc:
                answer = {"ok": False, "error": f"bad request: {exc}"}
            writer.write(json.dumps(answer).encode() + b"\n")
            await writer.drain()
        except (TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def _handle(self, request: dict[str, Any]) -> dict[str, Any]:
        cmd = request.get("cmd")
        if cmd == "ping":  # `corvid doctor`: is a gateway running here?
            return {"ok": True, "pid": os.getpid()}
        if cmd == "status":
            return {"ok": True, "report": self._status()}
        if cmd == "run_job":
            status, error = await self._run_job(str(request["id"]))
            # A run with nothing to do (a quiet day, outside active hours) did right: skipped.
            ok = status in ("sent", "skipped")
            return {"ok": ok, "status": status or "unknown", "error": error}
        if cmd == "reload" and self._reload is not None:
            return self._reload()
        if cmd == "paired" and self._paired is not None:
            self._paired(PairingRequest(**request["request"]), bool(request["approved"]))
            return {"ok": True}
        if cmd == "rotate_token" and self._rotate_token is not None:
            return {"ok": self._rotate_token()}
        if cmd == "approvals" and self._approvals is not None:
            return {"ok": True, "waiting": [r.as_dict() for r in self._approvals.waiting()]}
        if cmd == "decide" and self._approvals is not None:
            problem = self._approvals.decide(str(request["id"]), str(request["answer"]))
            return {"ok": problem is None, "error": problem}
        if cmd == "cancel_job":
            problem = self._cancel_job(str(request["id"]))
            return {"ok": problem is None, "error": problem}
        return {"ok": False, "error": f"unknown command {cmd!r}"}


async def ask(path: Path, request: dict[str, Any]) -> dict[str, Any]:
    """Send one request to a running gateway; raises ConnectionError if none is running.
    The caller bounds the wait (``asyncio.timeout``)."""
    try:
        reader, writer = await asyncio.open_unix_connection(str(path))
    except (FileNotFoundError, ConnectionRefusedError) as exc:
        raise ConnectionError("Corvid is not running") from exc
    try:
        writer.write(json.dumps(request).encode() + b"\n")
        await writer.drain()
        line = await reader.readline()
        answer = json.loads(line)
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()
    if not isinstance(answer, dict):
        raise ValueError("the control socket answered something other than an object")
    return answer


def tell(path: Path, request: dict[str, Any]) -> None:
    """Send one request to a running gateway without waiting for the answer (what it
    reports happened already); nothing when none is running."""
    import socket

    with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as conn:
        conn.settimeout(2)
        conn.connect(str(path))
        conn.sendall(json.dumps(request).encode() + b"\n")


def rotate_web_token(layout: Layout) -> None:
    """A new access token for the control page, made by the running gateway (whose page then
    refuses the old one at once) or, with none running, in ``state/``; every browser is
    signed out."""
    from gateway.web.access import new_access

    try:
        rotated = ask_running(layout.control_socket, {"cmd": "rotate_token"}, 10).get("ok")
    except (ConnectionError, TimeoutError):
        rotated = False
    if not rotated:  # not running, or running without its control page
        new_access(layout.web_token, layout.web_sessions)
    print("A new access token is in place; every browser was signed out.", file=sys.stderr)


def ask_running(path: Path, request: dict[str, Any], timeout: float) -> dict[str, Any]:
    """``ask`` from the command line: raises ConnectionError when no gateway runs here, and
    TimeoutError when it does not answer within ``timeout`` seconds."""

    async def asking() -> dict[str, Any]:
        async with asyncio.timeout(timeout):
            return await ask(path, request)

    return asyncio.run(asking())
