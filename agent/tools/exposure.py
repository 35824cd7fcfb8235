"""What a session has read from outside the owner's audience, and the addresses it may fetch."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from urllib.parse import urljoin


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


# A web address in text, up to the first character no address holds unescaped.
_URL = re.compile(r"https?://[^\s<>\"'`^{}|\\\[\]]+", re.IGNORECASE)
# The target of a Markdown link, which a page's text may give relative to the page.
_LINK_TARGET = re.compile(r"\]\(\s*<?([^)\s>]+)")
_QUOTED = re.compile(r"<untrusted\b.*?(?:</untrusted>|\Z)", re.IGNORECASE | re.DOTALL)


def addresses(text: str) -> set[str]:
    """The web addresses written in ``text``, without the punctuation a sentence puts after
    one (a full stop, a closing bracket that does not belong to it)."""
    found = set()
    for m in _URL.finditer(text):
        url = m.group().rstrip(".,;:!?*_~")
        while url.endswith(")") and url.count(")") > url.count("("):
            url = url[:-1].rstrip(".,;:!?*_~")
        found.add(url)
    return found


class Reach:
    """The web addresses a conversation may fetch without asking once it has read text from
    outside: those the owner wrote, and the links of pages it fetched. Any other address was
    composed by the model, and could carry what it knows off the machine.

    ``urls`` is shared with the session's state (kept while the session is loaded: after a
    restart an address is asked about once more)."""

    __slots__ = ("urls",)

    def __init__(self, urls: set[str] | None = None) -> None:
        self.urls = urls if urls is not None else set()

    def owner_wrote(self, text: str) -> None:
        """The owner's own words: what is quoted in them (a job's instruction written after
        reading outside text) is not theirs."""
        self.urls |= addresses(_QUOTED.sub(" ", text))

    def found(self, page: str, base: str) -> None:
        """A page fetched from ``base``: its links, relative ones made whole."""
        self.urls |= addresses(page)
        for m in _LINK_TARGET.finditer(page):
            target = m.group(1)
            if not _URL.match(target):
                self.urls |= addresses(urljoin(base, target))

    def listed(self, urls: Iterable[str]) -> None:
        """Addresses a search gave as its results."""
        self.urls |= {u.strip() for u in urls if u.strip()}

    def __contains__(self, url: object) -> bool:
        return isinstance(url, str) and url.strip() in self.urls
