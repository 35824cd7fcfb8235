"""A record behaves as the frozen dataclass it stands for: equality, hashing, repr, read-only
fields, and the dataclass functions, copying and pickling; each checked against a frozen
dataclass of the same shape where one exists."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import re
from dataclasses import FrozenInstanceError, field
from pathlib import Path

import pytest

from gateway.contract.records import record


@record
class Point:
    x: int
    y: int = 0
    tags: tuple[str, ...] = ()
    note: str = field(default="", compare=False)
    secret: str = field(default="", repr=False)


@dataclasses.dataclass(frozen=True)
class FrozenPoint:
    x: int
    y: int = 0
    tags: tuple[str, ...] = ()
    note: str = field(default="", compare=False)
    secret: str = field(default="", repr=False)


@record(slots=True)
class Slotted:
    a: int
    b: str = "b"


@dataclasses.dataclass(frozen=True, slots=True)
class FrozenSlotted:
    a: int
    b: str = "b"


@record
class One:
    only: float


@record
class Empty:
    pass


@record
class Derived:
    base: int
    double: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "double", self.base * 2)


@record
class Child(Point):
    z: int = 9


@record(slots=True)
class SlottedChild(Slotted):
    c: float = 0.5


@record
class OwnMethods:
    key: str

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OwnMethods) and other.key.lower() == self.key.lower()

    def __repr__(self) -> str:
        return f"<{self.key}>"


@record
class OwnHash:
    key: str

    def __hash__(self) -> int:
        return 7


PAIRS = [
    (Point(1, 2, ("a",), note="n", secret="s"), FrozenPoint(1, 2, ("a",), note="n", secret="s")),
    (Point(0), FrozenPoint(0)),
    (Slotted(3), FrozenSlotted(3)),
    (Slotted(3, "c"), FrozenSlotted(3, "c")),
]


@pytest.mark.parametrize(("made", "frozen"), PAIRS)
def test_repr_and_hash_are_the_frozen_dataclass_ones(made: object, frozen: object) -> None:
    assert repr(made) == repr(frozen).replace("Frozen", "")
    assert hash(made) == hash(frozen)
    assert dataclasses.astuple(made) == dataclasses.astuple(frozen)  # type: ignore[call-overload]


def test_equality_follows_the_compared_fields_and_the_class() -> None:
    assert Point(1, 2) == Point(1, 2, note="other note")  # note is compare=False
    assert hash(Point(1, 2)) == hash(Point(1, 2, note="other note"))
    assert Point(1, 2) != Point(1, 3)
    assert Point(1, tags=("a",)) != Point(1, tags=("b",))
    # Another class, even one derived, with the same values is not equal (as dataclasses).
    assert Point(1) != FrozenPoint(1)
    assert Point(1) != Child(1)
    assert Point(1).__eq__(FrozenPoint(1)) is NotImplemented
    assert {Point(1, 2), Point(1, 2), Point(2, 1)} == {Point(1, 2), Point(2, 1)}
    nan = float("nan")
    one = One(nan)
    assert one == one and One(1.0) == One(1.0) and hash(One(1.0)) == hash((1.0,))
    assert Empty() == Empty() and hash(Empty()) == hash(()) and repr(Empty()) == "Empty()"


@pytest.mark.parametrize("made", [Point(1), Slotted(1), Derived(2), Child(1), SlottedChild(1)])
def test_fields_cannot_be_set_again_or_deleted(made: object) -> None:
    for each in dataclasses.fields(made):  # type: ignore[arg-type]
        with pytest.raises(FrozenInstanceError):
            setattr(made, each.name, 5)
        with pytest.raises(FrozenInstanceError):
            delattr(made, each.name)
        assert getattr(made, each.name) != 5
    with pytest.raises(FrozenInstanceError):
        made.extra = 1  # type: ignore[attr-defined]
    assert not hasattr(made, "extra")


def test_post_init_sets_computed_fields_as_in_a_frozen_dataclass() -> None:
    made = Derived(4)
    assert made.double == 8
    assert made == Derived(4) and made != Derived(5)
    assert repr(made) == "Derived(base=4, double=8)"


def test_the_dataclass_functions_copies_and_pickles_work() -> None:
    point = Point(1, 2, ("t",), note="n", secret="s")
    assert dataclasses.is_dataclass(point) and dataclasses.is_dataclass(Slotted)
    assert [f.name for f in dataclasses.fields(point)] == ["x", "y", "tags", "note", "secret"]
    assert dataclasses.replace(point, y=5) == Point(1, 5, ("t",), secret="s")
    assert dataclasses.asdict(point)["secret"] == "s"
    assert Point.__match_args__ == ("x", "y", "tags", "note", "secret")
    for made in (point, Slotted(1, "z"), Derived(3), Child(1, z=2), SlottedChild(2, "y", 1.5)):
        for again in (copy.copy(made), copy.deepcopy(made), pickle.loads(pickle.dumps(made))):
            assert again == made and again is not made and repr(again) == repr(made)
            with pytest.raises(FrozenInstanceError):
                setattr(again, dataclasses.fields(made)[0].name, 0)
    match point:
        case Point(1, 2):
            pass
        case _:
            pytest.fail("a record matches by position as a dataclass does")


def test_a_subclass_record_has_its_own_fields_in_each_method() -> None:
    child = Child(1, 2, z=3)
    assert repr(child) == "Child(x=1, y=2, tags=(), note='', z=3)"
    assert child == Child(1, 2, z=3) and child != Child(1, 2, z=4)
    assert hash(child) == hash((1, 2, (), "", 3))
    slotted = SlottedChild(1, "x", 2.0)
    assert repr(slotted) == "SlottedChild(a=1, b='x', c=2.0)" and slotted != SlottedChild(1, "x")
    with pytest.raises(FrozenInstanceError):
        slotted.a = 2  # type: ignore[misc]


def test_methods_a_class_defines_are_kept() -> None:
    assert OwnMethods("A") == OwnMethods("a") and repr(OwnMethods("A")) == "<A>"
    # __eq__ alone in the body: a hash is added, as a frozen dataclass adds one.
    assert hash(OwnMethods("A")) == hash(("A",))
    assert hash(OwnHash("x")) == 7 and OwnHash("x") == OwnHash("x")


def test_repr_of_a_record_holding_itself_does_not_recurse() -> None:
    holder = Point(1, tags=())
    loop: list[object] = [holder]
    looped = Point(2, tags=(loop,))  # type: ignore[arg-type]
    loop.append(looped)
    assert "..." in repr(looped)


def test_corvid_defines_no_frozen_dataclass_but_as_a_record() -> None:
    """A frozen dataclass costs Python 3.11 five methods compiled as it is defined; Corvid's
    are records (start time: see gateway/contract/records.py)."""
    root = Path(__file__).resolve().parents[3]
    found = [
        f"{path.relative_to(root)}:{n}"
        for package in ("gateway", "channels", "agent")
        for path in sorted((root / package).rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if re.match(r"\s*@(dataclasses\.)?dataclass\(.*frozen=True", line)
    ]
    assert found == []
