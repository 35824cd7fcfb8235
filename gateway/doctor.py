"""``corvid doctor``: checks an installation and says, for each problem, how to fix it.

Checks, in the order printed: the home folder, ``config.yaml`` (parses and validates; file mode
when it holds secrets inline), the workspace, ``state/`` and its private files, the Anthropic API
key and base URL, each enabled chat platform's token, the scheduled jobs with their next run,
and whether a gateway is running here. The network checks (``gateway/probes.py``) run side by
side, each bounded by ``timeout`` seconds. Nothing is written: no file is created, no job slot
is claimed, no message is sent, and no secret is printed (every configured secret is masked in
the output).

``ok`` lines need nothing; ``warn`` lines work but deserve a look; a ``FAIL`` means ``corvid run``
will not start or will not work, and makes the exit status 1.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import stat
import sys
import typing
from collections.abc import Awaitable, Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, TextIO

import yaml

from gateway.config import ENV_REF, Config, Secret, load_config
from gateway.errors import ConfigError
from gateway.logs import Masker
from gateway.probes import (
    FAIL,
    OK,
    WARN,
    Check,
    Context,
    check_anthropic,
    check_discord,
    check_gateway,
    check_telegram,
    env_ref,
    lookup,
    preload,
    q,
)

__all__ = [
    "FAIL",
    "OK",
    "WARN",
    "Check",
    "doctor",
    "exit_status",
    "render",
    "run_checks",
    "secret_keys",
]

DEFAULT_TIMEOUT = 10.0
MAX_JOBS_SHOWN = 10


# -- entry points ---------------------------------------------------------------------------------


def doctor(
    home: Path,
    environ: Mapping[str, str],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    alive_only: bool = False,
    out: TextIO | None = None,
) -> int:
    """Run the checks, print one line each, and return the exit status (1 if any FAIL)."""
    from gateway.logs import setup_logging

    out = out or sys.stdout
    secrets = secret_values(home, environ)
    # Library warnings would interleave with the report; errors still show, masked.
    setup_logging("ERROR", secrets)
    if alive_only:
        checks = [asyncio.run(check_gateway(home, timeout, required=True))]
    else:
        print(f"Checking Corvid in {home}", file=out)
        checks = asyncio.run(run_checks(home, environ, limit=timeout))
    print(render(checks, secrets), file=out)
    return exit_status(checks)


def exit_status(checks: Sequence[Check]) -> int:
    return 1 if any(c.status == FAIL for c in checks) else 0


async def run_checks(
    home: Path, environ: Mapping[str, str], *, limit: float = DEFAULT_TIMEOUT
) -> list[Check]:
    """Every check, in the order they are printed; ``limit`` bounds each network check."""
    checks, config, raw = _local_checks(home, environ)
    if config is None:
        if checks[0].name == "home" and checks[0].status == FAIL:
            return checks
        checks.append(await check_gateway(home, limit))
        return checks
    ctx = Context(home, config, raw, limit)
    preload(config)  # slow imports, before any network check starts its clock
    tg, dc = config.channels.telegram, config.channels.discord
    network: list[Awaitable[Check]] = [_guarded("anthropic", check_anthropic(ctx))]
    if tg.enabled:
        network.append(_guarded("telegram", check_telegram(ctx)))
    if dc.enabled:
        network.append(_guarded("discord", check_discord(ctx)))
    network.append(_guarded("gateway", check_gateway(home, limit)))
    *platforms, gateway = await asyncio.gather(*network)
    checks.extend(platforms)
    checks.extend(_check_channel_setup(ctx))
    try:
        checks.append(check_jobs(ctx))
    except Exception as exc:
        checks.append(_crashed("jobs", exc))
    checks.append(gateway)
    return checks


async def _guarded(name: str, check: Awaitable[Check]) -> Check:
    """One check's unforeseen error is its own FAIL line, not the end of the report."""
    try:
        return await check
    except Exception as exc:
        return _crashed(name, exc)


def _crashed(name: str, exc: Exception) -> Check:
    return Check(
        FAIL,
        name,
        f"the check itself failed: {type(exc).__name__}: {exc}",
        "please report this, with the line above",
    )


