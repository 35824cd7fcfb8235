"""A local chat in the terminal (``corvid chat``): the session ``terminal:private:local``."""

from __future__ import annotations

import asyncio
import contextlib
import io
import re
import sys
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any, TextIO

from channels.access import Arrival
from channels.base import Channel
from channels.live import LiveReply, WholeText
from channels.markdown.ansi import to_terminal
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
        *,
        color: bool = True,
    ) -> None:
        super().__init__(access=None)
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout
        self.interactive = self.stdin.isatty() if interactive is None else interactive
        self.color = color and self.interactive
        self._running = False
        self._counter = 0
        self.writing = False  # a streamed reply is being printed: the status line is its own
        # The screen's last line is the prompt, or, while a reply is worked on, its status.
        # The reader thread shows the prompt, the event loop the replies: one at a time.
        self._screen = threading.Lock()
        self._busy = False  # a reply is being worked on: the prompt waits for its end
        self._asking = False  # a line is being read: the prompt belongs on the screen

    def _styled(self, sgr: str, text: str) -> str:
        return f"\x1b[{sgr}m{text}\x1b[0m" if self.color else text

    def render(self, text: str) -> str:
        """A reply as shown: Markdown rendered at a terminal, as written into a pipe."""
        return to_terminal(text, color=self.color) if self.interactive else text

    def _ask(self) -> None:
        """From the reader thread, before it reads a line: the prompt, unless a reply is
        under way (then the reply's end shows it)."""
        with self._screen:
            self._asking = True
            if not self._busy:
                self.stdout.write(self._styled("1", "you>") + " ")
                self.stdout.flush()

    def _answered(self) -> None:
        """The reader has its line: the prompt is gone with the Enter key."""
        with self._screen:
            self._asking = False

    def _show(self, text: str, *, done: bool = False) -> None:
        """Print while a reply is worked on (``done``: the reply is over, and the prompt is
        back if a line is being read)."""
        with self._screen:
            self._busy = not done
            if done and self._asking:
                text += "\r\x1b[K" + self._styled("1", "you>") + " "
            self.stdout.write(text)
            self.stdout.flush()

    def above(self, text: str) -> None:
        """A line that is not the conversation's (a warning of the log), from any thread: set
        above the prompt (shown again after it) or the status line, never into what is being
        typed; below a reply's half-written line, which stays."""
        with self._screen:
            if self.writing:
                out = "\n" + text + "\n"
            else:
                out = "\r\x1b[K" + text + "\n"
                if self._asking and not self._busy:
                    out += self._styled("1", "you>") + " "
            self.stdout.write(out)
            self.stdout.flush()

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
        self.write(self.render(msg.text), "", end=True)

    def write(self, text: str, shown: str, *, end: bool = False) -> None:
        """Print ``text`` where ``shown`` of it is printed already (a streamed reply); ``end``:
        the reply is complete. Text that does not continue what is printed starts afresh."""
        out = ""
        if shown and not text.startswith(shown):
            out, shown = "\n", ""
        self.writing = not end
        if self.interactive:
            new = text[len(shown) :].replace("\n", "\n        ")
            head = "" if shown else "\r\x1b[K" + self._styled("1;36", "corvid>") + " "
            self._show(out + head + new + ("\n" if end else ""), done=end)
        else:
            new = text[len(shown) :]
            self.stdout.write(out + (new.rstrip("\n") + "\n\n" if end else new))
            self.stdout.flush()

    @contextlib.asynccontextmanager
    async def typing(self, key: SessionKey) -> AsyncIterator[None]:
        if self.interactive:
            # In the prompt's place while the reply is worked on; the prompt comes back after.
            self._show("\r\x1b[K" + self._styled("2", "…thinking"))
        try:
            yield
        finally:
            if self.interactive and not self.writing:
                self._show("\r\x1b[K", done=True)

    async def run(self) -> None:
        """Read and submit messages until end of input or /quit."""
        if not self._running:
            raise RuntimeError("TerminalChannel.run() before start()")
        if self.interactive:
            self.stdout.write("Corvid — type a message, /help for commands, /quit to leave.\n")
            self.stdout.flush()
        prompt = (self._ask, self._answered) if self.interactive else None
        lines = _LineReader(self.stdin, prompt)
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
            if self.interactive:  # the prompt for the next line, before the reply starts
                lines.request()
            answered = await self.admit(
                Arrival(KEY, "local", "you", text, message_id=str(self._counter))
            )
            # At a keyboard the next line is read while the reply is written, so /stop can
            # stop it; from a pipe each message is answered before the next is read.
            if answered is not None and not self.interactive:
                await answered


