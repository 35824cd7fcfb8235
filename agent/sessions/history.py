"""A conversation's messages as the process holds them: each as its compact JSON text."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, MutableSequence, Sequence
from typing import Any, overload

Message = dict[str, Any]


def _pack(message: Message) -> bytes:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()


def _unpack(items: Sequence[bytes]) -> list[Message]:
    # One parse of the whole list is several times faster than one per message.
    decoded: list[Message] = json.loads(b"[" + b",".join(items) + b"]")
    return decoded


# Compact JSON, read back into dicts only where used: as dicts, lists and strings a message
# takes several times the memory, and every loaded conversation holds its whole history. What
# is read back is a fresh copy; a message is changed by replacing it.
class History(MutableSequence[Message]):
    __slots__ = ("_found", "_items", "_nbytes", "checked")

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        self._items: list[bytes] = [_pack(m) for m in messages]
        self._nbytes = sum(len(item) for item in self._items)
        # What ``may_contain`` found so far, by needle: how many messages it has looked
        # through and which of them hold it. Appending keeps it; any other change drops it.
        self._found: dict[bytes, tuple[int, list[int]]] = {}
        # How many leading messages a reader has checked (``agent/model/wire.py``: fit to send
        # as stored). Appending keeps it; any other change sets it back to 0.
        self.checked = 0

    def _rewritten(self) -> None:
        """After a change other than an append: what was learnt about the messages is void."""
        self.checked = 0
        self._found.clear()
        self._nbytes = sum(len(item) for item in self._items)

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...

    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            return _unpack(self._items[index])
        message: Message = json.loads(self._items[index])
        return message

    @overload
    def __setitem__(self, index: int, value: Message) -> None: ...

    @overload
    def __setitem__(self, index: slice, value: Iterable[Message]) -> None: ...

    def __setitem__(self, index: int | slice, value: Any) -> None:
        if isinstance(index, slice):
            self._items[index] = [_pack(m) for m in value]
        else:
            self._items[index] = _pack(value)
        self._rewritten()

    def __delitem__(self, index: int | slice) -> None:
        del self._items[index]
        self._rewritten()

    def insert(self, index: int, value: Message) -> None:
        packed = _pack(value)
        appended = index >= len(self._items)
        self._items.insert(index, packed)
        if appended:
            self._nbytes += len(packed)
        else:
            self._rewritten()

    def stored(self) -> list[bytes]:
        """The messages as stored: each one's compact JSON, UTF-8."""
        return list(self._items)

    def __iter__(self) -> Iterator[Message]:
        return iter(_unpack(self._items))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, History):
            return self._items == other._items
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like a list

    def __repr__(self) -> str:
        return f"History({list(self)!r})"

    @property
    def nbytes(self) -> int:
        """Bytes of JSON held: what a model call carrying this conversation will copy."""
        return self._nbytes

    def may_contain(self, text: str) -> list[Message]:
        """In order, every message with ``text`` in one of its strings, and maybe a few
        without (the search is of the stored JSON, where an escape such as ``\\u001f`` holds
        digits); the rest are not read back, which is cheaper than reading every message."""
        needle = json.dumps(text, ensure_ascii=False)[1:-1].encode()
        items = self._items
        # Only the messages added since the last search of this needle are looked through.
        looked, hits = self._found.get(needle, (0, []))
        hits = hits + [i for i in range(looked, len(items)) if needle in items[i]]
        self._found[needle] = (len(items), hits)
        return _unpack([items[i] for i in hits])
