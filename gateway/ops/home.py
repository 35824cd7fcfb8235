"""The home a ``corvid`` subcommand works on, and what of its configuration can be used."""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from pathlib import Path

from gateway.config.home import init_home
from gateway.config.layout import Layout
from gateway.config.loader import Config, load_config
from gateway.contract.errors import ConfigError

EXIT_CONFIG = 2
# Said once, when a command made the home: where to go from here.
FIRST_RUN = (
    "New here? `corvid setup` walks you through the API key, Telegram and Discord, and checks "
    "each; or edit config.yaml by hand."
)


class NoHome(Exception):
    """The home folder a command looks at does not exist (a mistyped --home, say)."""


def prepare(home: Path, environ: Mapping[str, str], *, create: bool = False) -> Config:
    """The home's configuration. With ``create`` (``run``, ``chat``) what is missing of the
    home is made first, and said; without, a home that does not exist is an error, not a new
    empty one."""
    _no_file(home)
    if create:
        created = init_home(home, environ)
        if created:
            print(
                f"Set up {home}: created " + ", ".join(_short(home, p) for p in created),
                file=sys.stderr,
            )
            print(FIRST_RUN, file=sys.stderr)
    else:
        _existing(home)
    return load_config(home, environ)


def _no_file(home: Path) -> None:
    if home.exists() and not home.is_dir():
        raise NoHome(f"{home} is a file, not a folder; give another --home")


def _existing(home: Path) -> None:
    if not Layout(home).config_file.exists() and not Layout(home).state.is_dir():
        raise NoHome(
            f"there is no Corvid home at {home}; create one with `corvid init --home {home}`, "
            "or give the right one with --home (or CORVID_HOME)"
        )


def read_config(home: Path, environ: Mapping[str, str]) -> tuple[Config, ConfigError | None]:
    """The configuration for a command that only looks (status, pairing, jobs, web, mcp
    list). These must keep working when config.yaml cannot be used whole: a ``${VAR}`` set
    only in the gateway's own environment (a root-only env file), or a file broken by an edit
    while the gateway runs on what it read at its start. Each top-level section that fails is
    taken at its defaults, with a warning on stderr; the error is returned for a command that
    cannot do without the file (``mcp list`` with no gateway to ask)."""
    _no_file(home)
    _existing(home)
    try:
        return load_config(home, environ), None
    except ConfigError as exc:
        error = exc
    config, left_out = _config_without_what_fails(home, environ)
    if left_out is None:
        what = "every setting"
    else:
        what = "the section" + ("s " if len(left_out) > 1 else " ") + ", ".join(left_out)
    print(
        f"corvid: warning: {home / 'config.yaml'} cannot be used as it is ({error}); "
        f"answering from the state files and the running gateway, with {what} at the "
        "defaults (a running gateway keeps what it read when it started)",
        file=sys.stderr,
    )
    return config, error


def _config_without_what_fails(
    home: Path, environ: Mapping[str, str]
) -> tuple[Config, list[str] | None]:
    """The file's sections that can be used, and which were left out (None: all)."""
    import yaml

    from gateway.config.loader import parse_config
    from gateway.config.strict_yaml import strict_load

    try:
        raw = strict_load(Layout(home).config_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError):
        raw = None
    left_out: list[str] = []
    if isinstance(raw, dict):
        raw = dict(raw)
        while raw:
            try:
                return parse_config(raw, home=home, environ=environ), left_out
            except ConfigError as exc:
                section = re.split(r"[.\[]", exc.key, maxsplit=1)[0]
                if section not in raw:
                    break
                del raw[section]
                left_out.append(section)
            except RecursionError:
                break
    try:
        return parse_config({}, home=home, environ=environ), None
    except ConfigError:  # an environment default that is itself wrong
        return Config(home=home), None


def _short(home: Path, path: str) -> str:
    p = Path(path)
    return str(p.relative_to(home)) if p.is_relative_to(home) else str(p)
