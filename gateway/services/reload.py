"""Settings that change without a restart: ``corvid reload``, SIGHUP, or the control page.

``config.yaml`` is read again and validated whole first: an invalid file changes nothing, and
the error names the key. Then every option that differs from the running configuration is
either applied at once (who may talk to the bot and where, streaming, the schedule and the
heartbeat, the model and the caps, memory and compaction settings) or named as needing a
restart (the log level, tokens, turning a channel on or off, the webhook, the control page's
address, the API's address and key, the time zone, the shared chats' quotas, the longest
message, how memory is cut for its index). A restart drops Telegram's long poll, Discord's
gateway session and the turns running, so reloading is the gentler way.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent.model.llm import AnthropicLLM
from gateway.config.loader import Config, load_config
from gateway.scheduling.jobs import Job
from gateway.scheduling.plan import DAILY_SUMMARY, HEARTBEAT, planned_jobs

if TYPE_CHECKING:
    from gateway.app import App

log = logging.getLogger(__name__)

# What changes while running: an option is live when its dotted key starts with one of these.
LIVE = (
    *(
        f"channels.{name}.{option}"
        for name in ("telegram", "discord")
        for option in (
            "allow_from", "groups", "group_context_messages", "streaming", "show_tool_progress",
        )
    ),
    "schedule.daily_summary.",
    "schedule.heartbeat.",
    "llm.model",
    "llm.max_tokens",
    "llm.context_window",
    "agent.max_iterations",
    "agent.bootstrap_max_chars",
    "agent.bootstrap_total_max_chars",
    "agent.tool_output_max_chars",
    "memory.daily_log_max_chars",
    "memory.long_term_max_chars",
    "memory.search_max_results",
    "compaction.",
    "gateway.shutdown_grace",
)  # fmt: skip


@dataclass(frozen=True)
class Reloaded:
    applied: list[str]  # dotted keys now in effect
    restart: list[str]  # dotted keys that take effect at the next start


def reload(app: App, environ: Mapping[str, str]) -> Reloaded:
    """Read ``config.yaml`` again and apply what can change live; raises ``ConfigError`` (and
    changes nothing) when the file is not valid."""
    new = load_config(app.config.home, environ)
    changed = [key for key in options(new) if _value(app.config, key) != _value(new, key)]
    applied = [k for k in changed if k.startswith(LIVE)]
    restart = [k for k in changed if not k.startswith(LIVE)]
    if applied:
        _apply(app, new, applied)
    app.config = new
    app.pending_restart = sorted(set(app.pending_restart) | set(restart))
    if app.web is not None:
        app.web.backend.config = new
    log.info("config.yaml reloaded: %d change(s) applied, %d wait for a restart",
             len(applied), len(restart))  # fmt: skip
    return Reloaded(applied, restart)


def reloaded_text(applied: list[str], restart: list[str]) -> str:
    """What a reload did, in words for the owner (the command line and the control page)."""
    if not applied and not restart:
        return "config.yaml read again: nothing changed."
    lines = ["config.yaml read again."]
    if applied:
        lines.append("Changed now: " + ", ".join(applied))
    if restart:
        lines.append("Changed at the next restart (`corvid run`): " + ", ".join(restart))
    return "\n".join(lines)


def options(config: Any, prefix: str = "") -> Iterator[str]:
    """Every option's dotted key (a section's options, not the section)."""
    for f in dataclasses.fields(config):
        if f.name in ("home", "missing_env"):
            continue
        value = getattr(config, f.name)
        key = f"{prefix}{f.name}"
        if dataclasses.is_dataclass(value):
            yield from options(value, key + ".")
        else:
            yield key


def _value(config: Any, key: str) -> Any:
    for part in key.split("."):
        config = getattr(config, part)
    return config


def _apply(app: App, new: Config, applied: list[str]) -> None:
    from gateway.app import owner_chats

    agent, gateway = app.agent, app.gateway
    for name in ("telegram", "discord"):
        channel, cfg = gateway.channels.get(name), getattr(new.channels, name)
        if channel is None:
            continue
        channel.streaming, channel.show_tool_progress = cfg.streaming, cfg.show_tool_progress
        if channel.access is not None:
            channel.access.allow_from = frozenset(cfg.allow_from)
            channel.access.groups = frozenset(cfg.groups)
            channel.access.context_messages = cfg.group_context_messages
    llm = agent.llm
    if isinstance(llm, AnthropicLLM):  # the live options only: the key and address wait
        llm.cfg = dataclasses.replace(
            llm.cfg,
            model=new.llm.model,
            max_tokens=new.llm.max_tokens,
            context_window=new.llm.context_window,
        )
        llm.model, llm.context_window = new.llm.model, new.llm.context_window
    agent.settings = agent.prompts.settings = new.agent
    agent.tools.max_output_chars = new.agent.tool_output_max_chars
    agent.maintenance.cfg = new.compaction
    if agent.memory is not None:
        agent.memory.cfg = new.memory
    gateway.shutdown_grace = new.gateway.shutdown_grace
    if app.notices is not None:
        app.notices.set_owners(owner_chats(new))
    if any(k.startswith("schedule.") for k in applied):
        _replan(app, new)


def _replan(app: App, new: Config) -> None:
    """The configured jobs (daily summary, heartbeat) as the new file plans them; a job whose
    schedule did not change is left alone (a run in progress goes on), and reminders made in
    chat are not touched."""
    from gateway.app import job_runner

    scheduler = app.scheduler
    if scheduler is None:
        return
    app.runner.handlers = job_runner(new, app.gateway).handlers
    now = scheduler.clock.now()
    planned = {j.id: j for j in planned_jobs(new, app.jobs, now) if j.id in CONFIGURED}
    running = {j.id: j for j in scheduler.jobs() if j.id in CONFIGURED}
    for job_id in CONFIGURED:
        old, job = running.get(job_id), planned.get(job_id)
        if old is not None and job is not None and _same(old, job):
            continue
        scheduler.remove(job_id)
        if job is not None:
            scheduler.add(job)


CONFIGURED = (DAILY_SUMMARY, HEARTBEAT)


def _same(a: Job, b: Job) -> bool:
    return (a.kind, a.spec, a.timezone, a.target, a.grace) == (
        b.kind, b.spec, b.timezone, b.target, b.grace)  # fmt: skip
