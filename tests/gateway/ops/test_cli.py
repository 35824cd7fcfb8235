"""The corvid command, run as a real process where it matters."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml

from gateway.ops.cli import main
from tests.conftest import keywords_only
from tests.fakes.anthropic_api import FakeAnthropic, Reply, tool_results
from tests.fakes.process import API_KEY, FIRST_CALL, corvid_process
from tests.fakes.telegram_api import FakeTelegram
from tests.fakes.telegram_api import Fault as TgFault


def test_run_on_a_fresh_machine_inits_then_names_what_is_missing(tmp_path, capsys):
    home = tmp_path / "fresh"
    rc = main(["run", "--home", str(home)], environ={})
    err = capsys.readouterr().err
    assert rc == 2
    assert (home / "config.yaml").exists() and (home / "workspace" / "AGENTS.md").exists()
    assert "llm.api_key is empty: set the environment variable ANTHROPIC_API_KEY" in err
    assert "New here? `corvid setup` walks you through the API key, Telegram and Discord" in err
    # The control page's chat (on by default) is a channel; without it there is none.
    assert "no chat channel is enabled" not in err
    config = yaml.safe_load((home / "config.yaml").read_text())
    config["web"]["enabled"] = False
    (home / "config.yaml").write_text(yaml.safe_dump(config))
    assert main(["run", "--home", str(home)], environ={}) == 2
    assert "no chat channel is enabled" in capsys.readouterr().err


async def test_a_run_with_no_chat_platform_says_how_to_reach_the_assistant(tmp_path: Path):
    api = FakeAnthropic()
    await api.start()
    home = tmp_path / "h"
    main(["init", "--home", str(home)], environ={})
    keywords_only(home)
    config = yaml.safe_load((home / "config.yaml").read_text())
    config["llm"]["base_url"] = api.base_url
    config["web"]["port"] = 0
    (home / "config.yaml").write_text(yaml.safe_dump(config))
    try:
        async with corvid_process(home, {}, watch=True) as run:
            line = await run.wait_line("no chat platform is on")
            assert await run.stop() == 0
    finally:
        await api.close()
    assert "control page's Chat (`corvid web` prints its address) or with `corvid chat`" in line
    assert "`corvid setup` connects Telegram or Discord" in line


def test_config_error_exits_non_zero_naming_the_key(tmp_path, capsys):
    home = tmp_path / "h"
    home.mkdir()
    (home / "config.yaml").write_text("llm:\n  timeout: soon\n")
    assert main(["--home", str(home), "chat"], environ={"ANTHROPIC_API_KEY": "k"}) == 2
    err = capsys.readouterr().err
    assert "llm.timeout: expected a number, got str 'soon'" in err


def test_init_reports_and_is_idempotent(tmp_path, capsys):
    home = tmp_path / "h"
    assert main(["init", "--home", str(home)], environ={}) == 0
    assert "created" in capsys.readouterr().out
    assert main(["init"], environ={"CORVID_HOME": str(home)}) == 0
    assert "nothing was changed" in capsys.readouterr().out


async def test_chat_over_a_pipe_holds_a_conversation_with_tool_use(tmp_path: Path):
    api = FakeAnthropic()
    await api.start()
    api.enqueue(
        Reply("Hi! I'm Corvid."),
        Reply(tool_calls=[("write_file", {"path": "shopping.md", "content": "- eggs\n"})]),
        Reply("Added eggs to shopping.md."),
    )
    home = tmp_path / "h"
    env = {
        **os.environ,
        "ANTHROPIC_API_KEY": "sk-pipe-test-key",
        "ANTHROPIC_BASE_URL": api.base_url,
        "CORVID_HOME": str(home),
    }
    env.pop("ANTHROPIC_AUTH_TOKEN", None)
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "gateway.ops.cli",
            "chat",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
        out, err = await asyncio.wait_for(
            proc.communicate(b"hello\nplease note eggs\n/status\n"), 60
        )
    finally:
        await api.close()
    assert proc.returncode == 0, err.decode()
    replies = out.decode().split("\n\n")
    assert replies[0] == "Hi! I'm Corvid."
    assert replies[1] == "Added eggs to shopping.md."
    assert replies[2].startswith(
        "Model: claude-sonnet-5-5\nSession: terminal:private:local (private)"
    )
    assert (home / "workspace" / "shopping.md").read_text() == "- eggs\n"
    assert len(api.message_requests) == 3
    assert "Created shopping.md" in tool_results(api.message_requests[2].body)[0]["content"]
    assert b"sk-pipe-test-key" not in err


def test_memory_search_and_reindex_from_the_command_line(tmp_path, capsys):
    home = tmp_path / "h"
    main(["init", "--home", str(home)], environ={})
    keywords_only(home)
    (home / "workspace" / "memory" / "2026-11-20.md").write_text("## 10:00\n\nCall the bank\n")
    capsys.readouterr()
    assert main(["memory", "reindex", "--home", str(home)], environ={}) == 0
    assert "Indexed 2 file(s)" in capsys.readouterr().out  # the log and MEMORY.md
    assert main(["memory", "search", "bank", "--home", str(home)], environ={}) == 0
    out = capsys.readouterr().out
    assert out.startswith("memory/2026-11-20.md:1-3") and "Call the bank" in out
    assert main(["memory", "search", "zebra", "--home", str(home)], environ={}) == 1


@contextlib.asynccontextmanager
async def _corvid_run(
    tmp_path: Path, token: str | None = None, faults: tuple[TgFault, ...] = ()
) -> AsyncIterator[tuple[asyncio.subprocess.Process, FakeTelegram]]:
    """``corvid run`` as a process, its Telegram and model calls going to fakes in this one."""
    api, tg = FakeAnthropic(), FakeTelegram()
    await api.start()
    await tg.start()
    home = tmp_path / "h"
    tg.write_corvid_config(home, api.base_url)
    tg.fail("getUpdates", *faults)
    try:
        async with corvid_process(home, {"TELEGRAM_BOT_TOKEN": token or tg.token}) as running:
            yield running.proc, tg
    finally:
        await tg.close()
        await api.close()


async def test_run_serves_telegram_and_stops_cleanly_on_sigterm(tmp_path: Path):
    async with _corvid_run(tmp_path) as (proc, tg):
        await tg.wait_for(lambda: bool(tg.calls_to("getUpdates")), timeout=30)
        tg.text("hello from telegram")
        sent = await tg.wait_sent(1, FIRST_CALL)
        assert sent[0]["shown"] == "echo: hello from telegram"
        proc.send_signal(signal.SIGTERM)
        out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, err.decode()
    assert API_KEY.encode() not in err + out
    assert tg.token.encode() not in err + out
    assert b"is polling" in err


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
async def test_a_stop_does_not_wait_out_the_long_poll_and_says_nothing_more(tmp_path, sig):
    """Telegram's long poll is open when the signal comes: it is dropped, not waited for,
    so the confirmation of what was received goes out at once, and no error is left
    unretrieved for asyncio to log."""
    api, tg = FakeAnthropic(), FakeTelegram()
    await api.start()
    await tg.start()
    home = tmp_path / "h"
    tg.write_corvid_config(home, api.base_url)
    config = yaml.safe_load((home / "config.yaml").read_text())
    config["channels"]["telegram"]["poll_timeout"] = 600  # a poll that never ends by itself
    (home / "config.yaml").write_text(yaml.safe_dump(config))
    try:
        async with corvid_process(home, {"TELEGRAM_BOT_TOKEN": tg.token}, watch=True) as run:
            tg.text("hello from telegram")
            await tg.wait_sent(1, FIRST_CALL)
            # The poll after the message, open with its offset past it.
            await tg.wait_for(
                lambda: any(c.params.get("offset") for c in tg.calls_to("getUpdates")), timeout=30
            )
            polls = len(tg.calls_to("getUpdates"))
            run.proc.send_signal(sig)
            assert await asyncio.wait_for(run.proc.wait(), 30) == 0
            await asyncio.wait_for(run._reader, 30)  # type: ignore[arg-type]
    finally:
        await tg.close()
        await api.close()
    confirm = tg.calls_to("getUpdates")[polls:]
    assert [c.params.get("timeout") for c in confirm] == ["0"], confirm
    after = "\n".join(run.lines[next(i for i, x in enumerate(run.lines) if "shutting down" in x) :])
    assert "Traceback" not in after and "never retrieved" not in after, after
    assert "ERROR" not in after and "WARNING" not in after, after


async def test_ctrl_c_twice_says_what_is_awaited_and_three_times_stops_it(tmp_path: Path):
    never = asyncio.Event()

    async def hang(body):
        await never.wait()

    api, tg = FakeAnthropic(brain=hang), FakeTelegram()
    await api.start()
    await tg.start()
    home = tmp_path / "h"
    tg.write_corvid_config(home, api.base_url)
    config = yaml.safe_load((home / "config.yaml").read_text())
    config.setdefault("gateway", {})["shutdown_grace"] = 600
    (home / "config.yaml").write_text(yaml.safe_dump(config))
    try:
        async with corvid_process(home, {"TELEGRAM_BOT_TOKEN": tg.token}, watch=True) as run:
            await tg.wait_for(lambda: bool(tg.calls_to("getUpdates")), timeout=30)
            tg.text("a reply that never ends")
            await api.wait_for_requests(1, FIRST_CALL)
            # One signal at a time: the kernel merges a signal sent before the last was taken.
            run.proc.send_signal(signal.SIGINT)
            await run.wait_line("shutting down")
            run.proc.send_signal(signal.SIGINT)
            await run.wait_line(r"waiting for 1 reply to finish \(up to 600 s\)")
            run.proc.send_signal(signal.SIGINT)
            code = await asyncio.wait_for(run.proc.wait(), 30)  # not the 600 s grace
            await run.wait_line("stopping the replies still running")
    finally:
        await tg.close()
        await api.close()
    assert code == 0


async def test_run_stops_with_a_clear_reason_when_another_instance_polls(tmp_path: Path):
    conflict = TgFault(409, "Conflict: terminated by other getUpdates request")
    async with _corvid_run(tmp_path, faults=(conflict,) * 4) as (proc, _):
        _out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 1
    assert b"corvid: stopped: another program is receiving updates" in err


async def test_run_with_a_rejected_token_exits_with_the_cause(tmp_path: Path):
    async with _corvid_run(tmp_path, token="1:wrong-token") as (proc, _):
        _out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 1
    assert b"Telegram rejected the bot token" in err
    assert b"wrong-token" not in err


async def test_run_with_an_api_key_the_api_rejects_says_so_at_start(tmp_path: Path):
    """Nobody has written yet: the key is checked once at start, and a refusal stops Corvid
    with the cause (exit 2, like any other setting that keeps it from working)."""
    api, tg = FakeAnthropic(api_key="the-right-key"), FakeTelegram()
    await api.start()
    await tg.start()
    home = tmp_path / "h"
    tg.write_corvid_config(home, api.base_url)
    try:
        async with corvid_process(home, {"TELEGRAM_BOT_TOKEN": tg.token}) as running:
            _out, err = await asyncio.wait_for(running.proc.communicate(), 60)
    finally:
        await tg.close()
        await api.close()
    assert running.proc.returncode == 2
    assert b"cannot start: API key rejected by" in err and b"ANTHROPIC_API_KEY" in err
    assert API_KEY.encode() not in err
    assert api.message_requests == [] and tg.sent == []


async def test_run_serves_discord(tmp_path: Path):
    from tests.fakes.discord_api import FakeDiscord

    api, dc = FakeAnthropic(), FakeDiscord()
    await api.start()
    await dc.start()
    home = tmp_path / "h"
    main(["init", "--home", str(home)], environ={})
    keywords_only(home)
    config = yaml.safe_load((home / "config.yaml").read_text())
    config["llm"]["base_url"] = api.base_url
    section = dc.channel_config()
    del section["token"]  # from the environment
    config["channels"]["discord"].update(section)
    (home / "config.yaml").write_text(yaml.safe_dump(config))
    try:
        async with corvid_process(home, {"DISCORD_BOT_TOKEN": dc.token}) as running:
            proc = running.proc
            await dc.wait_ready(timeout=30)
            dc.message("hi from discord", guild=False)
            sent = await dc.wait_sent(1, FIRST_CALL)
            assert sent[0]["content"] == "echo: hi from discord"
            proc.send_signal(signal.SIGTERM)
            out, err = await asyncio.wait_for(proc.communicate(), 30)
    finally:
        await dc.close()
        await api.close()
    assert proc.returncode == 0, err.decode()
    assert dc.token.encode() not in out + err


async def test_a_second_run_on_the_same_home_refuses_and_the_first_keeps_serving(tmp_path: Path):
    async with _corvid_run(tmp_path) as (first, tg):
        home = tmp_path / "h"
        await tg.wait_for(lambda: bool(tg.calls_to("getUpdates")), timeout=30)
        async with corvid_process(home, {"TELEGRAM_BOT_TOKEN": tg.token}) as second:
            _out, err = await asyncio.wait_for(second.proc.communicate(), 30)
        assert second.proc.returncode == 1
        assert f"corvid: already running for this home (pid {first.pid})" in err.decode()
        # The first is untouched: its control socket still answers (the Docker health check).
        alive = await asyncio.to_thread(main, ["doctor", "--alive", "--home", str(home)], {})
        assert alive == 0 and (home / "state" / "control.sock").exists()
        tg.text("still there?")
        assert (await tg.wait_sent(1, timeout=30))[0]["shown"] == "echo: still there?"
        first.send_signal(signal.SIGTERM)
        await asyncio.wait_for(first.communicate(), 30)
    assert first.returncode == 0


def test_the_control_socket_is_removed_only_by_the_server_that_made_it(tmp_path: Path):
    from gateway.services.control import ControlServer

    async def scenario() -> bool:
        async def run_job(job_id: str) -> tuple[str | None, str | None]:
            return None, None

        path = tmp_path / "control.sock"
        old = ControlServer(path, status=dict, run_job=run_job, cancel_job=lambda _: None)
        await old.start()
        new = ControlServer(path, status=dict, run_job=run_job, cancel_job=lambda _: None)
        await new.start()  # took the path over (the old one was, say, stuck)
        await old.stop()
        kept = path.exists()
        await new.stop()
        return kept and not path.exists()

    assert asyncio.run(scenario())


@pytest.mark.parametrize(
    "argv",
    [
        ["pairing", "--home", "{H}", "list"],
        ["pairing", "list", "--home", "{H}"],
        ["--home", "{H}", "pairing", "list"],
        ["memory", "--home", "{H}", "search", "bank"],
        ["jobs", "--home", "{H}"],
    ],
)
def test_home_is_taken_wherever_it_is_written(tmp_path: Path, capsys, argv):
    home = tmp_path / "h"
    assert main(["init", "--home", str(home)], environ={}) == 0
    keywords_only(home)
    (home / "workspace" / "memory" / "2026-11-20.md").write_text("## 10:00\n\nCall the bank\n")
    capsys.readouterr()
    elsewhere = {"CORVID_HOME": str(tmp_path / "default-home")}
    status = main([a.replace("{H}", str(home)) for a in argv], environ=elsewhere)
    captured = capsys.readouterr()
    assert "there is no Corvid home" not in captured.err, captured.err
    assert status in (0, 1)  # found or not found, but in the home that was named
    assert not (tmp_path / "default-home").exists()


@pytest.mark.parametrize(
    "argv", [["status"], ["jobs"], ["pairing", "list"], ["memory", "search", "x"]]
)
def test_read_only_commands_do_not_make_a_home_at_a_mistyped_path(tmp_path, capsys, argv):
    typo = tmp_path / "corivd"
    assert main([*argv, "--home", str(typo)], environ={}) == 2
    assert f"there is no Corvid home at {typo}" in capsys.readouterr().err
    assert not typo.exists()


def test_init_or_run_on_a_file_says_so_without_a_traceback(tmp_path: Path, capsys):
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine")
    for argv in (["init"], ["run"], ["status"]):
        assert main([*argv, "--home", str(a_file)], environ={}) == 2
        err = capsys.readouterr().err
        assert "is a file, not a folder" in err and "Traceback" not in err
    assert a_file.read_text() == "mine"


def test_output_into_a_closed_pipe_ends_quietly(tmp_path: Path):
    """`corvid memory search ... | head`: the reader leaves early; no traceback follows."""
    home = tmp_path / "h"
    main(["init", "--home", str(home)], environ={})
    keywords_only(home)
    for day in range(1, 29):
        log = home / "workspace" / "memory" / f"2026-02-{day:02d}.md"
        log.write_text(f"## 10:00\n\nThe bank called again about the loan {day}\n" * 3)
    proc = subprocess.Popen(
        [sys.executable, "-m", "gateway.ops.cli", "memory", "search", "bank", "-n", "50",
         "--home", str(home)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # as `head` does once it has its lines
    with proc.stderr:
        err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


# The installed ``corvid`` and ``python -m gateway.ops.cli``, with the collector's state looked
# at as the process ends (atexit runs after the command, before the interpreter's last steps).
ENDS = {
    "installed": "import importlib.metadata as m\n"
    "[ep] = m.entry_points(group='console_scripts', name='corvid')\n"
    "sys.argv = ['corvid', *ARGV]\nep.load()()",
    "module": "import runpy\nsys.argv = ['corvid', *ARGV]\n"
    "runpy.run_module('gateway.ops.cli', run_name='__main__')",
}


@pytest.mark.parametrize("way", sorted(ENDS))
@pytest.mark.parametrize("argv", [["doctor", "--alive"], ["--version"]])
def test_the_command_ends_without_a_last_collection_over_every_object(tmp_path, way, argv):
    """That collection, over every object the libraries made, was most of the time from
    SIGTERM to exit (bench/telegram_bench.py); the command freezes the collector first, also
    when it ends by SystemExit."""
    args = argv if argv == ["--version"] else [*argv, "--home", str(tmp_path)]
    code = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: print('frozen:', gc.get_freeze_count() > 0))\n"
        f"ARGV = {args!r}\n" + ENDS[way]
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == (0 if argv == ["--version"] else 1), done.stderr
    assert done.stdout.rstrip().endswith("frozen: True"), done.stdout + done.stderr


def test_version_and_jobs_as_json(tmp_path, capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith("corvid ")
    home = tmp_path / "h"
    assert main(["init", "--home", str(home)], environ={}) == 0
    config = yaml.safe_load((home / "config.yaml").read_text())
    config["schedule"]["daily_summary"].update(enabled=True, target="telegram:private:42")
    (home / "config.yaml").write_text(yaml.safe_dump(config))
    capsys.readouterr()
    assert main(["jobs", "--json", "--home", str(home)], environ={}) == 0
    job, consolidation = json.loads(capsys.readouterr().out)
    assert job["id"] == "daily-summary" and job["target"] == "telegram:private:42"
    assert job["next_run"].endswith(("+01:00", "+02:00", "+00:00")) and job["last_run"] is None
    # Memory consolidation is on by default, half an hour after the summary, to its chat.
    assert consolidation["id"] == "memory-consolidation"
    assert consolidation["target"] == "telegram:private:42"
    assert "30 21 * * *" in consolidation["schedule"]


@pytest.mark.parametrize(
    ("line", "offered"),
    [
        (["jo"], ["jobs"]),
        (["jobs", ""], ["run", "cancel", "--help", "--home", "--json"]),
        (["jobs", "cancel", "--h"], ["--help", "--home"]),
        (["status", "--json", "--"], ["--help", "--home", "--json"]),
        (["completion", "z"], ["zsh"]),
        (["pairing", "revoke", "d"], ["discord"]),
    ],
)
def test_bash_completion_offers_what_the_parser_takes(capsys, line, offered):
    assert main(["completion", "bash"]) == 0
    script = capsys.readouterr().out
    words = " ".join(["corvid", *(w or "''" for w in line)])
    probe = (f"{script}\nCOMP_WORDS=({words}); COMP_CWORD={len(line)}; _corvid; "
             'printf "%s\\n" "${COMPREPLY[@]}"')  # fmt: skip
    done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=10)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == offered


async def test_the_control_page_alone_is_enough_to_run(tmp_path: Path, capsys):
    """A "control page and reminders" set-up: no chat platform, only the page's own chat."""
    from tests.gateway.web.conftest import ControlClient

    api = FakeAnthropic()
    await api.start()
    home = tmp_path / "h"
    assert main(["init", "--home", str(home)], environ={}) == 0
    keywords_only(home)
    config = yaml.safe_load((home / "config.yaml").read_text())
    config["llm"]["base_url"] = api.base_url
    config["web"]["port"] = 0
    (home / "config.yaml").write_text(yaml.safe_dump(config))
    try:
        async with corvid_process(home, {}, watch=True) as running:
            await running.wait_line("Corvid is running")
            capsys.readouterr()
            assert await asyncio.to_thread(main, ["web", "--home", str(home)], {}) == 0
            url = capsys.readouterr().out.strip()
            base, token = url.split("login?token=")
            client = ControlClient(base, token)
            try:
                await client.sign_in()
                assert (await client.post("/chat", {"text": "hello from the page"}))[0] == 303
                await api.wait_for_requests(1, timeout=30)
            finally:
                await client.close()
            assert await running.stop() == 0
    finally:
        await api.close()
    assert "hello from the page" in json.dumps(api.message_requests[0].body)
    assert not any("cannot start" in line for line in running.lines)


