"""The wheel carries what an installed memd needs: both packages, the prompts and the service files."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_wheel_ships_prompts_service_files_and_the_console_script(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(ROOT),
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    [wheel] = tmp_path.glob("memd_daemon-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        entry_points = next(zf.read(n).decode() for n in names if n.endswith("entry_points.txt"))
    prompts = sorted(p.name for p in (ROOT / "prompts").glob("*.md"))
    assert prompts, "the repository has prompt files"
    for name in prompts:
        assert f"pipeline/prompts/{name}" in names
    for unit in (ROOT / "systemd").iterdir():
        assert f"daemon/service_files/{unit.name}" in names
    assert "daemon/cli/__init__.py" in names
    assert "pipeline/scan/scanner.py" in names
    for asset in (ROOT / "daemon" / "ui").glob("*/*.*"):  # the page's templates and stylesheet
        if asset.suffix in (".html", ".css"):
            assert f"daemon/ui/{asset.parent.name}/{asset.name}" in names
    assert "daemon/ui/templates/base.html" in names
    assert "daemon/ui/static/memd.css" in names
    assert "memd = daemon.cli:main" in entry_points
    assert not any(n.startswith("tests/") for n in names)