def _local_checks(
    home: Path, environ: Mapping[str, str]
) -> tuple[list[Check], Config | None, Mapping[str, Any]]:
    """The checks that need no network: the folders, the files and the configuration."""
    if not home.is_dir():
        what = "is not a folder" if home.exists() else "does not exist"
        return [Check(FAIL, "home", f"{home} {what}", f"corvid init --home {q(home)}")], None, {}
    raw = _read_raw(home)
    config_check, config = _load(home, environ)
    checks = [
        _check_dir("home", home, private=False),
        config_check,
        _check_config_file(home, raw),
        _check_dir("workspace", home / "workspace", private=False),
        _check_dir("state", home / "state", private=True),
        *_check_state_files(home / "state"),
    ]
    return checks, config, raw


def render(checks: Sequence[Check], secrets: Sequence[str] = ()) -> str:
    """The report, with every secret value masked (a last line of defence: no check puts a
    secret in its message on purpose)."""
    lines = [line for check in checks for line in check.lines()]
    fails = sum(c.status == FAIL for c in checks)
    warns = sum(c.status == WARN for c in checks)
    if fails:
        lines.append(f"{fails} problem(s) to fix, {warns} warning(s).")
    elif warns:
        lines.append(f"No problems; {warns} warning(s).")
    else:
        lines.append("All checks passed.")
    return Masker(secrets, min_len=4)("\n".join(lines))


def secret_values(home: Path, environ: Mapping[str, str]) -> list[str]:
    """Every secret the configuration holds or refers to, valid configuration or not."""
    raw = _read_raw(home)
    values: list[str] = []
    for key in secret_keys():
        value = lookup(raw, key)
        if value is None or isinstance(value, dict | list):
            continue
        values.append(ENV_REF.sub(lambda m: environ.get(m[1], ""), str(value)))
    return [v for v in values if v]


def secret_keys(cls: type = Config, prefix: str = "") -> list[str]:
    """Dotted keys of every ``Secret`` option, found from the config classes themselves."""
    keys: list[str] = []
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        key = f"{prefix}.{f.name}" if prefix else f.name
        if tp is Secret or Secret in typing.get_args(tp):
            keys.append(key)
        elif dataclasses.is_dataclass(tp) and isinstance(tp, type):
            keys.extend(secret_keys(tp, key))
    return keys


# -- configuration and files ---------------------------------------------------------------------


