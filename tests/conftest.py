"""Shared fixtures: a Corvid home, the fake Anthropic API, and an in-test channel."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
import itertools
import logging
import os
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from channels.base import Channel
from gateway.app import build_app
from gateway.config.home import init_home
from gateway.config.loader import Config, parse_config
from gateway.contract.events import InboundMessage, OutboundMessage, SessionKey, parse_command
from gateway.running import App
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.telegram_api import FakeTelegram

PRIVATE = SessionKey("test", "private", "1")
_MESSAGE_IDS = itertools.count(1)
GROUP = SessionKey("test", "group", "100")


class RecordingChannel(Channel):
    """A channel driven by the test: ``push`` delivers a message, ``sent`` records replies."""

    name = "test"

    def __init__(self) -> None:
        super().__init__(access=None)
        self.sent: list[OutboundMessage] = []
        self.typing_events: list[tuple[str, str]] = []
        self.fail_sends = 0  # the next sends are refused (for good)
        self.unreachable = 0  # the next sends find the platform unreachable (for now)
        self.pushed: list[InboundMessage] = []
        # The owner's answer to every request to act that reaches this chat (a button's label,
        # "Deny"), given at once; None: the test answers them itself.
        self.answer_with: str | None = None
        self._changed = asyncio.Condition()
        # Platform message ids are unique per chat across restarts; the gateway drops repeats.
        self._ids = _MESSAGE_IDS

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass

    async def send(self, msg: OutboundMessage) -> None:
        if self.fail_sends:
            self.fail_sends -= 1
            raise RuntimeError("send refused (injected)")
        if self.unreachable:
            self.unreachable -= 1
            raise ConnectionError("platform unreachable (injected)")
        async with self._changed:
            self.sent.append(msg)
            self._changed.notify_all()
        answer = dict(msg.buttons).get(self.answer_with or "")
        if answer is not None:
            self.push(answer, key=msg.key)

    @contextlib.asynccontextmanager
    async def typing(self, key: SessionKey) -> AsyncIterator[None]:
        self.typing_events.append(("start", str(key)))
        try:
            yield
        finally:
            self.typing_events.append(("stop", str(key)))

    def push(
        self, text: str, key: SessionKey = PRIVATE, sender: str = "1", name: str = "Ada"
    ) -> asyncio.Future[None]:
        assert self._sink is not None, "channel not bound to a gateway"
        # What Channel.admit does for a real adapter: the command is parsed once, here.
        msg = InboundMessage(
            key,
            text,
            sender_id=sender,
            sender_name=name,
            message_id=str(next(self._ids)),
            command=parse_command(text),
        )
        self.pushed.append(msg)
        return self._sink(msg)

    async def wait_sent(self, n: int, timeout: float = 10.0) -> list[OutboundMessage]:
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(lambda: len(self.sent) >= n)
        return self.sent

    def texts(self, key: SessionKey | None = None) -> list[str]:
        return [m.text for m in self.sent if key is None or m.key == key]


def outbox_rows(home: Path) -> list[tuple[str, str]]:
    """Each outbox message's text and status, oldest first, as the journal on disk has them."""
    from gateway.runtime.journal import Journal

    journal = Journal(home / "state" / "gateway.sqlite")
    try:
        rows = journal.db.execute("SELECT text, status FROM outbox ORDER BY id").fetchall()
    finally:
        journal.close()
    return [(text, status) for text, status in rows]


def calls_by(home: Path, by: str) -> dict[str | None, int]:
    """How many paid calls the usage ledger on disk holds, by purpose, job, chat, day or model."""
    from zoneinfo import ZoneInfo

    from agent.usage.ledger import UsageLedger

    ledger = UsageLedger(home / "state" / "usage.sqlite", ZoneInfo("UTC"))
    try:
        return {row["key"]: row["calls"] for row in ledger.totals(by)}
    finally:
        ledger.close()


