"""Keeping a session inside the context window: the silent memory flush, then compaction."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agent.memory.store import Memory
from agent.model.charge import Charge, Purpose
from agent.model.port import LLM
from agent.sessions.loaded import Sessions
from agent.sessions.state import SessionState, estimate_tokens
from agent.settings import CompactionSettings
from agent.tools.context import Grant, TurnContext
from gateway.contract.errors import LLMError
from gateway.contract.events import SessionKey, blank, silent

log = logging.getLogger(__name__)

# The flush writes memory in its own session's audience, and nothing else: no reading of other
# chats, no files, nothing that reaches out. It is shown its session's tools all the same, so
# that its request reads the whole conversation from the prompt cache.
FLUSH_GRANT = Grant(
    "the memory flush", frozenset({"memory_append", "memory_update"}), show_all=True
)

FLUSH_NOTE = (
    "Memory flush. This session is close to its context limit and will soon be compacted: "
    "older messages will be replaced by a short summary. This turn is silent: nobody will see "
    "your reply."
)
FLUSH_PROMPT = (
    "[memory flush] Before the conversation is compacted, save what must not be lost. Use "
    "memory_append to add durable facts from this conversation that are not written down yet "
    "(decisions, promises, open tasks, facts about people and plans) to today's log of this "
    "chat; in a private chat, use memory_update for lasting personal facts that belong in "
    "MEMORY.md. A fact that changes one an earlier log entry holds names that entry in "
    "memory_append's replaces. Only the memory tools work in this turn. When done, or if "
    "there is nothing to save, answer exactly NO_REPLY."
)
SUMMARY_SYSTEM = (
    "You condense chat transcripts for a personal assistant, who will continue the "
    "conversation from your summary alone. Write plain prose or short bullets, no preamble."
)
COMPACTION_PROMPT = (
    "Summarise the conversation below so the assistant can carry on seamlessly: who is "
    "involved, what was discussed and decided, promises and open tasks, facts and numbers that "
    "are still needed, and what was being worked on last. At most 400 words."
)
SESSION_END_PROMPT = (
    "The conversation below is ending. Write a short entry for today's log: what was "
    "discussed, decided and promised, and any open to-dos, in at most 120 words. If nothing "
    "worth keeping happened, answer exactly NO_REPLY."
)


# What a summary takes, about: COMPACTION_PROMPT asks for at most 400 words.
SUMMARY_TOKENS = 600
# The least room a window must leave the conversation beside the fixed prompt, the reserve,
# the flush's margin and a summary, or compaction could not keep it going (checked at start).
ROOM_TOKENS = 1000


def conversation_tokens(messages: Sequence[dict[str, Any]]) -> int:
    return sum(estimate_tokens(m["content"]) for m in messages)


@dataclass(frozen=True, slots=True)
class Compacted:
    summarised: int  # messages replaced by the summary
    kept: int
    tokens_before: int
    tokens_after: int


def starts_exchange(msg: dict[str, Any]) -> bool:
    """A user message that answers no tool call: cutting before it splits no tool pair."""
    if msg["role"] != "user":
        return False
    content = msg["content"]
    return isinstance(content, str) or not any(b.get("type") == "tool_result" for b in content)


def choose_split(messages: Sequence[dict[str, Any]], keep_tokens: int) -> int:
    """Index of the first message kept verbatim: the longest clean suffix within budget."""
    split = len(messages)
    acc = 0
    for i in range(len(messages) - 1, -1, -1):
        acc += estimate_tokens(messages[i]["content"])
        if acc > keep_tokens:
            break
        if starts_exchange(messages[i]):
            split = i
    return split


def render(messages: Sequence[dict[str, Any]], limit: int) -> str:
    """A transcript as plain text for the summariser; the newest part wins if it is too long."""
    lines: list[str] = []
    for msg in messages:
        who = "User" if msg["role"] == "user" else "Assistant"
        content = msg["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for b in blocks:
            kind = b.get("type")
            if kind == "text" and (b["text"].strip() == FLUSH_PROMPT or silent(b["text"])):
                continue  # the silent flush turn is housekeeping, not conversation
            if kind == "text" and b["text"].strip():
                lines.append(f"{who}: {b['text'].strip()}")
            elif kind == "tool_use":
                args = json.dumps(b.get("input"), ensure_ascii=False)[:400]
                lines.append(f"Assistant used {b['name']}({args})")
            elif kind == "tool_result":
                body = b.get("content")
                if isinstance(body, list):  # text and images
                    body = " ".join(
                        str(c.get("text", "")) if c.get("type") == "text" else "[an image]"
                        for c in body
                        if isinstance(c, dict)
                    )
                body = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
                lines.append(f"Tool result: {body[:600]}")
            elif kind == "image":
                lines.append(f"{who} sent an image.")
            elif kind == "server_tool_use":
                asked = b.get("input")
                query = str(asked.get("query", "") if isinstance(asked, dict) else "")[:200]
                lines.append(f"Assistant searched the web for {query!r}")
    text = "\n\n".join(lines)
    if len(text) > limit:
        text = "[the oldest part is left out]\n\n" + text[len(text) - limit :]
    return text


# Runs a silent turn in a session (the memory flush): the model may call tools; the returned
# reply text reaches no chat.
SilentTurn = Callable[[SessionState, TurnContext, str, Grant, Purpose], Awaitable[str]]


class Maintenance:
    """Flush, compaction and session-end summaries for the sessions in ``sessions``.

    Given only what it needs: the model port, the sessions, a way to make a fresh prompt
    snapshot and a turn context, and a way to run a silent turn; never the agent itself.
    """

    def __init__(
        self,
        *,
        llm: LLM,
        sessions: Sessions,
        prompt: Callable[[SessionKey], str],
        context: Callable[[SessionKey], TurnContext],
        silent_turn: SilentTurn,
        memory: Memory | None,
        settings: CompactionSettings,
    ) -> None:
        self.llm = llm
        self.sessions = sessions
        self.prompt = prompt
        self.context = context
        self.silent_turn = silent_turn
        self.memory = memory
        self.cfg = settings

    def thresholds(self) -> tuple[int, int]:
        hard = self.llm.context_window - self.cfg.reserve_tokens
        return hard - self.cfg.soft_threshold_tokens, hard

    def window_problem(self, fixed: int) -> str | None:
        """Why the window is too small for a conversation beside a fixed prompt (the system
        prompt and tools) of ``fixed`` tokens, or None when it is not."""
        window, c = self.llm.context_window, self.cfg
        needed = fixed + c.reserve_tokens + c.soft_threshold_tokens + SUMMARY_TOKENS + ROOM_TOKENS
        if needed <= window:
            return None
        return (
            f"llm.context_window ({window:,} tokens) is too small: the system prompt and the "
            f"tools take about {fixed:,} tokens, compaction keeps {c.reserve_tokens:,} "
            f"(compaction.reserve_tokens) + {c.soft_threshold_tokens:,} "
            f"(compaction.soft_threshold_tokens) free and needs about "
            f"{SUMMARY_TOKENS + ROOM_TOKENS:,} for a summary and the recent messages. Give "
            f"llm.context_window at least {needed:,} (the model's real window), or make the "
            "workspace's AGENTS.md, SOUL.md, USER.md, TOOLS.md and MEMORY.md shorter"
        )

    # At most half the room, so a compaction leaves space to grow before the next one.
    def keep_budget(self, state: SessionState) -> int:
        """Tokens of the recent conversation a compaction keeps word for word: the configured
        ``keep_recent_tokens``, but at most half the room the window leaves the conversation
        beside the fixed prompt and a summary; 0 when there is no room."""
        fixed = max(0, state.context_tokens - conversation_tokens(state.messages))
        room = self.thresholds()[1] - fixed - SUMMARY_TOKENS
        return max(0, min(self.cfg.keep_recent_tokens, room // 2))

    def split(self, state: SessionState) -> int:
        """Where a compaction would cut (the first message kept), or 0 when it would not
        shrink the conversation: no room to keep anything, or an older part no longer than
        its summary."""
        keep = self.keep_budget(state)
        if keep <= 0:
            return 0
        split = choose_split(state.messages, keep)
        if conversation_tokens(state.messages[:split]) <= SUMMARY_TOKENS:
            return 0
        return split

    async def after_turn(self, key: SessionKey) -> None:
        state = self.sessions.peek(key)
        if state is None:
            return
        soft, hard = self.thresholds()
        if state.context_tokens < soft or not self.split(state):
            return  # below the threshold, or compacting would free nothing
        if not state.flushed:
            await self.flush(state, self.context(key))
        if state.context_tokens >= hard:
            await self.compact(state, self.context(key), flush_first=False)

    async def flush(self, state: SessionState, ctx: TurnContext) -> None:
        """The silent turn. Marked first, so that a failing flush is not retried every turn."""
        store = self.sessions.store
        store.mark_flushed(state)
        prompt = {"role": "user", "content": [{"type": "text", "text": FLUSH_PROMPT}]}
        store.append_message(state, prompt)
        log.info("%s: memory flush at %d context tokens", state.key, state.context_tokens)
        try:
            text = await self.silent_turn(state, ctx, FLUSH_NOTE, FLUSH_GRANT, Purpose.FLUSH)
        except LLMError as exc:
            log.warning("%s: memory flush failed: %s", state.key, exc)
            return
        if not silent(text):
            log.info("%s: flush turn answered %d characters (not delivered)", state.key, len(text))

    async def compact(
        self, state: SessionState, ctx: TurnContext, flush_first: bool
    ) -> Compacted | None:
        if self.split(state) == 0:
            return None  # it would not shrink: no flush either, nothing would be lost
        if flush_first and not state.flushed:
            await self.flush(state, ctx)
        split = self.split(state)
        if split == 0:
            return None
        before = state.context_tokens
        tools = before - conversation_tokens(state.messages) - estimate_tokens(state.system)
        summary = await self.summarise(
            state.messages[:split], COMPACTION_PROMPT, Charge(Purpose.COMPACTION, state.key)
        )
        kept = len(state.messages) - split
        store = self.sessions.store
        store.compact(state, summary, kept, self.prompt(state.key))
        # Until the next call counts it, the estimate covers the tools too, not only the
        # system prompt and the messages.
        state.added_tokens += max(0, tools)
        store.sync_soon(state.key)
        result = Compacted(split, kept, before, state.context_tokens)
        log.info(
            "%s: compacted %d messages, kept %d; ~%d → ~%d tokens",
            state.key,
            result.summarised,
            kept,
            before,
            result.tokens_after,
        )
        return result

    async def summarise(
        self, messages: Sequence[dict[str, Any]], instruction: str, charge: Charge
    ) -> str:
        limit = max(4000, (self.llm.context_window - self.cfg.reserve_tokens) * 2)
        text = render(messages, limit)
        request = [
            {
                "role": "user",
                "content": [
                    {
                        "type": "text",
                        "text": f"{instruction}\n\n<conversation>\n{text}\n</conversation>",
                    }
                ],
            }
        ]
        resp = await self.llm.complete(SUMMARY_SYSTEM, request, [], charge=charge)
        return "\n\n".join(b["text"] for b in resp.content if b.get("type") == "text").strip()

    async def end_session(self, key: SessionKey) -> bool:
        """Before /new: a short summary of the ending session goes to today's log."""
        state = self.sessions.peek(key)
        memory = self.memory
        if state is None or memory is None or not any(starts_exchange(m) for m in state.messages):
            return False
        summary = await self.summarise(
            state.messages, SESSION_END_PROMPT, Charge(Purpose.NEW_SUMMARY, key)
        )
        if blank(summary) or silent(summary):
            return False
        ctx = self.context(key)
        source = "session summary" if key.private else f"session summary · {key}"
        try:
            # Quoted if the conversation read other chats or the web: it may repeat them.
            memory.append(ctx.marked(summary), ctx.now, ctx.audience, source)
        except OSError as exc:  # a full disk, say; /new goes on
            log.warning("%s: session summary not saved: %s", key, exc)
            return False
        return True
