"""The report's frozen records: built like dataclasses, never changed after, their fields in order."""

from __future__ import annotations

from dataclasses import FrozenInstanceError

import pytest

from pipeline.status.record import fields, is_record, omitted, record, replace
from pipeline.status.report import as_json


@record
class Base:
    at: str
    outcome: str | None = None


@record
class Run(Base):
    tokens: int | None = omitted()


def test_a_record_is_built_by_position_or_keyword_with_its_defaults() -> None:
    run = Run("12:00Z", tokens=5)
    assert (run.at, run.outcome, run.tokens) == ("12:00Z", None, 5)
    assert [f.name for f in fields(run)] == ["at", "outcome", "tokens"]  # the base's fields first
    assert is_record(run)
    assert not is_record(Run)
    assert not is_record({"at": "x"})


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((), {}, "missing argument 'at'"),
        (("a", "b", 1, 2), {}, "takes 3 arguments, 4 given"),
        (("a",), {"at": "b"}, "unexpected or repeated"),
        (("a",), {"token": 1}, "unexpected or repeated"),
    ],
)
def test_a_wrong_call_is_a_type_error(
    args: tuple[object, ...], kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        Run(*args, **kwargs)  # type: ignore[arg-type]


def test_a_record_is_never_changed_but_can_be_copied_with_changes() -> None:
    run = Run("12:00Z", "ok")
    with pytest.raises(FrozenInstanceError):
        run.outcome = "failed"  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        del run.at  # type: ignore[misc]
    changed = replace(run, outcome="failed")
    assert (run.outcome, changed.outcome, changed.at) == ("ok", "failed", "12:00Z")


def test_an_omitted_field_is_left_out_of_the_json_while_it_is_none() -> None:
    assert as_json(Run("12:00Z")) == {"at": "12:00Z", "outcome": None}
    assert as_json(Run("12:00Z", tokens=3)) == {"at": "12:00Z", "outcome": None, "tokens": 3}
