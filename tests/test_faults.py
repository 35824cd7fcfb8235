"""Faults and load through the real stack: gateway → agent → real anthropic client → fake API.

Model faults (429, 529, 500, a cut stream, an ``event: error``) hit many sessions at once; a
thousand messages go through a hundred sessions with model latency; one chat floods while
others talk. Every wait is bounded, and nothing here measures speed (that is bench/'s job).
"""

from __future__ import annotations

import asyncio
import gc
import json
import linecache
import logging
import random
import re
import tracemalloc
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from agent.sessions.loaded import KEEP_LOADED
from agent.sessions.transcript import SessionStore
from gateway.contract.errors import LLMError
from gateway.contract.events import OutboundMessage, SessionKey
from tests.conftest import OWNER, TG_GROUP
from tests.fakes import telegram_api as tg
from tests.fakes.anthropic_api import (
    Action,
    CutStream,
    FakeAnthropic,
    Fault,
    Reply,
    StreamError,
)
from tests.fakes.telegram_api import BOT_USERNAME

API_KEY = "sk-test-0123456789"  # the key conftest.make_config puts in the config

# What no chat message may ever contain: SDK and HTTP error text, tracebacks, raw error bodies,
# the partial text of a reply that was cut off, the API key.
LEAKS = re.compile(
    r"Traceback|Error code|APIStatusError|APIConnectionError|RemoteProtocolError|httpx|"
    r"status=|_error|\{'type'|\"type\"|partial|sk-test",
)

# Short retries and timeouts, set where the user would set them: the config.
FAST_LLM = {"retries": 2, "timeout": 10}

WITHIN = 30  # seconds: the bound on any single wait in this file


def friendly(kind: str) -> str:
    return LLMError(kind, "").user_message()


def key_of(user: int) -> SessionKey:
    return SessionKey("test", "private", str(1000 + user))


def user_lines(body: dict[str, Any]) -> list[str]:
    """The chat texts of the newest user message in a request, without their time headers."""
    msg = body["messages"][-1]
    if msg["role"] != "user":
        return []
    return [
        b["text"].split("\n", 1)[-1]
        for b in msg["content"]
        if b.get("type") == "text" and "\n" in b["text"]
    ]


def assert_clean(text: str) -> None:
    assert not LEAKS.search(text), f"raw error text reached a chat: {text!r}"
    assert API_KEY not in text


async def settle(gateway: Any) -> None:
    """Wait (bounded) until the router's session workers have all finished and gone."""
    router = gateway.router
    tasks = [w.task for w in getattr(router, "_workers", {}).values() if w.task is not None]
    if tasks:
        async with asyncio.timeout(WITHIN):
            await asyncio.wait(tasks)
    side = list(getattr(gateway, "_side_tasks", ()))
    if side:
        async with asyncio.timeout(WITHIN):
            await asyncio.wait(side)


def load_transcripts(
    home: Any, keys: list[SessionKey], caplog: pytest.LogCaptureFixture
) -> dict[SessionKey, Any]:
    """Load each session from disk the way a restart would; no line may be skipped."""
    store = SessionStore(home / "state" / "sessions")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="agent.sessions.transcript"):
        states = {key: store.load(key) for key in keys}
    assert [r.getMessage() for r in caplog.records if r.name == "agent.sessions.transcript"] == []
    assert all(state is not None for state in states.values())
    return states


def transcript_turns(home: Any, key: SessionKey) -> list[tuple[str, str]]:
    """(status, detail) of every turn recorded in the session's file, in order."""
    path = home / "state" / "sessions" / f"{key}.jsonl"
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if entry["t"] == "turn":
            out.append((entry["status"], entry.get("detail", "")))
    return out


def stored_user_lines(state: Any) -> list[str]:
    return [
        b["text"].split("\n", 1)[-1]
        for m in state.messages
        if m["role"] == "user" and isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "text" and "\n" in b["text"]
    ]


# -- 1. model faults under 20 concurrent sessions --------------------------------------------------


