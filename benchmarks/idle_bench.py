"""What an idle `memd run` costs: its resident memory and CPU seconds over a quiet period.

Starts the real daemon (``python -m daemon run``) in a throwaway HOME whose transcript roots exist
but hold nothing new, waits for READY=1 on a notify socket (with a systemd watchdog configured),
lets it settle through its first cycle, then samples /proc for --seconds (default 60). Beside it,
over the same period, a baseline memd's daemon (``--baseline``: a git ref, default ``main``, or a
memd checkout's folder; ``none`` for none) in a HOME of its own, and a bare Python process
sleeping. Targets: at most 60 MB RSS, CPU near zero (no busy polling; the LLM client is never
loaded).

    .venv/bin/python benchmarks/idle_bench.py [--seconds 60] [--ui] [--baseline main]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.baseline import ROOT, source

TARGET_RSS_MB = 60
"""The idle daemon's peak resident memory, at most."""
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime + stime


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def measure_all(pids: dict[str, int], seconds: float) -> dict[str, tuple[float, float, float]]:
    """Each process's CPU seconds used over ``seconds``, and its mean and peak RSS sampled once a
    second (all over the same period)."""
    c0 = {name: cpu_s(pid) for name, pid in pids.items()}
    samples: dict[str, list[float]] = {name: [] for name in pids}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for name, pid in pids.items():
            samples[name].append(rss_mb(pid))
        time.sleep(1)
    return {
        name: (cpu_s(pid) - c0[name], sum(samples[name]) / len(samples[name]), max(samples[name]))
        for name, pid in pids.items()
    }


class Idle:
    """One `memd run` (the source under ``PYTHONPATH``) in a throwaway HOME of its own."""

    def __init__(self, home: Path, pythonpath: Path, ui: bool) -> None:
        env = {
            k: v for k, v in os.environ.items() if not k.startswith(("MEMD_", "XDG_", "NOTIFY_", "WATCHDOG_"))
        }
        env.pop("ANTHROPIC_API_KEY", None)
        env["HOME"] = str(home)
        env["PYTHONPATH"] = str(pythonpath)
        for name, rel in (("CLAUDE_CODE", ".claude/projects"), ("CODEX", ".codex/sessions")):
            (home / rel).mkdir(parents=True)
            env[f"MEMD_SOURCES__{name}__ROOT"] = str(home / rel)
        if ui:
            env.update({"MEMD_UI__ENABLED": "true", "MEMD_UI__PORT": "0"})
        sock_path = home / "notify.sock"
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(sock_path))
        self.sock.settimeout(300)
        env.update({"NOTIFY_SOCKET": str(sock_path), "WATCHDOG_USEC": "120000000"})
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "daemon", "run"], env=env, cwd=home, stderr=subprocess.DEVNULL
        )

    def wait_idle(self) -> None:
        """Until READY=1, then the first cycle's end."""
        while "STATUS=idle" not in self.sock.recv(4096).decode():
            pass

    def stop(self) -> int:
        self.proc.terminate()
        try:
            return self.proc.wait(timeout=60)
        finally:
            self.sock.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument(
        "--settle", type=float, default=5.0, help="seconds after the first cycle before measuring"
    )
    parser.add_argument(
        "--ui", action="store_true", help="with [ui] enabled: the daemon serves the web page (on a free port)"
    )
    parser.add_argument("--baseline", default="main", help="a git ref, a memd checkout's folder, or none")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        baseline = source(args.baseline, root / "baseline")
        (root / "home").mkdir()
        daemons = {"memd run": Idle(root / "home", ROOT, args.ui)}
        if baseline is not None:
            (root / "home-baseline").mkdir()
            daemons[f"memd run ({args.baseline})"] = Idle(root / "home-baseline", baseline, args.ui)
        sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(100000)"])
        figures: dict[str, tuple[float, float, float]] = {}
        codes: dict[str, int] = {}
        n_threads = 0
        try:
            for daemon in daemons.values():
                daemon.wait_idle()
            time.sleep(args.settle)
            pids = {name: d.proc.pid for name, d in daemons.items()}
            figures = measure_all(pids, args.seconds)
            base_cpu = cpu_s(sleeper.pid)
            base_rss = rss_mb(sleeper.pid)
            n_threads = threads(daemons["memd run"].proc.pid)
        finally:
            for name, daemon in daemons.items():
                codes[name] = daemon.stop()
            sleeper.kill()
            sleeper.wait()
    page = ", serving the web page ([ui] enabled)" if args.ui else ""
    together = " (measured together)" if len(daemons) > 1 else ""
    print(
        f"idle for {args.seconds:.0f} s after the first cycle (watchers on 2 roots, heartbeat every 15 s{page}){together}"
    )
    print(f"{'':<24} {'CPU s':>8} {'CPU %':>7} {'RSS mean MB':>12} {'RSS peak MB':>12}")
    for name, (cpu, rss_mean, rss_peak) in figures.items():
        print(f"{name:<24} {cpu:8.2f} {100 * cpu / args.seconds:6.2f}% {rss_mean:12.1f} {rss_peak:12.1f}")
    print(
        f"{'python sleeping':<24} {base_cpu:8.2f} {100 * base_cpu / args.seconds:6.2f}% {base_rss:12.1f} {base_rss:12.1f}"
    )
    print(f"threads: {n_threads}; exit status after SIGTERM: {codes}")
    cpu, _, rss_peak = figures["memd run"]
    verdict = "ok" if rss_peak <= TARGET_RSS_MB and cpu / args.seconds < 0.01 else "OVER"
    print(f"target: <= {TARGET_RSS_MB} MB RSS and CPU near zero (< 1%): {verdict}")


if __name__ == "__main__":
    main()
