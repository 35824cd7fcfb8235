"""corvid doctor: the real checks against the fake Anthropic, Telegram and Discord servers."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.config.build import secret_keys
from gateway.config.loader import Config, load_config
from gateway.ops.cli import main
from gateway.ops.doctor.report import FAIL, OK, WARN, Check, exit_status, render, run_checks
from gateway.scheduling.jobs import Job
from gateway.scheduling.ledger import Ledger
from gateway.scheduling.reminders import JobStore
from gateway.services.control import ControlServer
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.discord_api import OWNER_ID, FakeDiscord
from tests.fakes.process import FIRST_CALL
from tests.fakes.telegram_api import FakeTelegram

KEY = "sk-ant-doctor-0123456789"


@pytest.fixture
async def api() -> AsyncIterator[FakeAnthropic]:
    fake = FakeAnthropic(api_key=KEY)
    await fake.start()
    yield fake
    await fake.close()


@pytest.fixture(autouse=True)
def _keep_logging() -> Iterator[None]:
    """`corvid doctor` configures logging for its process; put the test process's back."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def setup_home(
    home: Path,
    api_url: str,
    telegram: FakeTelegram | None = None,
    discord: FakeDiscord | None = None,
    **sections: dict[str, Any],
) -> dict[str, str]:
    """Write a config.yaml pointing at the fakes, secrets as ${VAR}; returns the environment."""
    config: dict[str, Any] = {
        "timezone": "Europe/Berlin",
        "llm": {"api_key": "${ANTHROPIC_API_KEY}", "base_url": api_url},
        "channels": {},
        # Any free port: the default one may be taken on this machine, which doctor reports.
        "web": {"port": 0},
    }
    env = {"ANTHROPIC_API_KEY": KEY}
    if telegram is not None:
        section = telegram.channel_config(allow_from=["42"], token="${TELEGRAM_BOT_TOKEN}")
        config["channels"]["telegram"] = section
        env["TELEGRAM_BOT_TOKEN"] = telegram.token
    if discord is not None:
        config["channels"]["discord"] = {
            "enabled": True,
            "token": "${DISCORD_BOT_TOKEN}",
            "allow_from": [str(OWNER_ID)],
            "api_base_url": f"{discord.base_url}/api/v10",
            "gateway_url": discord.gateway_url,
        }
        env["DISCORD_BOT_TOKEN"] = discord.token
    for name, values in sections.items():
        config[name] = {**config.get(name, {}), **values}
    (home / "config.yaml").write_text(yaml.safe_dump(config))
    return env


def by_name(checks: list[Check]) -> dict[str, Check]:
    return {c.name: c for c in checks}


def report(checks: list[Check], env: dict[str, str]) -> str:
    """The printed report; asserts that no secret of ``env`` is in it."""
    text = render(checks, list(env.values()))
    for secret in env.values():
        assert secret not in text
    return text


async def doctor_cli(*args: str, env: dict[str, str]) -> int:
    """`corvid doctor` through the real command line, in a thread: the fakes (and a gateway)
    keep running on this loop while it runs its own."""
    return await asyncio.to_thread(main, ["doctor", *args], env)


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


SUMMARY = {"daily_summary": {"enabled": True, "time": "21:00", "target": "telegram:private:42"}}


