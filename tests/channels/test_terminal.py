"""The terminal chat (``corvid chat``): the real TerminalChannel over a pipe, the gateway and
agent behind it, the real anthropic client against the fake Messages API."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import pty
import re
import signal
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from channels.terminal import TerminalChannel
from gateway.app import build_app
from gateway.config.home import init_home
from tests.conftest import keywords_only, make_config
from tests.fakes.anthropic_api import FakeAnthropic, Reply
from tests.fakes.process import FIRST_CALL


class _Pipe:
    """A pipe standing in for the keyboard: lines written by the test are read by the channel."""

    def __init__(self) -> None:
        rfd, wfd = os.pipe()
        self.reader = os.fdopen(rfd, "r")
        self._writer = os.fdopen(wfd, "w")

    def type(self, line: str) -> None:
        self._writer.write(line + "\n")
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()


class _Screen(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.changed = asyncio.Event()
        self._loop = asyncio.get_running_loop()

    def flush(self) -> None:
        # The terminal's reader thread writes its prompt too: an asyncio.Event is set from
        # the loop's own thread only.
        self._loop.call_soon_threadsafe(self.changed.set)

    async def wait_for(self, seen: Callable[[str], bool]) -> str:
        async with asyncio.timeout(10):
            while not seen(self.getvalue()):
                self.changed.clear()
                await self.changed.wait()
        return self.getvalue()


Chat = tuple[_Pipe, _Screen, "asyncio.Task[None]"]


@pytest.fixture
async def chat(home, fake_api: FakeAnthropic) -> AsyncIterator[Chat]:
    keyboard, screen = _Pipe(), _Screen()
    terminal = TerminalChannel(stdin=keyboard.reader, stdout=screen, interactive=True)
    app = build_app(make_config(home, fake_api.base_url), [terminal], with_scheduler=False)
    await app.start()
    reading = asyncio.create_task(terminal.run())
    yield keyboard, screen, reading
    keyboard.close()
    await asyncio.wait_for(reading, 10)
    await app.stop(grace=0)
    keyboard.reader.close()


async def test_stop_typed_during_a_reply_stops_it_at_once(chat, fake_api: FakeAnthropic):
    keyboard, screen, _reading = chat
    never = asyncio.Event()

    async def hang(body):
        await never.wait()

    fake_api.brain = hang
    keyboard.type("write me a long essay")
    await fake_api.wait_for_requests(1)
    # The reply is still being written; /stop is read and acted on now, not after it.
    keyboard.type("/stop")
    await screen.wait_for(lambda out: "Stopped." in out)
    fake_api.brain = lambda body: Reply("short answer")
    keyboard.type("something short")
    out = await screen.wait_for(lambda out: "short answer" in out)
    assert "write me a long essay" not in str(fake_api.message_requests[-1].body["messages"])
    assert out.index("Stopped.") < out.index("short answer")


async def test_end_of_input_ends_the_chat(chat):
    keyboard, screen, reading = chat
    keyboard.close()
    await asyncio.wait_for(reading, 10)
    assert "type a message" in screen.getvalue()


async def test_a_reply_is_printed_as_it_is_written(chat, fake_api: FakeAnthropic):
    keyboard, screen, _reading = chat
    release = asyncio.Event()
    fake_api.enqueue(
        Reply("The first half, then the second half.", hold=release, hold_after=15, chunk=15)
    )
    keyboard.type("tell me")
    # The start of the reply is on the screen while the model is still writing the rest.
    await screen.wait_for(lambda s: "The first half," in s)
    assert "second half" not in screen.getvalue()
    release.set()
    out = await screen.wait_for(lambda s: "the second half.\n" in s)
    assert out.count("The first half") == 1  # printed once, continued in place


async def test_a_chat_at_the_terminal_is_answered_and_nothing_of_it_is_kept_to_send_again(
    chat, fake_api: FakeAnthropic, home
):
    """The person is at the keyboard: a reply (and what it said before using a tool) goes to
    the screen once, and neither it nor the message is journaled for a later start to send
    again."""
    import sqlite3

    keyboard, screen, _reading = chat
    fake_api.enqueue(
        Reply("Let me look.", tool_calls=[("memory_search", {"query": "hello"})]),
        Reply("Hello from the terminal."),
    )
    keyboard.type("hi there")
    # The line ends once the reply is finished: by then it has been through delivery.
    out = await screen.wait_for(lambda s: "Hello from the terminal.\n" in s)
    assert out.count("Hello from the terminal.") == 1 and out.count("Let me look.") == 1
    with sqlite3.connect(home / "state" / "gateway.sqlite") as db:
        tables = ("inbound", "outbox")
        kept = [db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in tables]
    assert kept == [0, 0]


def screen_of(raw: str) -> list[str]:
    """What a terminal shows for ``raw``: carriage returns, erasing to the end of the line and
    colours (dropped) understood, enough for a line-by-line chat."""
    lines, row, col = [""], 0, 0
    for token in re.findall(r"\x1b\[[0-9;]*[A-Za-z]|\r|\n|[^\x1b\r\n]", raw):
        if token == "\r":
            col = 0
        elif token == "\n":
            row += 1
            lines += [""] * (row + 1 - len(lines))
        elif token == "\x1b[K":
            lines[row] = lines[row][:col]
        elif token.startswith("\x1b["):
            continue
        else:
            line = lines[row].ljust(col)
            lines[row] = line[:col] + token + line[col + 1 :]
            col += 1
    return lines


class Tty:
    """A ``corvid`` command at a (pseudo-)terminal, as a person has it."""

    def __init__(self, proc: asyncio.subprocess.Process, master: int) -> None:
        self.proc, self.master = proc, master
        self.raw = b""
        self._more = asyncio.Event()
        asyncio.get_running_loop().add_reader(master, self._read)

    def _read(self) -> None:
        try:
            self.raw += os.read(self.master, 65536)
        except OSError:  # the other side has closed
            asyncio.get_running_loop().remove_reader(self.master)
        self._more.set()

    @property
    def text(self) -> str:
        return self.raw.decode(errors="replace")

    async def wait_for(
        self, seen: Callable[[list[str]], bool], timeout: float = FIRST_CALL
    ) -> list[str]:
        """The screen once it shows what ``seen`` looks for. The bound is that of a fresh
        process's first model call, which any wait here may include."""
        async with asyncio.timeout(timeout):
            while not seen(screen_of(self.text)):
                self._more.clear()
                await self._more.wait()
        return screen_of(self.text)

    def type(self, line: str) -> None:
        os.write(self.master, line.encode() + b"\r")


