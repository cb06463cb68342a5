"""Fake secrets for the redaction tests, built at run time from a seeded generator so no
credential-shaped literal sits in the repository (and none could be real)."""

from __future__ import annotations

import base64
import json
import random
import string
import zlib

ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
URLSAFE = ALNUM + "-_"
B64 = ALNUM + "+/"
_B62 = string.digits + string.ascii_uppercase + string.ascii_lowercase

_rnd = random.Random(0x5EC2E7)


def reseed(seed: int) -> None:
    """Restart the generator (tests/conftest.py does so per test, from the test's id)."""
    _rnd.seed(seed)


def rand(n: int, alphabet: str = ALNUM) -> str:
    return "".join(_rnd.choice(alphabet) for _ in range(n))


def mixed(rng: random.Random, n: int, alphabet: str = ALNUM) -> str:
    """A fake random value that reads as one: a digit and a letter at least, and both cases when the
    alphabet has them."""
    while True:
        v = "".join(rng.choice(alphabet) for _ in range(n))
        cases = {c.islower() for c in v if c.isalpha()} == {c.islower() for c in alphabet if c.isalpha()}
        if any(c.isdigit() for c in v) and any(c.isalpha() for c in v) and cases:
            return v


def crc_token(prefix: str) -> str:
    """GitHub/npm layout: 30 random + base62(CRC32) of them, 6 long."""
    body = rand(30)
    crc = zlib.crc32(body.encode())
    digits = ""
    while crc:
        crc, rem = divmod(crc, 62)
        digits = _B62[rem] + digits
    return prefix + body + digits.rjust(6, "0")


def jwt(sig_bytes: int = 32, alg: str = "HS256") -> str:
    def b64(raw: bytes) -> str:
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    header = b64(json.dumps({"alg": alg, "typ": "JWT"}).encode())
    payload = b64(json.dumps({"sub": rand(10, HEX), "iat": 1761000000}).encode())
    return f"{header}.{payload}.{b64(_rnd.randbytes(sig_bytes))}"


def pem(label: str = "RSA PRIVATE KEY", width: int = 64, lines: int = 12) -> str:
    body = "\n".join(rand(width, B64) for _ in range(lines))
    return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"


def password() -> str:
    return rand(1, string.ascii_uppercase) + rand(1, string.digits) + "#" + rand(11, ALNUM + "!%^*-_=+@~")


