"""Which shell commands bring content from outside the machine into a session: the one table of what
counts (``FETCHERS``, listed in the README), and the parse of a command line that applies it.

A session counts as having used external context when its agent ran, through its shell tool, a
command that fetched something from another host: a page or a file (``curl``, ``wget``,
``aria2c``, HTTPie's ``http``/``https``, ``xh``), GitHub through ``gh`` (an issue, a pull request,
the API, a clone...), another repository (``git clone`` of a URL, ``git pull``/``git fetch``/
``git ls-remote`` naming a URL rather than one of the project's remotes), a package's page or files
from a registry (``npm view``, ``pip download``...), files copied from a host (``scp``/``rsync``
with a remote source); or it read an installed package's documentation (a README, a ``.md``,
``.rst`` or ``.txt`` under ``node_modules/``, ``site-packages/``... : text its authors wrote).

Not external: a URL whose host is the machine itself (``localhost``, ``127.x.x.x``, ``::1``,
``0.0.0.0``, ``*.localhost``, HTTPie's ``:8080``), ``git clone`` of a local path, ``git pull`` of
the project's own remote, ``gh auth``/``gh config``/``gh alias``/``gh help``, a fetcher with no
address at all (``curl --version``).

The command is split the way a shell would at ``|``, ``||``, ``&&``, ``;``, ``&``, newlines,
``$(...)``, backticks and ``<(...)``; each simple command loses its prefixes (``VAR=value``,
``sudo`` and its options, ``env``, ``time``, ``nice``, ``nohup``, ``timeout N``, ``command``,
``exec``, ``xargs``) and ``bash -c '...'`` (``sh``, ``zsh``, ``-lc``) is read as the script it runs.
Best effort by design: what it cannot split it reads word by word.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

Needs = Literal["url", "always", "remote_repo", "explicit_remote", "remote_source"]


@dataclass(frozen=True)
class Fetcher:
    program: str
    subcommands: tuple[str, ...]
    """The subcommands that fetch (empty: the program itself, whatever its subcommand)."""
    needs: Needs
    """What makes a use of it external: ``url`` an argument naming another host; ``always`` any use;
    ``remote_repo`` the repository argument is a URL or ``host:path``, not a local path;
    ``explicit_remote`` an argument is a URL or ``host:path`` (a named remote is the project's own);
    ``remote_source`` a source (any argument but the last) is ``[user@]host:path`` or ``rsync://``."""
    tag: str


FETCHERS: tuple[Fetcher, ...] = (
    Fetcher("curl", (), "url", "shell:curl"),
    Fetcher("wget", (), "url", "shell:wget"),
    Fetcher("aria2c", (), "url", "shell:aria2c"),
    Fetcher("http", (), "url", "shell:httpie"),
    Fetcher("https", (), "url", "shell:httpie"),
    Fetcher("xh", (), "url", "shell:httpie"),
    Fetcher("gh", (), "always", "shell:gh"),
    Fetcher("git", ("clone",), "remote_repo", "shell:git-clone"),
    Fetcher("git", ("submodule",), "explicit_remote", "shell:git-clone"),
    Fetcher("git", ("pull",), "explicit_remote", "shell:git-pull"),
    Fetcher("git", ("fetch",), "explicit_remote", "shell:git-fetch"),
    Fetcher("git", ("ls-remote",), "explicit_remote", "shell:git-fetch"),
    Fetcher("pip", ("download",), "always", "shell:pip-download"),
    Fetcher("npm", ("view", "info", "show", "v"), "always", "shell:npm-view"),
    Fetcher("pnpm", ("view", "info"), "always", "shell:npm-view"),
    Fetcher("yarn", ("info",), "always", "shell:npm-view"),
    Fetcher("scp", (), "remote_source", "shell:scp"),
    Fetcher("rsync", (), "remote_source", "shell:rsync"),
)
PACKAGE_DOCS = "package-docs"
"""The tag of a read of an installed package's documentation (``package_doc_read``)."""

GH_LOCAL = frozenset(
    {"auth", "config", "alias", "completion", "help", "version", "--version", "--help", "-h"}
)
_PIP = frozenset({"pip", "pip3"})
_PYTHON = re.compile(r"python(\d+(\.\d+)?)?$")
SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh"})
"""Shells whose ``-c`` argument is a script (by program name, any folder)."""
_PREFIXES = frozenset(
    {"sudo", "env", "time", "nice", "nohup", "command", "exec", "xargs", "timeout", "stdbuf"}
)
# Options of a prefix or a fetcher that take the next word as their value (never an address).
_VALUE_OPTIONS: dict[str, frozenset[str]] = {
    "sudo": frozenset({"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T"}),
    "env": frozenset({"-u", "-C", "-S", "--unset", "--chdir"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "timeout": frozenset({"-s", "-k", "--signal", "--kill-after"}),
    "xargs": frozenset({"-I", "-n", "-P", "-L", "-s", "-d", "-E", "-a"}),
    "curl": frozenset(
        [
            "-o",
            "-H",
            "-d",
            "-X",
            "-u",
            "-A",
            "-e",
            "-b",
            "-c",
            "-T",
            "-F",
            "-w",
            "-m",
            "-x",
            "-K",
            "-E",
            "-r",
            "-Y",
            "-y",
            "-z",
            "-C",
            "-U",
            "-Q",
            "--output",
            "--header",
            "--data",
            "--data-raw",
            "--data-binary",
            "--data-urlencode",
            "--request",
            "--user",
            "--user-agent",
            "--referer",
            "--cookie",
            "--cookie-jar",
            "--upload-file",
            "--form",
            "--write-out",
            "--max-time",
            "--connect-timeout",
            "--retry",
            "--proxy",
            "--resolve",
            "--cacert",
            "--cert",
            "--key",
            "--config",
            "--range",
            "--output-dir",
            "--connect-to",
            "--json",
        ]
    ),
    "wget": frozenset(
        [
            "-O",
            "-o",
            "-a",
            "-P",
            "-U",
            "-e",
            "-T",
            "-t",
            "-w",
            "-i",
            "--output-document",
            "--directory-prefix",
            "--header",
            "--user-agent",
            "--user",
            "--password",
            "--post-data",
            "--timeout",
            "--tries",
        ]
    ),
    "aria2c": frozenset(["-o", "-d", "-s", "-x", "-j", "-i", "--dir", "--out", "--input-file"]),
    "git": frozenset(
        [
            "-C",
            "-c",
            "--git-dir",
            "--work-tree",
            "--namespace",
            "--depth",
            "-b",
            "--branch",
            "-o",
            "--origin",
            "--reference",
            "--filter",
            "-j",
            "--jobs",
            "--template",
            "--config",
            "--shallow-since",
            "--shallow-exclude",
            "-u",
            "--upload-pack",
        ]
    ),
    "scp": frozenset({"-P", "-i", "-o", "-F", "-c", "-l", "-S", "-J"}),
    "rsync": frozenset({"-e", "--rsh", "--exclude", "--include", "--filter", "-f", "--port", "--rsync-path"}),
}
_SEPARATORS = re.compile(r"^[();<>|&$`]+$")
_HOSTLIKE = re.compile(r"^(?:[a-z0-9-]+\.)+[a-z]{2,}(?::\d+)?(?:[/?#].*)?$", re.IGNORECASE)
_LOCAL_HOST = re.compile(
    r"^(?:localhost|.*\.localhost|127(?:\.\d{1,3}){3}|0\.0\.0\.0|::1|\[::1\]|0:0:0:0:0:0:0:1)$", re.IGNORECASE
)
_SCP_LIKE = re.compile(r"^(?:[\w.+-]+@)?(\[[^\]]+\]|[\w.-]+):(?!//)")
_LOCAL_PATH = re.compile(r"^(?:/|\./|\.\./|~|file://|[A-Za-z]:[\\/])")
_PACKAGE_DIRS = (
    "node_modules",
    "site-packages",
    "dist-packages",
    ".cargo/registry",
    "pkg/mod",
    ".m2/repository",
    "vendor/bundle",
    ".gem/ruby",
    ".npm/_cacache",
)
"""Where installed packages live (their files were written by their authors, not on this machine)."""
_PACKAGE_DIR = re.compile(r"(?:^|/)(?:" + "|".join(re.escape(d) for d in _PACKAGE_DIRS) + ")/")
_DOC_FILE = re.compile(r"(?:^|/)(?:readme[^/]*|[^/]+\.(?:md|markdown|rst|txt))$", re.IGNORECASE)
READ_VERBS = frozenset(
    {"cat", "sed", "head", "tail", "less", "more", "bat", "batcat", "nl", "awk", "grep", "rg", "tac", "view"}
    | {"get-content", "gc", "type"}
)
"""Shell commands that print a file's contents (``pipeline.sources._tools`` reads memory reads by them too)."""


def _host_of(word: str) -> str | None:
    """The host an argument names (a URL, ``host.tld/path``, ``localhost:8080``), else None."""
    word = word.strip("'\"")
    if "://" in word:
        try:
            host = urlsplit(word).hostname
        except ValueError:
            return None
        return host or None
    if word.startswith(":") and re.match(r"^:\d*(/|$)", word):
        return "localhost"  # HTTPie's shorthand for localhost
    head = re.split(r"[/?#]", word, maxsplit=1)[0]
    bare = head.rsplit("@", 1)[-1]
    host = re.sub(r":\d+$", "", bare)
    if _LOCAL_HOST.match(host):
        return host
    return host if _HOSTLIKE.match(word.rsplit("@", 1)[-1]) else None


def is_local_host(host: str) -> bool:
    """The machine itself: ``localhost`` (and ``*.localhost``), ``127.x.x.x``, ``::1``, ``0.0.0.0``."""
    return _LOCAL_HOST.match(host) is not None


def _remote_addr(word: str) -> bool:
    """A URL or ``[user@]host:path`` of another machine (not a local path, not the machine itself)."""
    if _LOCAL_PATH.match(word):
        return False
    if "://" in word:
        host = _host_of(word)
        return host is not None and not is_local_host(host)
    match = _SCP_LIKE.match(word)
    return match is not None and not is_local_host(match.group(1))


def _split(command: str) -> list[list[str]]:
    """The simple commands of ``command``, as words."""
    text = command.replace("`", " ; ").replace("\n", " ; ")
    try:
        lexer = shlex.shlex(text, posix=True, punctuation_chars="();<>|&")
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError:
        words = re.split(r"[\s]+", re.sub(r"[();<>|&$]", " ; ", text))
    out: list[list[str]] = [[]]
    for word in words:
        if _SEPARATORS.match(word):
            if out[-1]:
                out.append([])
        elif word:
            out[-1].append(word)
    return [c for c in out if c]


def program(word: str) -> str:
    """A command's program name: ``/usr/bin/Curl`` -> ``curl``."""
    return word.rsplit("/", 1)[-1].lower()


def _strip_prefixes(words: list[str]) -> list[str]:
    i = 0
    while i < len(words):
        word = words[i]
        name = program(word)
        if "=" in word and not word.startswith("-") and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", word):
            i += 1
        elif name in _PREFIXES:
            i += 1
            takes = _VALUE_OPTIONS.get(name, frozenset())
            while i < len(words) and (words[i].startswith("-") or (name == "env" and "=" in words[i])):
                i += 2 if words[i] in takes else 1
            if name == "timeout" and i < len(words) and re.match(r"^\d", words[i]):
                i += 1  # the duration
        else:
            break
    return words[i:]


def _arguments(program: str, words: list[str]) -> list[str]:
    """The words that are not options nor option values."""
    takes = _VALUE_OPTIONS.get(program, frozenset())
    out: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word.startswith("-") and word != "-":
            skip = word in takes
        else:
            out.append(word)
    return out


def _fetch_tag(words: list[str], depth: int) -> list[str]:
    if not words:
        return []
    name = program(words[0])
    rest = words[1:]
    if name in SHELLS:
        for j, word in enumerate(rest):
            if (
                word.startswith("-")
                and "c" in word.lstrip("-")
                and not word.startswith("--")
                and j + 1 < len(rest)
            ):
                return shell_fetches(rest[j + 1], depth + 1)
        return []
    if _PYTHON.match(name) and rest[:2] == ["-m", "pip"]:
        name, rest = "pip", rest[2:]
    if name in _PIP:
        name = "pip"
    args = _arguments(name, rest)
    tags: list[str] = []
    for fetcher in FETCHERS:
        if fetcher.program != name:
            continue
        targets = args
        if fetcher.subcommands:
            if not args or args[0] not in fetcher.subcommands:
                continue
            targets = args[1:]
        if _external(fetcher, targets) and fetcher.tag not in tags:
            tags.append(fetcher.tag)
    return tags


def _external(fetcher: Fetcher, args: list[str]) -> bool:
    needs = fetcher.needs
    if needs == "always":
        return not (fetcher.program == "gh" and (not args or args[0] in GH_LOCAL))
    if needs == "url":
        hosts = [h for h in (_host_of(a) for a in args) if h is not None]
        return any(not is_local_host(h) for h in hosts)
    if needs == "remote_repo":
        return bool(args) and _remote_addr(args[0])
    if needs == "explicit_remote":
        return any(_remote_addr(a) for a in args)
    # remote_source: scp/rsync copy from a host (a source is every argument but the destination)
    return any(_remote_addr(a) for a in args[:-1])


def simple_commands(command: str) -> list[list[str]]:
    """The simple commands of a command line, as words, each without its prefixes (``sudo``,
    ``VAR=value``, ``env``...)."""
    return [words for words in (_strip_prefixes(c) for c in _split(command)) if words]


def read_arguments(command: str) -> list[str]:
    """What the command line's read commands (``READ_VERBS``: cat, sed, less...) were given to read
    (their arguments that are not options)."""
    return [
        word
        for words in simple_commands(command)
        if program(words[0]) in READ_VERBS
        for word in words[1:]
        if not word.startswith("-")
    ]


_TOKEN = re.compile(r"[\w.+-]+")
_NAMES = {f.program for f in FETCHERS} | {"pip3"}
_NEEDED = {
    name: frozenset(sub for f in FETCHERS if f.program == name for sub in f.subcommands)
    for name in {f.program for f in FETCHERS}
    if all(f.subcommands for f in FETCHERS if f.program == name)
}


def _worth_parsing(command: str) -> bool:
    """Whether a command line names a fetcher of ``FETCHERS`` (and, for one with subcommands, one
    of them) or a package folder: the cheap test before the parse."""
    words = set(_TOKEN.findall(command.lower()))
    for name in _NAMES & words:
        needed = _NEEDED.get("pip" if name == "pip3" else name)
        if needed is None or needed & words:
            return True
    return any(d in command for d in _PACKAGE_DIRS)


def shell_fetches(command: str, depth: int = 0) -> list[str]:
    """The tags of ``FETCHERS`` a shell command line used to reach another host, in table order, and
    ``PACKAGE_DOCS`` when it read an installed package's documentation."""
    if depth > 3 or not command or not _worth_parsing(command):
        return []
    found: list[str] = []
    for words in simple_commands(command):
        for tag in _fetch_tag(words, depth):
            if tag not in found:
                found.append(tag)
    if any(is_package_doc(w) for w in read_arguments(command)):
        found.append(PACKAGE_DOCS)
    return found


def is_package_doc(path: str) -> bool:
    """A documentation file of an installed package (``node_modules/x/README.md``...)."""
    return _PACKAGE_DIR.search(path) is not None and _DOC_FILE.search(path) is not None
