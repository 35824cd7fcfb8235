"""``App``: Corvid as ``build_app`` made it, running; it starts and stops what it was given."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from agent.loop import Agent
from channels.base import Channel
from channels.pairing import PairingStore
from gateway.channel_setup import apply_channels, repair_pairing
from gateway.config.loader import Config
from gateway.contract.errors import ConfigError
from gateway.contract.events import InboundMessage
from gateway.job_setup import job_runner
from gateway.runtime.approvals import OwnerApprovals
from gateway.runtime.gateway import Gateway
from gateway.runtime.journal import Journal, Outgoing
from gateway.runtime.pairing_notices import PairingNotices
from gateway.runtime.router import Router
from gateway.scheduling.plan import listed_states, planned_jobs, replan
from gateway.scheduling.reminders import JobStore, cancellable
from gateway.scheduling.runner import JobRunner
from gateway.scheduling.scheduler import Scheduler
from gateway.services.control import ControlServer
from gateway.services.index_status import index_report
from gateway.services.reload import reload
from gateway.services.status import Live, SessionFigures, report

if TYPE_CHECKING:  # the control page and the MCP client are imported only when they are on
    from agent.mcp.hub import McpHub
    from agent.usage.meter import Meter
    from gateway.web.backend import Backend
    from gateway.web.listener import PageListener

log = logging.getLogger(__name__)


class App:
    """Corvid, assembled. ``async with app:`` or ``start()`` / ``stop()``."""

    # Seconds the tools that wait on something (MCP servers) wait for a channel to receive
    # before they start all the same.
    channels_wait = 5.0

    def __init__(
        self,
        config: Config,
        gateway: Gateway,
        *,
        scheduler: Scheduler | None,
        runner: JobRunner,
        jobs: JobStore,
        resources: contextlib.AsyncExitStack,
    ) -> None:
        self.config = config
        self.gateway = gateway
        self.scheduler = scheduler
        self.runner = runner
        self.jobs = jobs
        self.control: ControlServer | None = None
        self.web: PageListener | None = None
        # Options changed in config.yaml by a reload that take effect at the next start.
        self.pending_restart: list[str] = []
        self.notices: PairingNotices | None = None
        self.approvals: OwnerApprovals | None = None
        self.mcp: McpHub | None = None
        self.meter: Meter | None = None
        # Nudges for loops whose due time was set by hand, planned once the scheduler runs.
        self.plan_nudges: Callable[[], int] | None = None
        self.figures = SessionFigures(gateway.agent.store)
        self._resources = resources
        self._settling: asyncio.Task[None] | None = None
        self.pid = os.getpid()
        self.started_at = time.monotonic()

    # What the parts are, for the status report and for tests.
    @property
    def agent(self) -> Agent:
        return self.gateway.agent

    @property
    def router(self) -> Router:
        return self.gateway.router

    @property
    def journal(self) -> Journal | None:
        return self.gateway.delivery.journal

    @property
    def channels(self) -> dict[str, Channel]:
        return dict(self.gateway.channels)

    def handle(self, msg: InboundMessage) -> Any:
        return self.gateway.handle(msg)

    def undelivered(self, limit: int = 20) -> list[Outgoing]:
        return self.gateway.delivery.undelivered(limit)

    async def idle(self) -> None:
        """Return once nothing is in progress: every message taken in by a channel has been
        handled, and no session has a turn running or a message waiting."""
        channels = list(self.gateway.channels.values())
        while any(c.taking_in() for c in channels) or self.router.active_sessions():
            for channel in channels:
                await channel.settled()
            await self.router.idle()

    async def wait_failed(self) -> str:
        return await self.gateway.wait_failed()

    async def start(self) -> None:
        await self.gateway.start()
        # Tools that wait on something (MCP servers, the API's word on its search tool) get
        # ready in the background, once the channels ask for messages; a turn waits for them
        # only within a bound.
        self._settling = asyncio.create_task(self._ready_tools(), name="tools")
        repair_pairing(self.config.layout.pairing)
        if self.scheduler is None:
            return
        self.jobs.repair()
        plan = planned_jobs(self.config, self.jobs, self.scheduler.clock.now())
        self.scheduler.start(plan, self.runner)
        if self.plan_nudges is not None:
            self.plan_nudges()
        self.control = ControlServer(
            self.config.layout.control_socket,
            status=self._status,
            run_job=self.scheduler.run_now,
            cancel_job=self.cancel_job,
            reload=self.reload,
            paired=self.notices.handled if self.notices is not None else None,
            rotate_token=lambda: self.web is not None and self.web.rotate_token(),
            approvals=self.approvals,
        )
        try:
            await self.control.start()
        except OSError as exc:
            log.warning("control socket unavailable (%s); `corvid jobs run` is off", exc)
        if self.config.web.enabled:
            # The page's address now; its server (aiohttp's) when a browser first connects.
            from gateway.web.listener import listen

            self.web = await listen(self._backend(self.scheduler))

    async def _ready_tools(self) -> None:
        # Once the first channel receives, a message may come: the servers start then, not
        # after a slower channel (Discord waits for its guilds) is up too.
        channels = [
            asyncio.ensure_future(c.receiving.wait()) for c in self.gateway.channels.values()
        ]
        if channels:
            await asyncio.wait(
                channels, timeout=self.channels_wait, return_when=asyncio.FIRST_COMPLETED
            )
            for waiting in channels:
                waiting.cancel()
        if self.mcp is not None:
            self.mcp.start()
        await self.agent.tools.settle()

    def _backend(self, scheduler: Scheduler) -> Backend:
        from gateway.web_setup import PageBackend

        config, clock = self.config, scheduler.clock
        pairing = PairingStore(config.layout.pairing, clock=clock)
        if self.notices is not None:
            pairing.on_handled = self.notices.handled
        return PageBackend(
            config=config,
            gateway=self.gateway,
            clock=clock,
            pairing=pairing,
            figures=self.figures,
            status=self._status,
            job_states=lambda: listed_states(self.config, self.jobs, scheduler.ledger, clock),
            run_job=scheduler.run_now,
            cancel_job=self.cancel_job,
            reload=self.reload,
            pending_restart=lambda: self.pending_restart,
            approvals=self.approvals,
        )

    async def stop(self, grace: float | None = None) -> None:
        """Finish (or cancel and record) turns in flight, then close everything.

        ``grace`` defaults to ``gateway.shutdown_grace``; 0 cancels running turns at once.
        """
        if self.mcp is not None:
            self.mcp.wind_down()
        if self.web is not None:
            await self.web.stop()
        if self.control is not None:
            await self.control.stop()
        if self.scheduler is not None:
            await self.scheduler.stop()
        await self.gateway.stop(grace)
        try:
            await self.agent.store.close()  # the transcripts written last made durable
        except Exception:  # the rest still closes
            log.exception("making the last transcripts durable failed")
        if self._settling is not None:
            self._settling.cancel()
            await asyncio.wait({self._settling})
        await self._resources.aclose()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    def reload(self) -> dict[str, Any]:
        """Read config.yaml again (``gateway/services/reload.py``): what changed, applied or not."""
        try:
            done = reload(self, os.environ)
        except ConfigError as exc:
            return {"ok": False, "error": str(exc)}
        except Exception as exc:
            log.exception("reloading config.yaml failed")
            return {"ok": False, "error": f"{type(exc).__name__} (see the log)"}
        return {"ok": True, "applied": done.applied, "restart": done.restart}

    def appliers(self) -> dict[str, Callable[[Config], None]]:
        """The parts that take new options while running, by the names reload's ``LIVE`` gives
        them; each applies its own."""
        agent, gateway = self.agent, self.gateway
        return {
            "channels": lambda new: apply_channels(gateway.channels, new),
            "owners": self._new_owners,
            "model": lambda new: agent.llm.apply(new.llm),
            "agent": lambda new: agent.apply(new.agent, new.memory, new.compaction),
            "gateway": lambda new: gateway.apply(new.gateway),
            "schedule": self._replan,
            "budget": self._new_budget,
        }

    def _new_budget(self, new: Config) -> None:
        budget = self.meter.budget if self.meter is not None else None
        if budget is not None:
            budget.apply(new.budget)

    def adopt(self, new: Config, restart: list[str]) -> None:
        self.config = new
        self.pending_restart = sorted(set(self.pending_restart) | set(restart))
        if self.web is not None:
            self.web.backend.config = new

    def _new_owners(self, new: Config) -> None:
        if self.notices is not None:
            self.notices.set_owners(new.channels.owner_chats())
        if self.approvals is not None:
            self.approvals.set_owners(new.channels.owner_chats())

    def _replan(self, new: Config) -> None:
        if self.scheduler is not None:
            self.runner.handlers = job_runner(new, self.gateway).handlers
            replan(self.scheduler, planned_jobs(new, self.jobs, self.scheduler.clock.now()))

    def cancel_job(self, job_id: str) -> str | None:
        """Cancel a job made in chat; None when done, else why not."""
        problem = cancellable(self.jobs, job_id)
        if problem is None and self.scheduler is not None:
            self.scheduler.remove(job_id)
        return problem

    def _status(self) -> dict[str, Any]:
        gw = self.gateway
        live = Live(
            pid=self.pid,
            uptime_seconds=round(time.monotonic() - self.started_at),
            channels=gw.channel_states(),
            loaded=self.agent.sessions.loaded,
            busy=self.router.busy,
            queued=self.router.queued,
        )
        out = report(self.config, self.agent.store, self.journal, live, self.figures)
        if self.mcp is not None:
            out["mcp"] = [view.as_dict() for view in self.mcp.describe()]
        if self.web is not None:
            out["web"] = self.web.url
        provider = self.config.memory.embeddings.provider
        out["memory_search"] = index_report(self.agent.memory, provider)
        return out
