"""The agent turn: user message → model ⇄ tools → final reply, recorded in the transcript."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path, PurePosixPath
from typing import Any
from zoneinfo import ZoneInfo

from agent.approvals.gate import Gate
from agent.memory.recall import HEADER, earlier_recalls, recall, recall_at_once
from agent.memory.store import Memory
from agent.model.charge import Charge, Purpose
from agent.model.port import LLM, LLMResponse
from agent.model.wire import reply_text, user_content
from agent.outcome import Tally, TurnOutcome, TurnStatus
from agent.sessions.compaction import Maintenance
from agent.sessions.loaded import HandEdits, Sessions
from agent.sessions.prompt import SystemPrompts
from agent.sessions.state import SessionState, TurnEnd, Usage, estimate_tokens
from agent.sessions.transcript import SessionStore
from agent.settings import AgentSettings, CompactionSettings, MemorySettings
from agent.stream import Listener, TextDone, ToListener, ToolFinished, ToolStarted, progress_summary
from agent.tools.context import Grant, TurnContext
from agent.tools.exposure import Exposure, Reach
from agent.tools.registry import ToolRegistry, ToolResult
from agent.workspace.audience import quotes_outside
from agent.workspace.quota import Quota
from gateway.contract.errors import LLMError
from gateway.contract.events import TERMINAL, InboundMessage, SessionKey, silent
from gateway.contract.ports import Clock, SystemClock

log = logging.getLogger(__name__)


# The gateway runs one turn at a time per session, so a session's state is touched only by
# its own turn.
class Agent:
    def __init__(
        self,
        *,
        llm: LLM,
        tools: ToolRegistry,
        store: SessionStore,
        settings: AgentSettings,
        compaction: CompactionSettings,
        workspace: Path,
        tz: ZoneInfo,
        memory: Memory | None = None,
        clock: Clock | None = None,
        quota: Quota | None = None,
        edits: HandEdits | None = None,
        gate: Gate | None = None,
    ) -> None:
        self.llm = llm
        # Every tool call passes it (``agent/approvals``); None: each runs as the registry says.
        self.gate = gate
        self.tools = tools
        self.settings = settings
        self.workspace = workspace.resolve()
        self.tz = tz
        self.memory = memory
        self.clock = clock or SystemClock()
        self.quota = quota
        self.prompts = SystemPrompts(self.workspace, settings, tz, memory, self.clock)
        self.sessions = Sessions(store, self.prompts, edits)
        self.maintenance = Maintenance(
            llm=llm,
            sessions=self.sessions,
            prompt=self.prompts,
            context=self.context,
            silent_turn=self._silent_turn,
            memory=memory,
            settings=compaction,
        )

    @property
    def store(self) -> SessionStore:
        return self.sessions.store

    def apply(
        self, settings: AgentSettings, memory: MemorySettings, compaction: CompactionSettings
    ) -> None:
        """Take new settings while running; the next turn goes by them."""
        self.settings = self.prompts.settings = settings
        self.tools.max_output_chars = settings.tool_output_max_chars
        self.maintenance.cfg = compaction
        if self.memory is not None:
            self.memory.cfg = memory

    def window_problem(self) -> str | None:
        """Why the context window cannot hold a conversation beside the owner's private
        prompt and tools (the largest a session has), or None when it can."""
        fixed = estimate_tokens(self.prompts(TERMINAL)) + estimate_tokens(self.tools.schemas())
        return self.maintenance.window_problem(fixed)

    def context(self, key: SessionKey, grant: Grant | None = None) -> TurnContext:
        """The context of a turn in ``key``'s session, sharing what the session has read from
        outside the owner's audience (its prompt snapshot's quoted text included)."""
        now = self.clock.now().astimezone(self.tz)
        state = self.sessions.loaded(key)
        exposure, reach = Exposure(), Reach()
        if state is not None:
            exposure = Exposure(state.exposed, partial(self.store.mark_exposed, state))
            reach = Reach(state.reachable)
            if quotes_outside(state.system):
                exposure.saw("quoted text in memory")
        return TurnContext(
            key,
            self.workspace,
            now,
            self.tz,
            grant=grant,
            quota=self.quota,
            exposure=exposure,
            reach=reach,
            history=None if self.memory is None else self.memory.history,
            guest_notes_hidden=self.memory is not None
            and not self.memory.cfg.owner_reads_guest_notes,
        )

    # -- turns --------------------------------------------------------------------------------

    async def run_turn(
        self,
        key: SessionKey,
        inbound: Sequence[InboundMessage],
        listen: Listener | None = None,
        grant: Grant | None = None,
        purpose: Purpose = Purpose.CHAT,
    ) -> TurnOutcome:
        """Answer ``inbound``; ``listen`` hears the answer as it is written (``agent.stream``).
        A turn nobody watches (a scheduled job) runs with only the tools ``grant`` gives;
        ``purpose`` is what its model calls are counted as."""
        state = self.sessions.get(key)
        state.turn_start = len(state.messages)
        # Messages already in the transcript come from a turn a crash or restart cut short:
        # they are answered now, not recorded again.
        fresh = [m for m in inbound if m.seq is None or m.seq not in state.seqs]
        ctx = replace(self.context(key, grant), senders=frozenset(m.sender_id for m in inbound))
        if fresh:
            # The user's words reach the file before the model is called; a turn cancelled
            # while notes are recalled has recorded them too. The fsync that makes them
            # durable comes with the reply's, once per turn.
            content = user_content(key, fresh, self.tz)
            seqs = [m.seq for m in fresh if m.seq is not None]
            try:
                # Notes a search of the words finds, ahead of them (not for a scheduled job:
                # its instruction is the owner's, written for it).
                recalled = await self._recall(state, ctx, fresh) if grant is None else ""
            except asyncio.CancelledError:
                self.store.append_message(state, {"role": "user", "content": content}, seqs)
                self.store.end_turn(state, TurnEnd.CANCELLED)
                raise
            if recalled:
                content = [{"type": "text", "text": recalled}, *content]
            self.store.append_message(state, {"role": "user", "content": content}, seqs)
        else:
            written = _written_reply(state)
            if written is not None:
                # The answer was complete when the process stopped, but not yet sent.
                log.info("%s: sending the reply written before the restart", key)
                self.store.end_turn(state, TurnEnd.OK, "resumed")
                return TurnOutcome(written, Usage(), 0, status=TurnStatus.RESUMED)
            log.info("%s: resuming a turn cut short by a restart", key)
            state.turn_start = _request_start(state.messages)
        if any(quotes_outside(m.text) for m in fresh):
            # A scheduled job's instruction or digest that carries text from outside, quoted.
            ctx.saw("quoted text in the request")
        if key.private:
            for m in fresh:  # the owner's own words: the addresses in them are theirs
                ctx.reach.owner_wrote(m.text)
        return await self.loop(state, ctx, purpose, listen=listen)

    async def _recall(
        self, state: SessionState, ctx: TurnContext, fresh: Sequence[InboundMessage]
    ) -> str:
        """The block of notes recalled for these messages ("" for none); the turn goes on
        without them when the search fails."""
        message = "\n".join(m.text for m in fresh if m.text.strip())
        if self.memory is None or not message or not self.memory.cfg.recall.enabled:
            return ""
        loaded = [state.system, *earlier_recalls(state.messages.may_contain(HEADER))]
        try:
            today = ctx.now.date()
            found = recall_at_once(self.memory, message, ctx.audience, loaded, today)
            if found is None:
                found = await asyncio.to_thread(
                    recall, self.memory, message, ctx.audience, loaded, today
                )
            block, files = found
        except Exception:
            log.exception("%s: recalling notes failed; answering without them", state.key)
            return ""
        for rel, text in files:
            ctx.saw_file(PurePosixPath(rel), text)  # as memory_search would mark them
        return block

    def withdraw_turn(self, key: SessionKey) -> None:
        """/stop: the stopped turn's messages leave the conversation, so the request is not
        asked again with the next message."""
        state = self.sessions.loaded(key)
        if state is not None:
            self.store.withdraw(state, len(state.messages) - state.turn_start)

    def record_unanswered(self, key: SessionKey, inbound: Sequence[InboundMessage]) -> None:
        """Keep messages that shutdown left unanswered; the next turn sees them in context."""
        state = self.sessions.get(key)
        content = user_content(key, inbound, self.tz)
        self.store.append_message(state, {"role": "user", "content": content})
        self.store.end_turn(state, TurnEnd.UNANSWERED)

    async def loop(
        self,
        state: SessionState,
        ctx: TurnContext,
        purpose: Purpose,
        system_note: str | None = None,
        listen: Listener | None = None,
    ) -> TurnOutcome:
        """Model ⇄ tools until a final answer or the iteration cap; records how the turn ended.

        A context-overflow error from the API compacts the session and retries once.
        """
        tally = Tally()
        try:
            # Tools of MCP servers still starting (just after start-up) get a bounded chance
            # to be offered in this turn.
            await self.tools.settle()
            while tally.calls < self.settings.max_iterations:
                charge = Charge(purpose, state.key)
                resp = await self._call_model(state, ctx, (system_note, listen), tally, charge)
                if resp.content:
                    message: dict[str, Any] = {"role": "assistant", "content": resp.content}
                    if resp.stop_reason == "pause_turn":
                        message["paused"] = True  # not an answer: a restart goes on from it
                    self.store.append_message(state, message)
                tool_uses = [b for b in resp.content if b.get("type") == "tool_use"]
                if resp.stop_reason == "pause_turn":
                    # The API paused a long turn of its own tools (web search): asked again
                    # with its answer so far, it goes on where it stopped.
                    _said(resp.content, tally, listen)
                    continue
                if resp.stop_reason != "tool_use" or not tool_uses:
                    self.store.end_turn(state, TurnEnd.OK)
                    return tally.outcome(reply_text(resp.content))
                _said(resp.content, tally, listen)
                tally.tool_calls += len(tool_uses)
                results = await self._run_tools(tool_uses, ctx, listen)
                self.store.append_message(state, {"role": "user", "content": results})
        except LLMError as exc:
            log.warning("%s: model call failed: %s", state.key, exc)
            self.store.end_turn(state, TurnEnd.ERROR, exc.kind)
            raise
        except asyncio.CancelledError:
            self.store.end_turn(state, TurnEnd.CANCELLED)
            raise
        except Exception:
            self.store.end_turn(state, TurnEnd.ERROR, "internal")
            raise
        self.store.end_turn(state, TurnEnd.ITERATION_CAP)
        log.warning("%s: turn stopped at the iteration cap (%d calls)", state.key, tally.calls)
        return tally.outcome(
            f"I stopped after {tally.calls} steps without finishing. Tell me to continue if you "
            "want me to go on.",
            TurnStatus.ITERATION_CAP,
        )

    async def _silent_turn(
        self, state: SessionState, ctx: TurnContext, note: str, grant: Grant, purpose: Purpose
    ) -> str:
        # Nobody watches this turn: only what ``grant`` gives runs in it.
        silent = replace(ctx, grant=grant)
        return (await self.loop(state, silent, purpose, system_note=note)).text

    async def _call_model(
        self,
        state: SessionState,
        ctx: TurnContext,
        note_and_listener: tuple[str | None, Listener | None],
        tally: Tally,
        charge: Charge,
    ) -> LLMResponse:
        system_note, listen = note_and_listener
        deltas = ToListener(listen) if listen is not None else None
        while True:
            began = self.clock.monotonic()
            try:
                resp = await self.llm.complete(
                    state.system,
                    state.messages,
                    self.tools.schemas(ctx.private, ctx.grant),
                    system_note,
                    deltas=deltas,
                    charge=charge,
                )
            except LLMError as exc:
                # Too large for the API: compaction folds older messages (and their images)
                # into a summary, so one retry may fit. No flush first: it would not fit either,
                # and its exchange would land after the message being answered.
                if not exc.kind.fits_after_compaction or tally.retried_overflow:
                    raise
                tally.retried_overflow = True
                log.warning("%s: context overflow reported by the API; compacting", state.key)
                await self.maintenance.compact(state, ctx, flush_first=False)
                continue
            tally.calls += 1
            tally.waited += self.clock.monotonic() - began
            if any(b.get("type") == "server_tool_use" for b in resp.content):
                ctx.saw("web search results")  # the API's own search, run while it wrote
                ctx.reach.listed(_found(resp.content))  # its results may be read unasked
            self.store.append_usage(state, resp.usage)
            tally.usage += resp.usage
            return resp

    async def _run_tools(
        self, tool_uses: list[dict[str, Any]], ctx: TurnContext, listen: Listener | None
    ) -> list[dict[str, Any]]:
        results: list[dict[str, Any]] = []
        for use in tool_uses:
            if listen is not None:
                listen(ToolStarted(use["name"], progress_summary(use["name"], use.get("input"))))
            result = await self._call_tool(use["name"], use.get("input"), ctx)
            if listen is not None:
                listen(ToolFinished(use["name"], not result.is_error))
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": use["id"],
                "content": result.content(),
            }
            if result.is_error:
                block["is_error"] = True
            results.append(block)
        return results

    async def _call_tool(self, name: str, args: Any, ctx: TurnContext) -> ToolResult:
        if self.gate is None:
            return await self.tools.call(name, args, ctx)
        review = await self.gate.review(self.tools.tool(name), args, ctx)
        if review.refusal is not None:
            return ToolResult(review.refusal, is_error=True)
        return review.result(await self.tools.call(name, args, review.ctx))


def _request_start(messages: Sequence[dict[str, Any]]) -> int:
    """Where the turn being resumed began: its request, the last user message that is not a
    tool result."""
    for i in range(len(messages) - 1, -1, -1):
        msg = messages[i]
        blocks = msg["content"] if isinstance(msg["content"], list) else []
        if msg["role"] == "user" and not any(b.get("type") == "tool_result" for b in blocks):
            return i
    return len(messages)


def _said(content: list[dict[str, Any]], tally: Tally, listen: Listener | None) -> None:
    """Text written before the turn goes on (before tools run): a piece of the answer."""
    piece = reply_text(content)
    if piece and not silent(piece):  # "nothing to say" before a tool: said to no one
        tally.earlier.append(piece)
        if listen is not None:
            listen(TextDone(piece))


def _found(content: list[dict[str, Any]]) -> list[str]:
    """The addresses the API's own search found (its result blocks)."""
    return [
        str(r.get("url", ""))
        for b in content
        if b.get("type") == "web_search_tool_result" and isinstance(b.get("content"), list)
        for r in b["content"]
        if isinstance(r, dict)
    ]


def _written_reply(state: SessionState) -> str | None:
    """The text of a final answer that ends the transcript, if it does end with one."""
    if not state.messages or state.messages[-1]["role"] != "assistant":
        return None
    if state.messages[-1].get("paused"):  # the API paused its own tools' work: not done
        return None
    content = state.messages[-1]["content"]
    if isinstance(content, str):
        return content.strip()
    if any(b.get("type") == "tool_use" for b in content):
        return None
    return reply_text(content)
