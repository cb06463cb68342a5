"""The secret gate on what an agent hands memd: a text holding a secret is refused whole, naming the
rule that matched and never the value (as the commit gate reports, ``pipeline.gitrepo.message_gate``)."""

from __future__ import annotations

from pipeline.gitrepo.message_gate import SecretFinder


def secret_rules(finder: SecretFinder, *texts: str | None) -> list[str]:
    """The rule of each secret ``finder`` finds in ``texts``, sorted, each once (empty: clean)."""
    rules: set[str] = set()
    for text in texts:
        if text:
            for found in finder.find(text):
                rule = getattr(found, "rule", None)
                rules.add(rule if isinstance(rule, str) else "secret")
    return sorted(rules)


def refusal(rules: list[str], what: str) -> str:
    """Why ``what`` was refused, naming the rules (never the value)."""
    named = ", ".join(rules)
    return f"{what} holds a secret (rule: {named}); memd keeps no secret, so nothing was kept"
