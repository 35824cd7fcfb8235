"""The agent turn: user message → model ⇄ tools → final reply, recorded in the transcript.

The agent knows sessions, the workspace and the model, and nothing of chat platforms. The
gateway guarantees that one session runs one turn at a time, so a session's state is only
touched by its own turn.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.llm import LLM
from agent.memory import Memory
from agent.prompt import build_system_prompt
from agent.tools import ToolRegistry, TurnContext
from agent.transcript import SessionState, SessionStore, Usage
from gateway.config import Config
from gateway.errors import LLMError
from gateway.events import InboundMessage, SessionKey

if TYPE_CHECKING:
    from agent.compaction import Maintenance

log = logging.getLogger(__name__)

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    text: str
    usage: Usage
    calls: int
    status: str = "ok"
    model_seconds: float = 0.0  # waiting for the model, all calls together
    tool_calls: int = 0


class Agent:
    def __init__(
        self,
        *,
        config: Config,
        llm: LLM,
        tools: ToolRegistry,
        store: SessionStore,
        memory: Memory | None = None,
        clock: Clock = utc_now,
    ) -> None:
        self.config = config
        self.llm = llm
        self.tools = tools
        self.store = store
        self.clock = clock
        self.workspace: Path = config.workspace.resolve()
        self.memory = memory
        # Set by build_app: flush and compaction (agent/compaction.py) need the agent itself.
        self.maintenance: Maintenance | None = None
        self._sessions: dict[SessionKey, SessionState] = {}

    # -- sessions -----------------------------------------------------------------------------

    def session(self, key: SessionKey) -> SessionState:
        """The session's state, loaded from disk or started with a fresh prompt snapshot."""
        state = self._sessions.get(key)
        if state is None:
            state = self.store.load(key)
            if state is None:
                state = self.store.create(key, self.system_prompt(key))
                log.info("%s: new session %s", key, state.session_id)
            self._sessions[key] = state
        return state

    def loaded(self, key: SessionKey) -> SessionState | None:
        """The session if this process has it in memory; never reads the disk."""
        return self._sessions.get(key)

    def peek(self, key: SessionKey) -> SessionState | None:
        """The session if it exists in memory or on disk, without creating one."""
        if key in self._sessions:
            return self._sessions[key]
        if self.store.path(key).exists():
            return self.session(key)
        return None

    def reset(self, key: SessionKey) -> Path | None:
        """End the session: its transcript is archived and the next message starts afresh."""
        self._sessions.pop(key, None)
        return self.store.archive(key)

    def system_prompt(self, key: SessionKey) -> str:
        """A fresh snapshot: bootstrap files and, if memory is on, the memory section."""
        a = self.config.agent
        extra = ()
        if self.memory is not None:
            extra = (self.memory.snapshot(key, self.clock().astimezone(self.config.tz)),)
        return build_system_prompt(
            self.workspace,
            key,
            timezone=self.config.timezone,
            per_file_chars=a.bootstrap_max_chars,
            total_chars=a.bootstrap_total_max_chars,
            extra_sections=extra,
        )

    # -- turns --------------------------------------------------------------------------------

    def context(self, key: SessionKey) -> TurnContext:
        tz = self.config.tz
        return TurnContext(
            key=key, workspace=self.workspace, now=self.clock().astimezone(tz), tz=tz
        )

    async def run_turn(self, key: SessionKey, inbound: Sequence[InboundMessage]) -> TurnOutcome:
        state = self.session(key)
        # Messages already in the transcript come from a turn a crash or restart cut short:
        # they are answered now, not recorded again.
        fresh = [m for m in inbound if m.seq is None or m.seq not in state.seqs]
        if fresh:
            # The user's words reach the file before the model is called (and before the
            # turn's first await, so even a turn cancelled at once has recorded them). The
            # fsync that makes them durable comes with the reply's, once per turn.
            content = self._user_content(key, fresh)
            seqs = [m.seq for m in fresh if m.seq is not None]
            self.store.append_message(state, {"role": "user", "content": content}, seqs)
        else:
            written = _written_reply(state)
            if written is not None:
                # The answer was complete when the process stopped, but not yet sent.
                log.info("%s: sending the reply written before the restart", key)
                self.store.end_turn(state, "ok", "resumed")
                return TurnOutcome(written, Usage(), 0, status="resumed")
            log.info("%s: resuming a turn cut short by a restart", key)
        return await self.loop(state, self.context(key))

    def record_unanswered(self, key: SessionKey, inbound: Sequence[InboundMessage]) -> None:
        """Keep messages that shutdown left unanswered; the next turn sees them in context."""
        state = self.session(key)
        content = self._user_content(key, inbound)
        self.store.append_message(state, {"role": "user", "content": content})
        self.store.end_turn(state, "unanswered")

    async def loop(
        self,
        state: SessionState,
        ctx: TurnContext,
        system_note: str | None = None,
    ) -> TurnOutcome:
        """Model ⇄ tools until a final answer or the iteration cap; records how the turn ended.

        A context-overflow error from the API compacts the session and retries once.
        """
        key = state.key
        total = Usage()
        calls = tool_calls = 0
        waited = 0.0
        cap = self.config.agent.max_iterations
        retried_overflow = False
        try:
            while calls < cap:
                began = time.monotonic()
                try:
                    resp = await self.llm.complete(
                        state.system, state.messages, self.tools.schemas(), system_note
                    )
                except LLMError as exc:
                    # Too large for the API: compaction folds older messages (and their
                    # images) into a summary, so one retry may fit.
                    if (
                        exc.kind not in ("context_overflow", "too_large")
                        or retried_overflow
                        or self.maintenance is None
                    ):
                        raise
                    retried_overflow = True
                    log.warning("%s: context overflow reported by the API; compacting", key)
                    await self.maintenance.compact(state, ctx, flush_first=system_note is None)
                    continue
                calls += 1
                waited += time.monotonic() - began
                self.store.append_usage(state, resp.usage)
                total += resp.usage
                if resp.content:
                    self.store.append_message(state, {"role": "assistant", "content": resp.content})
                tool_uses = [b for b in resp.content if b.get("type") == "tool_use"]
                if resp.stop_reason != "tool_use" or not tool_uses:
                    text = "\n\n".join(
                        b["text"]
                        for b in resp.content
                        if b.get("type") == "text" and b["text"].strip()
                    )
                    await self.store.sync(key)
                    # Nothing awaits after this line, so a turn is recorded as ended once.
                    self.store.end_turn(state, "ok")
                    return TurnOutcome(
                        text.strip(), total, calls, model_seconds=waited, tool_calls=tool_calls
                    )
                results: list[dict[str, Any]] = []
                tool_calls += len(tool_uses)
                for use in tool_uses:
                    result = await self.tools.call(use["name"], use.get("input"), ctx)
                    block: dict[str, Any] = {
                        "type": "tool_result",
                        "tool_use_id": use["id"],
                        "content": result.text,
                    }
                    if result.is_error:
                        block["is_error"] = True
                    results.append(block)
                self.store.append_message(state, {"role": "user", "content": results})
        except LLMError as exc:
            log.warning("%s: model call failed: %s", key, exc)
            self.store.end_turn(state, "error", exc.kind)
            raise
        except asyncio.CancelledError:
            self.store.end_turn(state, "cancelled")
            raise
        except Exception:
            self.store.end_turn(state, "error", "internal")
            raise
        self.store.end_turn(state, "iteration_cap")
        log.warning("%s: turn stopped at the iteration cap (%d calls)", key, calls)
        return TurnOutcome(
            f"I stopped after {calls} steps without finishing. Tell me to continue if you want "
            "me to go on.",
            total,
            calls,
            status="iteration_cap",
            model_seconds=waited,
            tool_calls=tool_calls,
        )

    def _user_content(
        self, key: SessionKey, inbound: Sequence[InboundMessage]
    ) -> list[dict[str, Any]]:
        tz = self.config.tz
        blocks: list[dict[str, Any]] = []
        for msg in inbound:
            when = msg.received_at.astimezone(tz).strftime("%a %Y-%m-%d %H:%M %Z")
            header = f"[{when}"
            if not key.private:
                header += f" · {msg.sender_name or 'someone'} (id {msg.sender_id})"
            header += "]"
            text = msg.text
            for att in msg.attachments:
                if att.kind == "image" and att.data is not None:
                    blocks.append(
                        {
                            "type": "image",
                            "source": {
                                "type": "base64",
                                "media_type": att.mime_type,
                                "data": base64.b64encode(att.data).decode(),
                            },
                        }
                    )
                elif att.path:
                    text += f"\n[file received: {att.name or att.path}, saved at {att.path}]"
            if msg.context:
                header = (
                    "[Earlier in this chat, not addressed to you]\n"
                    + "\n".join(msg.context)
                    + "\n\n"
                    + header
                )
            blocks.append({"type": "text", "text": f"{header}\n{text}" if text else header})
        return blocks


def _written_reply(state: SessionState) -> str | None:
    """The text of a final answer that ends the transcript, if it does end with one."""
    if not state.messages or state.messages[-1]["role"] != "assistant":
        return None
    content = state.messages[-1]["content"]
    if isinstance(content, str):
        return content.strip()
    if any(b.get("type") == "tool_use" for b in content):
        return None
    return "\n\n".join(
        b["text"] for b in content if b.get("type") == "text" and b["text"].strip()
    ).strip()