class Storm:
    """A brain that scripts faults per message and per attempt (the SDK's retries included).

    The first attempt of every first-round message is held until all of them have arrived, so
    the faults land while all the sessions are in flight at once.
    """

    def __init__(self, plans: dict[str, list[Action]], wave: int) -> None:
        self.plans = plans
        self.attempts: Counter[str] = Counter()
        self.wave = wave
        self.arrived = 0
        self.all_in = asyncio.Event()

    async def __call__(self, body: dict[str, Any]) -> Action:
        text = user_lines(body)[-1]
        attempt = self.attempts[text]
        self.attempts[text] += 1
        if text.endswith(" first") and attempt == 0:
            self.arrived += 1
            if self.arrived == self.wave:
                self.all_in.set()
            async with asyncio.timeout(WITHIN):
                await self.all_in.wait()
        plan = self.plans.get(text, [])
        if attempt < len(plan):
            return plan[attempt]
        return Reply("reply to " + text)


RATE = Fault(429, "rate_limit_error", retry_after_ms=20)  # the API's retry-after, 20 ms
OVER = Fault(529, "overloaded_error")
ISE = Fault(500, "api_error")

# user → (faults served to its first message in order, what the user should see, requests made)
# None means the real reply. With retries=2 the SDK makes at most three attempts.
STORM: dict[int, tuple[list[Action], str | None, int]] = {
    0: ([RATE], None, 2),
    1: ([RATE], None, 2),
    2: ([RATE, RATE], None, 3),
    3: ([RATE, RATE, RATE], "rate_limited", 3),
    4: ([RATE, RATE, RATE], "rate_limited", 3),
    5: ([OVER], None, 2),
    6: ([OVER, OVER], None, 3),
    7: ([OVER, OVER, OVER], "overloaded", 3),
    8: ([OVER, OVER, OVER], "overloaded", 3),
    9: ([ISE], None, 2),
    10: ([ISE, ISE], None, 3),
    11: ([ISE, ISE, ISE], "server", 3),
    12: ([RATE, OVER, ISE], "server", 3),
    # Failures after the stream has started are not retried by the SDK.
    13: ([CutStream()], "connection", 1),
    14: ([CutStream("a long partial answer that was cut " * 5)], "connection", 1),
    15: ([RATE, CutStream()], "connection", 2),
    16: ([StreamError("overloaded_error")], "overloaded", 1),
    17: ([StreamError("api_error")], "server", 1),
    18: ([OVER, StreamError("overloaded_error")], "overloaded", 2),
    19: ([], None, 1),
}


async def test_fault_storm_across_20_sessions_gives_each_user_one_clear_answer(
    start_gateway, fake_api: FakeAnthropic, home, caplog
):
    storm = Storm({f"u{u:02d} first": plan for u, (plan, _, _) in STORM.items()}, len(STORM))
    fake_api.brain = storm
    gateway, chan = await start_gateway(llm=FAST_LLM)
    keys = {u: key_of(u) for u in STORM}

    async with asyncio.timeout(WITHIN):
        await asyncio.gather(*(chan.push(f"u{u:02d} first", key=keys[u]) for u in STORM))

    assert storm.arrived == len(STORM)  # the faults really met all 20 sessions in flight
    for u, (_, kind, attempts) in STORM.items():
        expected = f"reply to u{u:02d} first" if kind is None else friendly(kind)
        assert chan.texts(keys[u]) == [expected], f"user {u}"
        assert storm.attempts[f"u{u:02d} first"] == attempts, f"user {u}"
    for out in chan.sent:
        assert_clean(out.text)

    # Every session is still usable, and a message whose turn failed was kept for the next one.
    async with asyncio.timeout(WITHIN):
        await asyncio.gather(*(chan.push(f"u{u:02d} second", key=keys[u]) for u in STORM))
    for u in STORM:
        assert chan.texts(keys[u])[1:] == [f"reply to u{u:02d} second"]
    last_request = {user_lines(r.body)[-1]: r.body for r in fake_api.message_requests}
    for u in STORM:
        history = json.dumps(last_request[f"u{u:02d} second"]["messages"])
        assert f"u{u:02d} first" in history

    await settle(gateway)
    states = load_transcripts(home, list(keys.values()), caplog)
    for u, (_, kind, _) in STORM.items():
        state = states[keys[u]]
        assert stored_user_lines(state) == [f"u{u:02d} first", f"u{u:02d} second"]
        assert state.turns == 2
        first_turn = ("ok", "") if kind is None else ("error", kind)
        assert transcript_turns(home, keys[u]) == [first_turn, ("ok", "")]


