"""The ``corvid`` command's tree: subcommands taking ``--home``, lazy commands, ``--version``."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

Command = Callable[[argparse.Namespace, Path, Mapping[str, str]], int]


def lazy(module: str, name: str) -> Command:
    """``gateway.ops.<module>.<name>``, imported when the command runs: ``corvid run`` does not
    load what the other commands need (the MCP client, setup's checks, backups...) before its
    channels connect."""

    def command(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
        func: Command = getattr(importlib.import_module(f"gateway.ops.{module}"), name)
        return func(args, home, environ)

    command.__qualname__ = command.__name__ = name
    return command


class Parser(argparse.ArgumentParser):
    """An argument parser that keeps the arguments and subcommands it is given: argparse has
    no public way to list them, and the completion scripts are made from them."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.arguments: list[argparse.Action] = []  # before argparse adds --help
        self.commands: dict[str, Parser] = {}
        super().__init__(*args, **kwargs)
        for parent in kwargs.get("parents", ()):
            self.arguments += parent.arguments if isinstance(parent, Parser) else []

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        self.arguments.append(action)
        return action


class Commands:
    """Adds subcommands to ``parser`` that all take ``--home``, anywhere on the line: given
    twice, the last wins; not given, it is not set at all (so a later level cannot erase an
    earlier one)."""

    def __init__(self, parser: Parser, dest: str, metavar: str, required: bool = False) -> None:
        self.parser = parser
        self.sub = parser.add_subparsers(
            dest=dest, metavar=metavar, required=required, parser_class=Parser
        )
        self.common = Parser(add_help=False)
        self.common.add_argument("--home", help=HOME_HELP, default=argparse.SUPPRESS)

    def add(self, name: str, help: str, func: Command | None = None) -> Parser:
        # The one-line help, as a sentence, is also what `corvid NAME --help` says it does.
        sentence = help[0].upper() + help[1:] + "."
        parser = self.sub.add_parser(name, parents=[self.common], help=help, description=sentence)
        # Without an action a group shows its actions, or does its most common one.
        parser.set_defaults(func=func or (lambda args, home, environ: show_help(parser)))
        self.parser.commands[name] = parser
        return parser

    def group(self, parser: Parser, dest: str, required: bool) -> Commands:
        inner = Commands(parser, dest, "ACTION", required)
        inner.common = self.common
        return inner


HOME_HELP = "Corvid's home folder (default: $CORVID_HOME or ~/.corvid)"


def show_help(parser: argparse.ArgumentParser) -> int:
    print(parser.format_help(), end="")
    return 0


class Version(argparse.Action):
    """``--version``: the installed version is looked up only when asked for (reading the
    package metadata costs every other command's start-up time)."""

    def __call__(self, parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        print(f"corvid {version()}")
        parser.exit()


def version() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version("corvid")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout, not installed
        return "(not installed)"
