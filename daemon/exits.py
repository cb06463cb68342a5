"""memd's exit statuses: one table, one meaning per code (the README's "Exit statuses" lists them)."""

from __future__ import annotations

from enum import IntEnum, unique


@unique
class Exit(IntEnum):
    """What a memd process's exit status means, for every command and the daemon."""

    OK = 0
    """Done: the command did what was asked (`memd status`: the daemon runs)."""
    FAILED = 1
    """The command ran and failed, and says why (`memd status`: the daemon is not running; the
    daemon: a stop that overran its deadline)."""
    CONFIG = 2
    """A bad config file or value: the file, the key and the problem are printed."""
    BUSY = 3
    """Another memd holds this state store (a second daemon or `memd run --once` is refused)."""
    STUCK = 4
    """`memd status`: the daemon's process is there but its heartbeat is stale or a step overran."""
    UNTRUSTED = 5
    """`memd sync`: the remote's allowed signers do not name this machine yet; its work stays local,
    and the command to run on a machine that already syncs is printed."""
    USAGE = 64
    """Bad arguments or options (an unknown option, a missing or conflicting one)."""
    INTERRUPTED = 130
    """Stopped by Ctrl-C before it finished."""
    READER_GONE = 141
    """What it printed had no reader any more (`memd status | head -1`): ended quietly, as a command
    killed by SIGPIPE ends in a shell (128 + 13), never as a success whose output was cut."""
