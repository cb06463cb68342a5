"""A deterministic corpus of fake secrets and look-alike decoys in transcript contexts.

Every value is random (seeded); formats follow research/redaction.md section 3. A case is either a
secret (``secret`` is the value exactly as it appears in ``text``, JSON-escaped where the context
escapes it; ``prefix_len`` is its constant public head) or a decoy (``secret`` empty: the whole
text must come out unchanged).
"""

from __future__ import annotations

import base64
import json
import random
import string
import zlib
from collections.abc import Callable
from dataclasses import dataclass

B62 = string.digits + string.ascii_uppercase + string.ascii_lowercase
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"


@dataclass(frozen=True)
class Case:
    id: str
    kind: str  # "secret" | "decoy"
    provider: str
    context: str
    text: str
    secret: str = ""
    prefix_len: int = 0


class Gen:
    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)

    def s(self, n: int, alphabet: str = ALNUM) -> str:
        return "".join(self.r.choice(alphabet) for _ in range(n))

    def b64url(self, raw: bytes) -> str:
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    def crc_token(self, prefix: str) -> str:
        body = self.s(30, ALNUM)
        crc = zlib.crc32(body.encode())
        digits = ""
        while crc:
            crc, rem = divmod(crc, 62)
            digits = B62[rem] + digits
        return prefix + body + digits.rjust(6, "0")

    def jwt(self, sig_bytes: int = 32, alg: str = "HS256") -> tuple[str, int]:
        header = self.b64url(json.dumps({"alg": alg, "typ": "JWT"}).encode())
        payload = {"sub": self.s(12, HEX), "iat": 1761000000 + self.r.randint(0, 9999999), "scope": "repo"}
        body = self.b64url(json.dumps(payload).encode())
        return f"{header}.{body}.{self.b64url(self.r.randbytes(sig_bytes))}", len(header) + 1

    def password(self) -> str:
        symbols = "!#%^*-_=+@~"
        chars = [self.r.choice(string.ascii_uppercase), self.r.choice(string.digits), self.r.choice(symbols)]
        chars += [self.r.choice(ALNUM + symbols) for _ in range(self.r.randint(9, 17))]
        self.r.shuffle(chars)
        return "".join(chars)

    def pem(self, kind: str) -> tuple[str, int]:
        heads = {
            "RSA": ("RSA PRIVATE KEY", "MIIEowIBAAKCAQEA", 64, 1600),
            "EC": ("EC PRIVATE KEY", "MHcCAQEEI", 64, 160),
            "PKCS8": ("PRIVATE KEY", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", 64, 1600),
            "OPENSSH": ("OPENSSH PRIVATE KEY", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ", 70, 500),
        }
        label, der, width, size = heads[kind]
        body = der + self.s(size, B64)
        lines = [body[i : i + width] for i in range(0, len(body), width)]
        begin = f"-----BEGIN {label}-----\n"
        return begin + "\n".join(lines) + f"\n-----END {label}-----", len(begin) + len(der)


# A shape: (name, env var name, generator, prefixed?, usable as an HTTP header credential?)
Shape = tuple[str, str, Callable[[Gen], tuple[str, int]], bool, bool]


def _p(prefix: str, n: int, alphabet: str = ALNUM, suffix: str = "") -> Callable[[Gen], tuple[str, int]]:
    return lambda g: (prefix + g.s(n, alphabet) + suffix, len(prefix))


def token_shapes() -> list[Shape]:
    up27 = string.ascii_uppercase + "234567"
    return [
        ("aws-access-key-id", "AWS_ACCESS_KEY_ID", lambda g: ("AKIA" + g.s(16, up27), 4), True, False),
        ("aws-secret-access-key", "AWS_SECRET_ACCESS_KEY", _p("", 40, B64), False, False),
        (
            "aws-session-token",
            "AWS_SESSION_TOKEN",
            lambda g: ("IQoJb3JpZ2luX2VjE" + g.s(g.r.randint(400, 600), B64), 17),
            True,
            False,
        ),
        ("gcp-api-key", "GOOGLE_API_KEY", _p("AIzaSy", 33, URLSAFE), True, True),
        ("google-oauth-client-secret", "GOOGLE_CLIENT_SECRET", _p("GOCSPX-", 28, URLSAFE), True, False),
        (
            "google-oauth-access-token",
            "GOOGLE_ACCESS_TOKEN",
            lambda g: ("ya29.a0" + g.s(g.r.randint(150, 210), URLSAFE), 7),
            True,
            True,
        ),
        (
            "azure-ad-client-secret",
            "AZURE_CLIENT_SECRET",
            lambda g: (g.s(3) + g.s(1, string.digits) + "Q~" + g.s(34, URLSAFE + "."), 0),
            True,
            False,
        ),
        ("azure-openai-key", "AZURE_OPENAI_API_KEY", _p("", 32, HEX), False, True),
        ("github-classic-pat", "GITHUB_TOKEN", lambda g: (g.crc_token("ghp_"), 4), True, True),
        ("github-oauth-token", "GH_OAUTH_TOKEN", lambda g: (g.crc_token("gho_"), 4), True, True),
        ("github-user-token", "GH_USER_TOKEN", lambda g: (g.crc_token("ghu_"), 4), True, True),
        ("github-installation-token", "GH_INSTALL_TOKEN", lambda g: (g.crc_token("ghs_"), 4), True, True),
        ("github-refresh-token", "GH_REFRESH_TOKEN", lambda g: (g.crc_token("ghr_"), 4), True, False),
        (
            "github-fine-grained-pat",
            "GITHUB_PAT",
            lambda g: ("github_pat_" + g.s(22) + "_" + g.s(59), 11),
            True,
            True,
        ),
        ("github-app-installation-jwt", "GITHUB_APP_TOKEN", lambda g: _ghs_jwt(g), True, True),
        ("gitlab-pat", "GITLAB_TOKEN", _p("glpat-", 20, URLSAFE), True, True),
        ("gitlab-runner-token", "CI_RUNNER_TOKEN", _p("glrt-", 20, URLSAFE), True, False),
        ("gitlab-trigger-token", "GITLAB_TRIGGER_TOKEN", _p("glptt-", 40, HEX), True, False),
        (
            "slack-bot-token",
            "SLACK_BOT_TOKEN",
            lambda g: (f"xoxb-{g.s(12, string.digits)}-{g.s(13, string.digits)}-{g.s(24)}", 5),
            True,
            True,
        ),
        (
            "slack-user-token",
            "SLACK_USER_TOKEN",
            lambda g: (
                f"xoxp-{g.s(12, string.digits)}-{g.s(12, string.digits)}-{g.s(13, string.digits)}-{g.s(32, HEX)}",
                5,
            ),
            True,
            True,
        ),
        (
            "slack-app-token",
            "SLACK_APP_TOKEN",
            lambda g: (
                f"xapp-1-A{g.s(10, string.ascii_uppercase + string.digits)}-{g.s(13, string.digits)}-{g.s(64, HEX)}",
                8,
            ),
            True,
            True,
        ),
        (
            "slack-webhook",
            "SLACK_WEBHOOK_URL",
            lambda g: (
                f"https://hooks.slack.com/services/T{g.s(8, string.ascii_uppercase + string.digits)}/B{g.s(10, string.ascii_uppercase + string.digits)}/{g.s(24)}",
                34,
            ),
            True,
            False,
        ),
        (
            "discord-bot-token",
            "DISCORD_BOT_TOKEN",
            lambda g: (
                base64.b64encode(str(g.r.randint(10**17, 10**19)).encode()).decode().rstrip("=")
                + "."
                + g.s(6, URLSAFE)
                + "."
                + g.s(38, URLSAFE),
                0,
            ),
            False,
            False,
        ),
        (
            "discord-webhook",
            "DISCORD_WEBHOOK",
            lambda g: (f"https://discord.com/api/webhooks/{g.s(18, string.digits)}/{g.s(68, URLSAFE)}", 33),
            True,
            False,
        ),
        (
            "telegram-bot-token",
            "TELEGRAM_BOT_TOKEN",
            lambda g: (f"{g.s(10, string.digits)}:AA{g.s(33, URLSAFE)}", 0),
            True,
            False,
        ),
        (
            "stripe-secret-key",
            "STRIPE_SECRET_KEY",
            lambda g: ("sk_live_" + (g.s(24) if g.r.random() < 0.5 else "51" + g.s(97)), 8),
            True,
            True,
        ),
        ("stripe-restricted-key", "STRIPE_RESTRICTED_KEY", _p("rk_live_", 24), True, True),
        ("stripe-webhook-secret", "STRIPE_WEBHOOK_SECRET", _p("whsec_", 32), True, False),
        (
            "openai-project-key",
            "OPENAI_API_KEY",
            lambda g: ("sk-proj-" + g.s(74, URLSAFE) + "T3BlbkFJ" + g.s(74, URLSAFE), 8),
            True,
            True,
        ),
        (
            "openai-service-account-key",
            "OPENAI_API_KEY",
            lambda g: ("sk-svcacct-" + g.s(58, URLSAFE) + "T3BlbkFJ" + g.s(58, URLSAFE), 11),
            True,
            True,
        ),
        (
            "openai-legacy-key",
            "OPENAI_API_KEY",
            lambda g: ("sk-" + g.s(20) + "T3BlbkFJ" + g.s(20), 3),
            True,
            True,
        ),
        (
            "anthropic-api-key",
            "ANTHROPIC_API_KEY",
            lambda g: ("sk-ant-api03-" + g.s(93, URLSAFE) + "AA", 13),
            True,
            True,
        ),
        (
            "anthropic-admin-key",
            "ANTHROPIC_ADMIN_KEY",
            lambda g: ("sk-ant-admin01-" + g.s(93, URLSAFE) + "AA", 15),
            True,
            True,
        ),
        ("openrouter-key", "OPENROUTER_API_KEY", _p("sk-or-v1-", 64, HEX), True, True),
        ("huggingface-token", "HF_TOKEN", _p("hf_", 34, string.ascii_letters), True, True),
        ("groq-api-key", "GROQ_API_KEY", _p("gsk_", 52), True, True),
        ("xai-api-key", "XAI_API_KEY", _p("xai-", 80), True, True),
        ("perplexity-api-key", "PPLX_API_KEY", _p("pplx-", 48), True, True),
        ("replicate-token", "REPLICATE_API_TOKEN", _p("r8_", 37), True, True),
        ("npm-token", "NPM_TOKEN", lambda g: (g.crc_token("npm_"), 4), True, True),
        ("pypi-token", "PYPI_TOKEN", _p("pypi-AgEIcHlwaS5vcmcCJ", 150, URLSAFE), True, False),
        ("docker-pat", "DOCKER_TOKEN", _p("dckr_pat_", 27, URLSAFE), True, False),
        ("jwt", "AUTH_TOKEN", lambda g: g.jwt(), True, True),
        (
            "vault-token",
            "VAULT_TOKEN",
            lambda g: ("hvs.CAESI" + g.s(g.r.randint(86, 100), URLSAFE), 9),
            True,
            True,
        ),
        ("doppler-token", "DOPPLER_TOKEN", _p("dp.pt.", 43), True, True),
        ("linear-api-key", "LINEAR_API_KEY", _p("lin_api_", 40), True, True),
        (
            "notion-token",
            "NOTION_TOKEN",
            lambda g: ("ntn_" + g.s(11, string.digits) + g.s(35), 4),
            True,
            True,
        ),
        ("sentry-user-token", "SENTRY_AUTH_TOKEN", _p("sntryu_", 64, HEX), True, True),
        (
            "grafana-service-account-token",
            "GRAFANA_TOKEN",
            lambda g: ("glsa_" + g.s(32) + "_" + g.s(8, HEX), 5),
            True,
            True,
        ),
        (
            "postman-key",
            "POSTMAN_API_KEY",
            lambda g: ("PMAK-" + g.s(24, HEX) + "-" + g.s(34, HEX), 5),
            True,
            False,
        ),
        ("heroku-token", "HEROKU_API_KEY", _p("HRKU-AA", 58, URLSAFE), True, True),
        ("supabase-pat", "SUPABASE_ACCESS_TOKEN", _p("sbp_", 40, HEX), True, True),
        ("digitalocean-pat", "DIGITALOCEAN_TOKEN", _p("dop_v1_", 64, HEX), True, True),
        ("databricks-token", "DATABRICKS_TOKEN", _p("dapi", 32, HEX), True, True),
        ("shopify-access-token", "SHOPIFY_ACCESS_TOKEN", _p("shpat_", 32, HEX), True, False),
        ("mailgun-key", "MAILGUN_API_KEY", _p("key-", 32, HEX), True, False),
        (
            "mailchimp-key",
            "MAILCHIMP_API_KEY",
            lambda g: (g.s(32, HEX) + f"-us{g.r.randint(1, 21)}", 0),
            True,
            False,
        ),
        (
            "sendgrid-key",
            "SENDGRID_API_KEY",
            lambda g: ("SG." + g.s(22, URLSAFE) + "." + g.s(43, URLSAFE), 3),
            True,
            True,
        ),
        ("terraform-cloud-token", "TFE_TOKEN", lambda g: (g.s(14) + ".atlasv1." + g.s(67), 0), True, True),
        (
            "age-secret-key",
            "SOPS_AGE_KEY",
            _p("AGE-SECRET-KEY-1", 58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"),
            True,
            False,
        ),
        ("datadog-api-key", "DD_API_KEY", _p("", 32, HEX), False, False),
        ("twilio-auth-token", "TWILIO_AUTH_TOKEN", _p("", 32, HEX), False, False),
        ("cloudflare-api-token", "CLOUDFLARE_API_TOKEN", _p("", 40, URLSAFE), False, True),
        ("generic-api-token", "INTERNAL_API_TOKEN", _p("", 48, ALNUM), False, True),
        (
            "django-secret-key",
            "DJANGO_SECRET_KEY",
            lambda g: (
                "django-insecure-" + g.s(50, string.ascii_lowercase + string.digits + "!@#%^&*(-_=+)"),
                16,
            ),
            False,
            False,
        ),
        ("flask-secret-key", "FLASK_SECRET_KEY", _p("", 64, HEX), False, False),
    ]


def _ghs_jwt(g: Gen) -> tuple[str, int]:
    jwt, _ = g.jwt(sig_bytes=256, alg="RS256")
    head = f"ghs_{g.r.randint(100000, 9999999)}_"
    return head + jwt, len(head)
