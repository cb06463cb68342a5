"""memd's domain: transcript sources, scanning, redaction, extraction, consolidation, publishing, state."""

__version__ = "0.1.0"
