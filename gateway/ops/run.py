"""``corvid run`` and ``corvid chat``: Corvid in the foreground until a signal or failure."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import logging
import signal
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from gateway.config.home import AlreadyRunning, lock_home, lock_terminal_chat
from gateway.config.loader import Config
from gateway.contract.errors import ConfigError
from gateway.ops.home import EXIT_CONFIG, prepare
from gateway.services.logs import setup_logging

if TYPE_CHECKING:
    from channels.terminal import ScreenLog
    from gateway.running import App

log = logging.getLogger(__name__)


def _missing_llm(config: Config) -> list[str]:
    if config.llm.api_key is None:
        return [config.missing("llm.api_key", "your Anthropic API key")]
    return []


def _missing_for_run(config: Config) -> list[str]:
    """What keeps ``corvid run`` from starting; warns about what only looks wrong."""
    channels = config.channels
    problems = _missing_llm(config)
    problems += [config.missing(need.key, need.what) for need in channels.unmet()]
    for name in channels.open_to_all():
        log.warning(
            "channels.%s.allow_from is empty: everyone who writes will get a pairing "
            "code; put your own %s user id there to be let in directly",
            name,
            name.capitalize(),
        )
    if not config.chat_channels():  # the control page has a chat of its own
        problems.append(
            "no chat channel is enabled: set channels.telegram.enabled, "
            f"channels.discord.enabled or web.enabled to true in {config.layout.config_file}, "
            "or talk to Corvid locally with `corvid chat`"
        )
    return problems


def cmd_run(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    config = prepare(home, environ, create=True)
    setup_logging(
        config.logging.level,
        config.secrets(),
        args.log_format or config.logging.format,
        log_bodies=config.logging.log_bodies,
    )
    problems = _missing_for_run(config)
    if problems:
        print("corvid: cannot start:", file=sys.stderr)
        for problem in problems:
            print(f"  - {problem}", file=sys.stderr)
        return EXIT_CONFIG
    try:
        lock_home(home)  # held until the process ends
    except AlreadyRunning as exc:
        print(f"corvid: {exc}", file=sys.stderr)
        return 1
    if not _upgraded(config):
        return EXIT_CONFIG
    _import_sdk_early()
    return asyncio.run(_serve(config))


def _import_sdk_early(module: str = "anthropic") -> threading.Thread:
    """Start importing the anthropic SDK now, in a thread, while the gateway is built and the
    channels connect: a message waiting at start is answered sooner, and polling does not
    wait for it. A failure is said in one line of the log."""

    def load() -> None:
        try:
            importlib.import_module(module)
        except Exception as exc:  # said once, in a line; each turn tries again and says so
            log.warning(
                "could not load %s (%s: %s); each message will try again",
                module,
                type(exc).__name__,
                exc,
            )

    thread = threading.Thread(target=load, name="sdk-import", daemon=True)
    thread.start()
    return thread


def _upgraded(config: Config) -> bool:
    """Carry the home forward from an older Corvid, naming each change in the log; False
    (said on stderr) when a file is from a newer Corvid."""
    from gateway.upgrades.home import upgrade_home
    from gateway.upgrades.state import NewerState

    try:
        changes = upgrade_home(config.layout)
    except (NewerState, ConfigError) as exc:
        print(f"corvid: cannot start: {exc}", file=sys.stderr)
        return False
    for change in changes:
        log.warning("upgraded: %s", change)
    return True


async def _serve(config: Config) -> int:
    from channels.base import ChannelStartError
    from gateway.app import build_app
    from gateway.channel_setup import build_channels

    app = build_app(config, build_channels(config))
    if (small := app.agent.window_problem()) is not None:
        await app.stop(grace=0)
        print(f"corvid: cannot start: {small}", file=sys.stderr)
        return EXIT_CONFIG
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    signals = 0

    def on_signal() -> None:
        # The first asks for a clean stop; during the shutdown grace the second says what is
        # being waited for, and the third stops the replies still running.
        nonlocal signals
        signals += 1
        stop.set()
        if signals == 2:
            turns = app.router.running_turns()
            replies = "1 reply" if turns == 1 else f"{turns} replies"
            print(
                f"corvid: waiting for {replies} to finish (up to "
                f"{config.gateway.shutdown_grace:g} s); press Ctrl-C again to stop them now",
                file=sys.stderr,
            )
        elif signals >= 3:
            print("corvid: stopping the replies still running", file=sys.stderr)
            app.router.force()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal)
    loop.add_signal_handler(signal.SIGHUP, lambda: _reload_on_signal(app))
    try:
        await app.start()
    except ChannelStartError as exc:
        await app.stop(grace=0)
        print(f"corvid: cannot start: {exc}", file=sys.stderr)
        return 1
    _running_notice(config)
    stopped = asyncio.ensure_future(stop.wait())
    failed = asyncio.ensure_future(app.wait_failed())
    refused = asyncio.ensure_future(_key_refused(app, config))
    await asyncio.wait((stopped, failed, refused), return_when=asyncio.FIRST_COMPLETED)
    for task in (stopped, failed, refused):
        task.cancel()
    log.info("shutting down")
    await app.stop()
    if refused.done() and not refused.cancelled():
        print(f"corvid: cannot start: {refused.result()}", file=sys.stderr)
        return EXIT_CONFIG
    if failed.done() and not failed.cancelled():
        print(f"corvid: stopped: {failed.result()}", file=sys.stderr)
        return 1
    return 0


def _running_notice(config: Config) -> None:
    log.info("Corvid is running; Ctrl-C to stop")
    if not config.channels.enabled():
        log.info(
            "no chat platform is on: talk to Corvid in the control page's Chat (`corvid web` "
            "prints its address) or with `corvid chat`; `corvid setup` connects Telegram or "
            "Discord"
        )


def _reload_on_signal(app: App) -> None:
    """SIGHUP: config.yaml read again, as `corvid reload` does; the outcome goes to the log."""
    answer = app.reload()
    if not answer["ok"]:
        log.error("config.yaml was not reloaded, so nothing changed: %s", answer["error"])
    elif answer["restart"]:
        log.warning(
            "these changes take effect at the next restart: %s", ", ".join(answer["restart"])
        )


async def _key_refused(app: App, config: Config) -> str:
    """Ask the API once, at start, whether it takes the key and the model: a refusal then
    stops Corvid here, not at the first person who writes. Returns only for a refusal."""

    def source() -> str:
        from gateway.ops.doctor.offline import read_raw
        from gateway.ops.doctor.probes import key_source

        return key_source(read_raw(config.home), "llm.api_key")

    refused = await app.agent.llm.refused(10, source)
    if refused is not None:
        return refused.message + (f" — fix: {refused.fix}" if refused.fix else "")
    await asyncio.Event().wait()  # accepted (or not asked): nothing to say, ever
    raise AssertionError("unreachable")


def cmd_chat(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    from channels.terminal import ScreenLog

    config = prepare(home, environ, create=True)
    level = "DEBUG" if config.logging.level == "DEBUG" else "WARNING"
    # At a terminal, a warning goes above the prompt, not into what is being typed.
    screen = ScreenLog(sys.stderr)
    setup_logging(level, config.secrets(), stream=screen, log_bodies=config.logging.log_bodies)
    problems = _missing_llm(config)
    if problems:
        print(f"corvid: cannot chat: {problems[0]}", file=sys.stderr)
        return EXIT_CONFIG
    try:
        lock_terminal_chat(home)  # held until the process ends
    except AlreadyRunning as exc:
        print(f"corvid: {exc}", file=sys.stderr)
        return 1
    if not _upgraded(config):
        return EXIT_CONFIG
    _import_sdk_early()
    return asyncio.run(_chat(config, screen, color=not environ.get("NO_COLOR")))  # no-color.org


async def _chat(config: Config, screen: ScreenLog, *, color: bool = True) -> int:
    from channels.terminal import KEY, TerminalChannel
    from gateway.app import build_app

    terminal = TerminalChannel(color=color)
    screen.attach(terminal)
    # Jobs belong to `corvid run`; a chat beside it must not run (or take over) them.
    app = build_app(config, [terminal], with_scheduler=False)
    if (small := app.agent.window_problem()) is not None:
        await app.stop(grace=0)
        print(f"corvid: cannot chat: {small}", file=sys.stderr)
        return EXIT_CONFIG
    await app.start()
    try:
        await terminal.run()
    except asyncio.CancelledError:
        # Ctrl-C: the person is right here and wants out now. The reply in progress is
        # stopped as /stop stops it, so its message is not asked again in the next chat.
        if app.router.stop_turn(KEY):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(app.router.idle(), 5)
        await app.stop(grace=0)
        raise
    await app.stop()
    return 0
