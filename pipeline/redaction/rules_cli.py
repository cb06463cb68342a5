"""Passwords and tokens on command lines: ``mysql -p...``, ``sshpass -p``, ``docker login -p``,
``curl -u user:pass``, ``sqlplus user/pass@db``, ``--password VALUE`` and their kin.

Each entry names the commands that anchor it and the flag pattern searched in the rest of that
command line (up to the line's end or the next ``|``/``&&``)."""

from __future__ import annotations

import re

from pipeline.redaction.filters import Level, value_verdict
from pipeline.redaction.model import CONTEXT, Candidate, Scan, ScanRule, kept
from pipeline.redaction.reasons import Reason
from pipeline.redaction.rules_context import url_placeholder
from pipeline.redaction.values import QVAL as _QVAL
from pipeline.redaction.values import flag_value, quoted_end

# Password flags, per command: (anchors, flag pattern searched in the rest of the command line,
# whether the value is ``user:password``).
_CLI_FLAGS: list[tuple[tuple[bytes, ...], re.Pattern[bytes], bool]] = [
    (  # the commands, not the mysql:// URLs (those are the URL rule's)
        (
            b"mysql ",
            b"mysqldump",
            b"mysqladmin",
            b"mysqlimport",
            b"mysqlsh",
            b"mysqlcheck",
            b"mariadb ",
            b"mariadb-",
        ),
        re.compile(rb"-(?<![\w-]-)(?:p|-password=)" + _QVAL),
        False,
    ),
    ((b"sshpass",), re.compile(rb"-(?<![\w-]-)p[ \t]*" + _QVAL), False),
    (
        (b"login ",),  # docker/podman/helm/nerdctl/oras/skopeo/cf login
        re.compile(rb"-(?<![\w-]-)(?:p|-password)(?:[ \t]+|=)" + _QVAL),
        False,
    ),
    ((b"redis-cli",), re.compile(rb"-(?<![\w-]-)(?:a|-pass)[ \t]+" + _QVAL), False),
    ((b"sqlcmd", b"bcp ", b"osql"), re.compile(rb"-(?<![\w-]-)P[ \t]*" + _QVAL), False),
    (
        (b"mongo ", b"mongosh", b"mongodump", b"mongorestore", b"mongoexport", b"mongoimport"),
        re.compile(rb"-(?<![\w-]-)(?:p|-password)(?:[ \t]+|=)" + _QVAL),
        False,
    ),
    (
        (b"ldapsearch", b"ldapadd", b"ldapmodify", b"ldapdelete", b"ldapwhoami"),
        re.compile(rb"-(?<![\w-]-)w[ \t]+" + _QVAL),
        False,
    ),
    (
        (b"keytool", b"jarsigner"),
        re.compile(rb"-(?<![\w-]-)(?:src|dest)?(?:store|key)pass[ \t]+" + _QVAL),
        False,
    ),
    ((b"smbclient",), re.compile(rb"-(?<![\w-]-)U[ \t]+[^\s%]+%" + _QVAL), False),
    ((b"rabbitmqctl",), re.compile(rb"(?:add_user|change_password)[ \t]+\S+[ \t]+" + _QVAL), False),
    ((b"htpasswd",), re.compile(rb"-(?<![\w-]-)[a-zA-Z]*b[a-zA-Z]*[ \t]+\S+[ \t]+\S+[ \t]+" + _QVAL), False),
    (
        (b"curl", b"wget", b"http "),
        re.compile(rb"-(?<![\w-]-)(?:u|-user|-proxy-user)(?:[ \t]+|=)" + _QVAL),
        True,
    ),
    ((b"wget",), re.compile(rb"-(?<![\w-]-)-(?:http-|ftp-|proxy-)?password=" + _QVAL), False),
    ((b"openssl", b"pass:"), re.compile(rb"p(?<![\w-]p)ass:" + _QVAL), False),
    ((b"secret set",), re.compile(rb"-(?<![\w-]-)(?:-body|b)(?:[ \t]+|=)?" + _QVAL), False),  # gh secret set
    (
        (b"configure set", b"config set"),  # aws configure set aws_secret_access_key V; npm config set
        re.compile(
            rb"config(?:ure)? set [\w./:@-]*(?i:secret|token|password|_auth)[\w.]*(?:[ \t]+|=)" + _QVAL
        ),
        False,
    ),
    (
        (b"sqlplus", b"rman", b"expdp", b"impdp", b"sqlldr", b"userid="),  # Oracle: user/password@db
        re.compile(  # the password runs to the last @ (the connect identifier has none)
            rb"(?<![\w/])[A-Za-z][\w$#.]{0,29}/(?P<q>)(?P<v>[^\s/\"'\\]{1,128})(?=@[^\s@\"'\\]*(?:[\s\"'\\]|$))"
        ),
        False,
    ),
    (
        (b"sqlplus", b"rman", b"expdp", b"impdp", b"sqlldr", b"userid="),  # user/password, no @db
        re.compile(rb"(?<![\w/])[A-Za-z][\w$#.]{0,29}/(?P<q>)(?P<v>[^\s/@\"'\\]{1,128})(?=[\s\"'\\]|$)"),
        False,
    ),
    ((b"zip ", b"7z ", b"7za ", b"7zz ", b"rar "), re.compile(rb"-(?<![\w-]-)P[ \t]+" + _QVAL), False),
    ((b"7z ", b"7za ", b"7zz ", b"rar "), re.compile(rb"-(?<![\w-]-)h?p(?=[^\s-])" + _QVAL), False),
    ((b"ssh-keygen",), re.compile(rb"-(?<![\w-]-)[NP][ \t]+" + _QVAL), False),
    ((b"openssl",), re.compile(rb"-(?<![\w-]-)k[ \t]+" + _QVAL), False),
    ((b"xfreerdp", b"wlfreerdp"), re.compile(rb"/(?<![\w-]/)p:" + _QVAL), False),
    ((b"lftp",), re.compile(rb"-(?<![\w-]-)u[ \t]+[^,\s]+,(?P<q>)(?P<v>[^\s\"'\\]{1,128})"), False),
    (
        (b"vault login",),
        re.compile(rb"vault login[ \t]+(?:-[\w-]+(?:=\S+)?[ \t]+)*(?![-\w.]*=)" + _QVAL),
        False,
    ),
    ((b"oauth2-bearer",), re.compile(rb"--oauth2-bearer(?:[ \t]+|=)" + _QVAL), False),
    (  # ngrok config add-authtoken T, ngrok authtoken T, ngrok http 80 --authtoken T
        (b"add-authtoken", b"ngrok authtoken", b"--authtoken"),
        re.compile(rb"(?:add-authtoken|authtoken)(?:[ \t]+|=)" + _QVAL),
        False,
    ),
    (  # --vault-password-file <(echo PW), --password-file=<(printf %s PW)
        (b"<(echo", b"<(printf"),
        re.compile(
            rb"(?i:pass|secret|token|key|cred)[\w-]*(?:[ \t]+|=)<\((?:echo(?:[ \t]+-n)?|printf(?:[ \t]+%s)?)[ \t]+"
            + _QVAL
        ),
        False,
    ),
    (
        (
            b"--pass",
            b"--token",
            b"--api-key",
            b"--apikey",
            b"--secret",
            b"--client-secret",
            b"--auth-token",
            b"--access-token",
            b"-password",
            b"--passphrase",
            b"-secret ",
            b"-token ",
            b"-password ",
        ),
        re.compile(
            rb"-(?<![\w-]-)-?(?:[a-z]+-)?(?:password|passwd|passphrase|pass|token|api-key|apikey|secret|"
            rb"client-secret|auth-token|access-token)(?:[ \t]+|=)" + _QVAL
        ),
        False,
    ),
]
MAX_COMMAND = 2000
_FLAG_BACK = 80
_QUOTES = frozenset(b"'\"")
_BLANKS = frozenset(b" \t")
_COMMAND_END = re.compile(rb"[\n\r|\\&](?:(?<=[\n\r|])|(?<=\\)[nr]|(?<=&)&)")
"""A line break (raw or escaped), ``|`` or ``&&``; one byte class first, so the search is fast."""


