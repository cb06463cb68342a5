"""memd's typed errors. Every error a user or an operator can meet derives from ``MemdError``.

MemdError
├── StoreError                  the state store cannot be opened or used
│   ├── SchemaTooNew            the database was migrated by a newer memd
│   └── LeaseLost               a fenced update found another owner
├── TranscriptUnreadable        a transcript cannot be parsed (the reason says why)
│   └── TranscriptIncomplete    caught mid-write: retry later, not an error
├── PromptError                 a prompt file is missing or its placeholders do not match
├── LLMError                    the model API failed
│   ├── LLMUnavailable          retryable: 429, 529, 5xx, timeouts (carries not_before)
│   ├── LLMRejected             permanent: a 4xx that will not heal (carries the API's message)
│   ├── LLMOutputInvalid        the model's output failed validation
│   └── NoAPIKey                the key variable is not set
├── SecretFound                 the commit gate found a secret (rules only, never the value)
├── MemoryRepoError             git or the memory directory failed
└── ConsolidationFailed         a phase-2 run ended without a commit (the reason says why)
"""

from __future__ import annotations

from datetime import datetime


class MemdError(Exception):
    """Root of memd's errors."""


class StoreError(MemdError):
    """The state store cannot be opened or used."""


class SchemaTooNew(StoreError):
    def __init__(self, found: int, known: int) -> None:
        super().__init__(
            f"the state database has schema version {found}, but this memd knows only up to {known}: "
            "upgrade memd, or point paths.state_db at another database"
        )
        self.found = found
        self.known = known


class LeaseLost(StoreError):
    """A fenced update or completion found that this owner no longer holds the lease."""


class TranscriptUnreadable(MemdError):
    """A transcript cannot be parsed; ``reason`` is shown to the user and recorded."""

    def __init__(self, reason: str, *, retryable: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retryable = retryable


class TranscriptIncomplete(TranscriptUnreadable):
    """A transcript caught mid-write (a whole-file JSON rewritten in place, no complete line yet):
    not an error, read it again later."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason, retryable=True)


class PromptError(MemdError):
    """A prompt file is missing, unreadable, or its placeholders do not match the code."""


class LLMError(MemdError):
    """The model API failed."""


class LLMUnavailable(LLMError):
    """Retryable: rate limited, overloaded, server error or timeout. Retry at ``not_before``."""

    def __init__(
        self, message: str, *, not_before: datetime | None = None, status: int | None = None
    ) -> None:
        super().__init__(message)
        self.not_before = not_before
        self.status = status


class LLMRejected(LLMError):
    """Permanent: the API refused the request (a 4xx that will not heal)."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class LLMOutputInvalid(LLMError):
    """The model's output failed validation."""


class NoAPIKey(LLMError):
    def __init__(self, variable: str) -> None:
        super().__init__(f"no API key: set {variable} (or [llm] api_key_env) to let memd call the model")
        self.variable = variable


class SecretFound(MemdError):
    """The secret gate refused content; carries rule names and locations, never the secret."""

    def __init__(self, findings: list[str]) -> None:
        super().__init__("secret gate: " + ", ".join(findings))
        self.findings = findings


class MemoryRepoError(MemdError):
    """git or the memory directory failed; ``stderr`` holds git's own words when git was the one failing."""

    def __init__(self, message: str, *, stderr: str = "") -> None:
        super().__init__(message)
        self.stderr = stderr


class ConsolidationFailed(MemdError):
    """A phase-2 run ended without a commit; ``reason`` says why (recorded on the run)."""

    def __init__(self, reason: str, *, findings: list[str] | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.findings = findings or []
