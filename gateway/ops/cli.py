"""The ``corvid`` command: parses arguments, then calls into Corvid; no wiring lives here."""

from __future__ import annotations

import argparse
import gc
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from gateway.config.envfile import with_env_file
from gateway.config.home import init_home, resolve_home
from gateway.config.layout import Layout
from gateway.contract.errors import ConfigError
from gateway.ops import usage as usage_commands
from gateway.ops.argtree import HOME_HELP, Command, Commands, Parser, Version, lazy, show_help
from gateway.ops.home import EXIT_CONFIG, NoHome

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)


def entry(argv: Sequence[str] | None = None) -> NoReturn:
    """The ``corvid`` command: ``main``, then the process's end without the last garbage
    collection over every object the libraries made (most of a stop's time); all is closed by
    then, and what a collection would free goes with the process."""
    status = 1
    try:
        status = main(argv)
    finally:
        gc.freeze()
    sys.exit(status)


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    environ = os.environ if environ is None else environ
    parser = _parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:  # a bare `corvid`: what it can do
        return show_help(parser)
    home = resolve_home(getattr(args, "home", None), environ)
    # The secrets `corvid setup` wrote, under what the environment itself sets.
    environ = with_env_file(Layout(home).env_file, environ)
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


def _parser() -> Parser:
    p = Parser(prog="corvid", description="A self-hosted personal assistant for your chat apps.")
    p.add_argument("--home", help=HOME_HELP, default=argparse.SUPPRESS)
    p.add_argument("-V", "--version", action=Version, nargs=0, help="show the version and exit")
    top = Commands(p, "command", "COMMAND")
    top.add("init", "create the home folder (never overwrites)", cmd_init)
    setup = top.add(
        "setup",
        "a guided first run: keys, bots, your ids, time zone; ends with doctor",
        lazy("setup", "cmd_setup"),
    )
    setup.add_argument(
        "--wait",
        type=float,
        default=300.0,
        help="seconds to wait for your first message to the Telegram bot (default 300)",
    )
    _gateway_commands(top)
    completion = top.add(
        "completion",
        "a completion script for bash, zsh or fish (see the README)",
        lambda args, home, environ: _completion(p, args.shell),
    )
    completion.add_argument("shell", choices=("bash", "zsh", "fish"))
    web = top.add(
        "web", "the control page's address, with its access token", lazy("commands", "web")
    )
    web.add_argument("--open", action="store_true", help="open it in the default browser")
    web.add_argument("--rotate-token", action="store_true", help="make a new token first")
    _memory_commands(top)
    _jobs_commands(top)
    listed = top.add("loops", "open loops: what was promised, to follow up", lazy("loops", "loops"))
    listed.add_argument("--all", action="store_true", help="also the loops done or dropped")
    listed.add_argument("--json", action="store_true", help="as JSON, for scripts")
    _pairing_commands(top)
    _mcp_commands(top)
    _backup_commands(top)
    _usage_command(top)
    _action_commands(top)
    _skill_commands(top)
    doctor = top.add(
        "doctor", "check config, permissions, tokens and the schedule", lazy("commands", "doctor")
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


def _gateway_commands(top: Commands) -> None:
    """Starting Corvid, and what asks the running gateway."""
    run = top.add("run", "start the gateway with every enabled channel", lazy("run", "cmd_run"))
    run.add_argument(
        "--log-format",
        choices=("text", "json"),
        help="log lines as text or as one JSON object each (default: logging.format)",
    )
    status = top.add(
        "status",
        "sessions, context use, errors and undelivered messages",
        lazy("commands", "status"),
    )
    status.add_argument("--json", action="store_true", help="the report as JSON, for scripts")
    top.add("chat", "talk to the assistant in this terminal", lazy("run", "cmd_chat"))
    top.add(
        "reload", "apply a changed config.yaml to the running gateway", lazy("commands", "reload")
    )


def _usage_command(top: Commands) -> None:
    usage = top.add(
        "usage", "what model calls cost, by day, chat, job or model", lazy("usage", "usage")
    )
    usage.add_argument(
        "--by", choices=("day", "chat", "job", "model", "purpose"), default="day", help="grouped by"
    )
    usage.add_argument(
        "--since",
        type=usage_commands.day,
        help="from this local day on, YYYY-MM-DD (default: the last "
        f"{usage_commands.DEFAULT_DAYS} days)",
    )
    usage.add_argument("--json", action="store_true", help="the rows as JSON, for scripts")


def _memory_commands(top: Commands) -> None:
    memory = top.group(
        top.add("memory", "search, rebuild, look back at and undo memory"), "memory_command", False
    )
    search = memory.add("search", "search MEMORY.md and the logs", lazy("memory", "memory_search"))
    search.add_argument("query", nargs="+")
    search.add_argument("-n", "--max-results", type=int, default=8)
    search.add_argument("--since", help="only notes written on or after this day (YYYY-MM-DD)")
    search.add_argument("--until", help="only notes written on or before this day (YYYY-MM-DD)")
    search.add_argument(
        "--json", action="store_true", help="each hit with file, lines, text, date and scores"
    )
    memory.add(
        "reindex",
        "rebuild the search index from the Markdown files",
        lazy("memory", "memory_reindex"),
    )
    history = memory.add(
        "history",
        "what changed in the workspace, and who changed it",
        lazy("history", "memory_history"),
    )
    history.add_argument("file", nargs="?", help="only this file (workspace-relative)")
    history.add_argument("-n", "--limit", type=int, default=30)
    history.add_argument("--diff", action="store_true", help="show each change as a diff")
    memory.add(
        "undo", "take back the latest change to the workspace", lazy("history", "memory_undo")
    )
    restore = memory.add(
        "restore", "put a file back as it was after a change", lazy("history", "memory_restore")
    )
    restore.add_argument("file", help="workspace-relative, e.g. MEMORY.md")
    restore.add_argument("at", help="a change number (from `history`) or an ISO date and time")
    memory.add(
        "proposals",
        "consolidation's proposals for MEMORY.md that wait for you",
        lazy("proposals", "memory_proposals"),
    )
    apply = memory.add("apply", "apply a memory proposal", lazy("proposals", "memory_apply"))
    apply.add_argument("id")
    apply.add_argument("numbers", nargs="*", type=int, help="only these of its changes")
    reject = memory.add("reject", "reject a memory proposal", lazy("proposals", "memory_reject"))
    reject.add_argument("id")


def _jobs_commands(top: Commands) -> None:
    jobs_parser = top.add(
        "jobs", "scheduled jobs: next run, last run, status, last error", lazy("jobs", "jobs")
    )
    jobs_parser.add_argument("--json", action="store_true", help="the jobs as JSON, for scripts")
    jobs = top.group(jobs_parser, "jobs_command", False)
    jobs.add("run", "run a job now, in the running gateway", lazy("jobs", "jobs_run")).add_argument(
        "job_id"
    )
    jobs.add(
        "cancel", "cancel a reminder or recurring job made in chat", lazy("jobs", "jobs_cancel")
    ).add_argument("job_id")


def _backup_commands(top: Commands) -> None:
    backup = top.add(
        "backup",
        "back up the home into one archive, also while Corvid runs",
        lazy("backup", "cmd_backup"),
    )
    backup.add_argument("file", nargs="?", help="the archive to write (default: in state/backups)")
    backup.add_argument(
        "--with-secrets",
        action="store_true",
        help="also keep the environment file and the control page's token",
    )
    restore = top.add(
        "restore",
        "put a backup in place of the home (with Corvid stopped)",
        lazy("backup", "cmd_restore"),
    )
    restore.add_argument("file", nargs="?", help="an archive made by corvid backup")
    restore.add_argument(
        "--undo", action="store_true", help="put back the home as it was before the last restore"
    )
    restore.add_argument(
        "--with-secrets",
        action="store_true",
        help="also take the backup's environment file and the control page's token and sign-ins",
    )


def _completion(parser: Parser, shell: str) -> int:
    from gateway.ops.completion import script

    print(script(parser, shell), end="")
    return 0


def _mcp_commands(top: Commands) -> None:
    mcp_parser = top.add(
        "mcp",
        "the MCP servers whose tools the assistant uses (as `mcp list`)",
        lazy("mcp", "mcp_list"),
    )
    mcp_parser.set_defaults(json=False, timeout=30.0)  # what `mcp list` takes
    mcp = top.group(mcp_parser, "mcp_command", False)
    listing = mcp.add("list", "every MCP server, its state and its tools", lazy("mcp", "mcp_list"))
    listing.add_argument("--json", action="store_true", help="as JSON, for scripts")
    listing.add_argument(
        "--timeout", type=float, default=30.0, help="seconds for a server to start (default 30)"
    )


def _action_commands(top: Commands) -> None:
    trail = top.add(
        "actions",
        "approvals asked, given and refused, and commands run",
        lazy("actions", "actions"),
    )
    trail.add_argument("--json", action="store_true", help="as JSON, for scripts")
    trail.add_argument("-n", "--limit", type=int, default=50, help="how many (default 50)")
    approvals = top.group(
        top.add(
            "approvals",
            "requests to act waiting for your answer (as `approvals list`)",
            lazy("actions", "approvals"),
        ),
        "approvals_command",
        False,
    )
    approvals.add("list", "requests to act waiting for your answer", lazy("actions", "approvals"))
    approve = approvals.add(
        "approve", "run a waiting request", lazy("actions", "approvals_approve")
    )
    approve.add_argument("request_id")
    approve.add_argument("--always", action="store_true", help="and allow the tool from now on")
    approvals.add(
        "deny", "turn a waiting request down", lazy("actions", "approvals_deny")
    ).add_argument("request_id")
    approvals.add(
        "forget",
        "take back 'always' for a tool: it asks again",
        lazy("actions", "approvals_forget"),
    ).add_argument("tool")


def _skill_commands(top: Commands) -> None:
    skills = top.group(
        top.add("skills", "what the assistant knows how to do (as `skills list`)",
                lazy("skills", "skills_list")),
        "skills_command",
        False,
    )  # fmt: skip
    skills.add("list", "every skill, bundled and installed", lazy("skills", "skills_list"))
    add = skills.add(
        "add",
        "install a skill from a folder or a git URL (shows it first)",
        lazy("skills", "skills_add"),
    )
    add.add_argument("source", help="a folder with SKILL.md (or folders of them), or a git URL")
    add.add_argument("-y", "--yes", action="store_true", help="install without asking")
    skills.add("remove", "remove an installed skill", lazy("skills", "skills_remove")).add_argument(
        "name"
    )


def _pairing_commands(top: Commands) -> None:
    about = "let someone new talk to the bot with a pairing code (as `pairing list`)"
    pairing = top.group(
        top.add("pairing", about, lazy("pairing", "pairing_list")), "pairing_command", False
    )
    pairing.add("list", "pending codes, and who has been approved", lazy("pairing", "pairing_list"))
    pairing.add(
        "approve", "approve a pairing code", lazy("pairing", "pairing_approve")
    ).add_argument("code")
    pairing.add(
        "deny", "drop a pending pairing code", lazy("pairing", "pairing_deny")
    ).add_argument("code")
    pairing.add("clear", "drop every pending pairing code", lazy("pairing", "pairing_clear"))
    revoke = pairing.add(
        "revoke",
        "take back an approval (allow_from is in config.yaml)",
        lazy("pairing", "pairing_revoke"),
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
        f"Next: `corvid setup` for a guided set-up, or edit {home / 'config.yaml'} and set "
        "ANTHROPIC_API_KEY; then `corvid chat` or `corvid run`."
    )
    return 0


if __name__ == "__main__":
    entry()
