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
from collections.abc import AsyncIterator
from typing import TextIO

from channels.access import Arrival
from channels.base import Channel
from gateway.events import TERMINAL, OutboundMessage, SessionKey

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

    async def start(self) -> None:
        self._running = True

    async def stop(self) -> None:
        self._running = False

    def running(self) -> bool:
        return self._running

    async def send(self, msg: OutboundMessage) -> None:
        if self.interactive:
            body = msg.text.replace("\n", "\n        ")
            self.stdout.write(f"\r\x1b[K\x1b[1;36mcorvid>\x1b[0m {body}\n")
        else:
            self.stdout.write(msg.text.rstrip("\n") + "\n\n")
        self.stdout.flush()

    @contextlib.asynccontextmanager
    async def typing(self, key: SessionKey) -> AsyncIterator[None]:
        if self.interactive:
            self.stdout.write("\x1b[2m…thinking\x1b[0m")
            self.stdout.flush()
        try:
            yield
        finally:
            if self.interactive:
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
