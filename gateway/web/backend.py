"""What the control page's pages need of the running gateway, and nothing more."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import asyncio

    from agent.approvals.gate import ApprovalRequest
    from agent.loops.book import Book, State
    from agent.memory.consolidation import Curator
    from agent.memory.hits import Hit
    from agent.workspace.history import History
    from channels.base import Channel
    from channels.pairing import PairingStore
    from gateway.config.loader import Config
    from gateway.contract.events import Audience, InboundMessage, SessionKey
    from gateway.contract.ports import Clock
    from gateway.scheduling.plan import JobState
    from gateway.services.status import Figures


class Backend(Protocol):
    """The pages read and act on the gateway through this alone; the wiring implements it
    (``gateway/web_setup.py``), so a page never walks into the runtime's objects."""

    config: Config  # the configuration in effect (a reload replaces it)
    clock: Clock
    pairing: PairingStore

    # -- the overview and the admin pages ----------------------------------------------------

    def status(self) -> dict[str, Any]:
        """The status report, as ``corvid status --json`` gives it."""
        ...

    def job_states(self) -> list[JobState]: ...

    async def run_job(self, job_id: str) -> tuple[str | None, str | None]:
        """Run a job now: its recorded status (None: no such job) and its error."""
        ...

    def cancel_job(self, job_id: str) -> str | None:
        """Cancel a job made in chat: None when done, else why not."""
        ...

    def reload(self) -> dict[str, Any]:
        """Read config.yaml again: what was applied, what waits for a restart, or the error."""
        ...

    def pending_restart(self) -> list[str]: ...

    # -- actions -----------------------------------------------------------------------------

    def approvals_waiting(self) -> list[ApprovalRequest]:
        """The requests to act waiting for the owner's answer."""
        ...

    def decide_approval(self, request_id: str, answer: str) -> str | None:
        """The owner's answer to one: None when taken, else why not."""
        ...

    # -- sessions and transcripts ------------------------------------------------------------

    def sessions(self) -> list[Figures]:
        """Every session's figures, newest first."""
        ...

    def busy(self, key: SessionKey) -> bool: ...

    def queued(self, key: SessionKey) -> int: ...

    def transcript(self, key: SessionKey) -> Path:
        """Where a session's transcript is (it may not exist)."""
        ...

    def transcripts(self) -> Path:
        """The folder of every session's transcripts, the earlier sessions' among them."""
        ...

    def serves(self, channel: str) -> bool:
        """Does this process run that channel (so its sessions can be answered)?"""
        ...

    def handle(self, msg: InboundMessage) -> asyncio.Future[None]:
        """Hand a message to the gateway, as a channel does."""
        ...

    def web_chat(self) -> Channel | None:
        """The control page's own chat channel, when this process runs it."""
        ...

    # -- memory ------------------------------------------------------------------------------

    @property
    def workspace(self) -> Path: ...

    def search(self, query: str, limit: int) -> list[Hit]:
        """The owner's search over all memory."""
        ...

    def memory_search(self) -> dict[str, Any]:
        """How memory is searched and how far its vectors are (``index_status``)."""
        ...

    @property
    def history(self) -> History | None:
        """Every change to the workspace's files, kept to look back and undo."""
        ...

    @property
    def curator(self) -> Curator | None:
        """Consolidation's proposals for MEMORY.md, to show and answer."""
        ...

    def edited(self, when: datetime) -> None:
        """The owner changed the workspace by hand: prompts made before are stale."""
        ...

    def loop_books(self) -> list[tuple[Audience, Book]]:
        """The owner's loops, then each shared chat's."""
        ...

    async def close_loop(self, audience: Audience, number: int, state: State) -> str:
        """Close a loop as the owner: what became of it; ``ToolError`` if there is no such
        open loop."""
        ...