def make_config(home: Path, base_url: str, **sections: dict[str, Any]) -> Config:
    raw: dict[str, Any] = {
        "timezone": "Europe/Berlin",
        "llm": {"api_key": "sk-test-0123456789", "base_url": base_url, "retries": 2, "timeout": 10},
        "gateway": {"shutdown_grace": 5},
        # The control page only where a test is about it (then on a free port).
        "web": {"enabled": False, "port": 0},
        # Vectors only where a test is about them (then from a fake embedding model), and
        # consolidation too (its job would ask the model beside the daily summary's).
        "memory": {"embeddings": {"provider": "none"}, "consolidation": {"enabled": False}},
    }
    for name, values in sections.items():
        raw[name] = {**raw.get(name, {}), **values}
    return parse_config(raw, home=home, environ={})


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto`` (pyproject's addopts): two workers, one per core of CI's machine, for the
    suite or a folder of it; a run of chosen files or tests stays in this process, where
    starting workers (each collects and imports anew) costs more than they save, and so do
    the bench smoke runs (``-m bench``), each of which keeps the cores busy by itself."""
    if config.getoption("markexpr", "") == "bench":
        return 0
    here = config.invocation_params.dir
    chosen = [here / str(arg).split("::")[0] for arg in config.args]
    return 0 if chosen and all(path.is_file() for path in chosen) else 2


@pytest.fixture(scope="session", autouse=True)
def _trusting_the_fakes_authority() -> Iterator[None]:
    """The fake Discord serves TLS, as Discord does, with a certificate from a test authority:
    this process and the ``corvid`` processes it starts (their environments copy this one)
    trust that authority through SSL_CERT_FILE."""
    from tests.fakes.tls import authority

    before = os.environ.get("SSL_CERT_FILE")
    os.environ["SSL_CERT_FILE"] = str(authority().ca_file)
    yield
    if before is None:
        os.environ.pop("SSL_CERT_FILE", None)
    else:
        os.environ["SSL_CERT_FILE"] = before


@pytest.fixture(scope="session", autouse=True)
def _model_sdk_imported() -> None:
    """The anthropic SDK, imported once per test process before its first test. Corvid
    imports it in a thread at start; on a busy machine that takes seconds, which would
    otherwise fall inside the bounded wait of whichever test came first."""
    importlib.import_module("anthropic")


@pytest.fixture(autouse=True)
def _logging_as_it_was() -> Iterator[None]:
    """Some tests run the CLI, whose logging set-up changes the root logger's level and
    handlers for the whole process; later tests must not inherit it."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    levels = {name: logging.getLogger(name).level for name in logging.root.manager.loggerDict}
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    for name, old in levels.items():
        logging.getLogger(name).setLevel(old)


def exceptions_alive(kinds: set[str]) -> Counter[str]:
    """How many exceptions of each of these kinds (class names) are alive now."""
    return Counter(
        type(o).__name__
        for o in gc.get_objects()
        if isinstance(o, BaseException) and type(o).__name__ in kinds
    )


def keywords_only(home: Path) -> None:
    """A home's config.yaml with memory search by keywords: no test loads or fetches a real
    embedding model unless it is about one."""
    config = home / "config.yaml"
    text = config.read_text(encoding="utf-8")
    assert "    provider: local\n" in text
    config.write_text(text.replace("    provider: local\n", "    provider: none\n"))


@pytest.fixture(autouse=True)
def _no_real_embedding_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """What would load the local model fails instead: a test that reaches it forgot to say
    ``provider: none`` (or to give a fake embedder), and must not fetch weights."""
    from agent.memory.embedding import factory
    from agent.memory.embedding.base import EmbeddingError

    def refuse(model_path: str, models_dir: Path, model_url: str = "") -> Any:
        raise EmbeddingError("the tests do not load the local embedding model")

    monkeypatch.setattr(factory, "load_local", refuse)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    init_home(path, {})
    keywords_only(path)
    return path


@pytest.fixture
async def fake_api() -> AsyncIterator[FakeAnthropic]:
    api = FakeAnthropic()
    await api.start()
    yield api
    await api.close()


@pytest.fixture
async def start_gateway(home: Path, fake_api: FakeAnthropic):
    """Start a gateway (real AnthropicLLM → fake API) with a RecordingChannel; stopped after."""
    running: list[App] = []

    async def start(**sections: dict[str, Any]) -> tuple[App, RecordingChannel]:
        channel = RecordingChannel()
        gateway = build_app(make_config(home, fake_api.base_url, **sections), [channel])
        await gateway.start()
        running.append(gateway)
        return gateway, channel

    yield start
    for gateway in running:
        await gateway.stop()


@pytest.fixture
async def fake_telegram() -> AsyncIterator[FakeTelegram]:
    api = FakeTelegram()
    await api.start()
    yield api
    await api.close()


OWNER = 42  # the Telegram user on the allowlist in the tests
TG_GROUP = -100500  # the allowlisted Telegram group


async def _serve_channel(
    home: Path, fake_api: FakeAnthropic, name: str, section: dict[str, Any], **attrs: Any
) -> App:
    """A gateway with one real channel adapter built from config; ``attrs`` are set on the
    adapter (short timeouts for the tests)."""
    from gateway.channel_setup import build_channels

    config = make_config(home, fake_api.base_url, channels={name: section})
    channels = build_channels(config)
    for channel in channels:
        for attr, value in attrs.items():
            setattr(channel, attr, value)
    return build_app(config, channels)


@pytest.fixture
async def telegram_gateway(home: Path, fake_api: FakeAnthropic, fake_telegram: FakeTelegram):
    """Start a gateway whose Telegram channel (real PTB) talks to the fake Bot API."""
    running: list[App] = []

    async def start(**telegram: Any) -> App:
        tg = fake_telegram.channel_config(
            allow_from=[str(OWNER)], groups=[str(TG_GROUP)], **telegram
        )
        gateway = await _serve_channel(home, fake_api, "telegram", tg, retry_backoff=0.05)
        running.append(gateway)
        await gateway.start()
        return gateway

    yield start
    for gateway in running:
        await gateway.stop()


@pytest.fixture
async def fake_discord():
    from tests.fakes.discord_api import FakeDiscord

    api = FakeDiscord()
    await api.start()
    yield api
    await api.close()


@pytest.fixture
async def discord_gateway(home: Path, fake_api: FakeAnthropic, fake_discord):
    """Start a gateway whose Discord channel (real discord.py) talks to the fake Discord."""

    running: list[App] = []

    async def start(**discord: Any) -> App:
        section = fake_discord.channel_config(**discord)
        gateway = await _serve_channel(
            home, fake_api, "discord", section, guild_ready_timeout=0.1, ready_timeout=10
        )
        running.append(gateway)
        await gateway.start()
        return gateway

    yield start
    for gateway in running:
        await gateway.stop()


@contextlib.asynccontextmanager
async def running(config: Config, clock: Any) -> AsyncIterator[App]:
    """A gateway with the configured channels, its scheduler on ``clock``; stopped after."""
    from gateway.channel_setup import build_channels

    gateway = build_app(config, build_channels(config, clock), clock=clock)
    await gateway.start()
    try:
        yield gateway
    finally:
        await gateway.stop()