async def test_a_healthy_home_beside_a_running_gateway_is_all_ok(
    home: Path, api: FakeAnthropic, fake_telegram: FakeTelegram, fake_discord: FakeDiscord, capsys
):
    from gateway.app import build_app
    from gateway.channel_setup import build_channels

    env = setup_home(home, api.base_url, fake_telegram, fake_discord, schedule=SUMMARY)
    config = load_config(home, env)
    channels = build_channels(config)
    for channel in channels:
        if channel.name == "discord":
            channel.guild_ready_timeout = 0.1  # type: ignore[attr-defined]
    gateway = build_app(config, channels)
    await gateway.start()
    try:
        checks = await run_checks(home, env, limit=5)
        capsys.readouterr()
        rc = await doctor_cli("--home", str(home), "--timeout", "5", env=env)
    finally:
        await gateway.stop()
    out = capsys.readouterr().out

    assert [(c.status, c.name) for c in checks] == [
        (OK, "home"),
        (OK, "config"),
        (OK, "config.yaml"),
        (OK, "workspace"),
        (OK, "state"),
        (OK, "anthropic"),
        (OK, "telegram"),
        (OK, "discord"),
        (OK, "control page"),
        (OK, "memory search"),
        (OK, "jobs"),
        (OK, "gateway"),
    ], report(checks, env)
    found = by_name(checks)
    assert found["anthropic"].message == (
        f"API key accepted by {api.base_url}; model {config.llm.model}"
    )
    assert found["telegram"].message == "token accepted: @corvid_test_bot (id 999)"
    assert found["discord"].message == "logged in as Corvid (id 1000); Message Content intent on"
    summary = "daily-summary → telegram:private:42: cron '0 21 * * *' (Europe/Berlin)"
    assert found["jobs"].details[0].startswith(f"{summary}; next run 20")
    assert found["gateway"].message.startswith(f"running (pid {os.getpid()})")
    # The key went to the API as a credential (the fake accepted it), and nothing was sent.
    assert {r.path for r in api.requests} == {"/v1/messages/count_tokens"}
    assert fake_telegram.sent == [] and fake_discord.sent == []
    assert rc == 0
    assert out.splitlines()[0] == f"Checking Corvid in {home}"
    assert out.rstrip().endswith("All checks passed.")
    assert "ok    discord: logged in as Corvid" in out
    for secret in env.values():
        assert secret not in out


async def test_no_gateway_running_is_said_but_is_no_failure(home: Path, api: FakeAnthropic):
    env = setup_home(home, api.base_url, web={"enabled": False})
    checks = await run_checks(home, env, limit=5)
    gateway = by_name(checks)["gateway"]
    assert gateway.status == WARN
    assert gateway.message == f"not running: nothing answers on {home / 'state' / 'control.sock'}"
    assert gateway.fix.startswith("start it with corvid run")
    # ...but with no channel enabled, corvid run would refuse to start.
    assert by_name(checks)["channels"].status == FAIL


async def test_a_wrong_api_key_fails_and_is_never_printed(home: Path, api: FakeAnthropic, capsys):
    wrong = "sk-ant-wrong-key-987654321"
    env = {**setup_home(home, api.base_url), "ANTHROPIC_API_KEY": wrong}
    rc = await doctor_cli("--home", str(home), "--timeout", "5", env=env)
    out = capsys.readouterr().out
    assert rc == 1
    line = next(x for x in out.splitlines() if "anthropic:" in x)
    assert line.startswith(f"FAIL  anthropic: API key rejected by {api.base_url} (401)")
    assert "check llm.api_key (the environment variable ANTHROPIC_API_KEY)" in line
    assert api.requests[-1].headers["Authorization"] == f"Bearer {wrong}"  # a real call
    assert wrong not in out and KEY not in out


async def test_a_revoked_telegram_token_fails(
    home: Path, api: FakeAnthropic, fake_telegram: FakeTelegram
):
    revoked = "123456:revoked-token-for-the-test"
    env = {**setup_home(home, api.base_url, fake_telegram), "TELEGRAM_BOT_TOKEN": revoked}
    checks = await run_checks(home, env, limit=5)
    telegram = by_name(checks)["telegram"]
    assert telegram.status == FAIL
    assert telegram.message == (
        f"{fake_telegram.base_url} rejected the bot token (revoked or mistyped)"
    )
    assert "channels.telegram.token (the environment variable TELEGRAM_BOT_TOKEN)" in telegram.fix
    assert fake_telegram.calls_to("getMe")  # asked for real
    assert exit_status(checks) == 1
    assert "revoked-token" not in report(checks, env)


async def test_a_rejected_discord_token_and_a_missing_intent_fail(
    home: Path, api: FakeAnthropic, fake_discord: FakeDiscord
):
    env = {**setup_home(home, api.base_url, discord=fake_discord), "DISCORD_BOT_TOKEN": "nope-x"}
    discord = by_name(await run_checks(home, env, limit=5))["discord"]
    assert discord.status == FAIL
    assert discord.message == f"{fake_discord.base_url}/api/v10 rejected the bot token (401)"
    assert "Reset Token" in discord.fix and "DISCORD_BOT_TOKEN" in discord.fix

    no_intent = FakeDiscord(missing_intent=True)
    await no_intent.start()
    try:
        env = setup_home(home, api.base_url, discord=no_intent)
        checks = await run_checks(home, env, limit=5)
    finally:
        await no_intent.close()
    discord = by_name(checks)["discord"]
    assert discord.status == FAIL
    assert discord.message.startswith("logged in as Corvid (id 1000), but the Message Content")
    assert "Message Content Intent" in discord.fix
    report(checks, env)


