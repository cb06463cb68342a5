"""Phase 2: consolidating each scope's phase-1 extracts into the git-versioned memory repository.

``run.run_phase2`` is the entry point; ``plan`` decides which scopes need a run, ``workspace``
prepares and checks a scope in a scratch copy, ``consolidate`` runs one scope under its lease,
``inbox`` and ``forget`` back the CLI commands of the same names.
"""
