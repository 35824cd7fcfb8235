"""A small context window (a local model's): compaction runs only when it shrinks the
conversation, keeps no more than leaves room to grow, and a window too small for the fixed
prompt stops the start with the reason."""

from __future__ import annotations

import asyncio
import logging
import re
import sys
from pathlib import Path
from typing import Any

from agent.sessions.compaction import FLUSH_PROMPT, SUMMARY_SYSTEM
from gateway.app import build_app
from tests.conftest import RecordingChannel, make_config
from tests.fakes.anthropic_api import FakeAnthropic, Reply


def brain(body: dict[str, Any]) -> Reply:
    """A short summary when asked for one, NO_REPLY to the flush, a plain answer otherwise."""
    if SUMMARY_SYSTEM in str(body.get("system")):
        return Reply(text="We talked about the garden and the weekend.")
    last = body["messages"][-1]["content"]
    texts = [b.get("text", "") for b in last] if isinstance(last, list) else [last]
    if any(FLUSH_PROMPT in t for t in texts):
        return Reply(text="NO_REPLY")
    return Reply(text="Noted. " + "Here is a longer answer about it. " * 12)


async def test_compaction_runs_only_when_it_shrinks_and_leaves_room_to_grow(
    home: Path, fake_api: FakeAnthropic, caplog
):
    # What is kept word for word (4,600) and the fixed prompt (about 2,900 tokens here) fill
    # the window's 7,500 before compaction: kept as configured, every turn would compact.
    fake_api.brain = brain
    config = make_config(
        home,
        fake_api.base_url,
        llm={"context_window": 8000},
        compaction={
            "reserve_tokens": 500,
            "soft_threshold_tokens": 100,
            "keep_recent_tokens": 4600,
        },
    )
    channel = RecordingChannel()
    app = build_app(config, [channel])
    assert app.agent.window_problem() is None
    caplog.set_level(logging.INFO, logger="agent.sessions.compaction")
    await app.start()
    try:
        for i in range(45):
            await asyncio.wait_for(channel.push(f"Message {i}: " + "about the garden " * 40), 30)
    finally:
        await app.stop()
    assert len(channel.sent) == 45
    asked = [r.body for r in fake_api.message_requests]
    summaries = [b for b in asked if SUMMARY_SYSTEM in str(b.get("system"))]
    flushes = [b for b in asked if FLUSH_PROMPT in str(b["messages"][-1]["content"])]
    assert 2 <= len(summaries) <= 5, len(summaries)  # every nine turns or so, not every turn
    assert len(flushes) == len(summaries)  # one flush per compaction, none in between
    shrunk = [
        tuple(map(int, m.groups()))
        for r in caplog.records
        if (m := re.search(r"~(\d+) → ~(\d+) tokens", r.getMessage()))
    ]
    assert len(shrunk) == len(summaries)
    assert all(after < before - 1000 for before, after in shrunk), shrunk


async def test_a_window_too_small_for_the_fixed_prompt_is_refused_at_start(
    home: Path, fake_api: FakeAnthropic
):
    config = make_config(home, fake_api.base_url, llm={"context_window": 4000})
    app = build_app(config, [RecordingChannel()])
    try:
        problem = app.agent.window_problem()
    finally:
        await app.stop(grace=0)
    assert problem is not None
    assert problem.startswith("llm.context_window (4,000 tokens) is too small: the system prompt")
    assert "compaction.reserve_tokens" in problem and "at least" in problem
    # corvid chat says so and stops, before anything is asked of the model.
    (home / "config.yaml").write_text(
        (home / "config.yaml")
        .read_text()
        .replace("  context_window: 200000", "  context_window: 4000")
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway.ops.cli", "chat", "--home", str(home),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={"ANTHROPIC_API_KEY": "sk-small", "ANTHROPIC_BASE_URL": fake_api.base_url,
             "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    _out, err = await asyncio.wait_for(proc.communicate(b"hello\n"), 60)
    assert proc.returncode == 2, err.decode()
    assert "corvid: cannot chat: llm.context_window (4,000 tokens) is too small" in err.decode()
    assert fake_api.message_requests == []
