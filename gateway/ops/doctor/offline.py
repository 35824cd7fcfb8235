"""The checks of ``corvid doctor`` that need no network: home, config, workspace, state."""

from __future__ import annotations

import os
import shlex
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from gateway.config.build import ENV_REF, secret_keys
from gateway.config.layout import Layout
from gateway.config.loader import Config, load_config
from gateway.config.strict_yaml import safe_load
from gateway.contract.errors import ConfigError
from gateway.contract.ports import Check, Status
from gateway.ops.doctor.state import check_env_file, check_state_data, check_state_files

OK, WARN, FAIL = Status.OK, Status.WARN, Status.FAIL


def q(path: Path | str) -> str:
    """A path quoted for a shell command in a fix."""
    return shlex.quote(str(path))


def env_ref(value: Any) -> str | None:
    """The variable name if ``value`` is exactly ``${VAR}``."""
    m = ENV_REF.fullmatch(value.strip()) if isinstance(value, str) else None
    return m[1] if m else None


def lookup(raw: Mapping[str, Any], key: str) -> Any:
    """The value at a dotted key of the YAML as written, or None."""
    node: Any = raw
    for part in key.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def local_checks(
    home: Path, environ: Mapping[str, str]
) -> tuple[list[Check], Config | None, Mapping[str, Any]]:
    """The checks that need no network: the folders, the files and the configuration."""
    if not home.is_dir():
        what = "is not a folder" if home.exists() else "does not exist"
        return [Check(FAIL, "home", f"{home} {what}", f"corvid init --home {q(home)}")], None, {}
    layout = Layout(home)
    raw = read_raw(home)
    config_check, config = _load(home, environ)
    checks = [
        _check_dir("home", home, private=False),
        config_check,
        _check_config_file(home, raw),
        *check_env_file(layout),
        _check_workspace(layout.workspace),
        _check_dir("state", layout.state, private=True),
        *check_state_files(layout),
        *check_state_data(layout),
    ]
    return checks, config, raw


def read_raw(home: Path) -> Mapping[str, Any]:
    """``config.yaml`` as YAML reads it, or {} when it cannot be read."""
    try:
        raw = safe_load(Layout(home).config_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError):
        return {}
    return raw if isinstance(raw, dict) else {}


def _load(home: Path, environ: Mapping[str, str]) -> tuple[Check, Config | None]:
    """``load_config``, the loader ``corvid run`` uses; a ConfigError names the key."""
    path = Layout(home).config_file
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
    path = Layout(home).config_file
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return Check(OK, "config.yaml", "no file, so no secrets in it")
    except OSError as exc:
        return Check(FAIL, "config.yaml", f"cannot look at {path}: {exc.strerror}")
    inline = [
        k
        for k in secret_keys(Config, raw=raw)
        if (v := lookup(raw, k)) not in (None, "") and not env_ref(v)
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


def _check_workspace(path: Path) -> Check:
    """Like any folder; and one other users of the machine can read is worth a warning: it
    holds MEMORY.md, the logs and the files sent in private chats."""
    check = _check_dir("workspace", path, private=False)
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return check
    if check.status is OK and mode & 0o077:
        return Check(
            WARN,
            "workspace",
            f"{path} can be read by other users of this machine (mode {mode:04o}); it holds "
            "your long-term memory, logs and files",
            f"chmod 700 {q(path)}",
        )
    return check


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


def channel_setup(config: Config) -> list[Check]:
    """What ``corvid run`` refuses (no channel enabled) or warns about (nobody allowed)."""
    channels = config.channels
    checks: list[Check] = []
    if not config.chat_channels():  # the control page has a chat of its own
        checks.append(
            Check(
                FAIL,
                "channels",
                "no chat channel is enabled, so corvid run will not start",
                f"set channels.telegram.enabled, channels.discord.enabled or web.enabled "
                f"to true in {q(config.layout.config_file)}"
                " (corvid chat works without)",
            )
        )
    # A missing token is the platform's own check (``check_channel``).
    for need in channels.unmet():
        if need.key == "channels.telegram.webhook.secret_token":
            checks.append(Check(FAIL, "telegram webhook", config.missing(need.key, need.what)))
    for name in channels.open_to_all():
        if channels.enabled()[name].token is not None:
            checks.append(
                Check(
                    WARN,
                    f"{name} access",
                    "allow_from is empty: everyone who writes gets a pairing code, you included",
                    f"put your own {name} user id in channels.{name}.allow_from",
                )
            )
    return checks
