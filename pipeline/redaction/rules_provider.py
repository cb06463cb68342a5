"""Provider token rules: a unique prefix (or an embedded marker) plus a fixed shape.

Each rule is anchored on a lower-case literal that the engine finds in one pass; the pattern then
confirms the exact, case-sensitive shape at that spot. Bodies exclude ``\\`` and quotes, so a token
inside a JSON-escaped string (``\\"ghp_...\\"``, ``\\nTOKEN=...``) ends where the escape starts.
"""

from __future__ import annotations

import re

from pipeline.redaction.filters import has_digit, token_body_ok
from pipeline.redaction.model import PROVIDER, STRUCTURE, Candidate, RegexRule, ScanRule

# Left boundary: not glued to a preceding letter or digit, except the ``n`` of an escaped ``\n``.
LB = rb"(?:(?<![A-Za-z0-9])|(?<=\\[nrt]))"
RB = rb"(?![A-Za-z0-9])"
RBT = rb"(?![A-Za-z0-9_-])"


def token_rule(
    name: str,
    anchors: str,
    pattern: bytes,
    *,
    skip: int = 0,
    min_distinct: int = 0,
    back: int = 0,
    fwd: int = 8192,
    group: int = 0,
) -> RegexRule:
    """``anchors``: space-separated lower-case literals; ``skip``: length of the constant prefix
    left out of the randomness check."""

    return RegexRule(
        name=name,
        anchors=tuple(a.encode() for a in anchors.split()),
        pattern=re.compile(pattern),
        back=back,
        fwd=fwd,
        group=group,
        skip=skip,
        min_distinct=min_distinct,
    )


def _sk_name(m: re.Match[bytes]) -> str:
    token = m.group(0)
    if token.startswith(b"sk-ant-"):
        return "anthropic-api-key"
    if token.startswith((b"sk-proj-", b"sk-svcacct-", b"sk-admin-", b"sk-None-")) or b"T3BlbkFJ" in token:
        return "openai-api-key"
    if token.startswith(b"sk-or-"):
        return "openrouter-api-key"
    return "ai-api-key"


_SK_FAMILIES = (b"sk-ant-", b"sk-proj-", b"sk-svcacct-", b"sk-admin-", b"sk-None-", b"sk-or-")


def _sk_check(m: re.Match[bytes]) -> bool:
    """A known ``sk-`` family, or a legacy key (letters and digits only), is a key whatever its body
    holds; a bare ``sk-`` followed by dashed words (``sk-task-list-v2``) must look random."""
    token = m.group(0)
    body = token[3:]
    if token.startswith(_SK_FAMILIES) or body.isalnum():
        return True
    return has_digit(body) and token_body_ok(body, 10)