async def test_unreachable_servers_are_named(home: Path, api: FakeAnthropic):
    llm_url, tg_url = closed_port_url(), closed_port_url()
    dc_url = closed_port_url().replace("http://", "https://")  # Discord's must be https://
    env = setup_home(
        home,
        llm_url,
        channels={
            "telegram": {"enabled": True, "token": "${TELEGRAM_BOT_TOKEN}", "allow_from": ["42"],
                         "base_url": f"{tg_url}/bot", "base_file_url": f"{tg_url}/file/bot"},
            "discord": {"enabled": True, "token": "${DISCORD_BOT_TOKEN}", "allow_from": ["42"],
                        "api_base_url": f"{dc_url}/api/v10"},
        },
    )  # fmt: skip
    env.update(TELEGRAM_BOT_TOKEN="1:unreachable-token", DISCORD_BOT_TOKEN="unreachable-token")
    checks = by_name(await run_checks(home, env, limit=5))
    assert checks["anthropic"].status == FAIL
    assert checks["anthropic"].message.startswith(f"cannot reach {llm_url} (")
    assert "llm.base_url" in checks["anthropic"].fix
    assert checks["telegram"].status == FAIL
    assert checks["telegram"].message.startswith(f"cannot reach {tg_url} (")
    assert checks["discord"].status == FAIL
    assert checks["discord"].message.startswith(f"cannot reach {dc_url}/api/v10 (")
    report(list(checks.values()), env)


async def test_a_server_that_never_answers_is_given_up_on_in_time(home: Path):
    accepted: list[asyncio.StreamWriter] = []

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)  # holds the connection open, answers nothing

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    env = setup_home(home, url)
    try:
        # Given up on by the limit, not after the SDK's own timeout (minutes): the bound is
        # far below that, and leaves a busy machine the time to import the SDK first.
        async with asyncio.timeout(FIRST_CALL):
            checks = by_name(await run_checks(home, env, limit=2))
    finally:
        server.close()
        for writer in accepted:
            writer.close()
            await writer.wait_closed()
    assert checks["anthropic"].status == FAIL
    assert checks["anthropic"].message == f"no answer from {url} within 2 s"
    assert accepted  # it did connect


async def test_a_workspace_other_users_can_read_is_a_warning(home: Path, api: FakeAnthropic):
    env = setup_home(home, api.base_url)
    assert by_name(await run_checks(home, env, limit=5))["workspace"].status == OK
    (home / "workspace").chmod(0o755)  # as an older Corvid made it
    workspace = by_name(await run_checks(home, env, limit=5))["workspace"]
    assert workspace.status == WARN and "long-term memory" in workspace.message
    assert workspace.fix == f"chmod 700 {home / 'workspace'}"


async def test_a_link_out_of_the_workspace_is_named(home: Path, api: FakeAnthropic):
    env = setup_home(home, api.base_url)
    assert "workspace links" not in by_name(await run_checks(home, env, limit=5))
    (home / "workspace" / "AGENTS.md").unlink()
    (home / "workspace" / "AGENTS.md").symlink_to("../config.yaml")
    links = by_name(await run_checks(home, env, limit=5))["workspace links"]
    assert links.status == FAIL and "AGENTS.md → outside the workspace" in links.message


async def test_an_open_state_folder_fails_with_the_chmod_that_fixes_it(
    home: Path, api: FakeAnthropic
):
    env = setup_home(home, api.base_url)
    (home / "state").chmod(0o755)
    checks = await run_checks(home, env, limit=5)
    state = by_name(checks)["state"]
    assert state.status == FAIL
    assert state.message.startswith(f"{home / 'state'} is open to other users (mode 0755)")
    assert state.fix == f"chmod 700 {home / 'state'}"
    assert exit_status(checks) == 1

    (home / "state").chmod(0o700)
    (home / "state" / "pairing.json").write_text("{}")
    (home / "state" / "pairing.json").chmod(0o644)
    checks = by_name(await run_checks(home, env, limit=5))
    assert checks["state"].status == OK
    assert checks["state files"].status == WARN  # state/ is 0700, so only a warning
    assert checks["state files"].message == "readable by other users: pairing.json (0644)"
    assert checks["state files"].fix == f"chmod -R go-rwx {home / 'state'}"


