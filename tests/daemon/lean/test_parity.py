"""The lean settings reader and the full loader agree on every key of the settings model: the same
accept or refuse, the same values, for valid and invalid values in the file and in the
environment (``MEMD_<SECTION>__<KEY>`` in upper, lower and mixed case)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from daemon.config import ConfigError, load_settings
from daemon.lean import keys
from daemon.lean.settings import LeanSettings, read_lean, read_settings
from pipeline.settings import Settings, SourceSettings, SourcesSettings
from pipeline.sources import registry


def model_keys() -> set[tuple[str, ...]]:
    """Every key of ``Settings``, walked from the model: ``(section, key)``, and
    ``("sources", name, key)`` for each registered source."""
    found: set[tuple[str, ...]] = set()
    for section, field in Settings.model_fields.items():
        model = field.annotation
        assert isinstance(model, type)
        if model is SourcesSettings:
            found |= {
                ("sources", name, key) for name in registry.names() for key in SourceSettings.model_fields
            }
            continue
        found |= {(section, key) for key in model.model_fields}
    return found


def table_keys() -> set[tuple[str, ...]]:
    return set(keys.KEYS) | {("sources", name, key) for name in registry.names() for key in keys.SOURCE_KEYS}


def test_the_key_table_covers_exactly_the_models_keys() -> None:
    assert table_keys() == model_keys()


VALUES: tuple[Any, ...] = (
    0, 1, 5, -1, 64, 65, 100, 150, 65535, 65536, 2_000_000,
    0.0, 0.5, 2.5, 100.0, 100.5, float("inf"), float("nan"),
    True, False,
    "", " ", "x", "0", "5", "2.5", "-3", " 5", "+5", "1_000", "5.0", "inf",
    "true", "false", "True", "yes", "1",
    "auto", "off", "on", "inbox", "anthropic", "vertex", "bedrock",
    "main", "memory/v1", "a b", "-x", ".hidden",
    "/abs/path", "~/rel", "sqlite:////tmp/s.db", "sqlite:///~/s.db", "postgresql://u:pw@h/db", "mysql://x",
    "http://h", "https://h:8/v1", "ftp://h", "git@github.com:me/m.git", "ext::sh -c x", "-upload-pack=x",
    " https://git.example/m ", "line\nbreak",
    [], ["a", "b"], [1], {"a": 1},
)  # fmt: skip
"""Valid and invalid values for every kind of key: wrong types, out of range, 0 for positive
integers, spellings pydantic might coerce, what each rule refuses."""

ENV_VALUES: tuple[str, ...] = tuple(v for v in VALUES if isinstance(v, str)) + (
    "null", "65536", "100", "150", "-1", '["a", "b"]', "[1]", '{"a": 1}', "[broken",
)  # fmt: skip


def toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else "inf"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml(v) for v in value) + "]"
    return "{ " + ", ".join(f"{k} = {toml(v)}" for k, v in value.items()) + " }"


def table(key: tuple[str, ...], value: Any) -> str:
    *section, name = key
    return f"[{'.'.join(section)}]\n{name} = {toml(value)}\n"


def spellings(key: tuple[str, ...]) -> Iterator[str]:
    parts = list(key)
    yield "MEMD_" + "__".join(p.upper() for p in parts)
    yield "MEMD_" + "__".join(parts)
    yield "MEMD_" + "__".join(p[:1].upper() + p[1:] for p in parts)


def agree(tmp_path: Path, text: str | None, env: dict[str, str]) -> bool:
    """Assert the lean reader agrees with the full loader; True when the lean reader decided alone."""
    config = tmp_path / "config.toml"
    if text is None:
        config.unlink(missing_ok=True)
    else:
        config.write_text(text)
    env = {"HOME": str(tmp_path), **env}
    try:
        loaded = load_settings(config, env=env)
    except ConfigError as exc:
        full: LeanSettings | str = str(exc)
    else:
        full = LeanSettings.of(
            loaded.settings,
            config_path=loaded.path,
            config_exists=loaded.file_exists,
            inputs_key=loaded.inputs_key,
        )
    lean = read_lean(config, env=env)
    if lean is not None:
        assert lean == full, (text, env)
        return True  # what read_settings returns
    if isinstance(full, str):
        with pytest.raises(ConfigError) as refused:
            read_settings(config, env=env)
        assert str(refused.value) == full, (text, env)
    else:
        assert read_settings(config, env=env) == full, (text, env)
    return False


@pytest.mark.parametrize("key", sorted(model_keys()), ids=".".join)
def test_every_value_of_every_key_is_read_as_the_full_loader_reads_it(
    tmp_path: Path, key: tuple[str, ...]
) -> None:
    decided = [v for v in VALUES if agree(tmp_path, table(key, v), {})]
    names = list(spellings(key))
    for i, value in enumerate(ENV_VALUES):  # each value under one spelling, each spelling in turn
        if agree(tmp_path, None, {names[i % len(names)]: value}):
            decided.append(value)
    # The lean reader decides the usual values itself (it does not hand every one over), but for
    # the keys it always hands over (a subtable).
    assert decided or keys.KEYS.get(key) is keys.HANDED_OVER  # type: ignore[call-overload]


@pytest.mark.parametrize(
    "text",
    [
        "[paths]\nno_such_key = 1\n",
        "[nosection]\nkey = 1\n",
        "stray = 1\n",
        "paths = 5\n",
        "[sources.no_such_agent]\nroot = '/x'\n",
        "[sources]\nclaude_code = 5\n",
        "[sources.claude_code]\nno_such_key = 1\n",
        "[memories]\nmin_rollout_idle_hours = 1000\n",
        "[memories]\nmin_rollout_idle_hours = 1\nmax_rollout_age_days = 1\n",
        "[memories]\nmax_rollout_age_days = 0.1\n",
        "[paths\n",
        "\xff",
        "",
    ],
)
def test_unknown_keys_sections_and_related_keys_are_judged_alike(tmp_path: Path, text: str) -> None:
    agree(tmp_path, text, {})


@pytest.mark.parametrize(
    "env",
    [
        {"MEMD_NOSECTION__KEY": "1"},
        {"MEMD_paths__no_such_key": "1"},
        {"MEMD_SOURCES__NO_SUCH_AGENT__ROOT": "/x"},
        {"MEMD_SOURCES__CLAUDE_CODE": '{"root": "/x"}'},
        {"MEMD_SOURCES__CLAUDE_CODE": '{"root": 5}'},
        {"MEMD_SOURCES__CLAUDE_CODE": "false"},
        {"MEMD_PATHS__": "x"},
        {"MEMD___X": "x"},
        {"MEMD_CONFIG": "", "MEMD_LOG_LEVEL": "DEBUG"},
        {"MEMD_LLM__DAILY_TOKEN_BUDGET": "5", "MEMD_llm__daily_token_budget": "6"},
        {"MEMD_PATHS__STATE_DB": "sqlite:////a.db", "MEMD_PATHS__STATE_DB__X": "1"},
        {"XDG_STATE_HOME": "/xdg/state", "XDG_DATA_HOME": "relative"},
        {"MEMD_MEMORIES__MIN_ROLLOUT_IDLE_HOURS": "1000", "MEMD_MEMORIES__MAX_ROLLOUT_AGE_DAYS": "40"},
        {"MEMD_MEMORIES__MIN_ROLLOUT_IDLE_HOURS": "1000", "MEMD_MEMORIES__MAX_ROLLOUT_AGE_DAYS": "41.7"},
    ],
)
def test_odd_environments_are_judged_alike(tmp_path: Path, env: dict[str, str]) -> None:
    agree(tmp_path, None, env)


def test_the_file_and_the_environment_layer_alike(tmp_path: Path) -> None:
    text = "paths = 5\n"
    agree(tmp_path, text, {"MEMD_PATHS__STATE_DB": "sqlite:////a.db"})
    text = '[paths]\nstate_db = 5\n[sync]\nremote = "/r"\n'
    agree(tmp_path, text, {"MEMD_Paths__State_Db": "sqlite:////a.db", "MEMD_SYNC__BRANCH": "b"})
    agree(tmp_path, "[llm]\ndaily_token_budget = 0\n", {"MEMD_LLM__DAILY_TOKEN_BUDGET": "7"})


def test_the_usual_overrides_are_read_without_the_full_loader(tmp_path: Path) -> None:
    env = {"MEMD_MEMORIES__MIN_ROLLOUT_IDLE_HOURS": "0", "MEMD_MEMORIES__MAX_ROLLOUT_AGE_DAYS": "36500"}
    assert agree(tmp_path, '[paths]\nstate_dir = "~/s"\n[llm]\ndaily_token_budget = 1000\n', env)
