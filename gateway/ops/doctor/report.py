"""``corvid doctor``: checks an installation and says, for each problem, how to fix it.

Checks, in the order printed: the home folder, ``config.yaml`` (parses and validates; file mode
when it holds secrets inline), the workspace, ``state/`` and its private files
(``offline.py``), the Anthropic API key and base URL and each enabled chat platform's token
(each port probes itself: ``AnthropicLLM.probe``, ``Channel.probe``), the scheduled jobs with
their next run, and whether a gateway is running here. The network checks run side by side,
each bounded by ``timeout`` seconds. Nothing is written: no file is created, no job slot is
claimed, no message is sent, and no secret is printed (every configured secret is masked in
the output).

``ok`` lines need nothing; ``warn`` lines work but deserve a look; a ``FAIL`` means ``corvid run``
will not start or will not work, and makes the exit status 1.
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from collections.abc import Awaitable, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO
from zoneinfo import ZoneInfo

from gateway.config.build import ENV_REF, secret_keys
from gateway.config.layout import Layout
from gateway.config.loader import Config
from gateway.contract.events import SessionKey
from gateway.contract.ports import Check, Status, SystemClock
from gateway.ops.doctor.offline import (
    channel_setup,
    env_ref,
    local_checks,
    lookup,
    read_raw,
)
from gateway.ops.doctor.services import check_transcription, check_web
from gateway.services.logs import Masker

OK, WARN, FAIL = Status.OK, Status.WARN, Status.FAIL

__all__ = ["FAIL", "OK", "WARN", "Check", "doctor", "exit_status", "render", "run_checks"]

DEFAULT_TIMEOUT = 10.0
MAX_JOBS_SHOWN = 10


def doctor(
    home: Path,
    environ: Mapping[str, str],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    alive_only: bool = False,
    out: TextIO | None = None,
) -> int:
    """Run the checks, print one line each, and return the exit status (1 if any FAIL)."""
    from gateway.services.logs import setup_logging

    out = out or sys.stdout
    secrets = secret_values(home, environ)
    # Library warnings would interleave with the report; errors still show, masked.
    setup_logging("ERROR", secrets)
    if alive_only:
        checks = [asyncio.run(check_gateway(home, timeout, required=True))]
    else:
        print(f"Checking Corvid in {home}", file=out)
        checks = asyncio.run(run_checks(home, environ, limit=timeout))
    print(render(checks, secrets), file=out)
    return exit_status(checks)


def exit_status(checks: Sequence[Check]) -> int:
    return 1 if any(c.status == FAIL for c in checks) else 0


async def run_checks(
    home: Path, environ: Mapping[str, str], *, limit: float = DEFAULT_TIMEOUT
) -> list[Check]:
    """Every check, in the order they are printed; ``limit`` bounds each network check."""
    checks, config, raw = local_checks(home, environ)
    if config is None:
        if checks[0].name == "home" and checks[0].status == FAIL:
            return checks
        checks.append(await check_gateway(home, limit))
        return checks
    preload(config)  # slow imports, before any network check starts its clock
    network: list[Awaitable[Check]] = [_guarded("anthropic", check_model(config, raw, limit))]
    for name in config.channels.enabled():
        network.append(_guarded(name, check_channel(config, raw, name, limit)))
    if config.tools.web.search.provider:
        network.append(_guarded("web search", check_search(config, limit)))
    servers = list(config.mcp.servers)
    network += [_guarded(f"mcp {name}", check_mcp(config, name, limit)) for name in servers]
    if config.transcription.enabled:
        source = key_source(raw, "transcription.api_key")
        network.append(_guarded("transcription", check_transcription(config, source, limit)))
    network.append(_guarded("gateway", check_gateway(home, limit)))
    *platforms, gateway = await asyncio.gather(*network)
    checks.extend(platforms)
    checks.extend(channel_setup(config))
    checks.append(await _guarded("control page", check_web(config, limit)))
    try:
        checks.append(check_jobs(config))
    except Exception as exc:
        checks.append(_crashed("jobs", exc))
    checks.append(gateway)
    return checks


async def _guarded(name: str, check: Awaitable[Check]) -> Check:
    """One check's unforeseen error is its own FAIL line, not the end of the report."""
    try:
        return await check
    except Exception as exc:
        return _crashed(name, exc)


def _crashed(name: str, exc: Exception) -> Check:
    return Check(
        FAIL,
        name,
        f"the check itself failed: {type(exc).__name__}: {exc}",
        "please report this, with the line above",
    )


