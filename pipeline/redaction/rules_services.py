"""More fixed-prefix formats: package registries, CI, observability, payments, hosting, AI and
cloud services (the core families are in ``rules_provider``). Same conventions: a lower-case anchor,
then the exact, case-sensitive shape; the body after the prefix is never judged by the words in it."""

from __future__ import annotations

import re

from pipeline.redaction.model import RegexRule
from pipeline.redaction.rules_provider import LB, RB, RBT, token_rule


def service_rules() -> list[RegexRule]:
    r = token_rule
    return [
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
