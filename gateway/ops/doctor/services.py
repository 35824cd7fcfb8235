"""``corvid doctor``'s checks of the control socket, the control page's port and transcription."""

from __future__ import annotations

import asyncio
import errno
import socket
from pathlib import Path

from gateway.config.layout import Layout
from gateway.config.loader import Config
from gateway.contract.ports import Check, Status

OK, WARN, FAIL = Status.OK, Status.WARN, Status.FAIL


async def check_transcription(config: Config, key_source: str, limit: float) -> Check:
    """Voice notes: the local model can be loaded, or the service answers and takes the key."""
    from channels.voice import OpenAITranscriber
    from gateway.channel_setup import hearing
    from gateway.contract.errors import ConfigError

    name = "transcription"
    try:
        heard = hearing(config)
    except ConfigError as exc:
        return Check(FAIL, name, str(exc), "fix transcription in config.yaml")
    assert heard is not None
    if not isinstance(heard.transcriber, OpenAITranscriber):
        return Check(OK, name, f"on this machine, with {config.transcription.model_path}")
    return await heard.transcriber.probe(limit, key_source)


async def check_web(config: Config, limit: float) -> Check:
    """The control page: beyond loopback without TLS is a warning (``web_setup``); a port it
    cannot listen on is a failure, since the page then does not start (and the address
    ``corvid web`` would print is another program's)."""
    from gateway.services.control import ask

    (setup,) = web_setup(config)
    if setup.status != OK or not config.web.enabled:
        return setup
    name, fix = (
        "control page",
        "set web.port to a free port in config.yaml, or stop the other program",
    )
    try:
        async with asyncio.timeout(limit):
            answer = await ask(config.layout.control_socket, {"cmd": "status"})
        served, running = answer["report"].get("web"), True
    except (ConnectionError, TimeoutError, OSError, ValueError, KeyError):
        served, running = None, False
    if served:
        return Check(
            OK,
            name,
            f"served by the running gateway at {served}; `corvid web` "
            "prints its address with the token",
        )
    problem = port_problem(config.web.host, config.web.port)
    if running:
        why = f": {problem}" if problem else " (its log says why)"
        return Check(
            FAIL,
            name,
            f"the running gateway's control page could not start{why}",
            fix + ", then restart Corvid",
        )
    if problem:
        return Check(FAIL, name, f"{problem}, so the control page cannot start there", fix)
    return setup


async def check_gateway(home: Path, limit: float, *, required: bool = False) -> Check:
    """Whether a gateway runs for this home: its control socket answers a ping. Not running is
    only a warning, unless ``required`` (``--alive``, for health checks)."""
    from gateway.services.control import ask

    sock = Layout(home).control_socket
    name = "gateway"
    down = FAIL if required else WARN
    try:
        async with asyncio.timeout(limit):
            answer = await ask(sock, {"cmd": "ping"})
    except ConnectionError:
        stale = " (a control.sock left by a process that was killed)" if sock.exists() else ""
        return Check(
            down,
            name,
            f"not running: nothing answers on {sock}{stale}",
            "start it with corvid run (or your service manager)",
        )
    except TimeoutError:
        return Check(
            FAIL,
            name,
            f"{sock} took a connection but gave no answer within "
            f"{limit:g} s: the gateway may be stuck",
            "restart it",
        )
    except (OSError, ValueError) as exc:
        return Check(
            down,
            name,
            f"cannot ask {sock}: {type(exc).__name__}: {exc}",
            "run corvid doctor as the user that runs Corvid",
        )
    pid = answer.get("pid")
    return Check(OK, name, "running" + (f" (pid {pid})" if pid else "") + f"; {sock} answers")


def web_setup(config: Config) -> list[Check]:
    """The control page can read all memory: listening beyond loopback is worth a warning
    unless a reverse proxy serves it over TLS."""
    web = config.web
    if not web.enabled:
        return [Check(OK, "control page", "off (web.enabled: false)")]
    where = f"{web.host}:{web.port}"
    if web.allow_remote and not web.behind_tls_proxy:
        return [
            Check(
                WARN,
                "control page",
                f"listens on {where} beyond loopback without TLS: the access token and all "
                "memory cross the network in the clear",
                "put a reverse proxy with TLS in front and set web.behind_tls_proxy: true, or "
                "set web.host back to 127.0.0.1",
            )
        ]
    return [Check(OK, "control page", f"on {where}; `corvid web` prints its address")]


def port_problem(host: str, port: int) -> str | None:
    """Why the control page could not listen on ``host:port`` now (another program holds
    it, say), or None. Bound as aiohttp binds, so a port merely in TIME_WAIT is free."""
    if port == 0:  # any free port
        return None
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        return f"{host} cannot be resolved ({exc.strerror or exc})"
    family, kind, proto, _, where = infos[0]
    with socket.socket(family, kind, proto) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(where)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return f"port {port} on {host} is held by another program"
            return f"cannot listen on {host}:{port} ({exc.strerror or exc})"
    return None