async def test_a_secrets_file_others_can_read_fails_without_showing_a_secret(
    home: Path, api: FakeAnthropic
):
    env = setup_home(home, api.base_url)
    secrets = home / "corvid.env"
    secrets.write_text(f"ANTHROPIC_API_KEY={KEY}\n")
    secrets.chmod(0o600)
    assert "secrets file" not in by_name(await run_checks(home, env, limit=5))

    secrets.chmod(0o640)
    checks = await run_checks(home, env, limit=5)
    check = by_name(checks)["secrets file"]
    assert check.status == FAIL
    assert check.message == "corvid.env (0640) can be read by other users; it holds the API keys"
    assert check.fix == f"chmod 600 {secrets}"
    assert exit_status(checks) == 1
    assert KEY not in report(checks, {"key": KEY})


async def test_a_config_with_an_inline_secret_must_be_private(home: Path, api: FakeAnthropic):
    setup_home(home, api.base_url)
    path = home / "config.yaml"
    config = yaml.safe_load(path.read_text())
    config["llm"]["api_key"] = KEY
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o644)
    checks = await run_checks(home, {}, limit=5)
    file_check = by_name(checks)["config.yaml"]
    assert file_check.status == FAIL
    assert file_check.message == (
        f"{path} holds llm.api_key inline and is readable by every user (mode 0644)"
    )
    assert file_check.fix.startswith(f"chmod 600 {path}")
    assert by_name(checks)["anthropic"].status == OK  # the inline key itself works
    assert KEY not in report(checks, {"key": KEY})

    path.chmod(0o600)
    file_check = by_name(await run_checks(home, {}, limit=5))["config.yaml"]
    assert (file_check.status, file_check.message) == (OK, "llm.api_key inline, mode 0600")


async def test_a_config_error_names_the_key_and_skips_the_network(home: Path, capsys):
    (home / "config.yaml").write_text("llm:\n  timeout: soon\n")
    checks = await run_checks(home, {}, limit=5)
    config = by_name(checks)["config"]
    assert config.status == FAIL
    assert config.message.endswith("llm.timeout: expected a number, got str 'soon'")
    assert "anthropic" not in by_name(checks)
    assert await doctor_cli("--home", str(home), env={}) == 1
    assert "FAIL  config:" in capsys.readouterr().out


async def test_missing_secrets_name_their_environment_variables(
    home: Path, api: FakeAnthropic, fake_telegram: FakeTelegram
):
    setup_home(home, api.base_url, fake_telegram)
    checks = by_name(await run_checks(home, {}, limit=5))
    assert checks["anthropic"].status == FAIL
    assert "set the environment variable ANTHROPIC_API_KEY" in checks["anthropic"].message
    assert checks["telegram"].status == FAIL
    assert "set the environment variable TELEGRAM_BOT_TOKEN" in checks["telegram"].message
    assert not fake_telegram.calls_to("getMe") and not api.requests  # nothing to ask with


