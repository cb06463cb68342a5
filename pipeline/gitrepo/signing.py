"""This machine's signing key: every commit memd makes in the memory repository is SSH-signed with it.

The key is an ed25519 SSH key kept in the state directory (``<state_dir>/signing-key`` and its
``.pub``, 0600 in a 0700 folder), made once by ``ssh-keygen -t ed25519 -N "" -C memd-<machine id>``
(a bounded subprocess, its whole process group killed at the timeout) at the first commit memd
signs. It is made in a private temporary folder and linked into place (never following a link: a
key path that is a symlink or not a regular file is refused; two processes making one at once
agree on the first). ``Signer`` is what ``daemon.runtime`` gives each ``MemoryRepo``; git signs
through ``ssh-keygen`` itself (``gpg.format=ssh``), whatever the user's git configuration says.

This machine's line in the memory's allowed signers (``pipeline.sync.trust``) names the machine as
``memd-<machine id>@<host>`` beside the public key.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.errors import MemoryRepoError
from pipeline.machine import machine_id
from pipeline.proc import hostname

KEY_FILE = "signing-key"
KEYGEN_TIMEOUT_S = 30.0
MAX_PUBLIC_KEY_BYTES = 16 * 1024
SIGNING_COMMANDS = frozenset({"commit", "commit-tree", "merge", "rebase", "cherry-pick", "revert"})
"""The git commands that can make a commit: they get the signing configuration."""
_HOST = re.compile(r"[^A-Za-z0-9.-]+")


def can_sign() -> bool:
    """Whether this machine has ``ssh-keygen``, which git signs and checks with."""
    return shutil.which("ssh-keygen") is not None


def key_path(state_dir: Path) -> Path:
    return Path(state_dir) / KEY_FILE


def principal(state_dir: Path) -> str:
    """How this machine is named in the allowed signers: ``memd-<machine id>@<host label>``."""
    host = _HOST.sub("-", hostname()).strip(".-")[:63] or "host"
    return f"memd-{machine_id(Path(state_dir))}@{host}"


def _regular(path: Path) -> bool:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(st.st_mode):
        raise MemoryRepoError(f"{path} is not a regular file (a link?): memd signs with no key there")
    return True


def _keygen(target: Path, comment: str) -> None:
    argv = ["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(target)]
    code, _out, err = _ssh_keygen(argv, b"")
    if code != 0:
        raise MemoryRepoError(f"ssh-keygen failed: {err.decode('utf-8', 'replace').strip()[-300:]}")


def ensure_key(state_dir: Path) -> Path:
    """The private key's path, made at the first ask."""
    state = Path(state_dir)
    final = key_path(state)
    if _regular(final) and _regular(final.with_name(KEY_FILE + ".pub")):
        return final
    state.mkdir(parents=True, exist_ok=True, mode=0o700)
    comment = f"memd-{machine_id(state)}"
    tmp = Path(tempfile.mkdtemp(prefix=".signing-key.", dir=state))
    try:
        _keygen(tmp / KEY_FILE, comment)
        os.chmod(tmp / KEY_FILE, 0o600)
        os.chmod(tmp / (KEY_FILE + ".pub"), 0o600)
        try:  # the public half first: a private key without its .pub is made again
            os.link(tmp / (KEY_FILE + ".pub"), final.with_name(KEY_FILE + ".pub"))
            os.link(tmp / KEY_FILE, final)
        except FileExistsError:
            pass  # another process made it first: its key wins
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if not (_regular(final) and _regular(final.with_name(KEY_FILE + ".pub"))):
        raise MemoryRepoError(f"memd's signing key {final} is incomplete: remove it and its .pub")
    return final