def provider_rules() -> list[RegexRule | ScanRule]:
    r = token_rule
    return [
        discord_rule(),
        # Cloud: AWS, Google, Azure
        RegexRule(
            "aws-access-key-id",
            (b"akia", b"asia", b"abia", b"acca", b"a3t"),
            re.compile(LB + rb"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}+" + RB),
            skip=4,
        ),
        r(
            "aws-session-token",
            "iqojb3jpz2lux2vj fwogzxivyxdze fqogzxivyxdze",
            rb"(?:IQoJb3JpZ2luX2Vj|FwoGZXIvYXdzE|FQoGZXIvYXdzE)[A-Za-z0-9+/]{80,4000}={0,2}",
            skip=16,
        ),
        r("gcp-api-key", "aiza", LB + rb"AIza[0-9A-Za-z_-]{33,37}+" + RBT, skip=4),
        r("google-oauth-secret", "gocspx-", rb"GOCSPX-[A-Za-z0-9_-]{24,40}+" + RBT, skip=7),
        r("google-oauth-token", "ya29.", LB + rb"ya29\.[0-9A-Za-z_-]{20,2048}(?:\.[0-9A-Za-z_-]+)*", skip=5),
        r("google-oauth-token", "1//0", LB + rb"1//0[0-9A-Za-z_-]{35,512}+" + RBT, skip=4),
        r(
            "azure-ad-client-secret",
            "q~",
            rb"(?<![\w.~-])[\w.~-]{3}\dQ~[\w.~-]{31,34}(?![\w.~-])",
            back=4,
            fwd=40,
            min_distinct=10,
        ),
        r(
            "azure-storage-key",
            "accountkey= sharedaccesskey=",
            rb"(?i:AccountKey|SharedAccessKey)=([A-Za-z0-9+/]{30,100}={0,2})",
            group=1,
        ),
        r(
            "azure-sas-signature",
            "sig=",
            rb"(?<![A-Za-z0-9_])sig=((?:[A-Za-z0-9+/]|%[0-9A-Fa-f]{2}){20,200}(?:=|%3[dD]){0,2})",
            group=1,
        ),
        # Git hosting
        RegexRule(
            "github-token",
            (b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_"),
            re.compile(rb"gh[pousr]_[A-Za-z0-9_-]{30,1024}(?:\.[A-Za-z0-9_-]{2,2048}){0,4}+" + RBT),
            skip=4,
        ),
        r("github-token", "github_pat_", rb"github_pat_[A-Za-z0-9_]{50,255}+" + RB, skip=11),
        r(
            "gitlab-token",
            "glpat- gldt- glptt- glrt- glrtr- glft- glsoat- glcbt- glimt- glagent- glwt- gloas- glffct-",
            rb"gl(?:pat|dt|ptt|rtr|rt|ft|soat|cbt|imt|agent|wt|oas|ffct)-[A-Za-z0-9_-]{20,300}"
            rb"(?:\.[A-Za-z0-9_-]{2,64}){0,2}+" + RBT,
            skip=6,
        ),
        r("gitlab-token", "gr1348941", rb"GR1348941[A-Za-z0-9_-]{20,64}+" + RBT, skip=9),
        r("bitbucket-token", "atbb", LB + rb"ATBB[A-Za-z0-9_=.-]{28,64}+" + RBT, skip=4),
        r("atlassian-token", "atatt3", rb"ATATT3[A-Za-z0-9_=-]{100,400}+" + RBT, skip=6),
        # Chat and payment
        r(
            "slack-token",
            "xoxa- xoxb- xoxp- xoxo- xoxs- xoxr- xoxe- xoxe. xapp-",
            rb"(?:xox[abposre](?:\.xox[bp])?|xapp)-[0-9A-Za-z-]{10,600}+" + RBT,
            skip=5,
        ),
        r(
            "slack-webhook",
            "hooks.slack.com/",
            rb"hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9_-]{6,}/[A-Za-z0-9/_-]{10,200})",
            group=1,
        ),
        r(
            "discord-webhook",
            "discord.com/api/webhooks/ discordapp.com/api/webhooks/",
            rb"discord(?:app)?\.com/api/webhooks/(\d{15,25}/[A-Za-z0-9_-]{40,100})",
            group=1,
        ),
        r(
            "telegram-bot-token",
            ":aa",
            rb"(?<![0-9])[0-9]{8,10}:AA[A-Za-z0-9_-]{30,40}+" + RBT,
            back=11,
            fwd=42,
            min_distinct=10,
        ),
        r(
            "stripe-key",
            "sk_live_ sk_test_ sk_prod_ rk_live_ rk_test_ rk_prod_",
            rb"[sr]k_(?:live|test|prod)_[A-Za-z0-9]{10,255}+" + RB,
            skip=8,
        ),
        r("stripe-key", "whsec_", rb"whsec_[A-Za-z0-9+/=]{24,100}+" + RB, skip=6),
        r("square-token", "sq0atp- sq0csp-", rb"sq0(?:atp|csp)-[A-Za-z0-9_-]{22,60}+" + RBT, skip=7),
        r("sendgrid-key", "sg.", LB + rb"SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{30,50}+" + RBT, skip=3),
        r("mailgun-key", "key-", LB + rb"key-[a-f0-9]{32}(?:-[a-f0-9]{8}){0,2}+" + RB, skip=4),
        r(
            "mailchimp-key",
            "-us",
            rb"(?<![A-Za-z0-9])[a-f0-9]{32}-us[0-9]{1,2}+" + RB,
            back=33,
            fwd=4,
        ),
        r(
            "shopify-token",
            "shpat_ shpss_ shpca_ shppa_",
            rb"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}+" + RB,
            skip=6,
        ),
        # AI APIs
        RegexRule(
            "ai-api-key",
            (b"sk-",),
            re.compile(LB + rb"sk-[A-Za-z0-9_-]{20,300}+" + RBT),
            check=_sk_check,
            namer=_sk_name,
        ),
        r("huggingface-token", "hf_ api_org_", LB + rb"(?:hf|api_org)_[A-Za-z0-9]{30,40}+" + RBT, skip=3),
        r("groq-api-key", "gsk_", LB + rb"gsk_[A-Za-z0-9]{40,60}+" + RB, skip=4),
        r("xai-api-key", "xai-", LB + rb"xai-[A-Za-z0-9]{60,100}+" + RB, skip=4),
        r("perplexity-api-key", "pplx-", LB + rb"pplx-[A-Za-z0-9]{40,60}+" + RB, skip=5),
        r("replicate-token", "r8_", LB + rb"r8_[A-Za-z0-9]{30,40}+" + RB, skip=3),
        r("langsmith-key", "lsv2_", rb"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}+" + RB, skip=8),
        r("pinecone-key", "pcsk_", rb"pcsk_[A-Za-z0-9_]{40,100}+" + RB, skip=5),
        r("nvidia-api-key", "nvapi-", rb"nvapi-[A-Za-z0-9_-]{50,80}+" + RBT, skip=6),
        r("tavily-api-key", "tvly-", rb"tvly-[A-Za-z0-9_-]{20,60}+" + RBT, skip=5),
        r("fireworks-api-key", "fw_", LB + rb"fw_[A-Za-z0-9]{20,40}+" + RB, skip=3),
        r("cerebras-api-key", "csk-", LB + rb"csk-[a-z0-9]{40,60}+" + RB, skip=4),
        # Package registries, containers, infrastructure
        r("npm-token", "npm_", LB + rb"npm_[A-Za-z0-9]{36}+" + RB, skip=4),
        r("pypi-token", "pypi-age", rb"pypi-AgE[A-Za-z0-9_-]{50,300}+" + RBT, skip=24),
        r("docker-token", "dckr_pat_ dckr_oat_", rb"dckr_(?:pat|oat)_[A-Za-z0-9_-]{20,64}+" + RBT, skip=9),
        r("artifactory-token", "akcp", LB + rb"AKCp[A-Za-z0-9]{60,80}+" + RB, skip=4),
        r("vault-token", "hvs. hvb. hvr.", LB + rb"hv[sbr]\.[A-Za-z0-9_-]{20,300}+" + RBT, skip=4),
        r(
            "doppler-token",
            "dp.pt. dp.st. dp.sa. dp.ct. dp.scim. dp.audit.",
            rb"dp\.(?:pt|st|sa|ct|scim|audit)\.(?:[a-z0-9]{2,12}\.)?[A-Za-z0-9]{30,64}+" + RB,
            skip=6,
        ),
        r(
            "terraform-cloud-token",
            ".atlasv1.",
            rb"(?<![A-Za-z0-9])[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,80}",
            back=14,
            fwd=81,
        ),
        r("pulumi-token", "pul-", LB + rb"pul-[a-f0-9]{40}+" + RB, skip=4),
        r("heroku-token", "hrku-", rb"HRKU-[A-Za-z0-9_-]{40,80}+" + RBT, skip=5),
        r(
            "supabase-token",
            "sbp_ sb_secret_",
            rb"(?:sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_-]{20,64})" + RBT,
            skip=4,
        ),
        r("digitalocean-token", "dop_v1_ doo_v1_ dor_v1_", rb"do[opr]_v1_[a-f0-9]{64}+" + RB, skip=7),
        r("databricks-token", "dapi", LB + rb"dapi[a-f0-9]{32}(?:-[0-9])?" + RB, skip=4),
        r("planetscale-token", "pscale_", rb"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.-]{30,64}+" + RBT, skip=11),
        r("new-relic-key", "nrak-", rb"NRAK-[A-Z0-9]{27}+" + RB, skip=5),
        r("sentry-token", "sntryu_ sntrys_", rb"sntry[us]_[A-Za-z0-9+/=_-]{40,400}+" + RBT, skip=7),
        r("grafana-token", "glsa_", rb"glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}+" + RB, skip=5),
        r("grafana-token", "glc_", LB + rb"glc_[A-Za-z0-9+/]{32,400}={0,2}", skip=4),
        r("postman-key", "pmak-", rb"PMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}+" + RB, skip=5),
        r("linear-key", "lin_api_ lin_oauth_", rb"lin_(?:api|oauth)_[A-Za-z0-9]{40}+" + RB, skip=8),
        r("notion-token", "ntn_", rb"ntn_[0-9]{11}[A-Za-z0-9]{30,40}+" + RB, skip=4),
        r("notion-token", "secret_", LB + rb"secret_[A-Za-z0-9]{43}+" + RB, skip=7, min_distinct=14),
        r("contentful-token", "cfpat-", rb"CFPAT-[A-Za-z0-9_-]{43}+" + RBT, skip=6),
        r("buildkite-token", "bkua_", rb"bkua_[a-f0-9]{40}+" + RB, skip=5),
        r("netlify-token", "nfp_", rb"nfp_[A-Za-z0-9]{36,40}+" + RB, skip=4),
        r("figma-token", "figd_", rb"figd_[A-Za-z0-9_-]{40,50}+" + RBT, skip=5),
        r("dropbox-token", "sl.", LB + rb"sl\.[A-Za-z0-9_-]{130,1400}+" + RBT, skip=3),
        r("alibaba-access-key", "ltai", LB + rb"LTAI[A-Za-z0-9]{12,24}+" + RB, skip=4),
        r("age-secret-key", "age-secret-key-1", rb"AGE-SECRET-KEY-1[0-9A-Z]{50,70}+" + RB, skip=16),
        RegexRule(
            "jwt",
            (b"eyj",),
            re.compile(
                LB + rb"eyJ[A-Za-z0-9_-]{8,4096}\.[A-Za-z0-9_-]{8,16384}\.[A-Za-z0-9_-]{0,4096}"
                rb"(?:\.[A-Za-z0-9_-]{2,16384}\.[A-Za-z0-9_-]{2,4096})?"
            ),
            priority=STRUCTURE,
            whole_value_check=False,
        ),
    ]


_DISCORD_TOKEN = re.compile(
    rb"[MNO](?<![A-Za-z0-9_-][MNO])[A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}+" + RBT
)
DISCORD_WINDOW = 1024


def _discord(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    """Discord bot tokens have no prefix (base64(user id).6.27-38): look near the word only."""
    for m in _DISCORD_TOKEN.finditer(
        buf, max(0, start - DISCORD_WINDOW), min(len(buf), end + DISCORD_WINDOW)
    ):
        if token_body_ok(m.group(0), 14):
            out.append((*m.span(), "discord-bot-token", PROVIDER))
    return end + DISCORD_WINDOW


def discord_rule() -> ScanRule:
    return ScanRule("discord-bot-token", (b"discord",), _discord)
