from __future__ import annotations

import pytest

from pipeline.search.terms import fold, terms


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("deploy", "deploying deployed deploys deployment deployments"),
        ("migration", "migrating migrate migrations"),
        ("configure", "configured configuration configuring"),
        ("policy", "policies"),
        ("run", "running runs"),
        ("cache", "caching cached caches"),
    ],
)
def test_inflected_forms_meet_one_term(a: str, b: str) -> None:
    assert set(terms(b)) == set(terms(a))


@pytest.mark.parametrize(
    "identifier", ["retryPolicy", "retry_policy", "retry-policy", "RetryPolicy", "RETRY_POLICY"]
)
def test_identifiers_in_every_style_hold_their_words_and_themselves(identifier: str) -> None:
    got = set(terms(identifier))
    assert set(terms("retry policy")) <= got
    assert set(terms("retryPolicy")) & got - set(terms("retry policy"))  # the whole identifier too


def test_accents_and_case_fold_in_every_script() -> None:
    assert fold("Café CRÈME Straße") == "cafe creme strasse"
    assert terms("MÜLLER") == terms("muller") == terms("Müller")


def test_stop_words_are_not_terms() -> None:
    assert terms("how do we do the thing?") == []
