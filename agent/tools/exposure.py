"""What a session has read from outside the owner's own audience (``Exposure``)."""

from __future__ import annotations

from collections.abc import Callable


class Exposure:
    """What a session's context holds from outside the owner's own audience: another chat's
    log or files, a web page, an MCP server's result, a file someone sent. The model may follow
    instructions hidden in any of it, so once a session has read such text (until ``/new``),
    what it writes where the owner's other chats read it is marked with where it came from,
    and it cannot change the files every chat reads.

    ``sources`` is shared with the session's state; ``record`` makes a new one durable."""

    __slots__ = ("_record", "sources")

    def __init__(
        self, sources: list[str] | None = None, record: Callable[[str], None] | None = None
    ) -> None:
        self.sources = sources if sources is not None else []
        self._record = record

    def saw(self, source: str) -> None:
        if source in self.sources:
            return
        self.sources.append(source)
        if self._record is not None:
            self._record(source)

    @property
    def clean(self) -> bool:
        return not self.sources

    def describe(self) -> str:
        """The sources, for a note to the model or a quoted entry's heading."""
        shown = self.sources[:3]
        more = len(self.sources) - len(shown)
        return ", ".join(shown) + (f" and {more} more" if more > 0 else "")
