from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from daemon.config import ConfigError, load_settings
from pipeline.sources import registry

BASE_ENV = {"HOME": "/home/u"}


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_defaults_follow_home_and_xdg() -> None:
    loaded = load_settings(None, {**BASE_ENV, "XDG_STATE_HOME": "/st", "CODEX_HOME": "/cx"})
    s = loaded.settings
    assert s.paths.memory_dir == Path("/home/u/.local/share/memd/memory")
    assert s.paths.state_db == "sqlite:////st/memd/state.db"
    assert s.sources.claude_code.root == Path("/home/u/.claude/projects")
    assert s.sources.codex.root == Path("/cx/sessions")
    assert s.sources.gemini_cli.root == Path("/home/u/.gemini/tmp")
    assert s.sources.pi.root == Path("/home/u/.pi/agent/sessions")
    assert s.memories.min_rollout_idle_hours == 6
    assert s.llm.extract_model == "claude-haiku-5-5"
    assert s.publish.claude_code is True
    assert s.publish.codex is False
    assert loaded.path == Path("/home/u/.config/memd/config.toml")
    assert not loaded.file_exists


def test_file_then_environment_with_origins(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        '[memories]\nmin_rollout_idle_hours = 0\nmax_rollouts_per_run = 4\n[sources.pi]\nroot = "~/pi"\n',
    )
    env = {
        **BASE_ENV,
        "MEMD_MEMORIES__MAX_ROLLOUTS_PER_RUN": "9",
        "MEMD_MEMORIES__EXCLUDE_PROJECTS": '["/a/*"]',
    }
    loaded = load_settings(path, env)
    assert loaded.settings.memories.min_rollout_idle_hours == 0.0
    assert loaded.settings.memories.max_rollouts_per_run == 9
    assert loaded.settings.memories.exclude_projects == ("/a/*",)
    assert loaded.settings.sources.pi.root == Path.home() / "pi"
    assert loaded.origin("memories.min_rollout_idle_hours") == f"file {path}"
    assert loaded.origin("memories.max_rollouts_per_run") == "env MEMD_MEMORIES__MAX_ROLLOUTS_PER_RUN"
    assert loaded.origin("llm.batch") == "default"


def test_memd_config_variable_names_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "[review]\nmode = 'inbox'\n")
    assert load_settings(None, {**BASE_ENV, "MEMD_CONFIG": str(path)}).settings.review.mode == "inbox"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[memories]\nbogus = 1\n", "memories.bogus: unknown key"),
        ("[nonsense]\nx = 1\n", ": [nonsense]: unknown section\n"),
        (
            "[memories]\nmin_rollout_idle_hours = -1\n",
            "memories.min_rollout_idle_hours: must be a number >= 0 (got -1)",
        ),
        ("[llm]\nbatch = 'sometimes'\n", "llm.batch"),
        ("[paths]\nstate_db = 'mysql://x'\n", "paths.state_db"),
        ("[memories\n", "invalid TOML"),
        ("[memories]\nmin_rollout_idle_hours = 800\n", "shorter than max_rollout_age_days"),
        (
            "[sources.cursor]\nroot = '/x'\n",
            f"sources.cursor: unknown source (memd knows {', '.join(registry.names())})",
        ),
        ("[sources.pi]\nenabled = 'maybe'\n", "sources.pi.enabled: must be true or false (got 'maybe')"),
        # issue 36: a near miss is named, a section is a section, pydantic's prefix never shows,
        # and a yes/no key takes true or false only
        ("[schedule]\nscan_interval_minute = 5\n", "unknown key (did you mean scan_interval_minutes?)"),
        ("[sources.pi]\nenabld = true\n", "sources.pi.enabld: unknown key (did you mean enabled?)"),
        ("[schedul]\nx = 1\n", ": [schedul]: unknown section (did you mean [schedule]?)"),
        ("[publish]\nclaude_code = 'yes'\n", "publish.claude_code: must be true or false (got 'yes')"),
        ("[publish]\ncodex = 1\n", "publish.codex: must be true or false (got 1)"),
        ("[paths]\nstate_db = 'mysql://x'\n", "paths.state_db: must be an SQLAlchemy URL"),
    ],
)
def test_bad_files_name_the_file_and_the_key(tmp_path: Path, text: str, expected: str) -> None:
    path = _write(tmp_path, text + "\n")
    with pytest.raises(ConfigError) as info:
        load_settings(path, BASE_ENV)
    assert str(path) in str(info.value)
    assert expected in str(info.value) + "\n"
    assert "Value error" not in str(info.value)


def test_bad_environment_value_names_the_variable() -> None:
    with pytest.raises(ConfigError, match="env MEMD_LLM__MAX_CONCURRENCY: llm.max_concurrency"):
        load_settings(None, {**BASE_ENV, "MEMD_LLM__MAX_CONCURRENCY": "lots"})


