"""`memd config show|validate|init`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from daemon.cli.context import CliContext, fail, pass_ctx

TEMPLATE = Path(__file__).resolve().parent.parent / "config_template.toml"
SOURCES_MARKER = "# @sources"
PUBLISH_MARKER = "# @publish"
"""The template's line that stands for the ``[sources.<name>]`` tables, made from the registry."""


@click.group("config")
def config_group() -> None:
    """Show, check or create the configuration file."""


@config_group.command("show")
@pass_ctx
def show(ctx: CliContext) -> None:
    """Print the effective settings as TOML, each value with where it came from."""
    from pipeline.store_url import describe
    from pipeline.sync.urls import shown_url

    loaded = ctx.loaded()
    data = loaded.settings.model_dump(mode="json")
    data["paths"]["state_db"] = describe(data["paths"]["state_db"])  # never a password
    data["sync"]["remote"] = shown_url(data["sync"]["remote"])  # nor a token
    state = "" if loaded.file_exists else " (not found: defaults and environment only)"
    click.echo(f"# config file: {loaded.path}{state}")
    for section, values in data.items():
        _emit(section, values, loaded.origin)


def _emit(prefix: str, values: dict[str, Any], origin: Any) -> None:
    scalars = {k: v for k, v in values.items() if not isinstance(v, dict)}
    tables = {k: v for k, v in values.items() if isinstance(v, dict)}
    if scalars:
        click.echo(f"\n[{prefix}]")
        width = max(len(k) for k in scalars)
        for key, value in scalars.items():
            rendered = "# unset" if value is None else f"= {_toml(value)}"
            click.echo(f"{key:<{width}} {rendered}  # {origin(f'{prefix}.{key}')}")
    for key, sub in tables.items():
        _emit(f"{prefix}.{key}", sub, origin)


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(value)


@config_group.command("validate")
@click.argument("path", required=False, type=click.Path(path_type=Path, dir_okay=False))
@pass_ctx
def validate(ctx: CliContext, path: Path | None) -> None:
    """Check a config file (default: the one memd would read). Exit 2 and say why when it is bad."""
    if path is not None:
        ctx.config_path = path
    loaded = ctx.loaded()
    where = loaded.path if loaded.file_exists else f"{loaded.path} (not found; defaults are valid)"
    click.echo(f"ok: {where}")
    settings = loaded.settings
    from pipeline import store_url
    from pipeline.team import NO_REMOTE

    if store_url.backend(settings.paths.state_db) == "postgresql" and not settings.sync.enabled:
        click.echo(f"note: {NO_REMOTE}")


@config_group.command("init")
@click.option("--force", is_flag=True, help="Overwrite an existing file.")
@click.argument("path", required=False, type=click.Path(path_type=Path, dir_okay=False))
@pass_ctx
def init(ctx: CliContext, path: Path | None, force: bool) -> None:
    """Write a commented default config file."""
    from daemon.config import resolve_config_path

    if path is None:
        import os

        path, _ = resolve_config_path(ctx.config_path, os.environ)
    if path.exists() and not force:
        fail(f"{path} exists; use --force to overwrite it")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(template_text(), encoding="utf-8")
    tmp.replace(path)
    click.echo(f"wrote {path}")


def template_text() -> str:
    """The commented default config file: the template, with one ``[sources.<name>]`` table per
    registered source (``pipeline.sources.registry``) where its ``# @sources`` line stands."""
    lines = TEMPLATE.read_text(encoding="utf-8").splitlines(keepends=True)
    fill = {SOURCES_MARKER: sources_template, PUBLISH_MARKER: publish_template}
    return "".join(
        next((make() for marker, make in fill.items() if line.startswith(marker)), line) for line in lines
    )


def publish_template() -> str:
    """Each agent's ``[publish]`` keys (``pipeline.roster.PublishKey``) commented out with their
    defaults, then ``agents_md``, which the agents that load a project's ``AGENTS.md`` share."""
    from pipeline import roster

    out = [
        "".join(f"# {line}\n" for line in key.doc.splitlines()) + f"# {key.name} = {_toml(key.default)}\n"
        for key in roster.publish_keys()
    ]
    readers = [agent.label for agent in roster.agents_md_readers()]
    said = ", ".join(readers[:-1]) + " and " + readers[-1] if len(readers) > 1 else "".join(readers)
    out.append(
        "# A sentinel block in each project's own AGENTS.md (the user's repository: off unless asked);\n"
        f"# {said} load it.\n# agents_md = false\n"
    )
    return "".join(out)


def sources_template() -> str:
    """Each source's table with its defaults commented out; a default root that depends on the
    environment is shown as the variable, with what it is when the variable is unset."""
    from pipeline.sources import registry

    out: list[str] = []
    for source in registry.sources():
        shown = source.defaults({"HOME": "~", **{var: f"${var}" for var in source.env}})
        out.append(f"[sources.{source.name}]\n")
        for key, value in shown.items():
            line = f"# {key} = {_toml(value)}"
            if key == "root" and source.env:
                unset = source.default_root({"HOME": "~"})
                line += f"  # without {' or '.join('$' + var for var in source.env)}: {unset}"
            out.append(line + "\n")
        out.append("\n")
    return "".join(out)