async def test_jobs_are_listed_from_the_ledger_without_writing_to_it(
    home: Path, api: FakeAnthropic, fake_telegram: FakeTelegram
):
    # Consolidation off: the jobs listed are the summary's and the one made in chat.
    off = {"consolidation": {"enabled": False}}
    env = setup_home(home, api.base_url, fake_telegram, schedule=SUMMARY, memory=off)
    state = home / "state"
    now = datetime.now(UTC)
    JobStore(state / "jobs.json").add(
        Job("call-bank", "cron", "0 9 * * *", "Europe/Berlin", "discord:dm:42", now,
            instruction="remind me to call the bank")
    )  # fmt: skip
    ledger = Ledger(state / "scheduler.sqlite")
    summary = Job("daily-summary", "cron", "0 21 * * *", "Europe/Berlin", "telegram:private:42",
                  now)  # fmt: skip
    fire = now - timedelta(hours=1)
    ledger.settle(summary, summary.slot(fire), fire, "failed", now, "RuntimeError: boom")
    ledger.close()
    before = {p.name: p.read_bytes() for p in state.iterdir() if p.is_file()}

    checks = await run_checks(home, env, limit=5)
    jobs = by_name(checks)["jobs"]
    assert jobs.status == WARN
    assert jobs.message == (
        "2 scheduled; the last run of daily-summary failed; call-bank goes to discord, "
        "which is not enabled"
    )
    assert jobs.details[0].endswith("; last run failed: RuntimeError: boom")
    assert jobs.details[1].startswith(
        "call-bank → discord:dm:42: cron '0 9 * * *' (Europe/Berlin); next run "
    )
    assert " 09:00 CE" in jobs.details[1]
    assert exit_status(checks) == 0  # warnings only
    after = {p.name: p.read_bytes() for p in state.iterdir() if p.is_file()}
    assert after == before  # no claim, no new -wal/-shm, nothing created

    (state / "scheduler.sqlite").unlink()
    jobs = by_name(await run_checks(home, env, limit=5))["jobs"]
    assert " 21:00 CE" in jobs.details[0]  # no ledger yet: from the schedule alone
    assert not (state / "scheduler.sqlite").exists()

    (state / "jobs.json").write_text("{not json")
    jobs = by_name(await run_checks(home, env, limit=5))["jobs"]
    assert jobs.status == FAIL
    assert jobs.message.startswith(f"{state / 'jobs.json'} cannot be read (JSONDecodeError")


async def test_a_job_that_cannot_be_scheduled_is_named(home: Path, api: FakeAnthropic):
    env = setup_home(home, api.base_url)
    good = Job("water", "interval", "3600", "UTC", "telegram:private:42", datetime.now(UTC))
    store = JobStore(home / "state" / "jobs.json")
    store.add(Job("broken", "weekly", "mon", "UTC", "telegram:private:42", datetime.now(UTC)))
    store.add(good)
    jobs = by_name(await run_checks(home, env, limit=5))["jobs"]
    assert jobs.status == WARN
    # Memory consolidation too, on by default, to the control page's chat.
    assert jobs.message.startswith("3 scheduled; broken cannot be scheduled")
    assert jobs.details[0].startswith("memory-consolidation → web:private:owner")
    assert jobs.details[1] == (
        "broken → telegram:private:42: cannot be scheduled: ValueError: unknown job kind 'weekly'"
    )
    assert jobs.details[2].startswith("water → telegram:private:42: every 60 minutes; next run")


async def test_alive_asks_the_control_socket(home: Path, capsys):
    assert await doctor_cli("--alive", "--home", str(home), env={}) == 1
    out = capsys.readouterr().out
    assert out.startswith("FAIL  gateway: not running")

    async def no_job(job_id: str) -> tuple[str | None, str | None]:
        return None, "no jobs here"

    server = ControlServer(
        home / "state" / "control.sock", status=dict, run_job=no_job, cancel_job=lambda _: None
    )
    await server.start()
    try:
        assert await doctor_cli("--alive", "--home", str(home), env={}) == 0
    finally:
        await server.stop()
    assert capsys.readouterr().out.startswith(f"ok    gateway: running (pid {os.getpid()})")


def test_the_secret_options_are_found_from_the_config_classes():
    assert set(secret_keys(Config)) == {
        "llm.api_key",
        "channels.telegram.token",
        "channels.telegram.webhook.secret_token",
        "channels.discord.token",
        "transcription.api_key",
        "tools.web.search.api_key",
        "memory.embeddings.api_key",
    }


def test_a_missing_home_is_one_failure(tmp_path: Path):
    checks = asyncio.run(run_checks(tmp_path / "nowhere", {}))
    assert [(c.status, c.name) for c in checks] == [(FAIL, "home")]
    assert checks[0].fix == f"corvid init --home {tmp_path / 'nowhere'}"


def _set(tree: dict[str, Any], dotted: str, value: str) -> None:
    *path, last = dotted.split(".")
    for part in path:
        tree = tree.setdefault(part, {})
    tree[last] = value