def _line_limit(buf: bytes, end: int) -> int:
    """Where the command line holding ``end`` ends: a line break (raw or escaped), ``|`` or ``&&``."""
    limit = min(len(buf), end + MAX_COMMAND)
    m = _COMMAND_END.search(buf, end, limit)
    return limit if m is None else m.start()


def _command_line_scanner(pattern: re.Pattern[bytes], userpass: bool) -> Scan:
    def scan(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
        limit = _line_limit(buf, end)
        substituted = buf[start : start + 2] == b"<("
        if substituted:  # the flag naming it comes before the anchor
            start = max(0, start - _FLAG_BACK)
        elif buf[start : start + 1] == b"-" and start and buf[start - 1] not in _BLANKS:
            # ``--app-secret``: the anchor ``-secret`` sits inside the flag; start where the flag does
            lo = max(0, start - _FLAG_BACK)
            blank = max(buf.rfind(b" ", lo, start), buf.rfind(b"\t", lo, start))
            start = blank + 1 if blank >= 0 else lo
        for m in pattern.finditer(buf, start, limit):
            s, e = m.span("v")
            if s == e:  # the pattern marks where the value starts; its quoting says where it ends
                s, e = flag_value(buf, m, limit)
            if substituted and buf[e - 1 : e] == b")":
                e -= 1  # <(echo PW): the parenthesis closes the substitution
            v = buf[s:e]
            if not v or v.startswith(b"-"):  # no value, or the next flag
                continue
            if userpass:
                user, colon, pw = v.partition(b":")
                if not colon:
                    continue
                if not pw and e < len(buf) and buf[e] in _QUOTES:  # user:'p@ss|w$rd'
                    close = quoted_end(buf, e + 1, buf[e], 0)
                    if close < 0:
                        continue
                    s, e = e + 1, close
                    pw = buf[s:e]
                reason = Reason.PLACEHOLDER if url_placeholder(pw) else None
            else:
                reason = value_verdict(v, Level.PASSWORD)
            out.append(
                (s, e, "password-cli-flag", CONTEXT)
                if reason is None
                else kept(s, e, "password-cli-flag", reason)
            )
        return limit

    return scan


def cli_rules() -> list[ScanRule]:
    return [
        ScanRule("password-cli-flag", anchors, _command_line_scanner(pattern, userpass))
        for anchors, pattern, userpass in _CLI_FLAGS
    ]