@pytest.mark.parametrize(
    ("fault", "kind"),
    [(RATE, "rate_limited"), (OVER, "overloaded"), (ISE, "server")],
    ids=["429", "529", "500"],
)
async def test_a_fault_that_outlasts_the_retries_is_reported_once_per_user(
    start_gateway, fake_api: FakeAnthropic, fault: Fault, kind: str
):
    attempts: Counter[str] = Counter()

    def brain(body: dict[str, Any]) -> Action:
        text = user_lines(body)[-1]
        attempts[text] += 1
        return fault if text.endswith(" first") else Reply("reply to " + text)

    fake_api.brain = brain
    gateway, chan = await start_gateway(llm={"retries": 1, "timeout": 10})
    keys = [key_of(u) for u in range(20)]

    async with asyncio.timeout(WITHIN):
        await asyncio.gather(*(chan.push(f"u{u:02d} first", key=k) for u, k in enumerate(keys)))
    await settle(gateway)
    for u, k in enumerate(keys):
        assert chan.texts(k) == [friendly(kind)]
        assert attempts[f"u{u:02d} first"] == 2  # llm.retries: 1 → one try and one retry
    async with asyncio.timeout(WITHIN):
        await asyncio.gather(*(chan.push(f"u{u:02d} second", key=k) for u, k in enumerate(keys)))
    for u, k in enumerate(keys):
        assert chan.texts(k) == [friendly(kind), f"reply to u{u:02d} second"]
    assert len(fake_api.message_requests) == 20 * 2 + 20


async def test_an_api_that_never_answers_is_bounded_by_the_configured_timeout(
    start_gateway, fake_api: FakeAnthropic
):
    never = asyncio.Event()  # set only after the test: the first round's requests just hang
    hung = 0

    async def brain(body: dict[str, Any]) -> Action:
        nonlocal hung
        text = user_lines(body)[-1]
        if text.endswith(" first"):
            hung += 1
            async with asyncio.timeout(WITHIN):
                await never.wait()
        return Reply("reply to " + text)

    fake_api.brain = brain
    _gateway, chan = await start_gateway(llm={"retries": 0, "timeout": 3})
    keys = [key_of(u) for u in range(5)]
    async with asyncio.timeout(WITHIN):
        await asyncio.gather(*(chan.push(f"u{u:02d} first", key=k) for u, k in enumerate(keys)))
    assert hung == 5
    for k in keys:
        assert chan.texts(k) == [friendly("timeout")]
    async with asyncio.timeout(WITHIN):
        await asyncio.gather(*(chan.push(f"u{u:02d} second", key=k) for u, k in enumerate(keys)))
    for u, k in enumerate(keys):
        assert chan.texts(k)[1:] == [f"reply to u{u:02d} second"]
    never.set()


# -- 2. load: 1,000 messages over 100 sessions -----------------------------------------------------

SESSIONS = 100
PER_SESSION = 10


def latency_brain(seed: int, seen: dict[str, list[str]], calls: Counter[str]):
    """Answers every request after 50–500 ms (a model's latency, not synchronisation) and
    records, per session, the chat lines in the order they reached the model."""
    rng = random.Random(seed)

    def brain(body: dict[str, Any]) -> Action:
        lines = user_lines(body)
        session = lines[0].split()[0]
        seen[session].extend(lines)
        calls[session] += 1
        answer = "ok " + " ".join(line.split()[1] for line in lines)
        return Reply(answer, delay=rng.uniform(0.05, 0.5))

    return brain


