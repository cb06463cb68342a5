"""What an idle `memd run` costs: its resident memory and CPU seconds over a quiet period.

Starts the real daemon in a throwaway HOME whose transcript roots exist but hold nothing new,
waits for READY=1 on a notify socket (with a systemd watchdog configured), lets it settle through
its first cycle, then samples /proc for --seconds (default 60). A bare Python process sleeping
over the same period is measured beside it as the baseline. Targets: at most 70 MB RSS, CPU near
zero (no busy polling; the LLM client is never loaded).

    .venv/bin/python benchmarks/idle_bench.py [--seconds 60] [--ui]
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

TARGET_RSS_MB = 70
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


def measure(pid: int, seconds: float) -> tuple[float, float, float]:
    """CPU seconds used over ``seconds``, and the mean and peak RSS sampled once a second."""
    c0 = cpu_s(pid)
    samples = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        samples.append(rss_mb(pid))
        time.sleep(1)
    return cpu_s(pid) - c0, sum(samples) / len(samples), max(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument(
        "--settle", type=float, default=5.0, help="seconds after the first cycle before measuring"
    )
    parser.add_argument(
        "--ui", action="store_true", help="with [ui] enabled: the daemon serves the web page (on a free port)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        env = {
            k: v for k, v in os.environ.items() if not k.startswith(("MEMD_", "XDG_", "NOTIFY_", "WATCHDOG_"))
        }
        env.pop("ANTHROPIC_API_KEY", None)
        env["HOME"] = str(home)
        for name, rel in (("CLAUDE_CODE", ".claude/projects"), ("CODEX", ".codex/sessions")):
            (home / rel).mkdir(parents=True)
            env[f"MEMD_SOURCES__{name}__ROOT"] = str(home / rel)
        if args.ui:
            env.update({"MEMD_UI__ENABLED": "true", "MEMD_UI__PORT": "0"})
        sock_path = home / "notify.sock"
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(str(sock_path))
        sock.settimeout(120)
        env.update({"NOTIFY_SOCKET": str(sock_path), "WATCHDOG_USEC": "120000000"})
        daemon = subprocess.Popen(
            [str(Path(sys.executable).parent / "memd"), "run"], env=env, stderr=subprocess.DEVNULL
        )
        baseline = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({args.seconds + 30})"])
        try:
            while "STATUS=idle" not in sock.recv(4096).decode():  # READY=1, then the first cycle's end
                pass
            time.sleep(args.settle)
            cpu, rss_mean, rss_peak = measure(daemon.pid, args.seconds)
            base_cpu = cpu_s(baseline.pid)
            base_rss = rss_mb(baseline.pid)
            n_threads = threads(daemon.pid)
        finally:
            daemon.terminate()
            code = daemon.wait(timeout=60)
            baseline.kill()
            baseline.wait()
            sock.close()
    page = ", serving the web page ([ui] enabled)" if args.ui else ""
    print(
        f"idle for {args.seconds:.0f} s after the first cycle (watchers on 2 roots, heartbeat every 15 s{page})"
    )
    print(f"{'':<20} {'CPU s':>8} {'CPU %':>7} {'RSS mean MB':>12} {'RSS peak MB':>12}")
    print(f"{'memd run':<20} {cpu:8.2f} {100 * cpu / args.seconds:6.2f}% {rss_mean:12.1f} {rss_peak:12.1f}")
    print(
        f"{'python sleeping':<20} {base_cpu:8.2f} {100 * base_cpu / args.seconds:6.2f}% {base_rss:12.1f} {base_rss:12.1f}"
    )
    print(f"threads: {n_threads}; exit status after SIGTERM: {code}")
    verdict = "ok" if rss_peak <= TARGET_RSS_MB and cpu / args.seconds < 0.01 else "OVER"
    print(f"target: <= {TARGET_RSS_MB} MB RSS and CPU near zero (< 1%): {verdict}")


if __name__ == "__main__":
    main()
