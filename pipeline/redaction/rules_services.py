"""More fixed-prefix formats: package registries, CI, observability, payments, hosting, AI and
cloud services (the core families are in ``rules_provider``). Same conventions: a lower-case anchor,
then the exact, case-sensitive shape; the body after the prefix is never judged by the words in it."""

from __future__ import annotations

import re

from pipeline.redaction.filters import distinct, has_digit
from pipeline.redaction.model import PROVIDER, Candidate, RegexRule, ScanRule
from pipeline.redaction.rules_provider import LB, RB, RBT, token_rule


def service_rules() -> list[RegexRule | ScanRule]:
    r = token_rule
    return [
        # Observability and CRM
        r(
            "dynatrace-token",
            "dt0c01.",
            LB + rb"dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}+" + RB,
            skip=7,
        ),
        r(
            "hubspot-token",
            "pat-na pat-eu pat-ap",
            LB + rb"pat-(?:na|eu|ap)[0-9]-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}" + RB,
            skip=8,
        ),
        # SDK clients that take a token with no prefix as a positional argument
        RegexRule(
            "twilio-auth-token",
            (b"client(",),
            re.compile(
                rb"(?i:client)\([ \t]*(?:account_sid=|username=)?\\*[\"']AC[0-9a-fA-F]{32}\\*[\"'][ \t]*,[ \t]*"
                rb"(?:auth_token=|password=)?\\*[\"'](?P<v>[0-9a-fA-F]{32})\\*[\"']"
            ),
            group="v",
            min_distinct=10,
        ),
        RegexRule(
            "cohere-api-key",
            (b"cohere.",),
            re.compile(
                rb"cohere\.(?:Async)?Client(?:V2)?\([ \t]*(?:api_key=)?\\*[\"'](?P<v>[A-Za-z0-9]{40})\\*[\"']"
            ),
            group="v",
            min_distinct=10,
        ),
        ScanRule("azure-devops-token", _ADO_ANCHORS, _azure_devops_pat),
        # Package registries and artifact stores
        r("rubygems-token", "rubygems_", LB + rb"rubygems_[a-f0-9]{48}+" + RB, skip=9),
        r("nuget-key", "oy2", LB + rb"oy2[a-z0-9]{43}+" + RB, skip=3),
        r("artifactory-token", "cmvmdgtuojaxoj", LB + rb"cmVmdGtuOjAxOj[A-Za-z0-9]{40,100}+" + RB, skip=14),
        # CI, code quality, observability
        r("circleci-token", "ccipat_", rb"CCIPAT_[A-Za-z0-9]{22}_[a-f0-9]{40}+" + RB, skip=7),
        r("sonarqube-token", "sqp_ squ_ sqa_", LB + rb"sq[pua]_[a-f0-9]{40}+" + RB, skip=4),
        r(
            "honeycomb-key",
            "hcaik_ hcxik_ hcxlk_ hcamk_ hcxmk_",
            rb"hc(?:aik|xik|xlk|amk|xmk)_[A-Za-z0-9]{20,80}+" + RB,
            skip=6,
        ),
        r("new-relic-key", "nrii- nrjs- nraa-", rb"NR(?:II|JS|AA)-[A-Za-z0-9_-]{19,40}+" + RBT, skip=5),
        # Hosting and secrets managers
        r("render-key", "rnd_", LB + rb"rnd_[A-Za-z0-9]{32}+" + RB, skip=4),
        r("fly-token", "fm1_ fm2_", LB + rb"fm[12]_[A-Za-z0-9+/=_-]{40,2048}+", skip=4),
        r("onepassword-token", "ops_eyj", LB + rb"ops_eyJ[A-Za-z0-9+/=_-]{60,4096}+", skip=7),
        # Payments, mail, messaging
        r("shippo-token", "shippo_live_ shippo_test_", rb"shippo_(?:live|test)_[a-f0-9]{40}+" + RB, skip=12),
        r(
            "braintree-token",
            "access_token$production$ access_token$sandbox$",
            rb"access_token\$(?:production|sandbox)\$[a-z0-9]{16}\$[a-f0-9]{32}+" + RB,
            skip=24,
        ),
        r(
            "plaid-token",
            "access-sandbox- access-development- access-production-",
            rb"access-(?:sandbox|development|production)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
            + RB,
            skip=15,
        ),
        r(
            "brevo-key",
            "xkeysib- xsmtpsib-",
            rb"x(?:keysib|smtpsib)-[a-f0-9]{64}-[A-Za-z0-9]{16}+" + RB,
            skip=8,
        ),
        r("resend-key", "re_", LB + rb"re_[A-Za-z0-9]{8}_[A-Za-z0-9]{24}+" + RB, skip=3),
        r(
            "teams-webhook",
            "webhook.office.com/",
            rb"webhook\.office\.com/webhookb2/([A-Za-z0-9@-]{20,}/IncomingWebhook/[a-f0-9]{32}/[A-Za-z0-9-]{20,})",
            group=1,
        ),
        # AI, maps, IoT
        r("elevenlabs-key", "sk_", LB + rb"sk_[a-f0-9]{48}+" + RB, skip=3),
        r("mapbox-secret-token", "sk.eyj", LB + rb"sk\.eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}+", skip=6),
        r("adafruit-key", "aio_", LB + rb"aio_[A-Za-z0-9]{28}+" + RB, skip=4),
        # Clouds
        r(
            "aws-bedrock-key",
            "absk",
            LB + rb"ABSKQmVkcm9ja0FQSUtleS[A-Za-z0-9+/]{20,400}+={0,2}",
            skip=22,
        ),
        r("tencent-secret-id", "akid", LB + rb"AKID[A-Za-z0-9]{32}+" + RB, skip=4),
        RegexRule(
            "azure-devops-token",
            (b"azdo",),
            re.compile(rb"(?<![A-Za-z0-9])[A-Za-z0-9]{76}AZDO[A-Za-z0-9]{4}(?![A-Za-z0-9])"),
            back=76,
            fwd=4,
        ),
    ]


# Azure DevOps personal access tokens (the older format): 52 characters of lower-case base32 with no
# prefix, so only near a word that names Azure DevOps or a PAT.
_ADO_ANCHORS = (b"devops", b"dev.azure.com", b"visualstudio.com", b"vsts", b"ado_pat", b"ado pat")
_ADO_WINDOW = 240
_ADO_PAT = re.compile(rb"(?<![A-Za-z0-9])[a-z2-7]{52}(?![A-Za-z0-9])")
MIN_ADO_DISTINCT = 16


def _azure_devops_pat(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    hi = min(len(buf), end + _ADO_WINDOW)
    for m in _ADO_PAT.finditer(buf, max(0, start - _ADO_WINDOW), hi):
        v = m.group(0)
        if has_digit(v) and distinct(v) >= MIN_ADO_DISTINCT:
            out.append((*m.span(), "azure-devops-token", PROVIDER))
    return hi