async def run_load(gateway: Any, chan: Any, keys: list[SessionKey], names: list[str]) -> None:
    """Each session sends its messages in bursts of 1–3, each burst before the previous one
    is answered, so some arrive while a turn runs and are batched into the next."""

    async def chat(s: int, rng: random.Random) -> None:
        previous: list[asyncio.Future[None]] = []
        sent = 0
        while sent < PER_SESSION:
            burst = min(rng.randint(1, 3), PER_SESSION - sent)
            futures = [chan.push(f"{names[s]} m{sent + i:02d}", key=keys[s]) for i in range(burst)]
            sent += burst
            await asyncio.gather(*previous)
            previous = futures
        await asyncio.gather(*previous)

    seeds = random.Random(11)
    # A bound, not a target: traced by tracemalloc, on a core shared with another test worker.
    async with asyncio.timeout(180):
        await asyncio.gather(*(chat(s, random.Random(seeds.random())) for s in range(SESSIONS)))
    await settle(gateway)


CORVID_PACKAGES = ("gateway", "agent", "channels")
CORVID_DIRS = tuple(str(Path(__file__).resolve().parent.parent / p) + "/" for p in CORVID_PACKAGES)


def forget_conversations(gateway: Any) -> int:
    """Drop the agent's in-memory conversation states; returns the traced bytes that freed."""
    gc.collect()
    before, _ = tracemalloc.get_traced_memory()
    gateway.agent.sessions._loaded.clear()
    gc.collect()
    after, _ = tracemalloc.get_traced_memory()
    return before - after


def interned_table(stat: tracemalloc.Statistic) -> bool:
    """The interpreter's table of interned strings, made anew when pathlib interns a name and
    the table is full: sized by every name the process has interned (earlier tests' too), and
    not anything a message leaves behind."""
    frame = stat.traceback[0]
    return "sys.intern(" in linecache.getline(frame.filename, frame.lineno)


def live(kind: type) -> int:
    return sum(1 for o in gc.get_objects() if isinstance(o, kind))


