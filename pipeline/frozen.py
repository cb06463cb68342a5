"""Frozen dataclasses made without compiling code: the settings table's sections, and the records
the fast paths (`memd status`, `memd scan`'s quick check) load at start.

``dataclasses.dataclass(frozen=True)`` compiles an ``__init__``, a ``__repr__``, an ``__eq__``, a
``__hash__``, a ``__setattr__`` and a ``__delattr__`` for every class (six ``exec`` calls, about a
millisecond a class on Python 3.11), and every command loads the settings table's fifteen sections
before it does anything. ``frozen`` makes the same class from functions shared by every class: its
``__dataclass_fields__`` are ``dataclasses.Field`` objects as ``dataclass`` makes them, so
``dataclasses.fields``, ``replace``, ``asdict`` and ``is_dataclass`` read it as they read any
dataclass; construction is by keyword (or by position: ``frozen_by_position``), with defaults and default factories, then ``__post_init__``;
assignment afterwards is refused; equality, hash and repr are over the fields. Type checkers see a
frozen keyword-only dataclass (``dataclass_transform``). Standard library only.
"""

from __future__ import annotations

import dataclasses
from dataclasses import MISSING, Field, FrozenInstanceError
from types import SimpleNamespace
from typing import Any, TypeVar, dataclass_transform

T = TypeVar("T")

_FIELD_KIND = getattr(dataclasses, "_FIELD")  # noqa: B009  (what ``fields`` keeps: not a ClassVar)
_PARAMS = SimpleNamespace(init=True, repr=True, eq=True, order=False, unsafe_hash=False, frozen=True)
"""What a dataclass that extends one of these reads of it (``frozen``)."""


def _init(self: Any, *args: Any, **given: Any) -> None:
    cls = type(self)
    if args:
        if not cls.__frozen_by_position__ or len(args) > len(cls.__frozen_fields__):
            raise TypeError(
                f"{cls.__qualname__}.__init__() takes keyword arguments (or fewer), {len(args)} given"
            )
        for f, value in zip(cls.__frozen_fields__, args, strict=False):
            if f.name in given:
                raise TypeError(f"{cls.__qualname__}.__init__() got multiple values for argument {f.name!r}")
            given[f.name] = value
    for f in cls.__frozen_fields__:
        if f.name in given:
            value = given.pop(f.name)
        elif f.default is not MISSING:
            value = f.default
        elif f.default_factory is not MISSING:
            value = f.default_factory()
        else:
            raise TypeError(
                f"{cls.__qualname__}.__init__() missing 1 required keyword-only argument: {f.name!r}"
            )
        object.__setattr__(self, f.name, value)
    if given:
        raise TypeError(
            f"{cls.__qualname__}.__init__() got an unexpected keyword argument {next(iter(given))!r}"
        )
    post_init = getattr(self, "__post_init__", None)
    if post_init is not None:
        post_init()


def _values(self: Any) -> tuple[Any, ...]:
    return tuple(getattr(self, f.name) for f in type(self).__frozen_fields__ if f.compare)


def _eq(self: Any, other: object) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    return bool(_values(self) == _values(other))


def _hash(self: Any) -> int:
    return hash(_values(self))


def _repr(self: Any) -> str:
    shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in type(self).__frozen_fields__ if f.repr)
    return f"{type(self).__qualname__}({shown})"


def _refuse(self: Any, name: str, *_: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


SHARED = {
    "__init__": _init,
    "__eq__": _eq,
    "__hash__": _hash,
    "__repr__": _repr,
    "__setattr__": _refuse,
    "__delattr__": _refuse,
}


@dataclass_transform(frozen_default=True, kw_only_default=True, field_specifiers=(dataclasses.field, Field))
def frozen(cls: type[T]) -> type[T]:
    """``cls`` as ``dataclass(frozen=True, kw_only=True)`` makes it, its methods shared, not compiled."""
    return _make(cls, by_position=False)


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, Field))
def frozen_by_position(cls: type[T]) -> type[T]:
    """``cls`` as ``dataclass(frozen=True)`` makes it: made by position or by keyword."""
    return _make(cls, by_position=True)


def _make(cls: type[T], *, by_position: bool) -> type[T]:
    declared: dict[str, Field[Any]] = {}
    for base in reversed(cls.__mro__[1:]):
        declared.update(getattr(base, "__dataclass_fields__", {}))
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():
        if "ClassVar" in str(annotation):
            continue
        value = cls.__dict__.get(name, MISSING)
        f = value if isinstance(value, Field) else dataclasses.field(default=value)
        f.name, f.type, f.kw_only = name, annotation, not by_position
        setattr(f, "_field_type", _FIELD_KIND)  # noqa: B010
        if f.default is MISSING:
            if name in cls.__dict__:
                delattr(cls, name)
        else:
            setattr(cls, name, f.default)
        declared[name] = f
    setattr(cls, "__dataclass_fields__", declared)  # noqa: B010
    setattr(cls, "__dataclass_params__", _PARAMS)  # noqa: B010
    setattr(cls, "__frozen_fields__", tuple(declared.values()))  # noqa: B010
    setattr(cls, "__frozen_by_position__", by_position)  # noqa: B010
    setattr(cls, "__match_args__", tuple(declared) if by_position else ())  # noqa: B010
    for name, method in SHARED.items():
        if name not in cls.__dict__ or (name == "__hash__" and cls.__dict__[name] is None):
            setattr(cls, name, method)
    return cls
