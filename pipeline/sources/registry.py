"""The transcript sources memd reads: each agent of ``pipeline.roster`` (its folder under
``pipeline/agents/``) with its discovery and its adapter.

A source is an agent (``Source`` is ``pipeline.roster.Agent``): its facts (name, label, default
root, environment), its discovery (a standard-library function of its folder) and its adapter
(``"module:Class"``, imported on first use). The walk of `memd scan`'s quick check
(``pipeline.scan.probe``), the labels of extraction requests and the adapter the scanner uses come
from here. A test's toy is ``register``-ed here (in the roster).

Standard library only, and no adapter is imported until one is asked for: the quick check and
`memd status` import this module without the parsers, pydantic or structlog.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, cast

from pipeline import roster
from pipeline.roster import Agent, Env, Places, Walked
from pipeline.sources.walk import stat_paths

if TYPE_CHECKING:
    from pipeline.sources.base import SourceAdapter

__all__ = [
    "Discover",
    "Env",
    "Source",
    "Walk",
    "adapter_for",
    "default_env",
    "default_tables",
    "find",
    "get",
    "label_of",
    "names",
    "new_adapter",
    "register",
    "sources",
    "unregister",
    "walked",
]

Source = Agent
Discover = Callable[[Path], Iterator[str]]
Walk = Callable[[Path], list[Walked]]

register = roster.register
unregister = roster.unregister
sources = roster.agents
names = roster.names
find = roster.find
label_of = roster.label_of
default_tables = roster.default_tables
default_env = roster.default_env


def get(name: str) -> Source:
    try:
        return roster.get(name)
    except KeyError:
        raise ValueError(f"unknown transcript source: {name!r}") from None


def walked(source: Source, root: Path, places: Places | None = None) -> list[Walked]:
    """What the scan compares with the last one: each session's path and change key (with
    ``places``, an agent's ``walk_places`` looks in the projects memd knows as well)."""
    if places is not None and source.walk_places is not None:
        return source.walk_places(root, places)
    return source.walk(root) if source.walk is not None else stat_paths(source.discover(root))


def new_adapter(source: Source) -> SourceAdapter:
    """A new adapter (adapters hold only small caches; one per scan is fine)."""
    factory = source.adapter
    if isinstance(factory, str):
        factory = roster.load(factory)
    return cast("SourceAdapter", cast("Callable[[], object]", factory)())


def adapter_for(name: str) -> SourceAdapter:
    """A new adapter for the source ``name`` (``ValueError`` for a name nothing registered)."""
    return new_adapter(get(name))
