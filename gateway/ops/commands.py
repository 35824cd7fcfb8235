"""The ``corvid`` subcommands about the running gateway: status, web, reload, and the doctor."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from gateway.config.layout import Layout
from gateway.ops.home import EXIT_CONFIG, NoHome, read_config


def status(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    from gateway.services.control import ask_running
    from gateway.services.status import render, report_from_files
    from gateway.usage.report import figures_line, file_figures

    config, _ = read_config(home, environ)

    try:
        data = ask_running(config.layout.control_socket, {"cmd": "status"}, 10)["report"]
    except (ConnectionError, TimeoutError, KeyError):
        data = report_from_files(config)
    data["usage"] = file_figures(config.layout.usage, config.tz)
    if getattr(args, "json", False):
        print(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        print(render(data))
        print("\n" + figures_line(data["usage"]))  # a section of its own, as the others
    return 0


def web(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    """Print (or open) the control page's address with the token that signs a browser in."""
    from gateway.ops.doctor.services import port_problem
    from gateway.services.control import ask_running, rotate_web_token
    from gateway.web.access import address, load_token

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
