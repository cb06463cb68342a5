"""Rewrite ``pipeline/invisible.py``'s ``IGNORABLE`` from the Unicode Character Database the ``regex``
package ships (its ``\\p{Default_Ignorable_Code_Point}``): ``python tests/gen_invisible.py``."""

from __future__ import annotations

import re
import sys
from pathlib import Path

TARGET = Path(__file__).resolve().parent.parent / "pipeline" / "invisible.py"
_BLOCK = re.compile(r"(IGNORABLE: tuple\[tuple\[int, int\], \.\.\.\] = \(\n).*?(\)\n# END GENERATED)", re.S)


def ranges() -> list[tuple[int, int]]:
    """The property's code points as inclusive ranges, from ``regex``'s tables."""
    import regex

    prop = regex.compile(r"\p{Default_Ignorable_Code_Point}")
    out: list[list[int]] = []
    for cp in range(0x110000):
        if 0xD800 <= cp < 0xE000 or not prop.match(chr(cp)):
            continue
        if out and out[-1][1] == cp - 1:
            out[-1][1] = cp
        else:
            out.append([cp, cp])
    return [(a, b) for a, b in out]


def main() -> int:
    body = "".join(f"    (0x{a:04X}, 0x{b:04X}),\n" for a, b in ranges())
    text = TARGET.read_text(encoding="utf-8")
    new = _BLOCK.sub(lambda m: m.group(1) + body + m.group(2), text, count=1)
    TARGET.write_text(new, encoding="utf-8")
    return 0 if new == text else 1


if __name__ == "__main__":
    sys.exit(main())
