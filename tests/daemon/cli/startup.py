"""What a memd command has imported when it ends, seen from a fresh interpreter (not a test module).

A command's start-up is mostly its imports (issue 34): ``imported`` runs the real CLI (``daemon.cli.main``)
with ``args`` in a new process, importing nothing of memd before it, and says which modules it
loaded and which frozen records it compiled with ``dataclasses.dataclass`` (about 0.6 ms a class on
Python 3.11; ``pipeline.frozen`` makes the same record from shared functions, ~0.02 ms).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass

PROBE = """
import json, sys
from daemon.cli import main
try:
    main(json.loads(sys.argv[1]))
except SystemExit:
    pass
modules = sorted(name for name, module in list(sys.modules.items()) if module is not None)
compiled = sorted(
    f"{name}.{c.__name__}"
    for name, module in list(sys.modules.items())
    if name.split(".")[0] in ("daemon", "pipeline") and module is not None
    for c in vars(module).values()
    if isinstance(c, type) and c.__module__ == name
    and getattr(getattr(c, "__dataclass_params__", None), "frozen", False)
    and "__frozen_fields__" not in vars(c)
)
print(json.dumps({"modules": modules, "compiled": compiled}), file=sys.stderr)
"""


@dataclass(frozen=True)
class Imported:
    modules: list[str]
    compiled_frozen: list[str]
    """The frozen dataclasses of memd the command compiled (each should be a ``pipeline.frozen`` record)."""
    stdout: str
    stderr: str

    def loaded(self, packages: tuple[str, ...]) -> list[str]:
        """The modules of ``packages`` (each a module or a package and everything under it) it loaded."""
        return [m for m in self.modules if any(m == p or m.startswith(p + ".") for p in packages)]


def imported(args: list[str], env: dict[str, str], *, timeout_s: float = 60) -> Imported:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    *before, last = done.stderr.strip().splitlines() or [""]
    report = json.loads(last)
    return Imported(report["modules"], report["compiled"], done.stdout, "\n".join(before))
