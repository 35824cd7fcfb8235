"""Who changed a workspace file, a change as the history keeps it, and whose history is seen."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from pathlib import PurePosixPath

from agent.workspace.audience import area
from gateway.contract.events import Audience
from gateway.infra.times import local_time

HAND_EDIT = "hand edit"


@dataclass(frozen=True, slots=True)
class Author:
    """Who changed a file: a session, the control page, a job, the terminal; and with what."""

    who: str
    what: str = ""


_AUTHOR: contextvars.ContextVar[Author | None] = contextvars.ContextVar("author", default=None)


@contextlib.contextmanager
def authored(author: Author) -> Iterator[None]:
    """Changes made inside are recorded as ``author``'s (threads started with
    ``asyncio.to_thread`` inside inherit it)."""
    token = _AUTHOR.set(author)
    try:
        yield
    finally:
        _AUTHOR.reset(token)


def current_author() -> Author:
    return _AUTHOR.get() or Author("corvid")


@dataclass(frozen=True, slots=True)
class Change:
    id: int
    at: datetime
    path: str
    before: str | None  # the version's digest; None: the file did not exist
    after: str | None
    who: str
    what: str
    undoes: int | None

    def describe(self, tz: tzinfo = UTC) -> str:
        """One line: its number, when (in ``tz``, named), the file, and who made it."""
        by = self.who + (f" ({self.what})" if self.what else "")
        return f"#{self.id} {local_time(self.at, tz, seconds=True)}  {self.path}  {by}"


COLUMNS = "id, at, path, before, after, who, what, undoes"


def change_of(row: tuple[object, ...]) -> Change:
    i, at, path, before, after, who, what, undoes = row
    return Change(
        int(str(i)),
        datetime.fromisoformat(str(at)),
        str(path),
        None if before is None else str(before),
        None if after is None else str(after),
        str(who),
        str(what),
        None if undoes is None else int(str(undoes)),
    )


def may_see(audience: Audience, rel: str) -> bool:
    """Whose history ``audience`` may read: the owner's private sessions every file's, a shared
    chat only its own places' (not even the files everyone reads: who changed them is the
    owner's business). Anything else is denied."""
    if audience.private:
        return True
    where = area(PurePosixPath(rel))
    return (
        isinstance(where, Audience)
        and where.chat is not None
        and audience.chat is not None
        and where.chat.casefold() == audience.chat.casefold()
    )