async def test_every_secret_option_is_masked_in_logs_status_and_doctor(
    home: Path, api: FakeAnthropic, fake_telegram: FakeTelegram, fake_discord: FakeDiscord, capsys
):
    """Enumerated from the config classes: a secret option added later without masking fails
    here. The fakes expect other tokens, so every probe fails and says why, the way a real
    mistake would."""
    import io

    from gateway.services.logs import setup_logging

    setup_home(home, api.base_url, fake_telegram, fake_discord)
    raw = yaml.safe_load((home / "config.yaml").read_text())
    canaries = {key: f"canary{i}-{key.replace('.', '-')}-7e1d" for i, key in
                enumerate(sorted(secret_keys(Config)))}  # fmt: skip
    for key, value in canaries.items():
        _set(raw, key, value)
    (home / "config.yaml").write_text(yaml.safe_dump(raw))

    config = load_config(home, {})
    assert sorted(config.secrets()) == sorted(canaries.values())  # the masking list

    stream = io.StringIO()
    setup_logging("DEBUG", config.secrets(), "text", stream)
    try:
        for key, value in canaries.items():
            logging.getLogger("corvid.test").warning(
                "%s is %s (url /bot%s/getMe)", key, value, value
            )
    finally:
        setup_logging("WARNING")
    logged = stream.getvalue()
    assert logged.count("***") >= 2 * len(canaries)

    capsys.readouterr()
    await doctor_cli("--home", str(home), "--timeout", "5", env={})
    assert await asyncio.to_thread(main, ["status", "--home", str(home)], {}) == 0
    assert await asyncio.to_thread(main, ["jobs", "--home", str(home)], {}) == 0
    for argv in (["status", "--json"], ["jobs", "--json"]):
        assert await asyncio.to_thread(main, [*argv, "--home", str(home)], {}) == 0
    out, err = capsys.readouterr()
    for value in canaries.values():
        for where, text in (("logs", logged), ("output", out), ("errors", err)):
            assert value not in text, (value, where)
    assert "FAIL" in out  # the probes did run, and failed on the wrong tokens


def test_a_control_page_beyond_loopback_without_tls_is_a_warning(home):
    from gateway.config.loader import parse_config
    from gateway.ops.doctor.services import web_setup

    def check(**web):
        (found,) = web_setup(parse_config({"web": web}, home=home, environ={}))
        return found

    assert check().status == OK and "127.0.0.1:8787" in check().message
    exposed = check(host="0.0.0.0", allow_remote=True)
    assert exposed.status == WARN and "without TLS" in exposed.message
    assert check(host="0.0.0.0", allow_remote=True, behind_tls_proxy=True).status == OK
    assert "off" in check(enabled=False).message


async def test_a_damaged_jobs_file_is_told_the_same_way_twice(
    home: Path, api: FakeAnthropic, capsys
):
    env = setup_home(home, api.base_url, schedule=SUMMARY)
    (home / "state" / "jobs.json").write_text("{not json")
    capsys.readouterr()
    assert await doctor_cli("--home", str(home), "--timeout", "5", env=env) == 1
    lines = capsys.readouterr().out.splitlines()
    about = [line for line in lines if "jobs.json cannot be read" in line]
    assert len(about) == 2, lines  # the file, and the jobs it leaves out
    assert all("corvid run moves it aside" in line for line in about), about
    assert not any("stop at start-up" in line for line in lines)
    assert any("runs the jobs of config.yaml" in line for line in about), about


