"""Memory: the scopes (each with its project folders), a scope's summary, index and topics, a topic
file with its id, frontmatter, history and the diff between two versions, and a search across every
scope (``pipeline.memory.read``, what `memd memories show|log` read)."""

from __future__ import annotations

import asyncio
from urllib.parse import urlencode

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from daemon.runtime import memory_repo
from daemon.ui import data
from daemon.ui.pages import arg, context, folders
from daemon.ui.render import diff_html, markdown, page, topic_url
from pipeline.errors import MemoryRepoError
from pipeline.gitrepo.repository import MemoryRepo, is_sha
from pipeline.memory import frontmatter, read
from pipeline.store.cites import stale_in_scope
from pipeline.store.read.flags import topic_flags


def _repo(request: Request) -> MemoryRepo:
    return memory_repo(context(request).settings())


def _not_found(exc: MemoryRepoError) -> HTTPException:
    return HTTPException(404, str(exc))


async def scopes(request: Request) -> Response:
    repo = _repo(request)

    def read_all() -> list[read.ScopeBrief]:
        return [read.brief(repo, s) for s in read.scopes(repo)]

    views = await asyncio.to_thread(read_all)
    return page(
        request,
        "memory.html",
        title="memory",
        views=views,
        directory=str(repo.path),
        folders=await folders(context(request)),
    )


async def scope(request: Request) -> Response:
    repo, name = _repo(request), arg(request, "scope")
    try:
        view = await asyncio.to_thread(read.view, repo, name)
    except MemoryRepoError as exc:
        raise _not_found(exc) from None
    link = lambda href: topic_url(name, href)  # noqa: E731
    return page(
        request,
        "scope.html",
        title=name,
        view=view,
        summary=markdown(view.summary),
        index=markdown(view.index, relative=link),
        folders=await folders(context(request)),
    )


async def topic(request: Request) -> Response:
    repo, name, file = _repo(request), arg(request, "scope"), arg(request, "file")
    try:
        text = await asyncio.to_thread(read.topic_text, repo, name, file)
    except MemoryRepoError as exc:
        raise _not_found(exc) from None
    try:
        parsed = frontmatter.parse(text)
        meta, body, problem = parsed.meta, parsed.body, None
    except frontmatter.FrontmatterError as exc:
        meta, body, problem = None, text, str(exc)
    now = context(request).clock.now()
    flags, use = await context(request).read(
        lambda rows: (topic_flags(rows, name, file), data.topic_use(rows, name, file, now))
    )
    return page(
        request,
        "topic.html",
        title=f"{name}/{file}",
        scope=name,
        file=file,
        meta=meta,
        problem=problem,
        flags=flags,
        use=use,
        stale=(await stale_in_scope(context(request).db, name)).get(file),
        body=markdown(body, relative=lambda href: topic_url(name, href)),
        history_url="/memory/history?" + urlencode({"scope": name, "file": file}),
        folders=await folders(context(request)),
    )


async def history(request: Request) -> Response:
    repo, name, file = _repo(request), arg(request, "scope"), arg(request, "file")
    try:
        commits = await read.file_history(repo, name, file)
    except MemoryRepoError as exc:
        raise _not_found(exc) from None
    versions = []
    for i, c in enumerate(commits):
        before = commits[i + 1].sha if i + 1 < len(commits) else None
        query = {"scope": name, "file": file, "to": c.sha, **({"from": before} if before else {})}
        versions.append((c, "/memory/diff?" + urlencode(query)))
    return page(
        request,
        "history.html",
        title=f"history of {name}/{file}",
        scope=name,
        file=file,
        versions=versions,
        topic_url=topic_url(name, file),
        commits=commits,
    )


async def diff(request: Request) -> Response:
    repo, name, file = _repo(request), arg(request, "scope"), arg(request, "file")
    target, base = arg(request, "to"), request.query_params.get("from") or None
    if not is_sha(target) or (base is not None and not is_sha(base)):
        raise HTTPException(400, "?from= and ?to= are commit ids")
    try:
        patch = await read.file_diff(repo, name, file, base, target)
    except MemoryRepoError as exc:
        raise _not_found(exc) from None
    return page(
        request,
        "diff.html",
        title=f"{name}/{file}",
        scope=name,
        file=file,
        base=base,
        target=target,
        patch=diff_html(patch) if patch.strip() else None,
        topic_url=topic_url(name, file),
    )


async def search(request: Request) -> Response:
    repo, query = _repo(request), arg(request, "q", default=" ").strip()
    hits = await asyncio.to_thread(read.search, repo, query) if query else []
    return page(
        request,
        "search.html",
        title=f"search {query}" if query else "search",
        query=query,
        hits=hits,
        limit=read.SEARCH_LIMIT,
    )


routes = [
    Route("/memory", scopes),
    Route("/memory/scope", scope),
    Route("/memory/topic", topic),
    Route("/memory/history", history),
    Route("/memory/diff", diff),
    Route("/memory/search", search),
]
