"""``corvid setup``: a guided first run in the terminal, also from a pipe (one answer a line).

Each value is checked where it is used (the API key with a free call, a bot token with the
platform), the owner's Telegram id is read from the first message they send the bot and their
Discord id from the application's owner (never typed), and what is already set is offered as
the answer, so running it again changes only what the owner changes. Secrets go to the home's
``corvid.env`` (0600), ``config.yaml`` is edited in place (its comments kept), and it ends
with ``corvid doctor``.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import fcntl
import os
import sys
import termios
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml

from gateway.config.build import ENV_REF
from gateway.config.envfile import read_env_file, update_env_file, with_env_file
from gateway.config.home import detect_timezone, init_home
from gateway.config.layout import Layout
from gateway.config.loader import read_config_file, read_config_text
from gateway.config.yaml_lines import set_values
from gateway.contract.errors import ConfigError
from gateway.contract.events import discord_dm, telegram_private
from gateway.infra.atomic import write_atomic
from gateway.ops import setup_checks as checks

TRIES = 3
_Found = TypeVar("_Found")  # what checking a secret found (models, a bot, an app)


class Stopped(Exception):
    """The answers ran out (end of input) before setup was done; nothing was written."""


class Ask:
    """Questions at a terminal, or lines from a pipe."""

    def __init__(self, stdin: TextIO, stdout: TextIO) -> None:
        self.stdin, self.out = stdin, stdout
        self.tty = stdin.isatty()

    def say(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    def line(self, prompt: str, default: str = "", shown: str | None = None) -> str:
        hint = shown if shown is not None else default
        self.out.write(f"{prompt}{f' [{hint}]' if hint else ''}: ")
        self.out.flush()
        answer = self.stdin.readline()
        if not answer:
            raise Stopped
        if not self.tty:
            self.out.write("\n")  # what was typed is not echoed from a pipe
        return answer.strip() or default

    def secret(self, prompt: str, current: str) -> str:
        hint = f"{_mask(current)}, Enter keeps it" if current else "Enter skips"
        if not self.tty:
            return self.line(prompt, current, shown=hint)
        # Not echoed: the terminal's echo is off while it is typed.
        fd = self.stdin.fileno()
        before = termios.tcgetattr(fd)
        quiet = [*before[:3], before[3] & ~termios.ECHO, *before[4:]]
        termios.tcsetattr(fd, termios.TCSADRAIN, quiet)
        try:
            return self.line(prompt, current, shown=hint)
        finally:
            termios.tcsetattr(fd, termios.TCSADRAIN, before)
            self.say()

    def yes(self, prompt: str) -> bool:
        return self.line(f"{prompt} [Y/n]", "y", shown="").lower().startswith("y")


@dataclass
class Plan:
    """What the answers change: dotted keys of config.yaml, and secrets by variable."""

    raw: dict[str, Any]
    env: dict[str, str]
    config: dict[str, Any] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)
    owner_chat: str = ""  # the session key of the owner's private chat, once known

    def get(self, dotted: str, default: Any = None) -> Any:
        if dotted in self.config:
            return self.config[dotted]
        node: Any = self.raw
        for part in dotted.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        return default if node is None else node

    def set(self, dotted: str, value: Any) -> None:
        if self.get(dotted) != value:
            self.config[dotted] = value

    def var(self, dotted: str, default: str) -> str:
        """The environment variable a secret is read from: the ``${VAR}`` config.yaml names
        (made so when it holds the value itself)."""
        found = ENV_REF.fullmatch(str(self.get(dotted, "")))
        if found is None:
            self.set(dotted, f"${{{default}}}")
            return default
        return found.group(1)

    def secret(self, dotted: str, default_var: str) -> tuple[str, str]:
        var = self.var(dotted, default_var)
        return var, self.secrets.get(var) or self.env.get(var, "")


def _mask(secret: str) -> str:
    return f"{secret[:6]}…{secret[-4:]}" if len(secret) > 12 else "set"


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
        _telegram(ask, plan, args.wait)
        _discord(ask, plan)
        _timezone(ask, plan, environ)
        _summary(ask, plan)
    except Stopped:
        print("\ncorvid: setup stopped (no more input); no answer was saved", file=sys.stderr)
        return 1
    _write(ask, layout, text, plan)
    ask.say("\nChecking everything with corvid doctor:")
    from gateway.ops.doctor.report import doctor

    return doctor(home, with_env_file(layout.env_file, environ), timeout=10, alive_only=False)


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
    base = plan.get("llm.base_url") or plan.env.get("ANTHROPIC_BASE_URL")
    got = _checked(
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


def _checked(
    ask: Ask,
    prompt: str,
    current: str,
    check: Callable[[str], _Found],
    empty: str = "",
    refused: str = "",
) -> tuple[str, _Found] | None:
    """A secret asked for until ``check`` accepts it (at most TRIES times), with what the check
    found; None when it is left empty (``empty`` said) or never accepted (``refused`` said)."""
    for _ in range(TRIES):
        secret = ask.secret(prompt, current)
        if not secret:
            if empty:
                ask.say(empty)
            return None
        try:
            return secret, check(secret)
        except checks.Refused as exc:
            ask.say(f"   not accepted: {exc}")
    if refused:
        ask.say(refused)
    return None


def _telegram(ask: Ask, plan: Plan, wait: float) -> None:
    ask.say("\n2. Telegram (Enter with no token leaves it off)")
    ask.say("   In Telegram, open @BotFather and send /newbot: pick a name and a username")
    ask.say("   ending in 'bot'; BotFather answers with the bot's token (123456:ABC...).")
    var, current = plan.secret("channels.telegram.token", "TELEGRAM_BOT_TOKEN")
    base = str(plan.get("channels.telegram.base_url", "https://api.telegram.org/bot"))
    got = _checked(ask, "Bot token", current, lambda token: checks.telegram_bot(base, token))
    if got is None:
        return
    token, bot = got
    ask.say(f"   ok: the bot is @{bot.username} ({bot.name})")
    plan.secrets[var] = token
    plan.set("channels.telegram.enabled", True)
    owners = [str(o) for o in plan.get("channels.telegram.allow_from", [])]
    if owners and token == current:
        ask.say(f"   you are {owners[0]} (kept)")
    else:
        owners = _telegram_owner(ask, base, token, bot, owners, wait)
    if owners:
        plan.set("channels.telegram.allow_from", [int(o) for o in owners])
        plan.owner_chat = plan.owner_chat or str(telegram_private(owners[0]))


def _telegram_owner(
    ask: Ask, base: str, token: str, bot: checks.TelegramBot, owners: list[str], wait: float
) -> list[str]:
    ask.say(f"   Now send any message to @{bot.username} from your own Telegram account")
    ask.say(f"   (https://t.me/{bot.username}); waiting up to {wait:g} s...")
    try:
        user = checks.first_private_message(base, token, wait)
    except checks.Refused as exc:
        ask.say(f"   could not read it: {exc}")
        return owners
    if user is None:
        ask.say("   no message came; run corvid setup again to try once more")
        return owners
    handle = f", @{user.username}" if user.username else ""
    if not ask.yes(f"   That was {user.name}{handle} (id {user.id}). Is that you?"):
        return owners
    return [str(user.id), *(o for o in owners if o != str(user.id))]


def _discord(ask: Ask, plan: Plan) -> None:
    ask.say("\n3. Discord (Enter with no token leaves it off)")
    ask.say("   https://discord.com/developers/applications: New Application, then Bot: Reset")
    ask.say("   Token, and turn on Message Content Intent under Privileged Gateway Intents.")
    var, current = plan.secret("channels.discord.token", "DISCORD_BOT_TOKEN")
    base = str(plan.get("channels.discord.api_base_url", "https://discord.com/api/v10"))
    got = _checked(ask, "Bot token", current, lambda token: checks.discord_app(base, token))
    if got is None:
        return
    token, app = got
    ask.say(f"   ok: the application is {app.name} ({app.id})")
    if not app.message_content:
        ask.say("   Message Content Intent is off: turn it on (Bot → Privileged Gateway")
        ask.say("   Intents), or Discord closes Corvid's connection.")
    ask.say(f"   Invite it to your server with: {app.invite_url()}")
    plan.secrets[var] = token
    plan.set("channels.discord.enabled", True)
    owners = [str(o) for o in plan.get("channels.discord.allow_from", [])]
    question = f"   The application's owner is {app.owner_name} (id {app.owner_id}). You?"
    if app.owner_id and app.owner_id not in owners and ask.yes(question):
        owners = [app.owner_id, *owners]
    if owners:
        plan.set("channels.discord.allow_from", [int(o) for o in owners])
        plan.owner_chat = plan.owner_chat or str(discord_dm(owners[0]))


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