def _read_raw(home: Path) -> Mapping[str, Any]:
    try:
        raw = yaml.safe_load((home / "config.yaml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError):
        return {}
    return raw if isinstance(raw, dict) else {}


def _load(home: Path, environ: Mapping[str, str]) -> tuple[Check, Config | None]:
    """``load_config``, the loader ``corvid run`` uses; a ConfigError names the key."""
    path = home / "config.yaml"
    try:
        config = load_config(home, environ)
    except ConfigError as exc:
        return Check(FAIL, "config", f"{path}: {exc}", f"edit {q(path)}"), None
    if not path.exists():
        return Check(
            WARN,
            "config",
            f"{path} does not exist; every option is at its default",
            f"corvid init --home {q(home)} writes one with every option explained",
        ), config
    return Check(OK, "config", f"{path} is valid"), config


def _check_config_file(home: Path, raw: Mapping[str, Any]) -> Check:
    path = home / "config.yaml"
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return Check(OK, "config.yaml", "no file, so no secrets in it")
    except OSError as exc:
        return Check(FAIL, "config.yaml", f"cannot look at {path}: {exc.strerror}")
    inline = [
        k for k in secret_keys() if (v := lookup(raw, k)) not in (None, "") and not env_ref(v)
    ]
    if mode & stat.S_IWOTH:
        return Check(
            FAIL,
            "config.yaml",
            f"{path} is writable by every user (mode {mode:04o}): "
            "anyone could point llm.base_url elsewhere and collect your API key",
            f"chmod 600 {q(path)}",
        )
    if inline and mode & 0o044:
        who = "every user" if mode & stat.S_IROTH else "its group"
        return Check(
            FAIL,
            "config.yaml",
            f"{path} holds {', '.join(inline)} inline and is readable by {who} (mode {mode:04o})",
            f"chmod 600 {q(path)} (or write the secrets as ${{ENV_VAR}} references "
            "and set them in the environment)",
        )
    if mode & stat.S_IWGRP:
        return Check(
            WARN,
            "config.yaml",
            f"{path} is writable by its group (mode {mode:04o})",
            f"chmod g-w {q(path)}",
        )
    where = f"{', '.join(inline)} inline, " if inline else "secrets from the environment, "
    return Check(OK, "config.yaml", f"{where}mode {mode:04o}")


def _check_dir(name: str, path: Path, *, private: bool) -> Check:
    try:
        st = path.stat()
    except FileNotFoundError:
        home = path.parent if name != "home" else path
        return Check(FAIL, name, f"{path} does not exist", f"corvid init --home {q(home)}")
    except OSError as exc:
        return Check(FAIL, name, f"cannot look at {path}: {exc.strerror}")
    if not stat.S_ISDIR(st.st_mode):
        return Check(FAIL, name, f"{path} is not a folder", "move it away, then corvid init")
    mode = stat.S_IMODE(st.st_mode)
    if private and mode & 0o077:
        return Check(
            FAIL,
            name,
            f"{path} is open to other users (mode {mode:04o}); it holds "
            "transcripts and pairing approvals",
            f"chmod 700 {q(path)}",
        )
    if mode & stat.S_IWOTH:
        return Check(
            FAIL,
            name,
            f"{path} is writable by every user (mode {mode:04o})",
            f"chmod o-w {q(path)}",
        )
    if not os.access(path, os.W_OK | os.X_OK):
        return Check(
            FAIL,
            name,
            f"{path} is not writable by this user (uid {os.geteuid()})",
            f"run Corvid as its owner (uid {st.st_uid}), or chown -R {os.geteuid()} {q(path)}",
        )
    if mode & stat.S_IWGRP:
        return Check(
            WARN,
            name,
            f"{path} is writable by its group (mode {mode:04o})",
            f"chmod g-w {q(path)}",
        )
    if st.st_uid != os.geteuid():
        return Check(
            WARN,
            name,
            f"{path} belongs to uid {st.st_uid}, not to you "
            f"(uid {os.geteuid()}); Corvid should run as its owner",
        )
    return Check(OK, name, f"{path} (mode {mode:04o})")


def _check_state_files(state: Path) -> list[Check]:
    """Files Corvid writes as 0600 (and sessions/ as 0700). ``state/`` being 0700 already keeps
    them private, so a loose mode here is a warning, not a failure."""
    if not state.is_dir():
        return []
    paths = [state / "pairing.json", state / "jobs.json", state / "sessions"]
    sessions = state / "sessions"
    try:
        if sessions.is_dir():
            paths.extend(sorted(sessions.glob("*.jsonl")))
    except OSError:
        pass
    loose: list[str] = []
    for path in paths:
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
        except OSError:
            continue
        if mode & 0o077:
            loose.append(f"{path.relative_to(state)} ({mode:04o})")
    if not loose:
        return []
    shown = ", ".join(loose[:3]) + (f" and {len(loose) - 3} more" if len(loose) > 3 else "")
    return [
        Check(
            WARN, "state files", f"readable by other users: {shown}", f"chmod -R go-rwx {q(state)}"
        )
    ]


def _check_channel_setup(ctx: Context) -> list[Check]:
    """What ``corvid run`` refuses (no channel enabled) or warns about (nobody allowed)."""
    config = ctx.config
    tg, dc = config.channels.telegram, config.channels.discord
    checks: list[Check] = []
    if not (tg.enabled or dc.enabled):
        checks.append(
            Check(
                FAIL,
                "channels",
                "no chat channel is enabled, so corvid run will not start",
                f"set channels.telegram.enabled or "
                f"channels.discord.enabled to true in {q(config.home / 'config.yaml')}"
                " (corvid chat works without)",
            )
        )
    if tg.enabled and tg.webhook.url and tg.webhook.secret_token is None:
        checks.append(
            Check(
                FAIL,
                "telegram webhook",
                config.missing(
                    "channels.telegram.webhook.secret_token",
                    "a secret Telegram sends with every update, so forged posts are refused",
                ),
            )
        )
    for name, cfg in (("telegram", tg), ("discord", dc)):
        if cfg.enabled and cfg.token is not None and not cfg.allow_from:
            checks.append(
                Check(
                    WARN,
                    f"{name} access",
                    "allow_from is empty: everyone who writes gets a pairing code, you included",
                    f"put your own {name} user id in channels.{name}.allow_from",
                )
            )
    return checks


# -- schedule -------------------------------------------------------------------------------------


def check_jobs(ctx: Context) -> Check:
    """The jobs ``corvid run`` would schedule and their next runs, read from the ledger without
    writing to it (no slot is claimed)."""
    import sqlite3
    from datetime import UTC, datetime
    from zoneinfo import ZoneInfo

    from gateway.app import Gateway
    from gateway.events import SessionKey
    from gateway.jobs import JobStore, describe
    from gateway.scheduler import Ledger, Scheduler, SystemClock

    config, name = ctx.config, "jobs"
    store = JobStore(config.state / "jobs.json")
    now = datetime.now(UTC)
    # Gateway.scheduled_jobs is the one definition of what runs; it needs only these.
    plan = SimpleNamespace(
        config=config, jobs=store, scheduler=None, agent=SimpleNamespace(clock=lambda: now)
    )
    try:
        jobs = Gateway.scheduled_jobs(plan)  # type: ignore[arg-type]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return Check(
            FAIL,
            name,
            f"{store.path} cannot be read ({type(exc).__name__}: {exc}); "
            "corvid run would stop at start-up",
            "restore it from a backup, or move it away (its reminders are lost)",
        )
    if not jobs:
        return Check(OK, name, "none scheduled (the daily summary and the heartbeat are off)")
    enabled = {n for n in ("telegram", "discord") if getattr(config.channels, n).enabled}
    details: list[str] = []
    problems: list[str] = []
    try:
        ledger = Ledger(config.state / "scheduler.sqlite", read_only=True)
    except sqlite3.Error as exc:
        return _unreadable_ledger(name, len(jobs), exc)
    try:
        scheduler = Scheduler(ledger, SystemClock(), run=None)  # type: ignore[arg-type]
        for job in jobs:
            try:
                nxt = scheduler.next_run(job)
            except (ValueError, TypeError) as exc:  # a hand-edited jobs.json
                details.append(f"{job.id} → {job.target}: cannot be scheduled: {exc}")
                problems.append(f"{job.id} cannot be scheduled")
                continue
            when = f"{nxt.astimezone(ZoneInfo(job.timezone)):%Y-%m-%d %H:%M %Z}" if nxt else "—"
            line = f"{job.id} → {job.target}: {describe(job)}; next run {when}"
            last = ledger.history(job.id)
            if last and last[0]["status"] == "failed":
                line += f"; last run failed: {last[0]['error']}"
                problems.append(f"the last run of {job.id} failed")
            details.append(line)
            try:
                channel = SessionKey.parse(job.target).channel
            except ValueError:
                problems.append(f"{job.id} has no valid target")
                continue
            if channel not in enabled:
                problems.append(f"{job.id} goes to {channel}, which is not enabled")
    except sqlite3.Error as exc:
        return _unreadable_ledger(name, len(jobs), exc)
    finally:
        ledger.close()
    if len(details) > MAX_JOBS_SHOWN:
        more = len(details) - MAX_JOBS_SHOWN
        details = [*details[:MAX_JOBS_SHOWN], f"… and {more} more (corvid jobs lists them all)"]
    if problems:
        return Check(
            WARN,
            name,
            f"{len(jobs)} scheduled; " + "; ".join(problems),
            "see corvid jobs",
            tuple(details),
        )
    return Check(OK, name, f"{len(jobs)} scheduled", details=tuple(details))


def _unreadable_ledger(name: str, jobs: int, exc: Exception) -> Check:
    return Check(
        WARN,
        name,
        f"{jobs} scheduled, but state/scheduler.sqlite cannot be read ({exc})",
        "corvid jobs shows the same ledger",
    )
