"""The ``corvid`` subcommands that look at or change a home: pairing, status, web and doctor
(``jobs`` is in ``jobs.py``, ``memory`` in ``memory.py``). Each takes the parsed arguments,
the home and the environment, and returns the exit status."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from gateway.config.home import init_home
from gateway.config.layout import Layout
from gateway.config.loader import Config, load_config
from gateway.contract.errors import ConfigError
from gateway.contract.events import shown

if TYPE_CHECKING:
    from channels.pairing import PairingStore

EXIT_CONFIG = 2


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


def _pairing(home: Path, environ: Mapping[str, str]) -> PairingStore:
    from dataclasses import asdict

    from channels.pairing import PairingStore
    from gateway.services.control import tell

    layout = read_config(home, environ)[0].layout
    store = PairingStore(layout.pairing)
    sock = layout.control_socket  # the running gateway updates its notice
    store.on_handled = lambda req, ok: tell(
        sock, {"cmd": "paired", "request": asdict(req), "approved": ok}
    )
    return store


def pairing_list(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    from channels.pairing import PairingError

    store = _pairing(home, environ)
    try:
        pending = store.pending()
        approved = store.approved()
    except PairingError as exc:
        print(f"corvid: {exc} (corvid run moves it aside when it starts)", file=sys.stderr)
        return 1
    now = store.now()
    if pending:
        print("Pending (approve with `corvid pairing approve CODE`):")
        for req in pending:
            left = max(1, round((req.expires - now) / 60))
            who = f"{shown(req.name)} " if req.name else ""
            print(f"  {req.code}  {req.channel} user {who}(id {req.user_id}), {left} min left")
        print("(deny one with `corvid pairing deny CODE`, all with `corvid pairing clear`)")
    else:
        print("No pending pairing codes.")
    if any(approved.values()):
        print("Approved:")
        for channel, users in sorted(approved.items()):
            for uid, info in sorted(users.items()):
                name = shown(str(info.get("name") or ""))
                print(f"  {channel} user {name + ' ' if name else ''}(id {uid})")
    return 0


def pairing_deny(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    from channels.pairing import PairingError

    try:
        req = _pairing(home, environ).deny(args.code)
    except PairingError as exc:
        print(f"corvid: {exc}", file=sys.stderr)
        return 1
    print(f"Denied {req.code} ({req.channel} user {shown(req.name)}, id {req.user_id}).")
    return 0


def pairing_clear(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    from channels.pairing import PairingError

    try:
        dropped = _pairing(home, environ).clear()
    except PairingError as exc:
        print(f"corvid: {exc}", file=sys.stderr)
        return 1
    print(f"Dropped {dropped} pending pairing request(s).")
    return 0


def pairing_approve(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    from channels.pairing import PairingError

    store = _pairing(home, environ)
    try:
        req = store.approve(args.code)
    except PairingError as exc:
        print(f"corvid: {exc}", file=sys.stderr)
        return 1
    who = f"{shown(req.name)} (id {req.user_id})" if req.name else f"id {req.user_id}"
    print(
        f"Approved {req.channel} user {who}. Their next message will be answered, in a chat of "
        "their own that does not see your long-term memory (MEMORY.md). To give someone the "
        f"owner's access instead, add their id to channels.{req.channel}.allow_from."
    )
    return 0


def pairing_revoke(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
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


def status(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    from gateway.services.control import ask_running
    from gateway.services.status import render, report_from_files

    config, _ = read_config(home, environ)

    try:
        data = ask_running(config.layout.control_socket, {"cmd": "status"}, 10)["report"]
    except (ConnectionError, TimeoutError, KeyError):
        data = report_from_files(config)
    if getattr(args, "json", False):
        print(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        print(render(data))
    return 0


def web(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    """Print (or open) the control page's address with the token that signs a browser in."""
    from gateway.ops.doctor.offline import port_problem
    from gateway.services.control import ask_running, rotate_web_token
    from gateway.web.guard import address, load_token

    config, _ = read_config(home, environ)
    if not config.state.is_dir():  # the token lives there, made by `corvid run` or `init`
        print(
            f"corvid: {home} has no state/ yet: `corvid init --home {home}` makes it, "
            "`corvid run` too",
            file=sys.stderr,
        )
        return 1
    if not config.web.enabled:
        print(
            "corvid: the control page is off (web.enabled: false in config.yaml)", file=sys.stderr
        )
        return 1
    if getattr(args, "rotate_token", False):
        rotate_web_token(config.layout)

    # Never an address for the configured port unless the page is there or can be: another
    # program may hold the port, and the token must not go to it.
    where = f"{config.web.host}:{config.web.port}"
    try:
        report = ask_running(config.layout.control_socket, {"cmd": "status"}, 10)["report"]
        base = report.get("web")
        if not base:
            problem = port_problem(config.web.host, config.web.port)
            print(
                f"corvid: Corvid is running, but its control page could not start on {where}"
                f" ({problem or 'see its log'})",
                file=sys.stderr,
            )
            return 1
        note = ""
    except (ConnectionError, TimeoutError, KeyError):
        problem = port_problem(config.web.host, config.web.port)
        if problem:
            print(
                f"corvid: Corvid is not running, and the control page could not start on "
                f"{where}: {problem}; set web.port to a free port",
                file=sys.stderr,
            )
            return 1
        base, note = None, "Corvid is not running: start it with `corvid run`, then open this."
    base = base or address(config.web.host, config.web.port)
    url = f"{base}login?token={load_token(config.layout.web_token)}"
    print(url)
    if note:
        print(note, file=sys.stderr)
    print(
        "Anyone with this address can read all of Corvid's memory; keep it to yourself.",
        file=sys.stderr,
    )
    if args.open:
        _open_in_browser(config.layout.web_open, url)
    return 0


def _open_in_browser(page: Path, url: str) -> None:
    """Open ``url`` through a local page that forwards to it, so the token is not on the
    browser's command line (which other users of the machine can read)."""
    import html
    import webbrowser

    fd = os.open(page, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(f'<meta http-equiv="refresh" content="0;url={html.escape(url)}">\n')
    webbrowser.open(page.as_uri())


def reload(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    """Ask the running gateway to read config.yaml again. It checks the file itself (with its
    own environment, where the secrets are), so nothing is loaded here."""
    from gateway.services.control import ask_running
    from gateway.services.reload import reloaded_text

    if not Layout(home).state.is_dir():
        raise NoHome(f"there is no Corvid home at {home}; give the right one with --home")

    try:
        answer = ask_running(Layout(home).control_socket, {"cmd": "reload"}, 30)
    except ConnectionError:
        print(
            "corvid: Corvid is not running here; `corvid run` reads config.yaml when it starts",
            file=sys.stderr,
        )
        return 1
    if not answer.get("ok"):
        print(
            f"corvid: config.yaml was not reloaded, so nothing changed: {answer.get('error')}",
            file=sys.stderr,
        )
        return EXIT_CONFIG
    print(reloaded_text(answer.get("applied", []), answer.get("restart", [])))
    return 0


def doctor(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    from gateway.ops.doctor.report import doctor

    return doctor(home, environ, timeout=max(0.1, args.timeout), alive_only=args.alive)
