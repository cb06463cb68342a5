"""Pausing the cyclic garbage collector around bulk work that makes many small acyclic objects.

Reading the scan index or walking tens of thousands of files makes that many tuples; the cyclic
collector would walk the growing heap again and again while they are made, for nothing (tuples of
ints and strings cannot form a cycle). Pauses nest, across threads.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_gc_lock = threading.Lock()
_gc_pauses = 0
_gc_was_enabled = True


@contextmanager
def gc_paused() -> Iterator[None]:
    """The collector paused for the duration of the block (and any other pause still open)."""
    global _gc_pauses, _gc_was_enabled
    with _gc_lock:
        _gc_pauses += 1
        if _gc_pauses == 1:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pauses -= 1
            if _gc_pauses == 0 and _gc_was_enabled:
                gc.enable()