def public_key(state_dir: Path) -> str:
    """``<type> <base64>`` of this machine's public key (made at the first ask)."""
    pub = ensure_key(state_dir).with_name(KEY_FILE + ".pub")
    fd = os.open(pub, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        data = os.read(fd, MAX_PUBLIC_KEY_BYTES)
    finally:
        os.close(fd)
    parts = data.decode("ascii", "replace").split()
    if len(parts) < 2:
        raise MemoryRepoError(f"{pub} is not an SSH public key: remove it and {pub.stem} to make new ones")
    return f"{parts[0]} {parts[1]}"


def new_key(state_dir: Path) -> Path:
    """A new key pair for this machine, made in a private temporary folder of the state directory
    (`memd sync rotate`); ``install_key`` puts it in place, ``discard_key`` removes what is left."""
    state = Path(state_dir)
    tmp = Path(tempfile.mkdtemp(prefix=".signing-key.", dir=state))
    _keygen(tmp / KEY_FILE, f"memd-{machine_id(state)}")
    return tmp / KEY_FILE


def read_public_key(key: Path) -> str:
    """``<type> <base64>`` of the public half of private key ``key`` (its ``.pub``)."""
    fd = os.open(key.with_name(KEY_FILE + ".pub"), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        parts = os.read(fd, MAX_PUBLIC_KEY_BYTES).decode("ascii", "replace").split()
    finally:
        os.close(fd)
    if len(parts) < 2:
        raise MemoryRepoError(f"{key}.pub is not an SSH public key")
    return f"{parts[0]} {parts[1]}"


def install_key(state_dir: Path, fresh: Path) -> None:
    """Make ``fresh`` (from ``new_key``) this machine's signing key, replacing the old one."""
    final = key_path(state_dir)
    os.chmod(fresh, 0o600)
    os.chmod(fresh.with_name(KEY_FILE + ".pub"), 0o600)
    os.replace(fresh.with_name(KEY_FILE + ".pub"), final.with_name(KEY_FILE + ".pub"))
    os.replace(fresh, final)


def discard_key(fresh: Path) -> None:
    shutil.rmtree(fresh.parent, ignore_errors=True)


def _ssh_keygen(argv: list[str], data: bytes) -> tuple[int, bytes, bytes]:
    """``ssh-keygen`` with ``data`` on stdin, bounded (its process group killed at the timeout)."""
    try:
        proc = subprocess.Popen(
            ["ssh-keygen", *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/nonexistent", "LC_ALL": "C"},
        )
    except OSError as exc:
        raise MemoryRepoError(f"cannot run ssh-keygen: {exc}") from None
    try:
        out, err = proc.communicate(data, timeout=KEYGEN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        raise MemoryRepoError(f"ssh-keygen timed out after {KEYGEN_TIMEOUT_S:g} s") from None
    return proc.returncode, out, err


def sign_text(key: Path, namespace: str, data: bytes) -> str:
    """An SSH signature (``ssh-keygen -Y sign``, armored) of ``data`` by private key ``key``."""
    code, out, err = _ssh_keygen(["-Y", "sign", "-q", "-n", namespace, "-f", str(key)], data)
    if code != 0 or not out:
        raise MemoryRepoError(f"ssh-keygen could not sign: {err.decode('utf-8', 'replace').strip()[-300:]}")
    return out.decode("ascii")


def verify_text(public_key: str, namespace: str, data: bytes, signature: str) -> bool:
    """Whether ``signature`` (``sign_text``'s) is of ``data`` by ``public_key`` (``<type> <base64>``)."""
    if len(signature) > MAX_PUBLIC_KEY_BYTES or len(public_key.split()) != 2:
        return False
    with tempfile.TemporaryDirectory(prefix="memd-verify.") as tmp:
        allowed, sig = Path(tmp) / "allowed", Path(tmp) / "sig"
        allowed.write_text(f'signer namespaces="{namespace}" {public_key}\n', encoding="ascii")
        sig.write_text(signature, encoding="ascii")
        argv = ["-Y", "verify", "-f", str(allowed), "-I", "signer", "-n", namespace, "-s", str(sig)]
        code, _out, _err = _ssh_keygen(argv, data)
    return code == 0


@dataclass
class Signer:
    """The key this machine signs memd's commits with (made at the first signed commit)."""

    state_dir: Path
    _path: Path | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def key(self) -> Path:
        with self._lock:
            if self._path is None:
                self._path = ensure_key(self.state_dir)
            return self._path

    def principal(self) -> str:
        return principal(self.state_dir)

    def public_key(self) -> str:
        return public_key(self.state_dir)

    def args(self) -> list[str]:
        """The git options that sign every commit with this key."""
        return options_signing_with(self.key())


def options_signing_with(key: Path) -> list[str]:
    """git's options that sign every commit with the SSH private key ``key``, through ``ssh-keygen``."""
    return [
        "-c",
        "gpg.format=ssh",
        "-c",
        "gpg.ssh.program=ssh-keygen",
        "-c",
        f"user.signingKey={key}",
        "-c",
        "commit.gpgSign=true",
    ]


def signing_args(signer: Signer | None, args: tuple[str, ...] | list[str]) -> list[str]:
    """The signing options for a git command line ``args`` (none when it makes no commit)."""
    if signer is None or not args or args[0] not in SIGNING_COMMANDS:
        return []
    return signer.args()
