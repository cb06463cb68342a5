"""``pipeline.frozen`` makes the classes ``dataclass(frozen=True)`` makes, without compiling code: the
same fields for ``dataclasses``' functions, construction, refusals, equality, hash and repr."""

from __future__ import annotations

import dataclasses
from dataclasses import FrozenInstanceError, dataclass, field
from typing import Any

import pytest

from pipeline.frozen import frozen, frozen_by_position


@frozen
class Base:
    a: int
    b: str = "x"

    def __post_init__(self) -> None:
        if self.a < 0:
            raise ValueError("a < 0")


@frozen
class Made(Base):
    c: tuple[int, ...] = field(default=(), metadata={"doc": "c"})
    d: dict[str, int] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True, kw_only=True)
class Compiled:
    a: int
    b: str = "x"
    c: tuple[int, ...] = field(default=(), metadata={"doc": "c"})
    d: dict[str, int] = field(default_factory=dict, repr=False, compare=False)


@frozen_by_position
class Pair:
    x: int
    y: int = 0


def test_dataclasses_read_its_fields_as_a_compiled_dataclasss() -> None:
    made = Made(a=1, c=(2,))
    assert dataclasses.is_dataclass(made)
    assert [(f.name, f.default, dict(f.metadata)) for f in dataclasses.fields(made)] == [
        (f.name, f.default, dict(f.metadata)) for f in dataclasses.fields(Compiled)
    ]
    assert dataclasses.asdict(made) == dataclasses.asdict(Compiled(a=1, c=(2,)))
    assert dataclasses.replace(made, b="y") == Made(a=1, b="y", c=(2,))
    assert repr(made) == repr(Compiled(a=1, c=(2,))).replace("Compiled", "Made")


def test_it_is_frozen_keyword_only_and_checked_after_it_is_made() -> None:
    made = Made(a=1)
    with pytest.raises(FrozenInstanceError):
        made.a = 2  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        del made.b  # type: ignore[misc]
    positional: Any = Made
    with pytest.raises(TypeError):
        positional(1)
    with pytest.raises(TypeError, match="'a'"):
        positional()
    with pytest.raises(TypeError, match="'e'"):
        positional(a=1, e=2)
    with pytest.raises(ValueError, match="a < 0"):
        Made(a=-1)
    assert Made(a=1).d is not Made(a=1).d  # a default factory per instance


def test_equality_and_hash_are_over_the_compared_fields_of_the_same_class() -> None:
    assert Made(a=1, d={"k": 1}) == Made(a=1)
    assert hash(Made(a=1, d={"k": 1})) == hash(Made(a=1))
    assert Made(a=1) != Made(a=2)
    assert Made(a=1) != Base(a=1)
    assert len({Base(a=1), Base(a=1), Base(a=2)}) == 2


def test_by_position_it_is_made_as_a_dataclass_is() -> None:
    assert Pair(1, 2) == Pair(x=1, y=2) == Pair(1, y=2)
    assert Pair(1).y == 0
    with pytest.raises(TypeError):
        Pair(1, 2, 3)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Pair(1, x=2)  # type: ignore[misc]
    assert Pair.__match_args__ == ("x", "y")
