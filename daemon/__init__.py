"""memd's service shell: CLI, settings loading, logging, the composition root and the lifecycle."""

from pipeline import __version__

__all__ = ["__version__"]
