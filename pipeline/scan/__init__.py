"""Scanning: find every session file, read only what changed, decide what is ready and why.

``scanner`` runs a scan; ``eligibility`` is the one pure readiness rule; ``index`` is the snapshot
beside the store that makes an unchanged re-scan cheap; ``probe`` is `memd scan`'s standard-library
quick check; ``view`` is what a scan reports.
"""
