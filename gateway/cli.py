"""The ``corvid`` command: parses arguments, then calls into the gateway. No wiring lives here."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from gateway.config import Config, load_config
from gateway.errors import ConfigError
from gateway.home import init_home, resolve_home
from gateway.logs import setup_logging

if TYPE_CHECKING:
    from agent.memory_index import MemoryIndex
    from channels.pairing import PairingStore

log = logging.getLogger(__name__)

EXIT_CONFIG = 2


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    environ = os.environ if environ is None else environ
    args = _parser().parse_args(argv)
    home = resolve_home(args.home or args.home_first, environ)
    try:
        return int(args.func(args, home, environ) or 0)
    except ConfigError as exc:
        print(f"corvid: configuration error in {home / 'config.yaml'}: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except KeyboardInterrupt:
        return 130


def _parser() -> argparse.ArgumentParser:
    home_help = "Corvid's home folder (default: $CORVID_HOME or ~/.corvid)"
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--home", dest="home", help=home_help)
    # Accepted before the command too; argparse would let the subcommand's default overwrite
    # a shared dest, hence the second name.
    p = argparse.ArgumentParser(
        prog="corvid", description="A self-hosted personal assistant for your chat apps."
    )
    p.add_argument("--home", dest="home_first", help=home_help)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub.add_parser(
        "init", parents=[common], help="create the home folder (never overwrites)"
    ).set_defaults(func=cmd_init)
    run = sub.add_parser(
        "run", parents=[common], help="start the gateway with every enabled channel"
    )
    run.add_argument(
        "--log-format",
        choices=("text", "json"),
        help="log lines as text or as one JSON object each (default: logging.format)",
    )
    run.set_defaults(func=cmd_run)
    sub.add_parser(
        "status", parents=[common], help="sessions, context use, errors and undelivered messages"
    ).set_defaults(func=cmd_status)
    sub.add_parser(
        "chat", parents=[common], help="talk to the assistant in this terminal"
    ).set_defaults(func=cmd_chat)
    mem = sub.add_parser("memory", parents=[common], help="search or rebuild the memory index")
    mem_sub = mem.add_subparsers(dest="memory_command", required=True, metavar="ACTION")
    search = mem_sub.add_parser("search", parents=[common], help="search MEMORY.md and the logs")
    search.add_argument("query", nargs="+")
    search.add_argument("-n", "--max-results", type=int, default=8)
    search.set_defaults(func=cmd_memory_search)
    mem_sub.add_parser(
        "reindex", parents=[common], help="rebuild the search index from the Markdown files"
    ).set_defaults(func=cmd_memory_reindex)
    jobs = sub.add_parser(
        "jobs", parents=[common], help="scheduled jobs: next run, last run, status, last error"
    )
    jobs.set_defaults(func=cmd_jobs)
    jobs_sub = jobs.add_subparsers(dest="jobs_command", metavar="ACTION")
    run_job = jobs_sub.add_parser(
        "run", parents=[common], help="run a job now, in the running gateway"
    )
    run_job.add_argument("job_id")
    run_job.set_defaults(func=cmd_jobs_run)
    pair = sub.add_parser(
        "pairing", parents=[common], help="let someone new talk to the bot (pairing codes)"
    )
    pair_sub = pair.add_subparsers(dest="pairing_command", required=True, metavar="ACTION")
    pair_sub.add_parser(
        "list", parents=[common], help="pending codes, and who has been approved"
    ).set_defaults(func=cmd_pairing_list)
    approve = pair_sub.add_parser("approve", parents=[common], help="approve a pairing code")
    approve.add_argument("code")
    approve.set_defaults(func=cmd_pairing_approve)
    revoke = pair_sub.add_parser(
        "revoke", parents=[common], help="take back an approval (allow_from is in config.yaml)"
    )
    revoke.add_argument("channel", choices=("telegram", "discord"))
    revoke.add_argument("user_id")
    revoke.set_defaults(func=cmd_pairing_revoke)
    doctor = sub.add_parser(
        "doctor", parents=[common], help="check config, permissions, tokens and the schedule"
    )
    doctor.add_argument(
        "--timeout", type=float, default=10.0, help="seconds for each network check (default 10)"
    )
    doctor.add_argument(
        "--alive",
        action="store_true",
        help="only check that a running gateway answers (for health checks)",
    )
    doctor.set_defaults(func=cmd_doctor)
    return p


def cmd_init(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
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


def _prepare(home: Path, environ: Mapping[str, str]) -> Config:
    created = init_home(home, environ)
    if created:
        print(f"First run: created {home} (config.yaml, workspace/, state/).", file=sys.stderr)
    return load_config(home, environ)


def _missing_llm(config: Config) -> list[str]:
    if config.llm.api_key is None:
        return [config.missing("llm.api_key", "your Anthropic API key")]
    return []


def cmd_run(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    config = _prepare(home, environ)
    setup_logging(config.logging.level, config.secrets(), args.log_format or config.logging.format)
    problems = _missing_llm(config)
    tg, dc = config.channels.telegram, config.channels.discord
    if tg.enabled:
        if tg.token is None:
            problems.append(config.missing("channels.telegram.token", "the bot token"))
        if tg.webhook.url and tg.webhook.secret_token is None:
            problems.append(
                config.missing(
                    "channels.telegram.webhook.secret_token",
                    "a secret Telegram sends with every update, so forged posts are refused",
                )
            )
        if not tg.allow_from:
            log.warning(
                "channels.telegram.allow_from is empty: everyone who writes will get a pairing "
                "code; put your own Telegram user id there to be let in directly"
            )
    if dc.enabled:
        if dc.token is None:
            problems.append(config.missing("channels.discord.token", "the bot token"))
        if not dc.allow_from:
            log.warning(
                "channels.discord.allow_from is empty: everyone who writes will get a pairing "
                "code; put your own Discord user id there to be let in directly"
            )
    if not (tg.enabled or dc.enabled):
        problems.append(
            "no chat channel is enabled: set channels.telegram.enabled or "
            f"channels.discord.enabled to true in {home / 'config.yaml'}, or talk to Corvid "
            "locally with `corvid chat`"
        )
    if problems:
        print("corvid: cannot start:", file=sys.stderr)
        for problem in problems:
            print(f"  - {problem}", file=sys.stderr)
        return EXIT_CONFIG
    return asyncio.run(_serve(config))


async def _serve(config: Config) -> int:
    from channels.base import ChannelStartError
    from gateway.app import build_app, build_channels

    gateway = build_app(config, build_channels(config))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await gateway.start()
    except ChannelStartError as exc:
        await gateway.stop(grace=0)
        print(f"corvid: cannot start: {exc}", file=sys.stderr)
        return 1
    log.info("Corvid is running; Ctrl-C to stop")
    stopped = asyncio.ensure_future(stop.wait())
    failed = asyncio.ensure_future(gateway.wait_failed())
    await asyncio.wait((stopped, failed), return_when=asyncio.FIRST_COMPLETED)
    stopped.cancel()
    failed.cancel()
    log.info("shutting down")
    await gateway.stop()
    if failed.done() and not failed.cancelled():
        print(f"corvid: stopped: {failed.result()}", file=sys.stderr)
        return 1
    return 0


def cmd_chat(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    config = _prepare(home, environ)
    level = "DEBUG" if config.logging.level == "DEBUG" else "WARNING"
    setup_logging(level, config.secrets())
    problems = _missing_llm(config)
    if problems:
        print(f"corvid: cannot chat: {problems[0]}", file=sys.stderr)
        return EXIT_CONFIG
    return asyncio.run(_chat(config))


async def _chat(config: Config) -> int:
    from channels.terminal import TerminalChannel
    from gateway.app import build_app

    terminal = TerminalChannel()
    # Jobs belong to `corvid run`; a chat beside it must not run (or take over) them.
    gateway = build_app(config, [terminal], with_scheduler=False)
    await gateway.start()
    try:
        await terminal.run()
    except asyncio.CancelledError:
        # Ctrl-C: the person is right here and wants out now; the running turn is recorded
        # as cancelled and their message stays in the transcript.
        await gateway.stop(grace=0)
        raise
    await gateway.stop()
    return 0


def _open_index(home: Path, environ: Mapping[str, str]) -> MemoryIndex:
    from agent.memory_index import open_index

    return open_index(_prepare(home, environ))


def cmd_memory_reindex(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    index = _open_index(home, environ)
    try:
        started = time.perf_counter()
        files = index.rebuild()
        chunks = index.chunk_count
    finally:
        index.close()
    print(
        f"Indexed {files} file(s) into {chunks} chunk(s) in {time.perf_counter() - started:.2f} s."
    )
    return 0


def cmd_memory_search(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    index = _open_index(home, environ)
    try:
        hits = index.search(" ".join(args.query), max(1, args.max_results), include_long_term=True)
    finally:
        index.close()
    if not hits:
        print("No matches.")
        return 1
    for hit in hits:
        print(f"{hit.path}:{hit.start_line}-{hit.end_line}  (score {hit.score})")
        print("    " + hit.snippet.replace("\n", "\n    "))
    return 0


def _pairing(home: Path, environ: Mapping[str, str]) -> PairingStore:
    from channels.pairing import PairingStore

    return PairingStore(_prepare(home, environ).state / "pairing.json")


def cmd_pairing_list(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    store = _pairing(home, environ)
    pending = store.pending()
    now = store.clock()
    if pending:
        print("Pending (approve with `corvid pairing approve CODE`):")
        for req in pending:
            left = max(1, round((req.expires - now) / 60))
            who = f"{req.name} " if req.name else ""
            print(f"  {req.code}  {req.channel} user {who}(id {req.user_id}), {left} min left")
    else:
        print("No pending pairing codes.")
    approved = store.approved()
    if any(approved.values()):
        print("Approved:")
        for channel, users in sorted(approved.items()):
            for uid, info in sorted(users.items()):
                name = info.get("name") or ""
                print(f"  {channel} user {name + ' ' if name else ''}(id {uid})")
    return 0


def cmd_pairing_approve(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    from channels.pairing import PairingError

    store = _pairing(home, environ)
    try:
        req = store.approve(args.code)
    except PairingError as exc:
        print(f"corvid: {exc}", file=sys.stderr)
        return 1
    who = f"{req.name} (id {req.user_id})" if req.name else f"id {req.user_id}"
    print(
        f"Approved {req.channel} user {who}. Their next message will be answered, in a chat of "
        "their own that does not see your long-term memory (MEMORY.md). To give someone the "
        f"owner's access instead, add their id to channels.{req.channel}.allow_from."
    )
    return 0


def cmd_pairing_revoke(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    from channels.pairing import PairingError

    store = _pairing(home, environ)
    try:
        removed = store.revoke(args.channel, args.user_id)
    except PairingError as exc:
        print(f"corvid: {exc}", file=sys.stderr)
        return 1
    if not removed:
        print(
            f"{args.channel} user {args.user_id} was not approved by pairing "
            "(users in allow_from are removed by editing config.yaml).",
            file=sys.stderr,
        )
        return 1
    print(f"Revoked {args.channel} user {args.user_id}.")
    return 0


def cmd_jobs(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    from gateway.app import DAILY_SUMMARY
    from gateway.jobs import JobStore, describe
    from gateway.scheduler import Job, Ledger, Scheduler, SystemClock

    config = _prepare(home, environ)
    jobs = JobStore(config.state / "jobs.json").load()
    ds = config.schedule.daily_summary
    if ds.enabled and ds.target:
        hour, minute = ds.time.split(":")
        jobs.insert(
            0,
            Job(DAILY_SUMMARY, "cron", f"{int(minute)} {int(hour)} * * *",
                ds.timezone or config.timezone, ds.target, SystemClock().now()),
        )  # fmt: skip
    if not jobs:
        print("No scheduled jobs. (The daily summary is set up under schedule: in config.yaml.)")
        return 0
    ledger = Ledger(config.state / "scheduler.sqlite")
    try:
        scheduler = Scheduler(ledger, SystemClock(), run=None)  # type: ignore[arg-type]
        for job in jobs:
            tz = ZoneInfo(job.timezone)
            nxt = scheduler.next_run(job)
            last = ledger.history(job.id)
            print(f"{job.id}  → {job.target}")
            print(f"  schedule: {describe(job)}")
            if job.instruction:
                print(f"  does: {job.instruction}")
            print(f"  next run: {nxt.astimezone(tz):%Y-%m-%d %H:%M %Z}" if nxt else "  next run: —")
            if last:
                row = last[0]
                print(f"  last run: {row['slot'].replace('T', ' ')}: {row['status']}"
                      f" (attempts {row['attempts']})")  # fmt: skip
                if row["error"]:
                    print(f"  last error: {row['error']}")
            else:
                print("  last run: never")
    finally:
        ledger.close()
    return 0


def cmd_status(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    from gateway.control import ask
    from gateway.status import render, report

    config = _prepare(home, environ)

    async def live() -> dict[str, Any]:
        async with asyncio.timeout(10):
            return await ask(config.state / "control.sock", {"cmd": "status"})

    try:
        answer = asyncio.run(live())
        data = answer["report"]
    except (ConnectionError, TimeoutError, KeyError):
        data = report(config)
    print(render(data))
    return 0


def cmd_jobs_run(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    from gateway.control import ask

    config = _prepare(home, environ)

    async def run() -> dict[str, Any]:
        async with asyncio.timeout(900):  # a turn, with the model's own retries
            return await ask(config.state / "control.sock", {"cmd": "run_job", "id": args.job_id})

    try:
        answer = asyncio.run(run())
    except ConnectionError:
        print(
            "corvid: Corvid is not running here; jobs run inside the gateway (`corvid run`).",
            file=sys.stderr,
        )
        return 1
    status, error = answer.get("status"), answer.get("error")
    print(f"{args.job_id}: {status}" + (f" ({error})" if error else ""))
    return 0 if answer.get("ok") else 1


def cmd_doctor(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    from gateway.doctor import doctor

    return doctor(home, environ, timeout=max(0.1, args.timeout), alive_only=args.alive)


if __name__ == "__main__":
    sys.exit(main())
