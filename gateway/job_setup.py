"""What each scheduled job does, built from the configuration."""

from __future__ import annotations

from agent.loops.store import Loops
from agent.memory.consolidation import Curator
from gateway.backups.job import ScheduledBackup
from gateway.config.loader import Config
from gateway.runtime.gateway import Gateway
from gateway.scheduling.consolidation import Consolidation
from gateway.scheduling.daily_summary import DailySummary
from gateway.scheduling.heartbeat import Heartbeat
from gateway.scheduling.nudges import ChatJobs, Nudge
from gateway.scheduling.plan import BACKUP, CONSOLIDATION, DAILY_SUMMARY, HEARTBEAT
from gateway.scheduling.reminders import Reminder
from gateway.scheduling.runner import Handler, JobRunner


def job_runner(config: Config, gateway: Gateway) -> JobRunner:
    """What each scheduled job does: by id for the configured ones, reminders for the rest."""
    agent, schedule = gateway.agent, config.schedule
    memory = agent.memory
    loops = Loops(memory.workspace, memory.history) if memory is not None else None
    summary = DailySummary(
        gateway, memory, agent.store.dir, schedule.daily_summary.skip_inactive, loops
    )
    heartbeat = Heartbeat(gateway, agent.workspace, schedule.heartbeat.active_hours)
    backup = ScheduledBackup(config.layout, config.backup)
    jobs: dict[str, Handler] = {DAILY_SUMMARY: summary, HEARTBEAT: heartbeat, BACKUP: backup}
    curator = Curator.of(agent.memory)
    if curator is not None:
        auto = config.memory.consolidation.auto_apply
        jobs[CONSOLIDATION] = Consolidation(gateway, curator, agent.llm, auto)
    return JobRunner(gateway, jobs, default=ChatJobs(Reminder(gateway), Nudge(gateway, loops)))