def render(checks: Sequence[Check], secrets: Sequence[str] = ()) -> str:
    """The report, with every secret value masked (a last line of defence: no check puts a
    secret in its message on purpose)."""
    lines = [line for check in checks for line in check.lines()]
    fails = sum(c.status == FAIL for c in checks)
    warns = sum(c.status == WARN for c in checks)
    if fails:
        lines.append(f"{fails} problem(s) to fix, {warns} warning(s).")
    elif warns:
        lines.append(f"No problems; {warns} warning(s).")
    else:
        lines.append("All checks passed.")
    return Masker(secrets, min_len=4)("\n".join(lines))


def secret_values(home: Path, environ: Mapping[str, str]) -> list[str]:
    """Every secret the configuration holds or refers to, valid configuration or not."""
    raw = read_raw(home)
    values: list[str] = []
    for key in secret_keys(Config, raw=raw):
        value = lookup(raw, key)
        if value is None or isinstance(value, dict | list):
            continue
        values.append(ENV_REF.sub(lambda m: environ.get(m[1], ""), str(value)))
    return [v for v in values if v]


# -- the ports, probing themselves ----------------------------------------------------------------


def preload(config: Config) -> None:
    """The client libraries, imported before any probe starts its clock (anthropic alone
    takes over a second)."""
    import anthropic  # noqa: F401

    if config.channels.telegram.enabled:
        from channels.telegram.sdk import load_ptb

        load_ptb()
    if config.channels.discord.enabled:
        import discord  # noqa: F401


def key_source(raw: Mapping[str, Any], key: str) -> str:
    var = env_ref(lookup(raw, key))
    return f"{key} (the environment variable {var})" if var else key


async def check_model(config: Config, raw: Mapping[str, Any], limit: float) -> Check:
    from agent.model.llm import AnthropicLLM

    if config.llm.api_key is None:
        return Check(FAIL, "anthropic", config.missing("llm.api_key", "your Anthropic API key"))
    async with AnthropicLLM(config.llm) as model:
        return await model.probe(limit, key_source(raw, "llm.api_key"))


async def check_search(config: Config, limit: float) -> Check:
    """One query to the configured search provider: its address and key work."""
    from agent.web.search import provider_from
    from gateway.contract.errors import ConfigError, ToolError

    if config.tools.web.search.provider == "anthropic":
        return await _check_server_search(config, limit)
    try:
        provider = provider_from(config.tools.web.search)
    except ConfigError as exc:
        return Check(FAIL, "web search", str(exc), "set it under tools.web.search in config.yaml")
    assert provider is not None
    try:
        async with asyncio.timeout(limit):
            await provider.search("corvid", 1)
    except ToolError as exc:
        return Check(FAIL, "web search", str(exc), "check tools.web.search in config.yaml")
    except TimeoutError:
        return Check(FAIL, "web search", f"{provider.name} did not answer within {limit:g} s")
    return Check(OK, "web search", f"{provider.name} answers")


async def _check_server_search(config: Config, limit: float) -> Check:
    """Whether the configured API takes its own web search tool with the configured model."""
    from agent.model.llm import AnthropicLLM
    from agent.web.search import server_search_tool

    if config.llm.api_key is None:
        return Check(WARN, "web search", "not checked: llm.api_key is not set")
    tool = server_search_tool(config.tools.web.search.max_uses)
    async with AnthropicLLM(config.llm) as model:
        verdict = await model.accepts_tools([tool.schema()], limit)
    where = config.llm.base_url or "Anthropic's API"
    if verdict is None:
        return Check(WARN, "web search", f"could not ask {where} whether it takes its search tool")
    if not verdict:
        return Check(
            FAIL,
            "web search",
            f"{where} does not take the web search tool with {config.llm.model}",
            "use another provider under tools.web.search (brave or searxng), or another model",
        )
    return Check(
        OK,
        "web search",
        f"{where} runs web_search itself (up to "
        f"{config.tools.web.search.max_uses} searches a request)",
    )


async def check_mcp(config: Config, name: str, limit: float) -> Check:
    """Start one MCP server, list its tools, stop it."""
    from agent.mcp.probe import probe

    spec = config.mcp.servers[name]
    view = await probe(name, spec, config.layout.mcp, limit)
    who = "every chat" if spec.shared else "private chats only"
    if view.state == "off":
        return Check(OK, f"mcp {name}", "off (enabled: false)")
    if view.state != "ready":
        log = (
            f"; its own output is in {config.layout.mcp / (name + '.log')}" if spec.command else ""
        )
        return Check(
            FAIL, f"mcp {name}", f"{view.error}{log}", f"check mcp.servers.{name} in config.yaml"
        )
    tools = ", ".join(t.split("__", 1)[1] for t in view.tools) or "none"
    return Check(
        OK, f"mcp {name}", f"{spec.transport}, {len(view.tools)} tool(s) for {who}: {tools}"
    )