async def test_a_thousand_messages_over_a_hundred_sessions_lose_nothing_and_leak_nothing(
    start_gateway, fake_api: FakeAnthropic, home, caplog
):
    seen: dict[str, list[str]] = defaultdict(list)
    calls: Counter[str] = Counter()
    fake_api.brain = latency_brain(7, seen, calls)
    gateway, chan = await start_gateway(llm={"retries": 0, "timeout": 30})
    keys = [key_of(s) for s in range(SESSIONS)]
    names = [f"s{s:03d}" for s in range(SESSIONS)]
    wanted = {n: [f"{n} warm"] + [f"{n} m{i:02d}" for i in range(PER_SESSION)] for n in names}
    # pytest keeps every log record a test emits; at INFO (which an earlier in-process
    # `corvid` run can leave the root logger at) that is a record per turn, kept by the test
    # harness, not by Corvid.
    caplog.set_level(logging.WARNING)

    # Warm-up: every session exists, the SDK is imported, its connection pool is filled.
    async with asyncio.timeout(WITHIN):
        await asyncio.gather(*(chan.push(f"{n} warm", key=keys[s]) for s, n in enumerate(names)))
    await settle(gateway)
    gc.collect()
    futures_before = live(asyncio.Future)
    tracemalloc.start()
    try:
        await run_load(gateway, chan, keys, names)

        # Drained: no workers, no tasks, and of the sessions no longer in use only the most
        # recently used are still in memory (the others come back from disk).
        assert gateway.router.active_sessions() == []
        assert getattr(gateway.router, "_workers", {}) == {}
        assert not getattr(gateway, "_side_tasks", ())
        assert len(gateway.agent.sessions._loaded) == KEEP_LOADED < SESSIONS

        # A clean run logs no problems.
        problems = [
            r.getMessage()
            for r in caplog.records
            if r.levelno >= logging.WARNING and r.name.split(".")[0] in CORVID_PACKAGES
        ]
        assert problems == []

        # None lost, per-session order kept, every model call answered in its chat.
        for s, n in enumerate(names):
            assert seen[n] == wanted[n], n
            replies = chan.texts(keys[s])
            assert len(replies) == calls[n]
            answered = " ".join(r.removeprefix("ok ") for r in replies).split()
            assert answered == [line.split()[1] for line in wanted[n]], n
        for out in chan.sent:
            assert_clean(out.text)
        model_calls = len(fake_api.message_requests)
        assert sum(calls.values()) == model_calls
        states = load_transcripts(home, keys, caplog)
        for s, n in enumerate(names):
            assert stored_user_lines(states[keys[s]]) == wanted[n], n
        del states

        # Memory: what is still alive of everything allocated after the warm-up. Let go of what
        # is meant to grow with traffic: the conversations the agent keeps in memory (reloaded
        # from disk when needed), the test's own records, and the HTTP connections on both
        # ends (a pool bounded by concurrency, not by messages).
        history = forget_conversations(gateway)
        await gateway.agent.llm.close()
        await fake_api.close()
        fake_api.requests.clear()
        fake_api._cache.clear()  # the fake's prompt-cache simulation: one digest per request
        fake_api._recent.clear()  # and the units and hashes of its last requests
        for record in ("sent", "typing_events", "pushed"):  # what RecordingChannel keeps
            getattr(chan, record, []).clear()
        seen.clear()
        gc.collect()
        alive = [
            stat
            for stat in tracemalloc.take_snapshot().statistics("lineno")
            if not interned_table(stat)
        ]
        grown = sum(stat.size for stat in alive)
        ours = sum(
            stat.size for stat in alive if stat.traceback[0].filename.startswith(CORVID_DIRS)
        )
    finally:
        tracemalloc.stop()
    futures_after = live(asyncio.Future)
    print(
        f"\nload: {SESSIONS * PER_SESSION} messages, {model_calls} model calls; after draining "
        f"{grown:,} bytes still allocated ({ours:,} by Corvid's own code), "
        f"{history:,} bytes of conversation let go; futures {futures_before} → {futures_after}"
    )
    # A future, task or message kept per inbound message would be 1,000 objects of a few hundred
    # bytes or more; what is left after a clean run is interpreter and library caches.
    assert futures_after <= futures_before + 10
    assert ours < 100_000, f"{ours:,} bytes allocated by gateway/agent/channels still alive"
    assert grown < 300_000, f"{grown:,} bytes still allocated after draining"


# -- 3. one chat floods, the others are still answered ---------------------------------------------


async def test_a_flood_in_one_chat_does_not_starve_the_others(
    start_gateway, fake_api: FakeAnthropic
):
    flood_key = key_of(500)
    others = [key_of(600 + i) for i in range(5)]
    calls_at_reply: dict[SessionKey, int] = {}

    def brain(body: dict[str, Any]) -> Action:
        lines = user_lines(body)
        return Reply(f"ok {len(lines)}: {lines[0]} … {lines[-1]}", delay=0.03)

    fake_api.brain = brain
    gateway, chan = await start_gateway(llm=FAST_LLM)
    send = chan.send

    async def counting_send(out: OutboundMessage) -> None:
        calls_at_reply.setdefault(out.key, len(fake_api.message_requests))
        await send(out)

    chan.send = counting_send  # type: ignore[method-assign]

    async def flood() -> list[asyncio.Future[None]]:
        futures = []
        for i in range(300):
            futures.append(chan.push(f"flood m{i:03d}", key=flood_key))
            if i == 100:  # mid-flood, the other chats speak up once each
                futures.extend(chan.push(f"other {j}", key=k) for j, k in enumerate(others))
            # A yield, not a wait: one message per loop iteration, as fast as it can go.
            await asyncio.sleep(0)
        return futures

    async with asyncio.timeout(WITHIN):
        futures = await flood()
        await asyncio.gather(*futures)
    await settle(gateway)

    for j, k in enumerate(others):
        assert chan.texts(k) == [f"ok 1: other {j} … other {j}"]
    last_other = max(calls_at_reply[k] for k in others)
    flood_bodies = [
        r.body for r in fake_api.message_requests if user_lines(r.body)[0].startswith("flood")
    ]
    seen = [line for body in flood_bodies for line in user_lines(body)]
    print(
        f"\nflood: {len(flood_bodies)} model calls for 300 messages, batches of "
        f"{[len(user_lines(b)) for b in flood_bodies]}; "
        f"{last_other} calls made before the last other chat's reply"
    )
    assert seen == [f"flood m{i:03d}" for i in range(300)]
    assert len(chan.texts(flood_key)) == len(flood_bodies)
    # Batched (about ten messages a call or more, however the router caps a batch), and the
    # others waited on none of the flood's turns: starved, they would come after ~100 of them.
    assert len(flood_bodies) <= 30
    assert last_other <= 5 + 10