@contextlib.asynccontextmanager
async def corvid_chat_at_a_tty(home: Path, api: FakeAnthropic, **env: str) -> AsyncIterator[Tty]:
    environ = {**os.environ, "ANTHROPIC_API_KEY": "sk-tty-key", "CORVID_HOME": str(home),
               "ANTHROPIC_BASE_URL": api.base_url, "TERM": "xterm", **env}  # fmt: skip
    if "NO_COLOR" not in env:
        environ.pop("NO_COLOR", None)
    environ.pop("ANTHROPIC_AUTH_TOKEN", None)
    async with corvid_at_a_tty(["chat"], environ) as tty:
        yield tty


@contextlib.asynccontextmanager
async def corvid_at_a_tty(argv: list[str], environ: dict[str, str]) -> AsyncIterator[Tty]:
    """``corvid ARGV`` run at a pseudo-terminal; killed on the way out if still running.

    It gets Ctrl-C as a command run at a terminal does, even when the tests themselves run
    with SIGINT ignored (a shell's background job does), which a child would inherit."""
    master, slave = pty.openpty()
    ignored = signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    if ignored:  # a handler, unlike SIG_IGN, is the default again in the program exec'd
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "gateway.ops.cli", *argv,
            stdin=slave, stdout=slave, stderr=slave, env=environ,
        )  # fmt: skip
    finally:
        if ignored:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.close(slave)
    tty = Tty(proc, master)
    try:
        yield tty
    finally:
        if proc.returncode is None:
            proc.kill()
        await asyncio.wait_for(proc.wait(), 30)
        asyncio.get_running_loop().remove_reader(master)
        os.close(master)


