"""`memd` that says which modules it has imported, for the idle daemon's test (not a test module).

    python -m tests.daemon.modules_memd REPORT [memd arguments...]

runs the real CLI (`python -m daemon`'s ``main``), importing nothing of memd before it; on SIGUSR1
it writes the names in ``sys.modules`` to ``REPORT``, a JSON list (written aside, then renamed).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from types import FrameType


def main() -> None:
    report = sys.argv[1]

    def write(signum: int, frame: FrameType | None) -> None:
        names = sorted(name for name, module in list(sys.modules.items()) if module is not None)
        with open(report + ".part", "w") as out:
            json.dump(names, out)
        os.replace(report + ".part", report)

    signal.signal(signal.SIGUSR1, write)
    sys.argv = ["memd", *sys.argv[2:]]
    from daemon.cli import main as memd

    memd()


if __name__ == "__main__":
    main()
