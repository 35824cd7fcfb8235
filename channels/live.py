"""A reply shown while it is being written: frames of the partial answer, then the final text.

``LiveReply`` posts, edits and deletes the platform messages a streamed reply occupies to match
each frame; a platform supplies the cut and those primitives (and a draft, where it has one).
"""

from __future__ import annotations

import logging
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from gateway.contract.events import OutboundMessage, SessionKey

log = logging.getLogger(__name__)

P = TypeVar("P")  # a piece as the platform sends it (text, or text and its rendering)


class LiveReply(ABC, Generic[P]):
    # Seconds between frames: the platform's edit rate for one chat.
    every: float = 1.0
    # The first frame waits for this many characters, or for ``first_after`` seconds.
    first_chars: int = 40
    first_after: float = 1.5
    # The last piece of a frame is shown as a draft (an ephemeral preview), not posted.
    drafts: bool = False

    def __init__(self, key: SessionKey, reply_to: str | None, placed: Callable[[str], None]):
        self.key = key
        self.reply_to = reply_to
        self._placed = placed
        self.refs: list[str] = []  # the platform messages shown, in order
        self._shown: list[P] = []
        self.drafted = False  # a draft preview is showing (nothing to take back: it expires)

    @property
    def started(self) -> bool:
        """Something of this reply is showing in the chat."""
        return bool(self.refs) or self.drafted

    async def show(self, text: str) -> None:
        """A frame: the answer so far (Markdown that may end anywhere)."""
        pieces = await self.cut(text)
        if not pieces:
            return
        if self.drafts:
            *pieces, tail = pieces
            await self._reconcile(pieces)
            await self.draft(tail)
            self.drafted = True
        else:
            await self._reconcile(pieces)

    async def progress(self, note: str) -> None:
        """Show what the assistant is doing while no text has come (a tool running)."""
        await self.show(escape_markdown(note))

    async def finish(self, msg: OutboundMessage) -> None:
        """The final reply: what shows in the chat becomes exactly ``msg``. Raises if the
        platform did not take it."""
        await self._reconcile(await self.cut(msg.text))

    async def take_back(self) -> None:
        """Remove what was shown (the answer turned out to be no reply at all)."""
        await self._reconcile([])

    async def _reconcile(self, pieces: Sequence[P]) -> None:
        for i, piece in enumerate(pieces):
            if i < len(self.refs):
                if self._shown[i] != piece:
                    await self.edit(self.refs[i], piece)
                    self._shown[i] = piece
                continue
            ref = await self.post(piece, i == 0)
            self.refs.append(ref)
            self._shown.append(piece)
            # The journal hears of every post, so a crash mid-stream leaves a record of the
            # half-written messages to take back on the next start.
            self._placed(ref)
        while len(self.refs) > len(pieces):
            await self.delete(self.refs[-1])
            self.refs.pop()
            self._shown.pop()

    # -- the platform --------------------------------------------------------------------------

    @abstractmethod
    async def cut(self, text: str) -> list[P]:
        """``text`` as the pieces it is sent in (none when it shows nothing)."""

    @abstractmethod
    async def post(self, piece: P, first: bool) -> str:
        """Post a new message; returns its platform id. ``first``: it answers ``reply_to``."""

    @abstractmethod
    async def edit(self, ref: str, piece: P) -> None: ...

    @abstractmethod
    async def delete(self, ref: str) -> None: ...

    async def draft(self, piece: P) -> None:
        raise NotImplementedError


class WholeText(LiveReply[str]):
    """A reply shown as one growing text (a terminal, a web page), not as platform messages:
    subclasses override ``show``, ``finish`` and ``take_back``, so the cut and the message
    primitives are never used."""

    async def cut(self, text: str) -> list[str]:
        return [text]

    async def post(self, piece: str, first: bool) -> str:
        raise NotImplementedError

    async def edit(self, ref: str, piece: str) -> None:
        raise NotImplementedError

    async def delete(self, ref: str) -> None:
        raise NotImplementedError


def escape_markdown(text: str) -> str:
    """Literal text for a Markdown renderer: every ASCII punctuation mark escaped."""
    return re.sub(r"([!-/:-@\\[-`{-~])", r"\\\1", text)