def prompts(screen: list[str]) -> bool:
    return bool(screen) and screen[-1] == "you> "


async def test_corvid_chat_at_a_terminal_reads_as_a_conversation(tmp_path: Path):
    api = FakeAnthropic()
    await api.start()
    api.enqueue(Reply("Hello **there**, friend.\n\n- one\n- two"), Reply("Second reply."))
    try:
        async with corvid_chat_at_a_tty(tmp_path / "h", api) as tty:
            await tty.wait_for(prompts)
            tty.type("hi")
            await tty.wait_for(lambda s: prompts(s) and any("friend." in line for line in s))
            tty.type("again")
            await tty.wait_for(lambda s: prompts(s) and any("Second reply." in line for line in s))
            tty.type("/help")
            screen = await tty.wait_for(
                lambda s: prompts(s) and any("/quit — leave" in x for x in s)
            )
            tty.type("/quit")
            assert await asyncio.wait_for(tty.proc.wait(), 30) == 0
    finally:
        await api.close()
    talk = [line for line in screen if line.strip()]
    # A prompt after every reply, the person's lines after it, and no status left behind.
    first = talk.index("you> hi")
    assert talk[first + 1 : first + 4] == [
        "corvid> Hello there, friend.",
        "        • one",
        "        • two",
    ]
    assert talk[first + 4 : first + 6] == ["you> again", "corvid> Second reply."]
    assert "you> /help" in talk, "\n".join(talk)
    assert "…thinking" not in "\n".join(screen)
    assert any(line.strip().startswith("/quit — leave") for line in talk)  # /help lists it
    assert "\x1b[1mthere\x1b[22m" in tty.text  # Markdown as the terminal shows it
    assert "**" not in tty.text


async def test_no_color_is_honoured(tmp_path: Path):
    api = FakeAnthropic()
    await api.start()
    api.enqueue(Reply("Some **bold** and `code`."))
    try:
        async with corvid_chat_at_a_tty(tmp_path / "h", api, NO_COLOR="1") as tty:
            await tty.wait_for(prompts)
            tty.type("hi")
            screen = await tty.wait_for(lambda s: prompts(s) and any("code" in x for x in s))
            tty.type("/quit")
            assert await asyncio.wait_for(tty.proc.wait(), 30) == 0
    finally:
        await api.close()
    assert "corvid> Some bold and `code`." in screen
    assert not re.search(r"\x1b\[[0-9;]*m", tty.text), repr(tty.text)  # no colour at all


async def test_a_second_chat_on_the_same_home_refuses_and_the_first_goes_on(tmp_path: Path):
    api = FakeAnthropic()
    await api.start()
    api.enqueue(Reply("Still here."))
    home = tmp_path / "h"
    try:
        async with corvid_chat_at_a_tty(home, api) as first:
            await first.wait_for(prompts)
            second = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "gateway.ops.cli", "chat",
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env={**os.environ, "ANTHROPIC_API_KEY": "sk-tty-key", "CORVID_HOME": str(home),
                     "ANTHROPIC_BASE_URL": api.base_url},
            )  # fmt: skip
            _out, err = await asyncio.wait_for(second.communicate(b"hello\n"), 30)
            assert second.returncode == 1
            expected = f"corvid: a corvid chat is already open for this home (pid {first.proc.pid})"
            assert expected in err.decode()
            assert len(api.requests) == 0  # the second never asked the model
            first.type("hi")
            await first.wait_for(lambda s: prompts(s) and any("Still here." in x for x in s))
            first.type("/quit")
            assert await asyncio.wait_for(first.proc.wait(), 30) == 0
    finally:
        await api.close()