async def test_a_flood_of_parts_is_not_sent_to_the_model_as_one_oversized_turn(
    start_gateway, fake_api: FakeAnthropic
):
    """Each part is under agent.max_input_chars, as the gateway asks ("send it in parts"); a
    turn should not then pass the model many times that limit of new text at once."""
    limit = 2_000
    part = "x" * 1_500
    first_arrived = asyncio.Event()
    all_sent = asyncio.Event()

    async def brain(body: dict[str, Any]) -> Action:
        if not first_arrived.is_set():
            first_arrived.set()
            async with asyncio.timeout(WITHIN):
                await all_sent.wait()
        return Reply("ok")

    fake_api.brain = brain
    _gateway, chan = await start_gateway(llm=FAST_LLM, agent={"max_input_chars": limit})
    futures = [chan.push(f"part 0 {part}")]
    async with asyncio.timeout(WITHIN):
        await first_arrived.wait()
    futures += [chan.push(f"part {i} {part}") for i in range(1, 60)]
    all_sent.set()
    async with asyncio.timeout(WITHIN):
        await asyncio.gather(*futures)

    sizes = [sum(len(line) for line in user_lines(r.body)) for r in fake_api.message_requests]
    print(f"\nparts: {len(sizes)} model calls, at most {max(sizes):,} chars of new text in one")
    assert sum(sizes) == sum(len(f"part {i} {part}") for i in range(60))  # nothing lost
    # Allow one part's worth of slack over the limit; 59 parts in one turn is ~45x over it.
    assert max(sizes) <= 2 * limit, f"one turn carried {max(sizes):,} chars of new text"


# -- the same through the real Telegram adapter ----------------------------------------------------


