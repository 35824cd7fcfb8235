"""The ``corvid`` command: parses arguments, then calls into Corvid. No wiring lives here.

``run`` and ``chat`` start Corvid (through ``gateway.app.build_app``); the commands that look at
or change a home (memory, pairing, jobs, status, doctor) are in ``ops/commands.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.metadata
import logging
import os
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gateway.config.home import AlreadyRunning, init_home, lock_home, resolve_home
from gateway.config.loader import Config
from gateway.contract.errors import ConfigError
from gateway.ops import commands
from gateway.ops import jobs as job_commands
from gateway.ops import mcp as mcp_commands
from gateway.ops.commands import EXIT_CONFIG, NoHome, prepare
from gateway.services.logs import setup_logging

if TYPE_CHECKING:
    from gateway.app import App

log = logging.getLogger(__name__)

Command = Callable[[argparse.Namespace, Path, Mapping[str, str]], int]


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    environ = os.environ if environ is None else environ
    parser = _parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:  # a bare `corvid`: what it can do
        return _help(parser)
    home = resolve_home(getattr(args, "home", None), environ)
    try:
        func: Command = args.func
        status = int(func(args, home, environ) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return status
    except ConfigError as exc:
        print(f"corvid: configuration error in {home / 'config.yaml'}: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except NoHome as exc:
        print(f"corvid: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except BrokenPipeError:
        # `corvid status | head`: the reader has all it wanted.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        # Never a traceback at the person: one line, and how to get the details.
        if environ.get("CORVID_DEBUG"):
            raise
        print(
            f"corvid: unexpected error: {type(exc).__name__}: {exc} "
            "(run again with CORVID_DEBUG=1 for the details, and please report it)",
            file=sys.stderr,
        )
        return 1


class _Commands:
    """Adds subcommands that all take ``--home``, anywhere on the line: given twice, the last
    wins; not given, it is not set at all (so a later level cannot erase an earlier one)."""

    def __init__(self, sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
        self.sub = sub
        self.common = argparse.ArgumentParser(add_help=False)
        self.common.add_argument("--home", help=HOME_HELP, default=argparse.SUPPRESS)

    def add(self, name: str, help: str, func: Command | None = None) -> argparse.ArgumentParser:
        # The one-line help, as a sentence, is also what `corvid NAME --help` says it does.
        sentence = help[0].upper() + help[1:] + "."
        parser = self.sub.add_parser(name, parents=[self.common], help=help, description=sentence)
        # Without an action a group shows its actions, or does its most common one.
        parser.set_defaults(func=func or (lambda args, home, environ: _help(parser)))
        return parser

    def group(self, parser: argparse.ArgumentParser, dest: str, required: bool) -> _Commands:
        inner = _Commands(parser.add_subparsers(dest=dest, required=required, metavar="ACTION"))
        inner.common = self.common
        return inner


HOME_HELP = "Corvid's home folder (default: $CORVID_HOME or ~/.corvid)"


def _help(parser: argparse.ArgumentParser) -> int:
    print(parser.format_help(), end="")
    return 0


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="corvid", description="A self-hosted personal assistant for your chat apps."
    )
    p.add_argument("--home", help=HOME_HELP, default=argparse.SUPPRESS)
    p.add_argument("-V", "--version", action="version", version=f"corvid {_version()}")
    top = _Commands(p.add_subparsers(dest="command", metavar="COMMAND"))
    top.add("init", "create the home folder (never overwrites)", cmd_init)
    run = top.add("run", "start the gateway with every enabled channel", cmd_run)
    run.add_argument(
        "--log-format",
        choices=("text", "json"),
        help="log lines as text or as one JSON object each (default: logging.format)",
    )
    status = top.add(
        "status", "sessions, context use, errors and undelivered messages", commands.status
    )
    status.add_argument("--json", action="store_true", help="the report as JSON, for scripts")
    top.add("chat", "talk to the assistant in this terminal", cmd_chat)
    top.add("reload", "apply a changed config.yaml to the running gateway", commands.reload)
    completion = top.add("completion", "a completion script for bash, zsh or fish (see the README)",
                         lambda args, home, environ: _completion(p, args.shell))  # fmt: skip
    completion.add_argument("shell", choices=("bash", "zsh", "fish"))
    web = top.add("web", "the control page's address, with its access token", commands.web)
    web.add_argument("--open", action="store_true", help="open it in the default browser")
    memory = top.group(
        top.add("memory", "search or rebuild the memory index"), "memory_command", False
    )
    search = memory.add("search", "search MEMORY.md and the logs", commands.memory_search)
    search.add_argument("query", nargs="+")
    search.add_argument("-n", "--max-results", type=int, default=8)
    memory.add(
        "reindex", "rebuild the search index from the Markdown files", commands.memory_reindex
    )
    jobs_parser = top.add(
        "jobs", "scheduled jobs: next run, last run, status, last error", job_commands.jobs
    )
    jobs_parser.add_argument("--json", action="store_true", help="the jobs as JSON, for scripts")
    jobs = top.group(jobs_parser, "jobs_command", False)
    jobs.add("run", "run a job now, in the running gateway", job_commands.jobs_run).add_argument(
        "job_id"
    )
    jobs.add(
        "cancel", "cancel a reminder or recurring job made in chat", job_commands.jobs_cancel
    ).add_argument("job_id")
    _pairing_commands(top)
    _mcp_commands(top)
    doctor = top.add(
        "doctor", "check config, permissions, tokens and the schedule", commands.doctor
    )
    doctor.add_argument(
        "--timeout", type=float, default=10.0, help="seconds for each network check (default 10)"
    )
    doctor.add_argument(
        "--alive",
        action="store_true",
        help="only check that a running gateway answers (for health checks)",
    )
    return p


def _completion(parser: argparse.ArgumentParser, shell: str) -> int:
    from gateway.ops.completion import script

    print(script(parser, shell), end="")
    return 0


def _version() -> str:
    try:
        return importlib.metadata.version("corvid")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout, not installed
        return "(not installed)"


def _mcp_commands(top: _Commands) -> None:
    mcp_parser = top.add(
        "mcp",
        "the MCP servers whose tools the assistant uses (as `mcp list`)",
        mcp_commands.mcp_list,
    )
    mcp_parser.set_defaults(json=False, timeout=30.0)  # what `mcp list` takes
    mcp = top.group(mcp_parser, "mcp_command", False)
    listing = mcp.add("list", "every MCP server, its state and its tools", mcp_commands.mcp_list)
    listing.add_argument("--json", action="store_true", help="as JSON, for scripts")
    listing.add_argument(
        "--timeout", type=float, default=30.0, help="seconds for a server to start (default 30)"
    )


def _pairing_commands(top: _Commands) -> None:
    about = "let someone new talk to the bot with a pairing code (as `pairing list`)"
    pairing = top.group(top.add("pairing", about, commands.pairing_list), "pairing_command", False)
    pairing.add("list", "pending codes, and who has been approved", commands.pairing_list)
    pairing.add("approve", "approve a pairing code", commands.pairing_approve).add_argument("code")
    pairing.add("deny", "drop a pending pairing code", commands.pairing_deny).add_argument("code")
    pairing.add("clear", "drop every pending pairing code", commands.pairing_clear)
    revoke = pairing.add(
        "revoke", "take back an approval (allow_from is in config.yaml)", commands.pairing_revoke
    )
    revoke.add_argument("channel", choices=("telegram", "discord"))
    revoke.add_argument("user_id")


def cmd_init(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    if home.exists() and not home.is_dir():
        raise NoHome(f"{home} is a file, not a folder; give another --home")
    created = init_home(home, environ)
    if created:
        print(f"Set up {home}:")
        for path in created:
            print(f"  created {path}")
    else:
        print(f"{home} is already set up; nothing was changed.")
    print(
        f"Next: edit {home / 'config.yaml'}, set ANTHROPIC_API_KEY, "
        "then `corvid chat` or `corvid run`."
    )
    return 0


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
    return asyncio.run(_serve(config))


async def _serve(config: Config) -> int:
    from channels.base import ChannelStartError
    from gateway.app import build_app
    from gateway.channel_setup import build_channels

    app = build_app(config, build_channels(config))
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
    log.info("Corvid is running; Ctrl-C to stop")
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


def _reload_on_signal(app: App) -> None:
    """SIGHUP: config.yaml read again, as `corvid reload` does; the outcome goes to the log."""
    answer = app.reload()
    if not answer["ok"]:
        log.error("config.yaml was not reloaded, so nothing changed: %s", answer["error"])
    elif answer["restart"]:
        log.warning("these changes take effect at the next restart: %s",
                    ", ".join(answer["restart"]))  # fmt: skip


async def _key_refused(app: App, config: Config) -> str:
    """Ask the API once, at start, whether it takes the key and the model: a refusal then
    stops Corvid here, not at the first person who writes. Returns only for a refusal."""
    from gateway.ops.doctor.offline import read_raw
    from gateway.ops.doctor.report import key_source

    refused = await app.agent.llm.refused(10, key_source(read_raw(config.home), "llm.api_key"))
    if refused is not None:
        return refused.message + (f" — fix: {refused.fix}" if refused.fix else "")
    await asyncio.Event().wait()  # accepted (or not asked): nothing to say, ever
    raise AssertionError("unreachable")


def cmd_chat(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    config = prepare(home, environ, create=True)
    level = "DEBUG" if config.logging.level == "DEBUG" else "WARNING"
    setup_logging(level, config.secrets(), log_bodies=config.logging.log_bodies)
    problems = _missing_llm(config)
    if problems:
        print(f"corvid: cannot chat: {problems[0]}", file=sys.stderr)
        return EXIT_CONFIG
    return asyncio.run(_chat(config, color=not environ.get("NO_COLOR")))  # no-color.org


async def _chat(config: Config, *, color: bool = True) -> int:
    from channels.terminal import KEY, TerminalChannel
    from gateway.app import build_app

    terminal = TerminalChannel(color=color)
    # Jobs belong to `corvid run`; a chat beside it must not run (or take over) them.
    app = build_app(config, [terminal], with_scheduler=False)
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


if __name__ == "__main__":
    sys.exit(main())