async def test_a_message_cancelled_with_ctrl_c_is_not_asked_again(tmp_path: Path):
    never = asyncio.Event()

    async def hang(body):
        await never.wait()

    api = FakeAnthropic(brain=hang)
    await api.start()
    home = tmp_path / "h"
    try:
        async with corvid_chat_at_a_tty(home, api) as tty:
            await tty.wait_for(prompts)
            tty.type("write me a very long essay")
            await api.wait_for_requests(1, FIRST_CALL)
            tty.proc.send_signal(signal.SIGINT)  # Ctrl-C
            await asyncio.wait_for(tty.proc.wait(), 30)
        api.brain = lambda body: Reply("hello again")
        async with corvid_chat_at_a_tty(home, api) as tty:
            await tty.wait_for(prompts)
            tty.type("hello")
            await tty.wait_for(lambda s: prompts(s) and any("hello again" in x for x in s))
            tty.type("/quit")
            await asyncio.wait_for(tty.proc.wait(), 30)
    finally:
        never.set()
        await api.close()
    asked = json.dumps(api.message_requests[-1].body["messages"])
    assert "hello" in asked and "long essay" not in asked


async def test_a_streamed_code_line_that_grows_is_continued_in_place_not_printed_again(
    tmp_path: Path,
):
    """A line of code shown half-written, in its colour, then finished with ``<``, ``_`` and
    ``[``: the rest is added to it, and the reply is on the screen once."""
    release = asyncio.Event()
    answer = "Like this:\n\n```python\ndef foo_bar(x):\n    return x < 3 and x[0]\n```\n\nDone."
    api = FakeAnthropic()
    await api.start()
    api.enqueue(Reply(answer, hold=release, hold_after=answer.index("eturn"), chunk=1))
    try:
        async with corvid_chat_at_a_tty(tmp_path / "h", api) as tty:
            await tty.wait_for(prompts)
            tty.type("show me")
            await tty.wait_for(lambda s: any(line.endswith("    r") for line in s))
            release.set()
            screen = await tty.wait_for(lambda s: prompts(s) and any("Done." in x for x in s))
            tty.type("/quit")
            assert await asyncio.wait_for(tty.proc.wait(), 30) == 0
    finally:
        await api.close()
    talk = [line for line in screen if line.strip()]
    first = talk.index("you> show me")
    assert talk[first + 1 :] == [
        "corvid> Like this:",
        "          def foo_bar(x):",
        "              return x < 3 and x[0]",
        "        Done.",
        "you> ",
    ], "\n".join(talk)


async def test_a_warning_at_the_prompt_goes_above_it_and_the_prompt_comes_back(tmp_path: Path):
    """A log line while a line is being typed (an MCP server that cannot start, here) is set
    on a line of its own above the prompt, which is shown again; typing goes on after it."""
    import yaml

    api = FakeAnthropic()
    await api.start()
    api.enqueue(Reply("Still here."))
    home = tmp_path / "h"
    init_home(home, {})
    keywords_only(home)
    config = yaml.safe_load((home / "config.yaml").read_text())
    config["mcp"] = {"servers": {"gone": {"command": str(tmp_path / "no-such-server")}}}
    (home / "config.yaml").write_text(yaml.safe_dump(config))
    try:
        async with corvid_chat_at_a_tty(home, api) as tty:
            screen = await tty.wait_for(
                lambda s: prompts(s) and any("MCP server gone cannot start" in x for x in s)
            )
            tty.type("hi")
            screen = await tty.wait_for(lambda s: prompts(s) and any("Still here." in x for x in s))
            tty.type("/quit")
            assert await asyncio.wait_for(tty.proc.wait(), 30) == 0
    finally:
        await api.close()
    [warning] = [line for line in screen if "MCP server gone cannot start" in line]
    assert warning.startswith("20") and "ERROR" in warning  # its own line, not after "you> "
    assert "you> hi" in screen
