"""Phase 2's fixtures: these tests drive a consolidation around what they check."""

from tests.pipeline.consolidate.conftest import env

__all__ = ["env"]
