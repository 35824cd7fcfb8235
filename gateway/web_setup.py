"""The control page's backend over the running app: what its pages read and act on."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from agent.approvals.gate import ApprovalRequest
from agent.loops.book import Book, State
from agent.loops.store import Loops
from agent.memory.consolidation import Curator
from agent.memory.hits import Hit
from agent.memory.store import Memory
from agent.workspace.changes import Author, authored
from agent.workspace.history import History
from channels.base import Channel
from channels.pairing import PairingStore
from gateway.config.loader import Config
from gateway.contract.errors import ToolError
from gateway.contract.events import OWNER, Audience, InboundMessage, SessionKey
from gateway.contract.ports import Clock
from gateway.runtime.approvals import OwnerApprovals
from gateway.runtime.gateway import Gateway
from gateway.scheduling.plan import JobState
from gateway.services.index_status import index_report
from gateway.services.status import Figures, SessionFigures

LOOP_CLOSER = "the owner (control page)"
PAGE = Author("the owner", "the control page's loops")


class PageBackend:
    """``gateway.web.backend.Backend`` over the gateway and the app's own services."""

    def __init__(
        self,
        *,
        config: Config,
        gateway: Gateway,
        clock: Clock,
        pairing: PairingStore,
        figures: SessionFigures,
        status: Callable[[], dict[str, Any]],
        job_states: Callable[[], list[JobState]],
        run_job: Callable[[str], Awaitable[tuple[str | None, str | None]]],
        cancel_job: Callable[[str], str | None],
        reload: Callable[[], dict[str, Any]],
        pending_restart: Callable[[], list[str]],
        approvals: OwnerApprovals | None = None,
    ) -> None:
        self._approvals = approvals
        self.config = config
        self.clock = clock
        self.pairing = pairing
        self._gateway = gateway
        self._figures = figures
        self._status, self._job_states = status, job_states
        self._run_job, self._cancel_job = run_job, cancel_job
        self._reload, self._pending_restart = reload, pending_restart

    def status(self) -> dict[str, Any]:
        return self._status()

    def job_states(self) -> list[JobState]:
        return self._job_states()

    async def run_job(self, job_id: str) -> tuple[str | None, str | None]:
        return await self._run_job(job_id)

    def cancel_job(self, job_id: str) -> str | None:
        return self._cancel_job(job_id)

    def reload(self) -> dict[str, Any]:
        return self._reload()

    def pending_restart(self) -> list[str]:
        return self._pending_restart()

    def approvals_waiting(self) -> list[ApprovalRequest]:
        return self._approvals.waiting() if self._approvals is not None else []

    def decide_approval(self, request_id: str, answer: str) -> str | None:
        if self._approvals is None:
            return "nothing here asks for approvals"
        return self._approvals.decide(request_id, answer)

    def sessions(self) -> list[Figures]:
        return self._figures.all(self._gateway.agent.sessions.loaded)

    def busy(self, key: SessionKey) -> bool:
        return self._gateway.router.busy(key)

    def queued(self, key: SessionKey) -> int:
        return self._gateway.router.queued(key)

    def transcript(self, key: SessionKey) -> Path:
        return self._gateway.agent.store.path(key)

    def transcripts(self) -> Path:
        return self._gateway.agent.store.dir

    def serves(self, channel: str) -> bool:
        return channel in self._gateway.channels

    def handle(self, msg: InboundMessage) -> asyncio.Future[None]:
        return self._gateway.handle(msg)

    def web_chat(self) -> Channel | None:
        return self._gateway.channels.get("web")

    @property
    def workspace(self) -> Path:
        return self._memory.workspace

    def search(self, query: str, limit: int) -> list[Hit]:
        return self._memory.search(query, limit, OWNER)

    def memory_search(self) -> dict[str, Any]:
        return index_report(self._memory, self.config.memory.embeddings.provider)

    @property
    def history(self) -> History | None:
        return self._memory.history

    @property
    def curator(self) -> Curator | None:
        return Curator.of(self._memory)

    def edited(self, when: datetime) -> None:
        edits = self._gateway.agent.sessions.edits
        if edits is not None:
            edits.mark(when)

    def loop_books(self) -> list[tuple[Audience, Book]]:
        answers = self._gateway.commands.loops
        if answers is not None:
            return answers.loops.every()
        return Loops(self._memory.workspace).every()

    async def close_loop(self, audience: Audience, number: int, state: State) -> str:
        answers = self._gateway.commands.loops
        if answers is None:
            raise ToolError("Loops are not kept here.")
        with authored(PAGE):
            return await answers.close(audience, number, state, LOOP_CLOSER)

    @property
    def _memory(self) -> Memory:
        memory = self._gateway.agent.memory
        assert memory is not None  # build_app always gives the agent its memory
        return memory