@pytest.mark.parametrize("with_file", [False, True])
def test_a_typo_in_an_environment_section_is_blamed_on_the_variable(tmp_path: Path, with_file: bool) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[memories]\nmin_user_messages = 2\n" if with_file else "")
    env = {"MEMD_CONFIG": str(config), "MEMD_MEMORIE__MIN_ROLLOUT_IDLE_HOURS": "0"}
    with pytest.raises(ConfigError) as info:
        load_settings(None, env=env)
    assert (
        str(info.value)
        == "env MEMD_MEMORIE__MIN_ROLLOUT_IDLE_HOURS: [memorie]: unknown section (did you mean [memories]?)"
    )
    assert str(config) not in str(info.value)


def test_sources_are_set_from_the_environment_and_an_unknown_one_is_named() -> None:
    env = {**BASE_ENV, "MEMD_SOURCES__CODEX__ROOT": "/cx/rollouts", "MEMD_SOURCES__PI__ENABLED": "false"}
    loaded = load_settings(None, env)
    assert loaded.settings.sources.codex.root == Path("/cx/rollouts")
    assert loaded.origin("sources.codex.root") == "env MEMD_SOURCES__CODEX__ROOT"
    assert list(loaded.settings.sources.enabled()) == [n for n in registry.names() if n != "pi"]
    with pytest.raises(ConfigError, match=r"env MEMD_SOURCES__CURSOR__ROOT: sources\.cursor: unknown source"):
        load_settings(None, {**BASE_ENV, "MEMD_SOURCES__CURSOR__ROOT": "/x"})


def test_a_named_missing_file_is_an_error_but_the_default_may_be_absent(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such config file"):
        load_settings(tmp_path / "nope.toml", BASE_ENV)
    assert load_settings(None, {**BASE_ENV, "XDG_CONFIG_HOME": str(tmp_path)}).file_exists is False


def test_settings_are_frozen() -> None:
    s = load_settings(None, BASE_ENV).settings
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.memories.min_user_messages = 5  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.sources.pi = s.sources.codex  # type: ignore[misc]


def test_the_commented_template_is_valid_and_lists_every_key(tmp_path: Path) -> None:
    from daemon.cli.config import template_text

    text = template_text()
    path = _write(tmp_path, text)
    settings = load_settings(path, BASE_ENV).settings
    for section, values in settings.model_dump().items():
        assert f"[{section}" in text
        for key, value in values.items():
            if isinstance(value, dict):
                for sub in value:
                    assert f"# {sub} =" in text, f"{section}.{key}.{sub} missing from the template"
            else:
                assert f"# {key} =" in text, f"{section}.{key} missing from the template"
    # Uncommenting every default must still validate.
    uncommented = "\n".join(
        line[2:] if re.match(r"# [a-z_]+ = ", line) and "$" not in line and "~" not in line else line
        for line in text.splitlines()
    )
    path.write_text(uncommented)
    load_settings(path, BASE_ENV)


def test_every_value_the_template_shows_is_the_true_default() -> None:
    # A commented `# key = value` says "this is what you get when you leave it out": it must be the
    # default, and a key with no default (None) shows no value at all.
    import tomllib

    from daemon.cli.config import template_text

    defaults = load_settings(None, BASE_ENV).settings.model_dump(mode="json")
    section: list[str] = []
    checked, wrong = 0, []
    for line in template_text().splitlines():
        if header := re.fullmatch(r"\[([a-z_.]+)\]", line):
            section = header.group(1).split(".")
            continue
        shown = re.match(r"# ([a-z_]+) =(.*)$", line)
        if not shown or "$" in line or "~" in line:
            continue
        table = defaults
        for part in section:
            table = table[part]
        key, value = shown.group(1), shown.group(2).strip()
        if (tomllib.loads(f"v = {value}")["v"] if value else None) != table[key]:
            wrong.append(
                f"{'.'.join([*section, key])}: shows {value or 'nothing'}, the default is {table[key]}"
            )
        checked += 1
    assert wrong == []
    assert checked > 40


def test_config_show_never_prints_a_credential_of_the_remote_or_the_store(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from daemon.cli import cli

    config = _write(
        tmp_path,
        '[paths]\nstate_db = "postgresql://memd:db-Secret-1@db.internal/memd"\n'
        '[sync]\nremote = "https://me:pw-Secret-2@host/m.git?private_token=tok-Secret-3"\n',
    )
    done = CliRunner().invoke(cli, ["--config", str(config), "config", "show"], env={"HOME": str(tmp_path)})
    assert done.exit_code == 0, done.output
    assert "https://host/m.git?***" in done.output
    assert "db.internal/memd" in done.output
    for secret in ("db-Secret-1", "pw-Secret-2", "tok-Secret-3"):
        assert secret not in done.output


def test_a_refused_remote_is_named_without_its_value(tmp_path: Path) -> None:
    path = _write(tmp_path, '[sync]\nremote = "ext::ssh -o x=tok-Secret-4 host"\n')
    with pytest.raises(ConfigError) as info:
        load_settings(path, BASE_ENV)
    assert "sync.remote" in str(info.value)
    assert "tok-Secret-4" not in str(info.value)
