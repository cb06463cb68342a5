"""`memd memories show|log|forget|edit|pin|unpin|why`: read the memory without git, and steer it one memory at a time.

A memory's id is ``<scope>/<file>`` (``projects/app-1a2b3c4d/deploy.md``, ``global/prefs.md``; the
scope may also be given as a bare key or its short name: ``app/deploy.md``). Wherever a scope is
asked for, a project's folder (or any folder inside it, relative to here) and the key's short name
are accepted too. Every change (``forget``, ``edit``, ``pin``, ``unpin``) lands as one commit by the
person and is published at once (``daemon.steer``).

Exit status: 0; 1 when the scope or memory does not exist, the change was refused, a publish
failed or git fails; 2 for a bad config; 64 for bad arguments.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from daemon.cli.context import CliContext, fail, pass_ctx
from daemon.cli.output import verbose_option
from daemon.exits import Exit

if TYPE_CHECKING:
    from daemon.steer import SteerDone
    from pipeline.gitrepo.repository import MemoryRepo
    from pipeline.settings import Settings

FROM_MAX_BYTES = 1_000_000


@click.group("memories")
def memories_group() -> None:
    """Read the memory repository and steer it one memory at a time."""


def _folders(settings: Settings) -> dict[str, list[str]]:
    """Each scope's project folders, from the projects the state store knows (none when memd never
    ran here: no store is created for reading)."""
    from pipeline import store_url

    db = store_url.sqlite_path(settings.paths.state_db)
    if db is not None and not db.exists():
        return {}
    from daemon.runtime import Runtime
    from pipeline.errors import MemdError
    from pipeline.projects.scopes import folders_by_scope
    from pipeline.store.publications import known_projects

    async def go() -> list[str]:
        async with Runtime.open(settings) as rt:
            return await known_projects(rt.store)

    try:
        return folders_by_scope(asyncio.run(go()))
    except MemdError:
        return {}


def _in_repo(repo: MemoryRepo, value: str) -> str | None:
    """``value`` as a path inside the memory repository (a scope's folder, a memory's file), relative
    to it (``projects/<key>``, ``projects/<key>/deploy.md``); None when it names no path in there (a
    key, a short name, a project's folder). Read only: nothing is opened."""
    text = value.strip()
    if not text.startswith(("/", "~", "./", "../")) and text not in (".", ".."):
        return None
    path = Path(text).expanduser()
    path = Path(os.path.normpath(path if path.is_absolute() else Path.cwd() / path))
    for inner, root in ((path, repo.path), (path.resolve(), repo.path.resolve())):
        try:
            rel = inner.relative_to(os.path.normpath(root))
        except ValueError:
            continue
        return rel.as_posix() if rel.parts else None
    return None


def _scope(repo: MemoryRepo, value: str) -> str:
    """The scope ``value`` names (a key, its short name, a project's folder or one inside it, or the
    scope's own folder in the memory repository)."""
    from pipeline.memory import read
    from pipeline.projects.scopes import ScopeNotFound, scope_argument

    value = _in_repo(repo, value) or value
    try:
        return scope_argument(value, known=read.scopes(repo), cwd=Path.cwd())
    except ScopeNotFound as exc:
        fail(str(exc), Exit.FAILED)


def _is_id(value: str) -> bool:
    return value.endswith(".md") and "/" in value and not value.startswith(("/", "~", "."))


@memories_group.command("log")
@click.argument("scope", required=False)
@click.option(
    "-n", "limit", default=20, show_default=True, type=click.IntRange(1, 10_000), help="How many commits."
)
@pass_ctx
def log_command(ctx: CliContext, scope: str | None, limit: int) -> None:
    """The consolidations (commits) of the repository, or of one scope (a key, short name or folder)."""
    settings = ctx.loaded().settings
    from daemon.runtime import memory_repo
    from pipeline.errors import MemoryRepoError
    from pipeline.memory.read import history

    repo = memory_repo(settings)
    try:
        commits = asyncio.run(history(repo, _scope(repo, scope) if scope else None, limit=limit))
    except MemoryRepoError as exc:
        fail(str(exc), Exit.FAILED)
    if not commits:
        click.echo(f"no history yet in {settings.paths.memory_dir}")
        return
    for c in commits:
        click.echo(f"{c.at[:16].replace('T', ' ')}  {c.sha[:10]}  {c.subject}")


@memories_group.command("show")
@click.argument("what", metavar="[ID | SCOPE | PATH]", required=False)
@click.argument("file", required=False)
@pass_ctx
def show_command(ctx: CliContext, what: str | None, file: str | None) -> None:
    """The scopes with their project folders; with ID (`<scope>/<file>`, or the memory's file in the
    repository) one memory; with SCOPE (a key, its short name, a project's folder, or the scope's folder
    in the repository) its summary, index and memories with their ids."""
    settings = ctx.loaded().settings
    from pipeline import invisible

    def echo(text: str) -> None:
        """A line for the user's eyes: an invisible character shows as its code point (<U+E0041>)."""
        click.echo(invisible.show(text))

    from daemon.runtime import memory_repo
    from pipeline.errors import MemoryRepoError
    from pipeline.memory import read
    from pipeline.projects.scopes import topic_id_text

    repo = memory_repo(settings)
    try:
        if what is None:
            found = read.scopes(repo)
            if not found:
                echo(f"no memory yet in {repo.path}")
                return
            folders = _folders(settings)
            for s in found:
                v = read.view(repo, s)
                where = ", ".join(folders.get(s, [])) or (
                    "(every project)" if s == "global" else "(folder unknown)"
                )
                echo(f"{s:<44} {where}  {len(v.topics):>3} topic(s)  {v.inputs:>3} session(s)")
            return
        what = _in_repo(repo, what) or what  # a memory's file, a scope's folder in the repository
        if file is None and _is_id(what):
            from pipeline.memory.steer import read_topic
            from pipeline.projects.scopes import ScopeNotFound, topic_id

            try:
                tid = topic_id(what, known=read.scopes(repo))
            except ScopeNotFound as exc:
                fail(str(exc), Exit.FAILED)
            echo(read_topic(repo, tid.scope, tid.file).rstrip("\n"))
            return
        scope = _scope(repo, what)
        if file is not None:
            echo(read.topic_text(repo, scope, file).rstrip("\n"))
            return
        v = read.view(repo, scope)
    except MemoryRepoError as exc:
        fail(str(exc), Exit.FAILED)
    scope_folders = _folders(settings).get(scope, [])
    echo(f"# {v.scope}" + (f"  ({', '.join(scope_folders)})" if scope_folders else ""))
    echo(f"\n## memory_summary.md\n\n{v.summary.strip() or '(empty)'}\n")
    echo(f"## MEMORY.md\n\n{v.index.strip() or '(empty)'}\n")
    echo("## Memories\n")
    for t in v.topics:
        marks = "".join(m for m, on in ((" pinned", t.pinned), (" edited", t.edited)) if on)
        echo(
            f"{topic_id_text(scope, t.path)}  {t.type}  updated {t.updated or '?'}  "
            f"{t.sources} source(s){marks}  {t.name}"
        )
    if not v.topics:
        echo("(none)")


def _steer(ctx: CliContext, memory_id: str, verbose: bool, act: str, text: str | None = None) -> None:
    """Run one change of ``daemon.steer`` on ``memory_id`` and print what it did."""
    settings = ctx.loaded().settings
    ctx.configure_logging()
    from daemon.runtime import Runtime
    from daemon.steer import edit_memory, forget_memory, pin_memory
    from pipeline.errors import MemdError

    async def go() -> SteerDone:
        async with Runtime.open(settings, env=os.environ) as rt:
            if act == "forget":
                return await forget_memory(rt, memory_id)
            if act == "edit":
                assert text is not None
                return await edit_memory(rt, memory_id, text)
            return await pin_memory(rt, memory_id, act == "pin")

    try:
        done = asyncio.run(go())
    except MemdError as exc:
        fail(str(exc), Exit.FAILED)
    for line in done.lines(verbose=verbose):
        click.echo(line)
    if not done.ok:
        raise SystemExit(Exit.FAILED)


@memories_group.command("forget")
@click.argument("memory_id", metavar="ID")
@verbose_option
@pass_ctx
def forget_command(ctx: CliContext, memory_id: str, verbose: bool) -> None:
    """Forget one memory for good: it goes from the memory and every published copy at once, and no
    later consolidation brings it back (same file, or the same text under another name)."""
    _steer(ctx, memory_id, verbose, "forget")


@memories_group.command("pin")
@click.argument("memory_id", metavar="ID")
@verbose_option
@pass_ctx
def pin_command(ctx: CliContext, memory_id: str, verbose: bool) -> None:
    """Pin one memory: phase 2 never deletes it, and it is published first."""
    _steer(ctx, memory_id, verbose, "pin")


@memories_group.command("unpin")
@click.argument("memory_id", metavar="ID")
@verbose_option
@pass_ctx
def unpin_command(ctx: CliContext, memory_id: str, verbose: bool) -> None:
    """Unpin one memory."""
    _steer(ctx, memory_id, verbose, "unpin")


@memories_group.command("edit")
@click.argument("memory_id", metavar="ID")
@click.option("--set-body", "body", metavar="TEXT", help="The new body (the frontmatter stays).")
@click.option(
    "--from",
    "source",
    metavar="FILE",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The new text from FILE: a body, or a whole topic file with its frontmatter.",
)
@verbose_option
@pass_ctx
def edit_command(
    ctx: CliContext, memory_id: str, body: str | None, source: Path | None, verbose: bool
) -> None:
    """Edit one memory in $VISUAL or $EDITOR (or give the text with --set-body or --from): the text is
    kept as yours; phase 2 never overwrites or drops it."""
    if body is not None and source is not None:
        fail("give at most one of --set-body TEXT or --from FILE", Exit.USAGE)
    text = body
    if source is not None:
        text = _read_from(source)
    if text is None:
        text = _from_editor(ctx, memory_id)
        if text is None:
            click.echo(f"{memory_id}: not changed (the editor left it as it was)")
            return
    _steer(ctx, memory_id, verbose, "edit", text)


def _read_from(source: Path) -> str:
    from pipeline.safefile import UnsafeFile, read_capped

    try:
        return read_capped(source, FROM_MAX_BYTES).decode("utf-8")
    except (OSError, UnsafeFile, UnicodeDecodeError) as exc:
        fail(f"cannot read {source}: {exc}", Exit.USAGE)


def _from_editor(ctx: CliContext, memory_id: str) -> str | None:
    """The topic's text as the person saved it in their editor (None: not changed)."""
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if not editor:
        fail("set $VISUAL or $EDITOR, or give the text with --set-body TEXT or --from FILE", Exit.USAGE)
    from daemon.runtime import memory_repo
    from pipeline.errors import MemoryRepoError
    from pipeline.memory import read
    from pipeline.memory.steer import read_topic
    from pipeline.projects.scopes import ScopeNotFound, topic_id

    repo = memory_repo(ctx.loaded().settings)
    try:
        tid = topic_id(memory_id, known=read.scopes(repo))
        current = read_topic(repo, tid.scope, tid.file)
    except (ScopeNotFound, MemoryRepoError) as exc:
        fail(str(exc), Exit.FAILED)
    edited = click.edit(current, editor=editor, extension=".md", require_save=True)
    return None if edited is None or edited == current else edited


@memories_group.command("why")
@click.argument("memory_id", metavar="ID")
@pass_ctx
def why_command(ctx: CliContext, memory_id: str) -> None:
    """The sessions (agent, date, project), runs and commits behind one memory, and whether it is
    edited, pinned or held in an inbox run."""
    settings = ctx.loaded().settings
    from daemon.runtime import Runtime
    from daemon.steer import Why, why_memory
    from pipeline.errors import MemdError

    async def go() -> Why:
        async with Runtime.open(settings, env=os.environ) as rt:
            return await why_memory(rt, memory_id)

    try:
        why = asyncio.run(go())
    except MemdError as exc:
        fail(str(exc), Exit.FAILED)
    for line in why.lines():
        click.echo(line)
