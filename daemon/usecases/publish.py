"""Publishing as a person asks for it (`memd publish`): the scope keys brought up to date first (a
project whose repository changed its identity is published under its new key), then every target."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from daemon.runtime import Runtime
    from pipeline.publish.run import PublishReport


async def publish_now(rt: Runtime, *, dry_run: bool = False) -> PublishReport:
    """Publish every scope to every enabled target now (``dry_run``: write nothing, say what would be)."""
    from pipeline.projects.rekey import rekey  # lazy: daemon.usecases
    from pipeline.publish.run import publish_all  # lazy: daemon.usecases

    if not dry_run:
        await rekey(
            rt.store, rt.settings(), rt.memory_repo(), rt.clock
        )  # scopes under the keys publishing looks up
    return await publish_all(rt.store, rt.settings(), rt.clock, dry_run=dry_run)
