"""Frozen record classes made without compiling code: the sections of `memd status`'s typed report.

``dataclasses.dataclass(frozen=True)`` compiles an ``__init__``, a ``__setattr__`` and a
``__delattr__`` for every class, about a millisecond each on Python 3.11, and `memd status` defines
some thirty classes on every run. ``record`` gives what the report needs of a dataclass from
functions shared by every class: construction by position or keyword with defaults, no assignment
afterwards, the fields in order (``fields``), a changed copy (``replace``). Type checkers see a
frozen dataclass (``dataclass_transform``). Standard library only.
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from typing import Any, NamedTuple, TypeVar, dataclass_transform

T = TypeVar("T")

_REQUIRED: Any = object()


class Field(NamedTuple):
    name: str
    default: Any
    """``_REQUIRED`` for a field without one."""
    omit_none: bool
    """Left out of the JSON while it is None (``omitted``)."""


class _Omitted:
    """The default of a field declared ``= omitted()``: None, and left out of the JSON while None."""


def omitted() -> Any:
    """A field that defaults to None and is left out of the JSON while it is None."""
    return _Omitted()


def _init(self: Any, *args: Any, **kwargs: Any) -> None:
    declared: tuple[Field, ...] = type(self).__record_fields__
    if len(args) > len(declared):
        raise TypeError(f"{type(self).__name__}() takes {len(declared)} arguments, {len(args)} given")
    values = self.__dict__
    for f, value in zip(declared, args, strict=False):
        values[f.name] = value
    for f in declared[len(args) :]:
        if f.name in kwargs:
            values[f.name] = kwargs.pop(f.name)
        elif f.default is _REQUIRED:
            raise TypeError(f"{type(self).__name__}() missing argument {f.name!r}")
        else:
            values[f.name] = f.default
    if kwargs:
        raise TypeError(f"{type(self).__name__}() got unexpected or repeated arguments {sorted(kwargs)}")


def _refuse(self: Any, name: str, *_: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to or delete field {name!r}")


@dataclass_transform(frozen_default=True, eq_default=False)
def record(cls: type[T]) -> type[T]:
    """``cls`` with its annotated attributes as frozen fields (after those of a record it extends)."""
    declared = {f.name: f for f in getattr(cls, "__record_fields__", ())}
    for name in cls.__dict__.get("__annotations__", {}):
        default = cls.__dict__.get(name, _REQUIRED)
        omit = isinstance(default, _Omitted)
        declared[name] = Field(name, None if omit else default, omit)
        if omit:
            setattr(cls, name, None)
    shared = {
        "__record_fields__": tuple(declared.values()),
        "__init__": _init,
        "__setattr__": _refuse,
        "__delattr__": _refuse,
    }
    for name, value in shared.items():
        setattr(cls, name, value)
    return cls


def fields(value: Any) -> tuple[Field, ...]:
    """The fields of a record (or of its class), in order; empty for anything else."""
    return getattr(value, "__record_fields__", ())


def is_record(value: Any) -> bool:
    """Is ``value`` a record instance (not a record class)?"""
    return not isinstance(value, type) and hasattr(value, "__record_fields__")


def replace(value: T, **changes: Any) -> T:
    """A copy of the record ``value`` with ``changes``."""
    return type(value)(**({f.name: getattr(value, f.name) for f in fields(value)} | changes))
