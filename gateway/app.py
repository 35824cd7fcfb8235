"""The composition root: ``build_app`` puts Corvid together from its configuration."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from datetime import timedelta

from agent.approvals.gate import Gate
from agent.loop import Agent
from agent.loops.store import Loops
from agent.loops.tools import loop_tools
from agent.memory.tools import memory_tools
from agent.model.llm import AnthropicLLM
from agent.model.port import LLM
from agent.sessions.loaded import HandEdits
from agent.sessions.transcript import SessionStore
from agent.skills.catalog import SkillCatalog
from agent.tools.files import FILE_TOOLS
from agent.tools.registry import ToolRegistry
from agent.usage.meter import Metered
from channels.base import Channel
from channels.pairing import PairingStore
from gateway.channel_setup import quota, web_chat
from gateway.chat_names import ChatNames
from gateway.config.loader import Config
from gateway.contract.ports import Clock, SystemClock
from gateway.job_setup import job_runner
from gateway.running import App
from gateway.runtime.approvals import OwnerApprovals
from gateway.runtime.delivery import Delivery
from gateway.runtime.gateway import Gateway
from gateway.runtime.journal import Journal
from gateway.runtime.loop_answers import LoopAnswers
from gateway.runtime.pairing_notices import PairingNotices, Settle
from gateway.scheduling.ledger import Ledger
from gateway.scheduling.nudges import Nudges
from gateway.scheduling.reminder_tools import reminder_tools
from gateway.scheduling.reminders import JobStore
from gateway.scheduling.scheduler import Scheduler
from gateway.services.logs import Masker
from gateway.services.naming import names
from gateway.tool_setup import (
    exec_tools,
    mcp_hub,
    open_audit,
    open_memory,
    server_search,
    web_tools,
)
from gateway.usage.commands import UsageCommands
from gateway.usage.setup import embeddings_counter, meter_hearing, open_meter, owner_line

log = logging.getLogger(__name__)


# long: the whole object graph in one place, read top to bottom
def build_app(
    config: Config,
    channels: Sequence[Channel],
    *,
    llm: LLM | None = None,
    clock: Clock | None = None,
    with_scheduler: bool = True,
) -> App:
    """Everything Corvid runs, wired. ``clock`` reaches every part that reads the time.
    ``with_scheduler=False`` for a second process beside ``corvid run`` (``corvid chat``):
    scheduled jobs run in one process only."""
    clock = clock or SystemClock()
    if with_scheduler and config.web.enabled:  # the control page's chat, with the page
        channels = [*channels, web_chat(config, clock)]
    resources = contextlib.AsyncExitStack()
    meter = open_meter(config, clock, resources)
    memory = open_memory(config, resources, clock, embedded=embeddings_counter(meter))
    meter_hearing(channels, meter, config)
    jobs = JobStore(config.layout.jobs)
    ledger = Ledger(config.layout.ledger)
    resources.callback(ledger.close)
    scheduler = Scheduler(ledger, clock, finished=lambda job: jobs.forget(job, clock.now()))
    model = Metered(llm or AnthropicLLM(config.llm), meter, config.llm.max_tokens)
    mcp = mcp_hub(config, resources)
    audit = open_audit(config.layout.actions)
    resources.callback(audit.close)
    skills = SkillCatalog(memory.workspace)
    loops = Loops(memory.workspace, memory.history)
    nudges = Nudges(jobs, scheduler, clock.now, config.schedule)
    tools = ToolRegistry(
        (
            *FILE_TOOLS,
            *memory_tools(memory),
            *loop_tools(loops, memory, nudges),
            *reminder_tools(jobs, scheduler, clock.now, config.schedule),
            *web_tools(config),
            *exec_tools(config, audit),
            skills.tool(),
        ),
        max_output_chars=config.agent.tool_output_max_chars,
        extra=[s for s in (server_search(config, model), mcp) if s is not None],
    )
    resources.push_async_callback(model.close)
    gate = Gate(audit, overrides=config.approvals.tools)
    agent = Agent(
        llm=model,
        tools=tools,
        store=SessionStore(config.layout.sessions, clock),
        settings=config.agent,
        compaction=config.compaction,
        workspace=memory.workspace,
        tz=config.tz,
        memory=memory,
        clock=clock,
        quota=quota(config),
        edits=HandEdits(config.layout.hand_edits),
        gate=gate,
    )
    agent.prompts.skills = skills
    journal = Journal(config.layout.journal, clock)
    resources.callback(journal.close)
    by_name = {c.name: c for c in channels}
    gateway = Gateway(
        agent=agent,
        channels=by_name,
        delivery=Delivery(
            by_name,
            journal,
            Masker(config.secrets()),
            clock=clock,
            tz=config.tz,
            retry_window=timedelta(hours=config.gateway.retry_window_hours),
        ),
        clock=clock,
        max_input_chars=config.agent.max_input_chars,
        shutdown_grace=config.gateway.shutdown_grace,
        pairing=PairingStore(config.layout.pairing, clock=clock),
    )
    gateway.names = ChatNames(config.layout.chat_names)
    notices = _tell_owner(config, gateway, clock)
    gateway.commands.settle = _settler(gateway)  # memory proposals' buttons, once answered
    gateway.commands.usage = UsageCommands(meter, lambda chat: names(config).of_audience(chat))
    gateway.commands.loops = LoopAnswers(loops, nudges, _settler(gateway), clock.now, config.tz)
    if meter.budget is not None:
        meter.budget.tell = owner_line(config, gateway)
    resources.push_async_callback(notices.close)
    approvals = _ask_owner(config, gateway, gate)
    app = App(
        config,
        gateway,
        scheduler=scheduler if with_scheduler else None,
        runner=job_runner(config, gateway),
        jobs=jobs,
        resources=resources,
    )
    app.notices = notices
    app.meter = meter
    app.approvals = approvals
    app.mcp = mcp
    app.plan_nudges = lambda: nudges.plan(loops, config.tz)
    return app


def _settler(gateway: Gateway) -> Settle:
    """What makes a message whose button was answered read how it ended, its buttons gone."""

    async def settle(command: str, text: str) -> bool:
        settled = [await c.settle_buttons(command, text) for c in gateway.channels.values()]
        return any(settled)

    return settle


def _ask_owner(config: Config, gateway: Gateway, gate: Gate) -> OwnerApprovals:
    """Requests to act reach the owner's private chat; their answer comes back as a chat
    command (a button), from the control page or from ``corvid approvals``."""
    settle = _settler(gateway)

    def is_owner(platform: str, user: str) -> bool:
        channel = gateway.channels.get(platform)
        return channel is not None and channel.access is not None and channel.access.is_owner(user)

    approvals = OwnerApprovals(
        gateway.delivery.send, config.channels.owner_chats(), config.approvals.timeout, settle
    )
    gate.asker = approvals
    gate.is_owner = is_owner
    gateway.commands.approvals = approvals
    return approvals


def _tell_owner(config: Config, gateway: Gateway, clock: Clock) -> PairingNotices:
    """Pairing requests reach the owner's private chat."""
    settle = _settler(gateway)
    notices = PairingNotices(gateway.delivery.send, config.channels.owner_chats(), clock, settle)
    for channel in gateway.channels.values():
        if channel.access is not None:
            channel.access.on_request = notices.requested
    if gateway.commands.pairing is not None:
        gateway.commands.pairing.on_handled = notices.handled
    return notices
