"""Rendering benchmark: memd's compact transcript text next to a Codex-style JSON rendering of the
same normalized items, per sample transcript, in one run.

    .venv/bin/python benchmarks/render_bench.py [--samples /work/shared/samples] [--budget 60000]

Samples are read in place (never copied into the repository) and parsed by memd's own adapters.
The baseline serializes the same items the way Codex's phase 1 does (a compact JSON array of
response items: ``message`` with ``input_text``/``output_text`` parts, ``function_call`` with
its arguments, ``function_call_output`` with the full output), so the difference is the rendering,
not what the adapters kept. The adapters already cap a call's ``args_summary``, so the baseline is,
if anything, smaller than Codex's. Both sides are counted with the same estimator
(``pipeline.extract.compact.estimate_tokens``, characters / 3.5). The baseline's serializer is
``benchmarks/codex_phase1.py`` (shared with ``quality_bench.py``).

Columns: items; JSON tokens (baseline); compact tokens with no budget (the rendering alone);
their ratio; compact tokens inside ``--budget`` and how many items that cut; render time.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.codex_phase1 import codex_json
from pipeline.extract.compact import estimate_tokens, render
from pipeline.sources.registry import adapter_for
from tests.source_names import SourceName

FOLDERS: dict[str, SourceName] = {
    "claude-code": SourceName.CLAUDE_CODE,
    "codex": SourceName.CODEX,
    "gemini-cli": SourceName.GEMINI_CLI,
    "pi": SourceName.PI,
}
UNBOUNDED = 10**12


def samples(root: Path) -> list[tuple[SourceName, Path]]:
    found: list[tuple[SourceName, Path]] = []
    for folder, source in FOLDERS.items():
        base = root / folder
        if base.is_dir():
            # What the adapter discovers, plus sample files kept outside the agent's own folder layout.
            paths = set(adapter_for(source).discover(base))
            paths |= {p for p in base.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl")}
            found += [(source, p) for p in sorted(paths)]
    return found


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--samples", type=Path, default=Path("/work/shared/samples"))
    parser.add_argument("--budget", type=int, default=60_000)
    args = parser.parse_args()

    rows = []
    for source, path in samples(args.samples):
        result = adapter_for(source).parse(path, 0, None, with_items=True)
        if result.transcript is None or not result.transcript.items:
            rows.append((source, path, None))
            continue
        items = result.transcript.items
        t0 = time.perf_counter()
        baseline = codex_json(items)
        t_json = time.perf_counter() - t0
        t0 = time.perf_counter()
        full = render(items, UNBOUNDED)
        t_full = time.perf_counter() - t0
        fitted = render(items, args.budget)
        rows.append((source, path, (len(items), estimate_tokens(baseline), full, fitted, t_json, t_full)))

    header = (
        f"{'source':<11} {'sample':<44} {'items':>6} {'JSON tok':>9} {'compact':>8} {'ratio':>6} "
        f"{'@budget':>8} {'cut':>5} {'json ms':>8} {'render ms':>9}"
    )
    print(f"budget {args.budget} tokens; tokens estimated as chars/3.5 on both sides")
    print(header)
    print("-" * len(header))
    total_json = total_full = total_fit = 0
    for source, path, data in rows:
        name = path.name if len(path.name) <= 44 else path.name[:41] + "..."
        if data is None:
            print(f"{source:<11} {name:<44} {'(no conversation)':>20}")
            continue
        n, json_tok, full, fitted, t_json, t_full = data
        total_json += json_tok
        total_full += full.tokens
        total_fit += fitted.tokens
        print(
            f"{source:<11} {name:<44} {n:>6} {json_tok:>9} {full.tokens:>8} {full.tokens / json_tok:>6.2f} "
            f"{fitted.tokens:>8} {fitted.items_omitted:>5} {t_json * 1000:>8.1f} {t_full * 1000:>9.1f}"
        )
    print("-" * len(header))
    if total_json:
        print(
            f"{'total':<56} {'':>6} {total_json:>9} {total_full:>8} {total_full / total_json:>6.2f} {total_fit:>8}"
        )


if __name__ == "__main__":
    main()