class ScreenLog(io.TextIOBase):
    """The log's stream in ``corvid chat``: standard error until a terminal chat is
    ``attach``ed, then each record set above the prompt (``TerminalChannel.above``)."""

    def __init__(self, fallback: TextIO) -> None:
        self.fallback = fallback
        self.terminal: TerminalChannel | None = None

    def attach(self, terminal: TerminalChannel) -> None:
        if terminal.interactive:
            self.terminal = terminal

    def write(self, text: str) -> int:
        # The log handler writes a whole record (with its traceback) at a time.
        if self.terminal is None:
            return self.fallback.write(text)
        self.terminal.above(text.rstrip("\n").replace("\n", "\r\n"))
        return len(text)

    def flush(self) -> None:
        if self.terminal is None:
            self.fallback.flush()


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
        terminal = self.terminal
        if terminal.interactive:
            # Rendered as far as its rendering cannot change any more; anything that would
            # change what is printed already waits for the end of the reply. The styles that
            # end the text are left off: a code line half written goes on in its colour.
            text = _STYLE_ENDS.sub("", terminal.render(settled(text)))
            if not text or not text.startswith(self._printed):
                return
        terminal.write(text, self._printed)
        self._printed = text

    async def progress(self, note: str) -> None:
        if self.terminal.interactive and not self._printed:
            self.terminal._show("\r\x1b[K" + self.terminal._styled("2", note))

    async def finish(self, msg: OutboundMessage) -> None:
        self.terminal.write(self.terminal.render(msg.text), self._printed, end=True)
        self._printed = ""

    async def take_back(self) -> None:
        if self._printed:
            self.terminal.writing = False
            plain = _PLAIN if self.terminal.color else ""
            self.terminal._show(plain + "\n", done=True)
            self._printed = ""


# The escape sequences that end a rendering (a style turned off), and the one that turns
# every style off.
_STYLE_ENDS = re.compile(r"(?:\x1b\[[0-9;]*m)+\Z")
_PLAIN = "\x1b[0m"

# Characters that may start or end inline Markdown, or make a line part of a table.
_MARKUP = frozenset("*_`[]<>!~#|\\")


def settled(text: str) -> str:
    """The start of a reply still being written whose rendering will not change as more comes:
    the whole lines, and an unfinished last line of plain words (``**bo`` may become bold,
    ``- it`` a list item); table rows wait for the table's last, since the line under a header
    makes it one."""
    end = text.rfind("\n") + 1
    partial = text[end:]
    first = partial.lstrip()[:1]
    if partial and not _MARKUP & set(partial) and first not in "-+>=" and not first.isdigit():
        end = len(text)
    while end and "|" in text[text.rfind("\n", 0, end - 1) + 1 : end]:
        end = text.rfind("\n", 0, end - 1) + 1
    return text[:end]


class _LineReader:
    """Reads lines in a daemon thread, one at a time on request, so Ctrl-C never waits on it.
    ``prompt``: called before each line is read, and once it has been."""

    def __init__(
        self, stream: TextIO, prompt: tuple[Callable[[], None], Callable[[], None]] | None
    ) -> None:
        self._stream = stream
        self._prompt = prompt
        self._loop = asyncio.get_running_loop()
        self._wanted = threading.Event()
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()
        threading.Thread(target=self._read, name="terminal-input", daemon=True).start()

    def request(self) -> None:
        self._wanted.set()

    async def next(self) -> str | None:
        self._wanted.set()
        return await self._queue.get()

    def _read(self) -> None:
        while True:
            self._wanted.wait()
            self._wanted.clear()
            if self._prompt is not None:
                self._prompt[0]()
            try:
                line = self._stream.readline() or None
            except (OSError, ValueError):
                line = None
            if self._prompt is not None:
                self._prompt[1]()
            try:
                self._loop.call_soon_threadsafe(self._queue.put_nowait, line)
            except RuntimeError:  # the event loop has closed: nobody is listening any more
                return
            if line is None:
                return
