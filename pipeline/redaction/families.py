"""The rule family of each rule name: what ``memd redact --report`` says a finding was caught by
(the mechanism, never the value)."""

from __future__ import annotations

_FAMILIES = {
    "credential-slot": frozenset(
        {
            "secret-assignment",
            "password",
            "aws-secret-access-key",
            "k8s-secret",
            "password-cli-flag",
            "credential-argument",
            "joined-secret",
        }
    ),
    "prose": frozenset({"secret-in-prose"}),
    "token-near-word": frozenset({"token-near-word"}),
    "url-userinfo": frozenset({"url-credentials", "db-url", "basic-auth-url"}),
    "auth-header": frozenset({"bearer-token", "basic-auth", "auth-header"}),
    "cookie-session": frozenset({"cookie", "session-id"}),
    "key-material": frozenset({"private-key", "age-secret-key", "seed-phrase"}),
    "encoded": frozenset({"base64-secret"}),
    "signed-structure": frozenset({"jwt", "signed-url", "digest-response"}),
}
_BY_RULE = {rule: family for family, rules in _FAMILIES.items() for rule in rules}


def family(rule: str) -> str:
    """The family of ``rule``: a credential slot, prose, a random token near a credential's word,
    URL userinfo, an auth header, a cookie or session, key material, an encoded secret, a signed
    structure, or a token judged by its prefix and shape (every provider rule, and a prefix that
    names a credential: ``prefixed-token``)."""
    return _BY_RULE.get(rule, "token-shape")
