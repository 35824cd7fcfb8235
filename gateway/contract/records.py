"""``record``: a frozen dataclass that is cheaper to define.

For each frozen dataclass, Python 3.11 writes out and compiles six methods: ``__init__``,
``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__`` and ``__delattr__``. That is 0.5-1.7 ms
a class, and a gateway defines 104 of Corvid's before its first poll: 78 ms of CPU in one
timed import, half of the 156 ms its own modules took. A record is a dataclass whose ``__init__`` is
the only method compiled for it; the other five are shared by every record, each reading a
tuple of its class's field names made once:

- equal to an object of the same class whose compared fields are equal, as a dataclass is;
- hashed on its compared fields (or those given ``hash=True``), as a frozen dataclass is;
- shown as ``Name(field=value, ...)``, its ``repr=True`` fields;
- read-only: each field is set once, by ``__init__``; setting or deleting an attribute
  afterwards raises ``dataclasses.FrozenInstanceError``. (``__post_init__`` sets a computed
  field with ``object.__setattr__``, as in a frozen dataclass.) With ``slots=True``, where an
  unset field cannot be told from a set one but by a raised ``AttributeError``, a field is
  set only from the class's own ``__init__``.

Otherwise it is a dataclass: ``fields``, ``replace``, ``asdict``, ``__match_args__``, copying
and pickling work as they do on one, and type checkers see a frozen dataclass. A method a
class defines itself is kept, as ``@dataclass`` keeps it. A record's ``__init__`` sets its
fields through the shared ``__setattr__``: with eight fields, 1.2 µs against a frozen
dataclass's 0.96 (with slots, 1.7 against 0.9).
"""

from __future__ import annotations

import reprlib
import sys
from collections.abc import Callable
from dataclasses import Field, FrozenInstanceError, dataclass, field, fields
from operator import attrgetter
from typing import Any, TypeVar, cast, dataclass_transform, overload

C = TypeVar("C", bound=type)
_caller = sys._getframe


@overload
def record(cls: C, /) -> C: ...


@overload
def record(*, slots: bool = False) -> Callable[[C], C]: ...


@dataclass_transform(frozen_default=True, field_specifiers=(field, Field))
def record(cls: C | None = None, /, *, slots: bool = False) -> C | Callable[[C], C]:
    """``@record`` or ``@record(slots=True)``, where ``@dataclass(frozen=True)`` (with
    ``slots=True``) would be."""

    def make(cls: C) -> C:
        own = set(vars(cls))
        # No __eq__ asked of dataclass, so it leaves __hash__ alone too.
        made: Any = dataclass(cls, repr=False, eq=False, slots=slots)
        _share(made, own)
        return cast(C, made)

    return make if cls is None else make(cls)


def _share(cls: type, own: set[str]) -> None:
    every = fields(cls)
    compared = [f.name for f in every if f.compare]
    hashed = [f.name for f in every if (f.compare if f.hash is None else f.hash)]
    cls.__record_compared__ = staticmethod(_values(compared))  # type: ignore[attr-defined]
    cls.__record_hashed__ = staticmethod(_values(hashed))  # type: ignore[attr-defined]
    cls.__record_shown__ = tuple(f.name for f in every if f.repr)  # type: ignore[attr-defined]
    cls.__record_names__ = tuple(f.name for f in every)  # type: ignore[attr-defined]
    cls.__record_fields__ = frozenset(cls.__record_names__)  # type: ignore[attr-defined]
    # A class that defines __eq__ and not __hash__ has __hash__ = None in its body, which is
    # not a hash of its own (a frozen dataclass adds one then too).
    own_hash = "__hash__" in own and not (cls.__dict__["__hash__"] is None and "__eq__" in own)
    shared: dict[str, Any] = {"__eq__": _eq, "__repr__": _repr, "__delattr__": _delete}
    if "__slots__" in cls.__dict__:
        cls.__record_init__ = cls.__init__.__code__  # type: ignore[attr-defined,misc]
        shared.update(__setattr__=_set_in_init, __getstate__=_get_state, __setstate__=_set_state)
    else:
        shared["__setattr__"] = _set_once
    if not own_hash:
        shared["__hash__"] = _hash
    for name, method in shared.items():
        if name not in own or name == "__hash__":
            setattr(cls, name, method)


def _values(names: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    """The values of ``names`` of an object, as a tuple (as a dataclass compares them)."""
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    if not names:
        return lambda obj: ()
    return attrgetter(*names)  # a tuple already, made in C


def _eq(self: Any, other: Any) -> object:
    if other.__class__ is not self.__class__:
        return NotImplemented
    values = self.__record_compared__
    return values(self) == values(other)


def _hash(self: Any) -> int:
    return hash(self.__record_hashed__(self))


@reprlib.recursive_repr()
def _repr(self: Any) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__record_shown__)
    return f"{self.__class__.__qualname__}({shown})"


def _set_once(self: Any, name: str, value: object) -> None:
    own = self.__dict__
    if name in own or name not in self.__record_fields__:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")
    own[name] = value


def _set_in_init(self: Any, name: str, value: object) -> None:
    # A slot cannot be told unset but by the AttributeError reading it raises, which would
    # make __init__ five times slower: a slotted record's fields are set by its __init__.
    if _caller(1).f_code is not self.__record_init__:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")
    object.__setattr__(self, name, value)


def _get_state(self: Any) -> list[Any]:
    return [getattr(self, name) for name in self.__record_names__]


def _set_state(self: Any, state: list[Any]) -> None:
    for name, value in zip(self.__record_names__, state, strict=True):
        object.__setattr__(self, name, value)


def _delete(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")