def test_bare_corvid_and_an_action_left_out_show_what_there_is(tmp_path: Path, capsys):
    assert main([], environ={}) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: corvid") and "pairing" in out and "doctor" in out
    home = tmp_path / "h"
    assert main(["init", "--home", str(home)], environ={}) == 0
    capsys.readouterr()
    assert main(["pairing", "--home", str(home)], environ={}) == 0  # as `pairing list`
    assert capsys.readouterr().out.startswith("No pending pairing codes.")
    assert main(["mcp", "--home", str(home)], environ={}) == 0  # as `mcp list`
    assert "No MCP servers are configured" in capsys.readouterr().out
    assert main(["memory", "--home", str(home)], environ={}) == 0  # its actions, explained
    out = capsys.readouterr().out
    assert "search MEMORY.md and the logs" in out and "rebuild the search index" in out


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["pairing", "approve", "--help"], "Approve a pairing code."),
        (["jobs", "--help"], "Scheduled jobs: next run, last run, status, last error."),
        (["doctor", "--help"], "Check config, permissions, tokens and the schedule."),
    ],
)
def test_each_command_says_what_it_does_in_its_help(capsys, argv, said):
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 0
    assert said in capsys.readouterr().out


def test_the_short_version_option(capsys):
    with pytest.raises(SystemExit) as done:
        main(["-V"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith("corvid ")


def test_jobs_say_a_skipped_run_is_no_error_and_count_in_good_english(tmp_path, capsys):
    from datetime import UTC, datetime

    from gateway.scheduling.jobs import Job, RunStatus
    from gateway.scheduling.ledger import Ledger
    from gateway.scheduling.reminders import JobStore

    home = tmp_path / "h"
    assert main(["init", "--home", str(home)], environ={}) == 0
    now = datetime.now(UTC)
    beat = Job("stretch", "interval", "60", "UTC", "telegram:private:42", now, instruction="x")
    JobStore(home / "state" / "jobs.json").add(beat)
    ledger = Ledger(home / "state" / "scheduler.sqlite")
    ledger.settle(beat, beat.slot(now), now, RunStatus.SKIPPED, now, "nothing to do")
    ledger.close()
    capsys.readouterr()
    assert main(["jobs", "--home", str(home)], environ={}) == 0
    out = capsys.readouterr().out
    assert "schedule: every minute" in out
    assert ": skipped" in out and "last error" not in out and "nothing to do" in out


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
@pytest.mark.parametrize(
    ("line", "offered"),
    [
        ("corvid jo", ["jobs"]),
        ("corvid jobs ", ["cancel", "run"]),
        ("corvid pairing revoke d", ["discord"]),
        ("corvid completion ", ["bash", "fish", "zsh"]),
    ],
)
def test_fish_completion_offers_what_the_parser_takes(capsys, line, offered):
    assert main(["completion", "fish"]) == 0
    script = capsys.readouterr().out
    probe = f"{script}\ncomplete -C {shlex.quote(line)}"
    done = subprocess.run(["fish", "--no-config", "-c", probe], capture_output=True, text=True,
                          timeout=20)  # fmt: skip
    assert done.returncode == 0, done.stderr
    words = sorted(w.split("\t")[0] for w in done.stdout.splitlines())
    assert [w for w in words if not w.startswith("-")] == offered, done.stdout
