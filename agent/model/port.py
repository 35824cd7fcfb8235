"""The model port: what the agent and the app call on a model, and a plain model's defaults."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from agent.model.charge import Charge
from agent.sessions.state import Usage
from agent.settings import LLMSettings
from agent.stream import Deltas
from gateway.contract.ports import Check, Status


@dataclass(frozen=True, slots=True)
class LLMResponse:
    content: list[dict[str, Any]]
    stop_reason: str
    usage: Usage
    model: str = ""  # the model that answered (a fallback's, say); empty: the one asked
    web_searches: int = 0  # the API's own searches while it wrote, billed apiece
    id: str = ""  # the API's message id


class LLM(Protocol):
    """The model port: the turn calls ``complete``; the app calls the rest over its life."""

    @property
    def model(self) -> str:
        """The model chat turns run on."""
        ...

    @property
    def context_window(self) -> int: ...

    async def complete(
        self,
        system: str,
        messages: Sequence[dict[str, Any]],
        tools: list[dict[str, Any]],
        system_note: str | None = None,
        deltas: Deltas | None = None,
        *,
        charge: Charge,
    ) -> LLMResponse:
        """One model call. ``system_note`` is an extra system block after the cached prompt;
        ``deltas``, when given, hears the answer's text as it is written; ``charge`` says
        what the call is for and whose it is (the ledger counts it, a cap may refuse it)."""
        ...

    async def warm_up(self) -> None:
        """Get ready for the first message (slow imports), off the loop the channels use."""
        ...

    async def close(self) -> None:
        """Let go of connections; the app calls it once, when it stops."""
        ...

    def apply(self, cfg: LLMSettings) -> None:
        """Take the settings that change while running (``corvid reload``)."""
        ...

    async def accepts_tools(self, tools: list[dict[str, Any]], limit: float = 10.0) -> bool | None:
        """Whether the model takes these tool definitions (a server tool); None when it could
        not be asked."""
        ...

    async def probe(self, limit: float, key_source: str) -> Check:
        """Whether the service takes the credentials and the model (``corvid doctor``)."""
        ...

    async def refused(self, limit: float, key_source: Callable[[], str]) -> Check | None:
        """The same at start-up (``corvid run``): what was refused, or None. ``key_source``
        is asked only for a refusal."""
        ...


class PlainModel:
    """A model with nothing to manage (one in-process, a test's, a benchmark's): ``complete``
    is its own; the rest of the port does nothing, and every tool is taken as it is."""

    model = "plain"
    context_window = 200_000

    async def warm_up(self) -> None:
        return None

    async def close(self) -> None:
        return None

    def apply(self, cfg: LLMSettings) -> None:
        return None  # its settings are its own

    async def accepts_tools(self, tools: list[dict[str, Any]], limit: float = 10.0) -> bool | None:
        return True

    async def probe(self, limit: float, key_source: str) -> Check:
        return Check(Status.OK, "model", f"{self.model}: runs in this process, nothing to probe")

    async def refused(self, limit: float, key_source: Callable[[], str]) -> Check | None:
        return None