async def test_a_telegram_flood_does_not_starve_the_other_chats(
    telegram_gateway, fake_telegram, fake_api: FakeAnthropic
):
    topic_calls: list[int] = []  # the model-call number of each forum topic's request

    def brain(body: dict[str, Any]) -> Action:
        lines = user_lines(body)
        if "topic" in lines[-1]:
            topic_calls.append(len(fake_api.message_requests))
        return Reply(f"ok {len(lines)}: {lines[-1]}", delay=0.03)

    fake_api.brain = brain
    await telegram_gateway()
    # 300 DMs queued at once (Telegram hands them out 100 per getUpdates), with five questions
    # in five forum topics of the group arriving in the middle of them.
    for i in range(300):
        fake_telegram.text(f"flood m{i:03d}")
        if i == 150:
            for t in range(5):
                fake_telegram.text(
                    f"@{BOT_USERNAME} topic {t}",
                    user=5,
                    chat=TG_GROUP,
                    chat_type="supergroup",
                    thread=10 + t,
                )

    def flood_bodies() -> list[dict[str, Any]]:
        return [
            r.body for r in fake_api.message_requests if user_lines(r.body)[0].startswith("flood")
        ]

    def replies_to(chat: int) -> list[dict[str, Any]]:
        return [s for s in fake_telegram.sent if s["chat_id"] == str(chat)]

    await fake_telegram.wait_for(lambda: len(replies_to(TG_GROUP)) >= 5, WITHIN)
    await fake_telegram.wait_for(
        lambda: (
            sum(len(user_lines(b)) for b in flood_bodies()) == 300
            and len(replies_to(OWNER)) == len(flood_bodies())
        ),
        WITHIN,
    )

    topics = sorted((s["message_thread_id"], s["shown"]) for s in replies_to(TG_GROUP))
    assert topics == [(str(10 + t), f"ok 1: @{BOT_USERNAME} topic {t}") for t in range(5)]
    seen = [line for body in flood_bodies() for line in user_lines(body)]
    assert seen == [f"flood m{i:03d}" for i in range(300)]
    print(
        f"\ntelegram flood: {len(flood_bodies())} model calls for 300 messages "
        f"(batches {[len(user_lines(b)) for b in flood_bodies()]}); the topics' requests were "
        f"model calls {sorted(topic_calls)}"
    )
    # Batched (several messages a call on average), and the topics did not wait for the flood:
    # starved, they would come after ~150 flood turns.
    assert len(flood_bodies()) <= 100
    assert max(topic_calls) <= 5 + 20


async def test_model_and_telegram_faults_together_leave_one_clean_message_per_chat(
    telegram_gateway, fake_telegram, fake_api: FakeAnthropic
):
    plans: dict[str, list[Action]] = {
        "dm first": [OVER, OVER, OVER],
        "topic 1": [CutStream()],
        "topic 2": [RATE],
        "topic 3": [StreamError("overloaded_error")],
        "topic 4": [],
    }
    attempts: Counter[str] = Counter()

    def brain(body: dict[str, Any]) -> Action:
        text = user_lines(body)[-1].removeprefix(f"@{BOT_USERNAME} ")
        attempts[text] += 1
        plan = plans.get(text, [])
        return plan[attempts[text] - 1] if attempts[text] <= len(plan) else Reply("reply " + text)

    fake_api.brain = brain
    gateway = await telegram_gateway()
    # Telegram fails the first three sends too; the adapter retries them.
    fake_telegram.fail(
        "sendMessage",
        tg.Fault(502, "Bad Gateway"),
        tg.Fault(502, "Bad Gateway"),
        tg.Fault(500, "Internal Server Error"),
    )
    fake_telegram.text("dm first")
    for t in range(1, 5):
        fake_telegram.text(
            f"@{BOT_USERNAME} topic {t}", user=5, chat=TG_GROUP, chat_type="supergroup", thread=t
        )
    await fake_telegram.wait_sent(5, WITHIN)
    await settle(gateway)

    shown = {(s["chat_id"], s.get("message_thread_id")): s["shown"] for s in fake_telegram.sent}
    assert len(fake_telegram.sent) == 5  # one message per chat, none twice
    assert shown == {
        (str(OWNER), None): friendly("overloaded"),
        (str(TG_GROUP), "1"): friendly("connection"),
        (str(TG_GROUP), "2"): "reply topic 2",
        (str(TG_GROUP), "3"): friendly("overloaded"),
        (str(TG_GROUP), "4"): "reply topic 4",
    }
    for text in shown.values():
        assert_clean(text)
    assert len(fake_telegram.calls_to("sendMessage")) == 5 + 3  # the three faults, retried
    # And every chat goes on normally.
    fake_telegram.text("dm second")
    fake_telegram.text(
        f"@{BOT_USERNAME} topic 1 again", user=5, chat=TG_GROUP, chat_type="supergroup", thread=1
    )
    sent = await fake_telegram.wait_sent(7, WITHIN)
    assert sorted(s["shown"] for s in sent[5:]) == ["reply dm second", "reply topic 1 again"]
