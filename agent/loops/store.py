"""Where each audience's loops are kept (``loops_path``), and the changes made to them."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

from agent.loops.book import Book, Loop, Quote, State, parse
from agent.tools.files import atomic_write
from agent.workspace.audience import log_folder, notes_path
from agent.workspace.history import History
from agent.workspace.reading import NotPlainFile, read_plain, text_of
from gateway.contract.errors import ToolError
from gateway.contract.events import OWNER, Audience

log = logging.getLogger(__name__)

LOOPS = "LOOPS.md"
CHAT_FOLDERS = "memory/chats"
T = TypeVar("T")

HEAD = {
    True: "# Open loops\n\nWhat you and the assistant said you would do. ",
    False: "# Open loops of this chat\n\nWhat was promised here, and what to follow up. ",
}
HOW = (
    "Edit freely: one loop a line; [x] done, [-] dropped. A line the assistant cannot read "
    "is kept as it is.\n\n## Open\n\n## Done\n\n## Dropped\n"
)

# Every change reads the file, changes it and writes it whole: one at a time (the file tools
# run in worker threads, chat commands and the control page on the event loop).
_WRITING = threading.Lock()


def loops_path(audience: Audience) -> str | None:
    """Where an audience's loops are; None for a job that posts to no chat (it has no
    people to keep promises to)."""
    if audience.private:
        return f"{log_folder(OWNER)}/{LOOPS}"
    chat = audience.chat or ""
    if notes_path(audience) is None or "/" in chat or "\\" in chat or chat.startswith("."):
        return None  # a name given from outside a session key (the control page's form)
    return f"{log_folder(audience)}/{LOOPS}"


class Loops:
    """The loops of every audience, in the workspace's Markdown."""

    def __init__(self, workspace: Path, history: History | None = None) -> None:
        self.workspace = workspace
        self.history = history

    def path(self, audience: Audience) -> str:
        rel = loops_path(audience)
        if rel is None:
            raise ToolError("Loops are kept for the owner and for each chat, not for this job.")
        return rel

    def text(self, audience: Audience) -> str:
        """The file's text ("" when there is none): read where it is, never through a link
        out of the workspace, never from something that is not a regular file."""
        rel = loops_path(audience)
        if rel is None:
            return ""
        try:
            path = (self.workspace / rel).resolve()
        except RuntimeError:  # a loop of links (Python < 3.13)
            return ""
        if not path.is_relative_to(self.workspace):
            return ""
        try:
            return text_of(read_plain(path))
        except (FileNotFoundError, NotPlainFile, NotADirectoryError):
            return ""

    def read(self, audience: Audience) -> Book:
        return parse(self.text(audience))

    def chats(self) -> list[Audience]:
        """The shared chats that keep loops."""
        folder = self.workspace / CHAT_FOLDERS
        try:
            names = sorted(e.name for e in os.scandir(folder) if e.is_dir(follow_symlinks=False))
        except OSError:
            return []
        found = []
        for name in names:
            rel = loops_path(Audience(name))
            if rel is not None and (self.workspace / rel).is_file():
                found.append(Audience(name))
        return found

    def every(self) -> list[tuple[Audience, Book]]:
        """The owner's loops, then each shared chat's."""
        return [(a, self.read(a)) for a in (OWNER, *self.chats())]

    def change(self, audience: Audience, edit: Callable[[Book], T]) -> T:
        """Apply ``edit`` to the audience's loops and write them back, numbered; a hand edit
        that lands while it runs is read again, not overwritten."""
        rel = self.path(audience)
        with _WRITING:
            for _ in range(3):
                before = self.text(audience)
                book = parse(before or HEAD[audience.private] + HOW)
                result = edit(book)
                book.number()
                if self.text(audience) != before:
                    continue  # changed meanwhile (by hand): do it again on the new text
                for problem in book.problems:
                    log.warning("%s: %s", rel, problem)
                atomic_write(
                    self.workspace / rel, book.render(), keep_mode=False, history=self.history
                )
                return result
        raise ToolError(f"{rel} kept changing while it was written; try again.")

    def add(self, audience: Audience, loop: Loop) -> Loop:
        return self.change(audience, lambda book: book.add(loop))

    def close(
        self,
        audience: Audience,
        loop_id: int,
        state: State,
        *,
        day: str,
        by: str,
        quote: Quote | None = None,
    ) -> Loop:
        """Mark loop ``loop_id`` done or dropped on ``day``, closed ``by`` whom and where it was
        said (quoted when that was written after reading from outside); refused when there is
        no such loop or it is closed already."""

        def edit(book: Book) -> Loop:
            loop = book.get(loop_id)
            if loop is None:
                raise ToolError(f"There is no loop #{loop_id} here.")
            if loop.state != State.OPEN:
                raise ToolError(f"Loop #{loop_id} ({loop.what}) is {loop.state} already.")
            closed = replace(loop, state=state, closed=day, by=by, quote=loop.quote or quote)
            book.put(closed)
            return closed

        return self.change(audience, edit)


def open_loops(book: Book) -> list[Loop]:
    return [lp for lp in book.loops() if lp.state == State.OPEN]