async def check_channel(config: Config, raw: Mapping[str, Any], name: str, limit: float) -> Check:
    from gateway.channel_setup import build_channels

    key = f"channels.{name}.token"
    if getattr(config.channels, name).token is None:
        return Check(FAIL, name, config.missing(key, "the bot token"))
    (channel,) = build_channels(config, only={name})
    return await channel.probe(limit, key_source(raw, key))


async def check_gateway(home: Path, limit: float, *, required: bool = False) -> Check:
    """Whether a gateway runs for this home: its control socket answers a ping. Not running is
    only a warning, unless ``required`` (``--alive``, for health checks)."""
    from gateway.services.control import ask

    sock = Layout(home).control_socket
    name = "gateway"
    down = FAIL if required else WARN
    try:
        async with asyncio.timeout(limit):
            answer = await ask(sock, {"cmd": "ping"})
    except ConnectionError:
        stale = " (a control.sock left by a process that was killed)" if sock.exists() else ""
        return Check(
            down,
            name,
            f"not running: nothing answers on {sock}{stale}",
            "start it with corvid run (or your service manager)",
        )
    except TimeoutError:
        return Check(
            FAIL,
            name,
            f"{sock} took a connection but gave no answer within "
            f"{limit:g} s: the gateway may be stuck",
            "restart it",
        )
    except (OSError, ValueError) as exc:
        return Check(
            down,
            name,
            f"cannot ask {sock}: {type(exc).__name__}: {exc}",
            "run corvid doctor as the user that runs Corvid",
        )
    pid = answer.get("pid")
    return Check(OK, name, "running" + (f" (pid {pid})" if pid else "") + f"; {sock} answers")


# -- schedule -------------------------------------------------------------------------------------


def check_jobs(config: Config) -> Check:
    """The jobs ``corvid run`` would schedule and their next runs, read from the ledger without
    writing to it (no slot is claimed)."""
    from gateway.scheduling.ledger import Ledger
    from gateway.scheduling.plan import job_states, planned_jobs
    from gateway.scheduling.reminders import JobStore

    name = "jobs"
    store = JobStore(config.layout.jobs)
    clock = SystemClock()
    try:
        jobs = planned_jobs(config, store, clock.now())
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return Check(
            FAIL,
            name,
            f"{store.path} cannot be read ({type(exc).__name__}: {exc}); corvid run moves it "
            "aside when it starts (the reminders made in chat are then in the moved copy) and "
            "runs the jobs of config.yaml",
            "restore it from a backup if its reminders matter",
        )
    if not jobs:
        return Check(OK, name, "none scheduled (the daily summary and the heartbeat are off)")
    try:
        ledger = Ledger(config.layout.ledger, read_only=True)
        try:
            states = job_states(jobs, ledger, clock)
        finally:
            ledger.close()
    except sqlite3.Error as exc:
        return Check(
            WARN,
            name,
            f"{len(jobs)} scheduled, but state/scheduler.sqlite cannot be read ({exc})",
            "corvid jobs shows the same ledger",
        )
    return _jobs_check(config, states)


def _jobs_check(config: Config, states: list[Any]) -> Check:
    enabled = set(config.chat_channels())  # the control page has a chat of its own
    details: list[str] = []
    problems: list[str] = []
    for state in states:
        job = state.job
        if state.problem is not None:  # a hand-edited jobs.json
            details.append(f"{job.id} → {job.target}: cannot be scheduled: {state.problem}")
            problems.append(f"{job.id} cannot be scheduled")
            continue
        nxt = state.next_run
        when = f"{nxt.astimezone(ZoneInfo(job.timezone)):%Y-%m-%d %H:%M %Z}" if nxt else "—"
        line = f"{job.id} → {job.target}: {job.describe()}; next run {when}"
        if state.last is not None and state.last["status"] == "failed":
            line += f"; last run failed: {state.last['error']}"
            problems.append(f"the last run of {job.id} failed")
        details.append(line)
        try:
            channel = SessionKey.parse(job.target).channel
        except ValueError:
            problems.append(f"{job.id} has no valid target")
            continue
        if channel not in enabled:
            problems.append(f"{job.id} goes to {channel}, which is not enabled")
    if len(details) > MAX_JOBS_SHOWN:
        more = len(details) - MAX_JOBS_SHOWN
        details = [*details[:MAX_JOBS_SHOWN], f"… and {more} more (corvid jobs lists them all)"]
    if problems:
        return Check(
            WARN,
            "jobs",
            f"{len(states)} scheduled; " + "; ".join(problems),
            "see corvid jobs",
            tuple(details),
        )
    return Check(OK, "jobs", f"{len(states)} scheduled", details=tuple(details))
