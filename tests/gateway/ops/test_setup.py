"""``corvid setup`` end to end at a pseudo-terminal, against the fake Messages API, Bot API and
Discord API: keys checked, the owner's Telegram id taken from their first message, the Discord
invite, and a second run over a pipe that changes only what is changed."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import yaml

from gateway.config.home import init_home
from gateway.config.yaml_lines import set_values
from tests.channels.test_terminal import Tty, corvid_at_a_tty
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.discord_api import APP_ID, GUILD_ID, FakeDiscord
from tests.fakes.telegram_api import BOT_USERNAME, FakeTelegram

KEY = "sk-ant-setup-key-0123456789"
SECRETS = ("ANTHROPIC_API_KEY", "TELEGRAM_BOT_TOKEN", "DISCORD_BOT_TOKEN", "ANTHROPIC_AUTH_TOKEN")
# What Corvid needs in a server, named as the Developer Portal names them.
VIEW_CHANNELS, SEND_MESSAGES, SEND_IN_THREADS = 1 << 10, 1 << 11, 1 << 38
READ_HISTORY, ATTACH_FILES = 1 << 16, 1 << 15


def _environ(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SECRETS and k != "ANTHROPIC_BASE_URL"}
    return {**env, "CORVID_HOME": str(home), "TZ": "Europe/Lisbon", "TERM": "xterm"}


def _home(tmp_path: Path, api: FakeAnthropic, tg: FakeTelegram, dc: FakeDiscord) -> Path:
    """A home pointed at the fakes (their addresses are all that is set)."""
    home = tmp_path / "home"
    init_home(home, {"TZ": "Europe/Lisbon"})  # as setup does for a new home: zone detected
    config = home / "config.yaml"
    edited = set_values(
        config.read_text(),
        {
            "llm.base_url": api.base_url,
            "channels.telegram.base_url": f"{tg.base_url}/bot",
            "channels.telegram.base_file_url": f"{tg.base_url}/file/bot",
            "channels.discord.api_base_url": f"{dc.base_url}/api/v10",
            "channels.discord.gateway_url": dc.gateway_url,
            "memory.embeddings.provider": "none",
        },
    )
    assert edited is not None
    config.write_text(edited)
    return home


@contextlib.asynccontextmanager
async def _setup_at_a_tty(home: Path) -> AsyncIterator[Tty]:
    async with corvid_at_a_tty(["setup", "--wait", "30"], _environ(home)) as tty:
        yield tty


def _asks(text: str):
    return lambda screen: bool(screen) and screen[-1].startswith(text)


async def _setup_from_a_pipe(home: Path, answers: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway.ops.cli", "setup", "--wait", "5",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT, env=_environ(home),
    )  # fmt: skip
    out, _ = await asyncio.wait_for(proc.communicate(answers.encode()), 120)
    assert proc.returncode is not None
    return proc.returncode, out.decode()


async def test_setup_at_a_terminal_then_again_from_a_pipe(tmp_path):
    api, tg, dc = FakeAnthropic(api_key=KEY), FakeTelegram(), FakeDiscord()
    for fake in (api, tg, dc):
        await fake.start()
    try:
        home = _home(tmp_path, api, tg, dc)
        async with _setup_at_a_tty(home) as tty:
            await tty.wait_for(_asks("API key [Enter skips]"))
            tty.type("sk-wrong")
            await tty.wait_for(lambda s: any("not accepted" in line for line in s))
            await tty.wait_for(_asks("API key"))
            tty.type(KEY)
            await tty.wait_for(lambda s: any("ok: the key works" in line for line in s))
            await tty.wait_for(_asks("Bot token"))
            tty.type(tg.token)
            await tty.wait_for(
                lambda s: any(f"send any message to @{BOT_USERNAME}" in x for x in s)
            )
            tg.text("hello", user=42, first_name="Ada")
            await tty.wait_for(_asks("   That was Ada (id 42). Is that you?"))
            tty.type("")
            await tty.wait_for(_asks("   Should it answer in a Telegram group? [y/N]"))
            tty.type("y")
            await tty.wait_for(lambda s: any(f"/start@{BOT_USERNAME} in it" in x for x in s))
            tg.text(f"/start@{BOT_USERNAME}", user=42, chat=-100777, chat_type="supergroup")
            await tty.wait_for(_asks("   That was the group “Test group” (id -100777)."))
            tty.type("")
            await tty.wait_for(_asks("Bot token"))  # Discord's
            tty.type(dc.token)
            screen = await tty.wait_for(_asks("   The application's owner is Ada (id 42)"))
            tty.type("y")
            await tty.wait_for(_asks("   Once it is in your server, Enter picks where it answers"))
            tty.type("")
            await tty.wait_for(_asks(f"   Should it answer in the server Test guild ({GUILD_ID})?"))
            tty.type("")
            await tty.wait_for(_asks("4. Your time zone [Europe/Lisbon]"))
            tty.type("")
            await tty.wait_for(_asks("5. A summary of your day every evening at"))
            tty.type("21:30")
            assert await asyncio.wait_for(tty.proc.wait(), 60) in (0, 1)
        shown = tty.text
        # Secrets never on the screen: typed with the echo off, shown masked.
        assert KEY not in shown and tg.token not in shown and dc.token not in shown
        invite = next(line for line in screen if "discord.com/oauth2/authorize" in line)
        query = parse_qs(urlparse(invite.split("with: ", 1)[1]).query)
        assert query["client_id"] == [str(APP_ID)]
        assert query["scope"] == ["bot applications.commands"]
        wanted = VIEW_CHANNELS | SEND_MESSAGES | SEND_IN_THREADS | READ_HISTORY | ATTACH_FILES
        assert query["permissions"] == [str(wanted)]
        # The owner's message was taken off the queue, so `corvid run` will not answer it: it
        # is answered by setup itself.
        assert int(tg.calls_to("getUpdates")[-1].params["offset"]) > tg.last_update_id()
        [hello] = [m for m in tg.sent if m["chat_id"] == "42"]
        assert "Corvid's setup knows you now" in hello["shown"]
        assert "Checking Corvid in" in shown
        assert re.search(r"ok +anthropic", shown) and re.search(r"ok +telegram", shown)
        assert re.search(r"ok +discord", shown)

        config_text = (home / "config.yaml").read_text()
        config = yaml.safe_load(config_text)
        assert config["timezone"] == "Europe/Lisbon"
        assert config["channels"]["telegram"]["enabled"] is True
        assert config["channels"]["telegram"]["allow_from"] == [42]
        assert config["channels"]["discord"]["allow_from"] == [42]
        assert config["channels"]["telegram"]["groups"] == [-100777]
        assert config["channels"]["discord"]["groups"] == [GUILD_ID]
        assert config["schedule"]["daily_summary"] | {"skip_inactive": True} == {
            "enabled": True, "time": "21:30", "timezone": None,
            "target": "telegram:private:42", "skip_inactive": True, "grace_hours": 12,
        }  # fmt: skip
        assert "# Bot token from @BotFather." in config_text  # the comments stay
        assert config["llm"]["api_key"] == "${ANTHROPIC_API_KEY}"
        env_file = home / "corvid.env"
        assert env_file.stat().st_mode & 0o777 == 0o600
        env = env_file.read_text()
        assert f"ANTHROPIC_API_KEY={KEY}\n" in env and f"TELEGRAM_BOT_TOKEN={tg.token}\n" in env
        assert f"DISCORD_BOT_TOKEN={dc.token}\n" in env

        # Again, from a pipe, every answer kept: nothing changes, nothing is asked of Telegram.
        updates = len(tg.calls_to("getUpdates"))
        _, out = await _setup_from_a_pipe(home, "\n" * 7)
        assert "Nothing changed." in out, out
        assert (home / "config.yaml").read_text() == config_text
        assert env_file.read_text() == env
        assert len(tg.calls_to("getUpdates")) == updates
        # And one answer changed: that one line, nothing else.
        _, out = await _setup_from_a_pipe(home, "\n" * 6 + "22:05\n")
        assert "config.yaml: set schedule.daily_summary.time" in out, out
        after = (home / "config.yaml").read_text().splitlines()
        before = config_text.splitlines()
        assert [(a, b) for a, b in zip(before, after, strict=True) if a != b] == [
            ("    time: '21:30'", "    time: '22:05'")
        ]
    finally:
        for fake in (api, tg, dc):
            await fake.close()


async def test_setup_from_a_pipe_that_ends_early_saves_no_answer(tmp_path):
    home = tmp_path / "home"
    code, out = await _setup_from_a_pipe(home, "")
    assert code == 1 and "no answer was saved" in out
    assert not (home / "corvid.env").exists()
    # The new home it made has the machine's time zone (TZ here), offered as the answer.
    assert yaml.safe_load((home / "config.yaml").read_text())["timezone"] == "Europe/Lisbon"


async def test_setup_over_a_config_it_cannot_read_says_where_and_changes_nothing(tmp_path):
    home = tmp_path / "home"
    init_home(home, {"TZ": "Europe/Lisbon"})
    config = home / "config.yaml"
    broken = config.read_text() + "\nllm:\n  model: [unclosed\n"
    config.write_text(broken)
    code, out = await _setup_from_a_pipe(home, "\n")
    assert code == 1
    assert "config.yaml" in out and "is not closed" in out and "Traceback" not in out
    assert config.read_text() == broken


async def test_ctrl_c_at_a_question_says_nothing_was_saved(tmp_path):
    home = tmp_path / "home"
    init_home(home, {"TZ": "Europe/Lisbon"})
    before = (home / "config.yaml").read_text()
    async with _setup_at_a_tty(home) as tty:
        await tty.wait_for(_asks("API key [Enter skips]"))
        tty.proc.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(tty.proc.wait(), 30) == 130
        screen = await tty.wait_for(lambda s: any("setup stopped" in x for x in s))
    assert "corvid: setup stopped (Ctrl-C); no answer was saved" in screen
    assert "Traceback" not in tty.text
    assert (home / "config.yaml").read_text() == before
    assert not (home / "corvid.env").exists()


async def test_a_base_url_naming_a_variable_is_read_as_corvid_run_reads_it(tmp_path):
    """A self-hosted Bot API server's address given as ${VAR}: setup reaches it too."""
    api, tg = FakeAnthropic(api_key=KEY), FakeTelegram()
    for fake in (api, tg):
        await fake.start()
    try:
        home = tmp_path / "home"
        init_home(home, {"TZ": "Europe/Lisbon"})
        config = home / "config.yaml"
        edited = set_values(
            config.read_text(),
            {
                "llm.base_url": "${MY_API}",
                "channels.telegram.base_url": "${MY_BOT_API}/bot",
                "memory.embeddings.provider": "none",
            },
        )
        assert edited is not None
        config.write_text(edited)
        (home / "corvid.env").write_text(f"MY_API={api.base_url}\nMY_BOT_API={tg.base_url}\n")
        (home / "corvid.env").chmod(0o600)
        # The key; the bot's token; not the owner (nobody writes); no group; no Discord.
        _, out = await _setup_from_a_pipe(home, f"{KEY}\n{tg.token}\n\n\n\n\n")
    finally:
        for fake in (api, tg):
            await fake.close()
    assert "ok: the key works" in out, out
    assert f"ok: the bot is @{BOT_USERNAME}" in out, out
    assert "could not be reached" not in out
