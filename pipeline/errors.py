"""memd's typed errors. Every error a user or an operator can meet derives from ``MemdError``.

MemdError
├── StoreError                  the state store cannot be opened or used
│   ├── SchemaTooNew            the database was migrated by a newer memd
│   └── LeaseLost               a fenced update found another owner
├── InstanceBusy                another live memd holds this state store (names it)
├── TranscriptUnreadable        a transcript cannot be parsed (the reason says why)
│   └── TranscriptIncomplete    caught mid-write: retry later, not an error
├── PromptError                 a prompt file is missing or its placeholders do not match
├── LLMError                    the model API failed
│   ├── LLMUnavailable          retryable: 429, 529, 5xx, timeouts (carries not_before)
│   ├── LLMRejected             permanent: a 4xx that will not heal (carries the API's message)
│   ├── LLMOutputInvalid        the model's output failed validation
│   ├── LLMAuthFailed           401/403: the key or its permissions are wrong (stops the run, fails no item)
│   └── NoAPIKey                the key variable is not set
├── RedactionKeyError           the redaction key file cannot be created or read
├── MemoryRepoError             git or the memory directory failed
├── ConsolidationFailed         a phase-2 run ended without a commit (the reason says why)
└── PublishError                an agent's file memd must edit is unusable (e.g. settings.json not JSON)
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


class InstanceBusy(MemdError):
    """Another live memd holds this state store; the message says where and since when."""

    def __init__(self, *, host: str, pid: int, since: datetime | None, where: str = "") -> None:
        when = f", since {since.isoformat(timespec='seconds')}" if since is not None else ""
        super().__init__(
            f"memd is already running for this state store (host {host}, pid {pid}{when}){where}"
        )
        self.host = host
        self.pid = pid
        self.since = since


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


class LLMUnreachable(LLMUnavailable):
    """The API could not be reached at all (connection refused, no such host): the items wait, but
    the step that met it failed (a wrong ``base_url`` heals only when someone fixes it)."""


class LLMRejected(LLMError):
    """Permanent: the API refused the request (a 4xx that will not heal)."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class LLMModelNotFound(LLMRejected):
    """The API does not know the model asked for (404): no item is to blame; the step fails."""


class LLMFeatureRefused(LLMRejected):
    """The endpoint does not do what was asked (Message Batches, a built-in tool type, a kind of
    structured output); memd has recorded it and goes the other way (``pipeline.llm.endpoint``)."""


class LLMOutputInvalid(LLMError):
    """The model's output failed validation."""


class LLMAuthFailed(LLMError):
    """The API refused the credentials (401/403): nothing can succeed until the key is fixed."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class LocalOnlyRefused(LLMError):
    """``[llm] local_only = true`` and an endpoint that is not loopback or a private address: refused
    before any connection (the config loader refuses it first; this holds for settings made in code)."""


SUBSCRIPTION_NOTE = (
    "a Claude Pro or Max subscription does not cover the API: memd needs a pay-as-you-go API key "
    "(console.anthropic.com), or a local model ([llm] base_url)"
)
"""Said wherever memd asks for a key: a subscriber's first guess is that the subscription is enough."""


class NoAPIKey(LLMError):
    def __init__(self, variable: str) -> None:
        super().__init__(
            f"no API key: set {variable} (or [llm] api_key_env) to let memd call the model; {SUBSCRIPTION_NOTE}"
        )
        self.variable = variable


class RedactionKeyError(MemdError):
    """The per-installation redaction key (``<state_dir>/redaction.key``) cannot be created or read."""


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


class PublishError(MemdError):
    """A file memd must edit to publish or to install a hook is unusable; the message says which and why."""


class SyncRefused(MemdError):
    """The memory repository's remote is refused (its history was rewritten, or what it brings fails
    memd's checks): sync stops with the reason until it is fixed; local work goes on."""


class NotTrusted(SyncRefused):
    """This machine's key is not among the remote memory's allowed signers: it keeps its work local
    (nothing pushed, nothing merged) until a trusted machine runs `memd sync trust` with its line."""


class BadSignerLine(MemdError):
    """A line given to `memd sync trust`, or read from the memory's allowed signers, is not one
    public key memd accepts (one ed25519/ecdsa/rsa key, a plain principal, no options but memd's)."""
