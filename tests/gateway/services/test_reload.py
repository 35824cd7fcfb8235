"""corvid reload (and SIGHUP): config.yaml read again, applied whole or not at all."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator
from typing import Any

import yaml

from gateway.app import build_app
from gateway.channel_setup import build_channels
from gateway.config.loader import parse_config
from gateway.ops.cli import main
from tests.conftest import OWNER
from tests.fakes.process import FIRST_CALL, corvid_process


def _raw(fake_api, fake_telegram, **telegram: Any) -> dict[str, Any]:
    tg = fake_telegram.channel_config(allow_from=[str(OWNER)], **telegram)
    return {
        "timezone": "Europe/Berlin",
        "llm": {"api_key": "sk-test-0123456789", "base_url": fake_api.base_url, "retries": 0},
        "gateway": {"shutdown_grace": 5},
        "web": {"enabled": False},
        "channels": {"telegram": tg},
    }


@contextlib.asynccontextmanager
async def _running(home, raw: dict[str, Any]) -> AsyncIterator[Any]:
    """``corvid run`` as built for real, from a config.yaml that says ``raw``."""
    (home / "config.yaml").write_text(yaml.safe_dump(raw))
    config = parse_config(raw, home=home, environ={})
    app = build_app(config, build_channels(config))
    await app.start()
    try:
        yield app
    finally:
        await app.stop()


async def _reload(home, capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    code = await asyncio.to_thread(main, ["reload", "--home", str(home)], {})
    out, err = capsys.readouterr()
    return code, out, err


async def test_someone_added_to_allow_from_is_served_without_a_restart(
    home, fake_api, fake_telegram, capsys
):
    raw = _raw(fake_api, fake_telegram)
    async with _running(home, raw) as app:
        fake_telegram.text("hello?", user=77, first_name="Eve")
        await fake_telegram.wait_for(lambda: any(m["chat_id"] == "77" for m in fake_telegram.sent))
        raw["channels"]["telegram"]["allow_from"].append("77")
        (home / "config.yaml").write_text(yaml.safe_dump(raw))
        code, out, _ = await _reload(home, capsys)
        assert code == 0 and out == (
            "config.yaml read again.\nChanged now: channels.telegram.allow_from\n"
        )
        fake_telegram.text("and now?", user=77, first_name="Eve")
        await fake_telegram.wait_for(
            lambda: any(m["shown"] == "echo: and now?" for m in fake_telegram.sent)
        )
        assert app.channels["telegram"].access.is_owner("77")


async def test_an_invalid_file_changes_nothing_and_names_the_key(
    home, fake_api, fake_telegram, capsys
):
    raw = _raw(fake_api, fake_telegram)
    async with _running(home, raw) as app:
        raw["channels"]["telegram"]["allow_from"] = ["77"]
        raw["llm"]["timeout"] = "soon"
        (home / "config.yaml").write_text(yaml.safe_dump(raw))
        code, _, err = await _reload(home, capsys)
        assert code == 2 and "llm.timeout" in err and "nothing changed" in err
        assert app.channels["telegram"].access.allow_from == frozenset({str(OWNER)})


async def test_what_cannot_change_live_is_named_and_the_schedule_and_model_change_live(
    home, fake_api, fake_telegram, capsys
):
    raw = _raw(fake_api, fake_telegram)
    async with _running(home, raw) as app:
        raw["channels"]["telegram"]["poll_timeout"] = 5
        raw["llm"]["model"] = "claude-other-1"
        raw["schedule"] = {
            "daily_summary": {"enabled": True, "target": f"telegram:private:{OWNER}"}
        }
        (home / "config.yaml").write_text(yaml.safe_dump(raw))
        code, out, _ = await _reload(home, capsys)
        assert code == 0
        now, later = out.splitlines()[1:]
        assert "llm.model" in now and "schedule.daily_summary.enabled" in now
        assert later == "Changed at the next restart (`corvid run`): channels.telegram.poll_timeout"
        assert "daily-summary" in [j.id for j in app.scheduler.jobs()]
        assert app.pending_restart == ["channels.telegram.poll_timeout"]
        fake_telegram.text("which model?")
        await fake_telegram.wait_sent(1)
        assert fake_api.message_requests[-1].body["model"] == "claude-other-1"
        del raw["schedule"]
        (home / "config.yaml").write_text(yaml.safe_dump(raw))
        assert (await _reload(home, capsys))[0] == 0
        assert "daily-summary" not in [j.id for j in app.scheduler.jobs()]


async def test_sighup_reloads_a_running_process(tmp_path, fake_api, fake_telegram):
    home = tmp_path / "h"
    fake_telegram.write_corvid_config(home, fake_api.base_url)
    raw = yaml.safe_load((home / "config.yaml").read_text())
    raw["web"]["enabled"] = False
    (home / "config.yaml").write_text(yaml.safe_dump(raw))
    env = {"TELEGRAM_BOT_TOKEN": fake_telegram.token}
    async with corvid_process(home, env, watch=True) as run:
        await run.wait_line("is polling")
        raw["channels"]["telegram"]["allow_from"] = [42, 77]
        (home / "config.yaml").write_text(yaml.safe_dump(raw))
        run.proc.send_signal(signal.SIGHUP)
        await run.wait_line(r"config.yaml reloaded: 1 change")
        fake_telegram.text("hi", user=77, first_name="Eve")
        await fake_telegram.wait_for(
            lambda: any(m["shown"] == "echo: hi" for m in fake_telegram.sent), FIRST_CALL
        )
        assert await run.stop() == 0


async def test_secrets_kept_in_corvid_env_are_not_taken_for_changes(
    tmp_path, fake_api, fake_telegram
):
    """The token lives in corvid.env, as corvid setup writes it, not in the environment: a
    reload with nothing changed says so, the first time too."""
    home = tmp_path / "h"
    fake_telegram.write_corvid_config(home, fake_api.base_url)
    raw = yaml.safe_load((home / "config.yaml").read_text())
    raw["web"]["enabled"] = False
    (home / "config.yaml").write_text(yaml.safe_dump(raw))
    (home / "corvid.env").write_text(f"TELEGRAM_BOT_TOKEN={fake_telegram.token}\n")
    (home / "corvid.env").chmod(0o600)
    async with corvid_process(home, {}, watch=True) as run:
        await run.wait_line("is polling")
        run.proc.send_signal(signal.SIGHUP)
        line = await run.wait_line(r"config.yaml reloaded")
        assert "0 change(s) applied, 0 wait for a restart" in line
        assert await run.stop() == 0


async def test_the_control_page_reads_the_file_again(home, fake_api, fake_telegram):

    from tests.gateway.web.conftest import ControlClient

    raw = {**_raw(fake_api, fake_telegram), "web": {"enabled": True, "port": 0}}
    async with _running(home, raw) as app:
        client = ControlClient(app.web.url, app.web.token)
        await client.sign_in()
        try:
            raw["channels"]["telegram"]["groups"] = ["-100777"]
            raw["web"]["port"] = 9
            (home / "config.yaml").write_text(yaml.safe_dump(raw))
            status, _, r = await client.post("/config/reload", {})
            said = await client.shown(r)
            assert status == 303 and "Changed now: channels.telegram.groups" in said
            assert "next restart (`corvid run`): web.port" in said
            _, text, _ = await client.get("/config")
            assert "in effect after a restart: web.port" in text
            assert app.channels["telegram"].access.groups == frozenset({"-100777"})
        finally:
            await client.close()


async def test_only_what_is_read_at_use_is_called_live(home, fake_api, fake_telegram, capsys):
    """A cap held by a part built at start (a quota, the longest message) is named as waiting
    for a restart, not claimed as changed."""
    raw = _raw(fake_api, fake_telegram)
    async with _running(home, raw) as app:
        raw["agent"] = {"tool_output_max_chars": 2000, "max_input_chars": 500}
        (home / "config.yaml").write_text(yaml.safe_dump(raw))
        code, out, _ = await _reload(home, capsys)
        assert code == 0
        assert "Changed now: agent.tool_output_max_chars" in out
        assert "next restart (`corvid run`): agent.max_input_chars" in out
        assert app.agent.tools.max_output_chars == 2000


async def test_a_new_owner_hears_of_strangers_and_the_key_waits(
    home, fake_api, fake_telegram, capsys
):
    raw = _raw(fake_api, fake_telegram)
    raw["schedule"] = {"daily_summary": {"enabled": True, "target": f"telegram:private:{OWNER}"}}
    async with _running(home, raw) as app:
        daily = app.scheduler._tasks["daily-summary"]
        raw["channels"]["telegram"]["allow_from"] = ["99"]
        raw["llm"]["api_key"] = "sk-another-key-000"
        raw["schedule"]["heartbeat"] = {"enabled": True, "target": "telegram:private:99"}
        (home / "config.yaml").write_text(yaml.safe_dump(raw))
        code, out, _ = await _reload(home, capsys)
        assert code == 0 and "next restart (`corvid run`): llm.api_key" in out
        assert app.agent.llm.cfg.api_key.value == "sk-test-0123456789"  # not swapped in
        assert app.scheduler._tasks["daily-summary"] is daily  # unchanged, left running
        assert "heartbeat" in [j.id for j in app.scheduler.jobs()]
        fake_telegram.text("hello", user=77, first_name="Eve")
        await fake_telegram.wait_for(
            lambda: any(m["chat_id"] == "99" and "wants to talk" in m["shown"]
                        for m in fake_telegram.sent)
        )  # fmt: skip


async def test_guests_notes_and_consolidations_auto_apply_change_without_a_restart(
    home, fake_api, fake_telegram, capsys
):
    from gateway.contract.events import SessionKey
    from gateway.scheduling.jobs import CONSOLIDATION

    raw = _raw(fake_api, fake_telegram)
    async with _running(home, raw) as app:
        assert app.agent.memory.cfg.owner_reads_guest_notes
        assert not app.runner.handlers[CONSOLIDATION].auto_apply
        raw["memory"] = {
            "owner_reads_guest_notes": False,
            "consolidation": {
                "auto_apply": True,
                "time": "23:15",
                "target": f"telegram:private:{OWNER}",
            },
        }
        (home / "config.yaml").write_text(yaml.safe_dump(raw))
        code, out, _ = await _reload(home, capsys)
        assert code == 0 and "next restart" not in out, out
        for key in (
            "memory.owner_reads_guest_notes",
            "memory.consolidation.auto_apply",
            "memory.consolidation.time",
        ):
            assert key in out
        assert not app.agent.memory.cfg.owner_reads_guest_notes
        assert app.agent.context(SessionKey.parse("telegram:private:42")).guest_notes_hidden
        assert app.runner.handlers[CONSOLIDATION].auto_apply
        [job] = [j for j in app.scheduler.jobs() if j.id == CONSOLIDATION]
        assert job.spec.startswith("15 23 ")


class _Parts:
    """A running app reduced to what reloading needs: it records what each part was handed."""

    def __init__(self, config):
        from gateway.services.reload import LIVE

        self.config = config
        self.handed: list[str] = []
        self.restart: list[str] = []
        self._names = list(LIVE)

    def appliers(self):
        return {name: (lambda new, name=name: self.handed.append(name)) for name in self._names}

    def adopt(self, new, restart):
        self.config, self.restart = new, restart


def test_reload_hands_each_part_only_what_it_owns_and_names_the_rest(tmp_path):
    from gateway.config.loader import load_config
    from gateway.services.reload import reload

    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"llm": {"model": "m-1"}}))
    parts = _Parts(load_config(tmp_path, {}))
    raw = {
        "llm": {"model": "m-2"},
        "channels": {"telegram": {"allow_from": ["5"]}},
        "gateway": {"retry_window_hours": 2},
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(raw))
    done = reload(parts, {})
    assert parts.handed == ["channels", "owners", "model"]  # in LIVE's order
    assert done.applied == ["llm.model", "channels.telegram.allow_from"]
    assert done.restart == parts.restart == ["gateway.retry_window_hours"]
    assert parts.config.llm.model == "m-2"


async def test_the_app_has_an_applier_for_every_live_part(home):
    from gateway.config.loader import load_config
    from gateway.services.reload import LIVE, live
    from tests.fakes.scripted_model import ScriptedModel

    app = build_app(load_config(home, {}), [], llm=ScriptedModel(), with_scheduler=False)
    try:
        assert set(app.appliers()) == set(LIVE)
    finally:
        await app.stop(0)
    assert live("compaction.keep_recent_turns") and live("schedule.heartbeat.target")
    assert not live("llm.api_key") and not live("channels.telegram.enabled")