# One sample per provider rule family: (rule name expected in the placeholder, factory).
PROVIDER_SAMPLES: list[tuple[str, object]] = [
    ("aws-access-key-id", lambda: "AKIA" + rand(16, string.ascii_uppercase + "234567")),
    ("aws-access-key-id", lambda: "ASIA" + rand(16, string.ascii_uppercase + "234567")),
    ("aws-session-token", lambda: "IQoJb3JpZ2luX2VjE" + rand(420, B64)),
    ("gcp-api-key", lambda: "AIzaSy" + rand(33, URLSAFE)),
    ("google-oauth-secret", lambda: "GOCSPX-" + rand(28, URLSAFE)),
    ("google-oauth-token", lambda: "ya29.a0" + rand(180, URLSAFE)),
    ("azure-ad-client-secret", lambda: rand(3) + "8Q~" + rand(34, URLSAFE)),
    ("github-token", lambda: crc_token("ghp_")),
    ("github-token", lambda: crc_token("gho_")),
    ("github-token", lambda: crc_token("ghu_")),
    ("github-token", lambda: crc_token("ghs_")),
    ("github-token", lambda: crc_token("ghr_")),
    ("github-token", lambda: "github_pat_" + rand(22) + "_" + rand(59)),
    ("github-token", lambda: f"ghs_{_rnd.randint(10**5, 10**7)}_" + jwt(256, "RS256")),
    ("gitlab-token", lambda: "glpat-" + rand(20, URLSAFE)),
    ("gitlab-token", lambda: "glrt-" + rand(20, URLSAFE)),
    ("gitlab-token", lambda: "glptt-" + rand(40, HEX)),
    ("slack-token", lambda: f"xoxb-{rand(12, string.digits)}-{rand(13, string.digits)}-{rand(24)}"),
    (
        "slack-token",
        lambda: (
            f"xoxp-{rand(12, string.digits)}-{rand(12, string.digits)}-{rand(13, string.digits)}-{rand(32, HEX)}"
        ),
    ),
    (
        "slack-token",
        lambda: f"xapp-1-A{rand(10, string.ascii_uppercase)}-{rand(13, string.digits)}-{rand(64, HEX)}",
    ),
    ("telegram-bot-token", lambda: f"{rand(10, string.digits)}:AA{rand(33, URLSAFE)}"),
    ("stripe-key", lambda: "sk_live_" + rand(24)),
    ("stripe-key", lambda: "sk_live_51" + rand(97)),
    ("stripe-key", lambda: "rk_live_" + rand(24)),
    ("stripe-key", lambda: "whsec_" + rand(32)),
    ("sendgrid-key", lambda: "SG." + rand(22, URLSAFE) + "." + rand(43, URLSAFE)),
    ("mailgun-key", lambda: "key-" + rand(32, HEX)),
    ("mailchimp-key", lambda: rand(32, HEX) + "-us14"),
    ("shopify-token", lambda: "shpat_" + rand(32, HEX)),
    ("openai-api-key", lambda: "sk-proj-" + rand(74, URLSAFE) + "T3BlbkFJ" + rand(74, URLSAFE)),
    ("openai-api-key", lambda: "sk-svcacct-" + rand(58, URLSAFE) + "T3BlbkFJ" + rand(58, URLSAFE)),
    ("openai-api-key", lambda: "sk-" + rand(20) + "T3BlbkFJ" + rand(20)),
    ("anthropic-api-key", lambda: "sk-ant-api03-" + rand(93, URLSAFE) + "AA"),
    ("anthropic-api-key", lambda: "sk-ant-admin01-" + rand(93, URLSAFE) + "AA"),
    ("openrouter-api-key", lambda: "sk-or-v1-" + rand(64, HEX)),
    ("ai-api-key", lambda: "sk-" + rand(32, HEX)),
    ("huggingface-token", lambda: "hf_" + rand(34, string.ascii_letters)),
    ("groq-api-key", lambda: "gsk_" + rand(52)),
    ("xai-api-key", lambda: "xai-" + rand(80)),
    ("perplexity-api-key", lambda: "pplx-" + rand(48)),
    ("replicate-token", lambda: "r8_" + rand(37)),
    ("npm-token", lambda: crc_token("npm_")),
    ("pypi-token", lambda: "pypi-AgEIcHlwaS5vcmcCJ" + rand(150, URLSAFE)),
    ("docker-token", lambda: "dckr_pat_" + rand(27, URLSAFE)),
    ("vault-token", lambda: "hvs.CAESI" + rand(90, URLSAFE)),
    ("doppler-token", lambda: "dp.pt." + rand(43)),
    ("terraform-cloud-token", lambda: rand(14) + ".atlasv1." + rand(67)),
    ("heroku-token", lambda: "HRKU-AA" + rand(58, URLSAFE)),
    ("supabase-token", lambda: "sbp_" + rand(40, HEX)),
    ("digitalocean-token", lambda: "dop_v1_" + rand(64, HEX)),
    ("databricks-token", lambda: "dapi" + rand(32, HEX)),
    ("sentry-token", lambda: "sntryu_" + rand(64, HEX)),
    ("grafana-token", lambda: "glsa_" + rand(32) + "_" + rand(8, HEX)),
    ("postman-key", lambda: "PMAK-" + rand(24, HEX) + "-" + rand(34, HEX)),
    ("linear-key", lambda: "lin_api_" + rand(40)),
    ("notion-token", lambda: "ntn_" + rand(11, string.digits) + rand(35)),
    ("age-secret-key", lambda: "AGE-SECRET-KEY-1" + rand(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L")),
    ("jwt", jwt),
]
