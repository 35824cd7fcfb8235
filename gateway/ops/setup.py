"""``corvid setup``: a guided first run in the terminal, also from a pipe (one answer a line)."""

from __future__ import annotations

import argparse
import contextlib
import copy
import fcntl
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml

from gateway.config.envfile import read_env_file, update_env_file, with_env_file
from gateway.config.home import detect_timezone, init_home
from gateway.config.layout import Layout
from gateway.config.loader import read_config_file, read_config_text
from gateway.config.yaml_lines import set_values
from gateway.contract.errors import ConfigError
from gateway.infra.atomic import write_atomic
from gateway.ops import setup_checks as checks
from gateway.ops.setup_ask import Ask, Plan, Stopped, checked
from gateway.ops.setup_channels import discord, telegram


def cmd_setup(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    layout = Layout(home)
    ask = Ask(sys.stdin, sys.stdout)
    if _running(layout):
        ask.say(f"corvid: Corvid is running for {home}; stop it first, then run setup again")
        return 1
    init_home(home, environ)
    try:
        raw = read_config_file(layout.config_file)
    except ConfigError as exc:
        ask.say(
            f"corvid: {layout.config_file}: {exc}; fix it (or move it away) and run setup again"
        )
        return 1
    text = layout.config_file.read_text(encoding="utf-8")
    env = {**environ, **read_env_file(layout.env_file)}
    plan = Plan(raw if isinstance(raw, dict) else {}, env)
    ask.say(f"Setting up Corvid in {home}. Enter keeps the answer in [brackets].")
    try:
        _anthropic(ask, plan)
        telegram(ask, plan, args.wait)
        discord(ask, plan)
        _timezone(ask, plan, environ)
        _summary(ask, plan)
    except Stopped:
        print("\ncorvid: setup stopped (no more input); no answer was saved", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ncorvid: setup stopped (Ctrl-C); no answer was saved", file=sys.stderr)
        return 130
    _write(ask, layout, text, plan)
    ask.say("\nChecking everything with corvid doctor:")
    from gateway.ops.doctor.report import doctor

    try:
        return doctor(home, with_env_file(layout.env_file, environ), timeout=10, alive_only=False)
    except KeyboardInterrupt:
        print("\ncorvid: the answers are saved; the checks were cut short: corvid doctor")
        return 130


def _running(layout: Layout) -> bool:
    if not layout.run_lock.exists():
        return False
    fd = os.open(layout.run_lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def _anthropic(ask: Ask, plan: Plan) -> None:
    ask.say("\n1. Anthropic API key (https://console.anthropic.com/settings/keys)")
    var, current = plan.secret("llm.api_key", "ANTHROPIC_API_KEY")
    base = plan.expanded("llm.base_url") or plan.env.get("ANTHROPIC_BASE_URL")
    got = checked(
        ask,
        "API key",
        current,
        lambda key: checks.check_api_key(key, base),
        empty="   skipped: Corvid cannot answer without one; run corvid setup again",
        refused="   left as it was; run corvid setup again with a working key",
    )
    if got is None:
        return
    key, models = got
    ask.say(f"   ok: the key works (models: {models})")
    plan.secrets[var] = key


def _timezone(ask: Ask, plan: Plan, environ: Mapping[str, str]) -> None:
    # `corvid init` put the detected one there; an owner's own choice is kept.
    default = str(plan.get("timezone") or "") or detect_timezone(environ)
    while True:
        answer = ask.line("\n4. Your time zone", default)
        with contextlib.suppress(ZoneInfoNotFoundError, ValueError):
            ZoneInfo(answer)
            plan.set("timezone", answer)
            return
        ask.say(f"   {answer!r} is not a time zone name (like Europe/Berlin)")


def _summary(ask: Ask, plan: Plan) -> None:
    enabled = bool(plan.get("schedule.daily_summary.enabled", False))
    current = str(plan.get("schedule.daily_summary.time", "21:00")) if enabled else "off"
    target = str(plan.get("schedule.daily_summary.target") or plan.owner_chat)
    while True:
        answer = ask.line("\n5. A summary of your day every evening at (HH:MM, or off)", current)
        if answer.lower() == "off":
            plan.set("schedule.daily_summary.enabled", False)
            return
        hour, _, minute = answer.partition(":")
        if hour.isdigit() and minute.isdigit() and int(hour) < 24 and int(minute) < 60:
            break
        ask.say(f"   {answer!r} is not a time like 21:00")
    if not target:
        ask.say("   needs a chat to go to: set up Telegram or Discord first")
        return
    plan.set("schedule.daily_summary.enabled", True)
    plan.set("schedule.daily_summary.time", f"{int(hour):02d}:{int(minute):02d}")
    plan.set("schedule.daily_summary.target", target)


def _write(ask: Ask, layout: Layout, text: str, plan: Plan) -> None:
    changed_secrets = update_env_file(layout.env_file, plan.secrets)
    if plan.config:
        edited = set_values(text, plan.config)
        if edited is None or not _applied(edited, plan):
            # Too unusual to edit line by line: written whole, the file before kept beside it.
            layout.config_file.with_name("config.yaml.before-setup").write_text(text)
            edited = yaml.safe_dump(_merged(plan), sort_keys=False, allow_unicode=True)
        write_atomic(layout.config_file, edited)
    ask.say("")
    if not plan.config and not changed_secrets:
        ask.say("Nothing changed.")
    if plan.config:
        ask.say(f"config.yaml: set {', '.join(sorted(plan.config))}")
    if changed_secrets:
        ask.say(f"{layout.env_file} (mode 0600): set {', '.join(changed_secrets)}")


def _merged(plan: Plan) -> dict[str, Any]:
    out = copy.deepcopy(plan.raw)
    for dotted, value in plan.config.items():
        node = out
        *parents, leaf = dotted.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return dict(out)


def _applied(edited: str, plan: Plan) -> bool:
    try:
        return bool(read_config_text(edited) == _merged(plan))
    except ConfigError:
        return False
