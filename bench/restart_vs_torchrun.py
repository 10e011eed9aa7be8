"""Time from a rank's crash to every rank relaunched: `aegis run` vs `torchrun --max-restarts 1`.

Both run examples/train_ddp.py with CRASH_ONCE_RANK=1; the script writes timestamps (its
crash, and each rank's start) to TIMES_FILE.
Usage: python bench/restart_vs_torchrun.py [N...] [--repeat K]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

TRAIN = str(Path(__file__).resolve().parents[1] / "examples" / "train_ddp.py")


def relaunch_seconds(times_file: Path, n: int) -> float:
    """Seconds from the crash to the last rank's start in the second attempt."""
    crash = 0.0
    starts: dict[int, list[float]] = {}
    for line in times_file.read_text().splitlines():
        kind, rank, t = line.split()
        if kind == "crash":
            crash = float(t)
        else:
            starts.setdefault(int(rank), []).append(float(t))
    second = [max(ts) for r, ts in starts.items() if any(x > crash for x in ts)]
    if len(second) != n:
        raise RuntimeError(f"only {len(second)} of {n} ranks restarted: {starts}")
    return max(second) - crash


def run(kind: str, n: int) -> float:
    """One measured run of `kind` ("aegis" or "torchrun") with n ranks."""
    with tempfile.TemporaryDirectory() as tmp:
        times = Path(tmp) / "times"
        env = {**os.environ, "CRASH_ONCE_RANK": "1", "CRASH_DIR": tmp, "TIMES_FILE": str(times)}
        if kind == "aegis":
            argv = [
                sys.executable,
                "-m",
                "aegis.cli",
                "run",
                "-n",
                str(n),
                "--state-dir",
                f"{tmp}/state",
                "--",
                sys.executable,
                TRAIN,
            ]
        else:
            argv = [
                sys.executable,
                "-m",
                "torch.distributed.run",
                "--nproc-per-node",
                str(n),
                "--max-restarts",
                "1",
                TRAIN,
            ]
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            raise RuntimeError(f"{kind} -n {n} exited {proc.returncode}: {proc.stderr[-2000:]}")
        return relaunch_seconds(times, n)


def measure(kind: str, n: int, times: list[float], failures: list[str]) -> None:
    """One run: its relaunch time into `times`, or why it failed into `failures`."""
    try:
        times.append(run(kind, n))
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        failures.append(str(exc).splitlines()[0][:200])


def summary(times: list[float], failures: list[str]) -> str:
    """median (min-max) and the failed runs, if any."""
    if not times:
        return f"{'all failed':>22}"
    text = f"{statistics.median(times):>8.3f} ({min(times):.3f}-{max(times):.3f})"
    return text + (f" [{len(failures)} failed]" if failures else "")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[2, 4], help="rank counts")
    parser.add_argument("-r", "--repeat", type=int, default=5, help="runs of each (median)")
    args = parser.parse_args(argv)
    print(
        f"{'ranks':>5} {'aegis s (min-max)':>22} {'torchrun s (min-max)':>24} "
        f"{'aegis/torchrun':>15}   medians of {args.repeat} interleaved runs"
    )
    for n in args.sizes:
        a: list[float] = []
        t: list[float] = []
        a_fail: list[str] = []
        t_fail: list[str] = []
        for _ in range(args.repeat):
            measure("aegis", n, a, a_fail)
            measure("torchrun", n, t, t_fail)
        ratio = statistics.median(a) / statistics.median(t) if a and t else float("nan")
        print(f"{n:>5} {summary(a, a_fail)} {summary(t, t_fail):>24} {ratio:>15.2f}", flush=True)
        for kind, fails in (("aegis", a_fail), ("torchrun", t_fail)):
            for why in fails:
                print(f"      {kind} run failed: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