@contextlib.contextmanager
def held_port() -> Iterator[int]:
    """A port another program listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


async def test_a_control_page_port_held_by_another_program_fails(
    home: Path, api: FakeAnthropic, capsys
):
    with held_port() as port:
        env = setup_home(home, api.base_url, web={"port": port})
        capsys.readouterr()
        assert await doctor_cli("--home", str(home), "--timeout", "5", env=env) == 1
        out = capsys.readouterr().out
        line = next(line for line in out.splitlines() if "control page:" in line)
        assert line.startswith("FAIL") and "held by another program" in line, out
        # The address corvid web would print is the other program's: it says so instead.
        assert await asyncio.to_thread(main, ["web", "--home", str(home)], env) == 1
        printed = capsys.readouterr()
        assert "token=" not in printed.out and f"{port}" in printed.err


async def test_a_running_gateway_whose_control_page_could_not_start(
    home: Path, api: FakeAnthropic, capsys
):
    from gateway.app import build_app

    with held_port() as port:
        env = setup_home(home, api.base_url, web={"port": port})
        app = build_app(load_config(home, env), [])
        await app.start()
        try:
            assert app.web is None  # the port was taken
            capsys.readouterr()
            assert await asyncio.to_thread(main, ["web", "--home", str(home)], env) == 1
            printed = capsys.readouterr()
            assert "token=" not in printed.out and "could not start" in printed.err
            assert await doctor_cli("--home", str(home), "--timeout", "5", env=env) == 1
            out = capsys.readouterr().out
        finally:
            await app.stop()
    line = next(line for line in out.splitlines() if "control page:" in line)
    assert line.startswith("FAIL") and "could not start" in line, out


@pytest.mark.parametrize("key_ok", [True, False])
async def test_the_transcription_service_is_asked_whether_it_takes_the_key(
    home: Path, api: FakeAnthropic, capsys, key_ok: bool
):
    from tests.fakes.transcription_api import FakeTranscription

    service = FakeTranscription()
    await service.start()
    try:
        section = service.config(api_key="${OPENAI_API_KEY}")
        env = setup_home(home, api.base_url, transcription=section)
        env["OPENAI_API_KEY"] = "tr-test-key" if key_ok else "tr-wrong-key"
        checks = by_name(await run_checks(home, env, limit=5))
    finally:
        await service.close()
    check = checks["transcription"]
    assert all(not h.data.startswith(b"OggS") for h in service.heard)  # the probe is no audio
    if key_ok:
        assert check.status == OK and service.base_url in check.message
    else:
        assert check.status == FAIL and "refused the key" in check.message
        assert "OPENAI_API_KEY" in check.message
        assert "tr-wrong-key" not in report(list(checks.values()), env)


def test_the_report_masks_every_secret_the_configuration_holds_or_names(home: Path):
    """A last line of defence: whatever a check says, no secret of config.yaml (inline or
    through ${VAR}) is printed, down to four characters; an option left unset masks nothing."""
    from gateway.ops.doctor.report import secret_values

    raw = {
        "llm": {"api_key": "${ANTHROPIC_API_KEY}"},
        "channels": {
            "telegram": {"token": "7777:inline-token", "webhook": {"secret_token": "wxyz"}}
        },
    }
    (home / "config.yaml").write_text(yaml.safe_dump(raw))
    secrets = secret_values(home, {"ANTHROPIC_API_KEY": "sk-from-the-environment"})
    said = "keys sk-from-the-environment 7777:inline-token wxyz; None of them is right"
    text = render([Check(FAIL, "llm", said), Check(WARN, "web", "slow")], secrets)
    assert "llm: keys *** *** ***; None of them is right" in text
    assert text.endswith("1 problem(s) to fix, 1 warning(s).")
    assert render([Check(WARN, "web", "slow")]).endswith("No problems; 1 warning(s).")
    assert render([Check(OK, "web", "fine")]).endswith("All checks passed.")


@pytest.mark.parametrize("longer", ["api_key", "token"])
def test_a_secret_inside_another_leaks_neither_in_the_report(home: Path, longer: str):
    """The API key inside the bot token, or the other way round (so the shorter comes first
    in the configuration's order, or last): each is masked whole, the longer's tail too."""
    from gateway.ops.doctor.report import secret_values

    short = "sk-ant-0123456789"
    long = short + "-TAILOFTHELONGERONE"
    key, token = (long, short) if longer == "api_key" else (short, long)
    raw = {"llm": {"api_key": "${ANTHROPIC_API_KEY}"}, "channels": {"telegram": {"token": token}}}
    (home / "config.yaml").write_text(yaml.safe_dump(raw))
    secrets = secret_values(home, {"ANTHROPIC_API_KEY": key})
    assert set(secrets) == {short, long}
    said = f"tried {long}, then {short}"
    text = render([Check(FAIL, "llm", said)], secrets)
    assert "0123456789" not in text and "TAILOFTHELONGERONE" not in text
    assert "llm: tried ***, then ***" in text
