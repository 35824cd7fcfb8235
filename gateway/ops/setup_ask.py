"""How ``corvid setup`` asks (a terminal or a pipe), and the plan its answers make."""

from __future__ import annotations

import termios
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO, TypeVar

from gateway.config.build import ENV_REF
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
        hint = f"{mask(current)}, Enter keeps it" if current else "Enter skips"
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

    def yes(self, prompt: str, default: bool = True) -> bool:
        hint, answer = ("[Y/n]", "y") if default else ("[y/N]", "n")
        return self.line(f"{prompt} {hint}", answer, shown="").lower().startswith("y")


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

    def expanded(self, dotted: str, default: str = "") -> str:
        """A setting as ``corvid run`` reads it: each ``${VAR}`` in it replaced by its value
        (an address of a self-hosted server, say)."""
        value = str(self.get(dotted) or default)
        return ENV_REF.sub(lambda m: self.secrets.get(m[1]) or self.env.get(m[1], ""), value)

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


def mask(secret: str) -> str:
    return f"{secret[:6]}…{secret[-4:]}" if len(secret) > 12 else "set"


def checked(
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
