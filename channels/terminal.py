"""A local chat in the terminal (``corvid chat``): the private session ``terminal:private:local``.

Interactive on a TTY (a prompt, replies set off by a label; what is typed while a reply is
being written is read at once, so /stop works); when stdin is a pipe it reads one message per
line and prints each reply followed by a blank line, so it can be scripted, each message
answered before the next is read.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any, TextIO

from channels.access import Arrival
from channels.base import Channel
from channels.live import LiveReply, WholeText
from gateway.contract.events import TERMINAL, OutboundMessage, SessionKey

KEY = TERMINAL
QUIT = frozenset({"/quit", "/exit"})


class TerminalChannel(Channel):
    name = "terminal"
    journaled = False

    def __init__(
        self,
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
        interactive: bool | None = None,
    ) -> None:
        super().__init__(access=None)
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout
        self.interactive = self.stdin.isatty() if interactive is None else interactive
        self._running = False
        self._counter = 0
        self.writing = False  # a streamed reply is being printed: the status line is its own

    def live(
        self, key: SessionKey, reply_to: str | None, placed: Callable[[str], None]
    ) -> LiveReply[Any] | None:
        return TerminalLive(self, key) if self.streaming else None

    async def start(self) -> None:
        self._running = True

    async def stop(self) -> None:
        self._running = False

    def running(self) -> bool:
        return self._running

    async def send(self, msg: OutboundMessage) -> None:
        self.write(msg.text, "", end=True)

    def write(self, text: str, shown: str, *, end: bool = False) -> None:
        """Print ``text`` where ``shown`` of it is printed already (a streamed reply); ``end``:
        the reply is complete. Text that does not continue what is printed starts afresh."""
        if shown and not text.startswith(shown):
            self.stdout.write("\n")
            shown = ""
        if self.interactive:
            new = text[len(shown) :].replace("\n", "\n        ")
            head = "" if shown else "\r\x1b[K\x1b[1;36mcorvid>\x1b[0m "
            self.stdout.write(head + new + ("\n" if end else ""))
        else:
            new = text[len(shown) :]
            self.stdout.write(new.rstrip("\n") + "\n\n" if end else new)
        self.writing = not end
        self.stdout.flush()

    @contextlib.asynccontextmanager
    async def typing(self, key: SessionKey) -> AsyncIterator[None]:
        if self.interactive:
            self.stdout.write("\x1b[2m…thinking\x1b[0m")
            self.stdout.flush()
        try:
            yield
        finally:
            if self.interactive and not self.writing:
                self.stdout.write("\r\x1b[K")
                self.stdout.flush()

    async def run(self) -> None:
        """Read and submit messages until end of input or /quit."""
        if not self._running:
            raise RuntimeError("TerminalChannel.run() before start()")
        if self.interactive:
            self.stdout.write("Corvid — type a message, /help for commands, /quit to leave.\n")
            self.stdout.flush()
        lines = _LineReader(self.stdin, "\x1b[1myou>\x1b[0m " if self.interactive else None)
        while True:
            line = await lines.next()
            if line is None:
                return
            text = line.strip()
            if not text:
                continue
            if text in QUIT:
                return
            if not self.running():  # stopped while waiting for the line
                return
            self._counter += 1
            answered = await self.admit(
                Arrival(KEY, "local", "you", text, message_id=str(self._counter))
            )
            # At a keyboard the next line is read while the reply is written, so /stop can
            # stop it; from a pipe each message is answered before the next is read.
            if answered is not None and not self.interactive:
                await answered


class TerminalLive(WholeText):
    """A reply printed as it is written: each frame prints what is new since the last one."""

    every = 0.05
    first_chars = 1

    def __init__(self, terminal: TerminalChannel, key: SessionKey) -> None:
        super().__init__(key, None, lambda ref: None)
        self.terminal = terminal
        self._printed = ""

    @property
    def started(self) -> bool:
        return bool(self._printed)

    async def show(self, text: str) -> None:
        self.terminal.write(text, self._printed)
        self._printed = text

    async def progress(self, note: str) -> None:
        if self.terminal.interactive and not self._printed:
            self.terminal.stdout.write(f"\r\x1b[K\x1b[2m{note}\x1b[0m")
            self.terminal.stdout.flush()

    async def finish(self, msg: OutboundMessage) -> None:
        self.terminal.write(msg.text, self._printed, end=True)
        self._printed = ""

    async def take_back(self) -> None:
        if self._printed:
            self.terminal.stdout.write("\n")
            self.terminal.writing = False
            self._printed = ""


class _LineReader:
    """Reads lines in a daemon thread, one at a time on request, so Ctrl-C never waits on it."""

    def __init__(self, stream: TextIO, prompt: str | None) -> None:
        self._stream = stream
        self._prompt = prompt
        self._loop = asyncio.get_running_loop()
        self._wanted = threading.Event()
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()
        threading.Thread(target=self._read, name="terminal-input", daemon=True).start()

    async def next(self) -> str | None:
        self._wanted.set()
        return await self._queue.get()

    def _read(self) -> None:
        while True:
            self._wanted.wait()
            self._wanted.clear()
            try:
                if self._prompt is not None and self._stream is sys.stdin:
                    line: str | None = input(self._prompt)  # readline editing on a TTY
                else:
                    line = self._stream.readline() or None
            except (EOFError, OSError, ValueError):
                line = None
            try:
                self._loop.call_soon_threadsafe(self._queue.put_nowait, line)
            except RuntimeError:  # the event loop has closed: nobody is listening any more
                return
            if line is None:
                return
