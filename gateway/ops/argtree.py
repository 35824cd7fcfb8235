"""The pieces the ``corvid`` command's argument tree is built from: subcommands that all take
``--home``, commands imported only when they run, and ``--version``."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Mapping
from pathlib import Path

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


class Commands:
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
        parser.set_defaults(func=func or (lambda args, home, environ: show_help(parser)))
        return parser

    def group(self, parser: argparse.ArgumentParser, dest: str, required: bool) -> Commands:
        inner = Commands(parser.add_subparsers(dest=dest, required=required, metavar="ACTION"))
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
