"""Time from a rank's crash to every rank relaunched: `aegis run` vs `torchrun --max-restarts 1`.

Both run examples/train_ddp.py with CRASH_ONCE_RANK=1; the script writes timestamps (its
crash, and each rank's start) to TIMES_FILE.
Usage: python bench/restart_vs_torchrun.py [N | NxK ...] [--repeat R]
(NxK: N node agents of K processes; torchrun runs one group of N*K processes and, as a second
peer, N `--nnodes` agents on loopback.)
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Layout:
    """N node agents of K processes each ("2" is 2x1); the crash hits local rank 1 of node 1
    (of node 0 when there is one node)."""

    nodes: int
    procs: int

    @classmethod
    def parse(cls, text: str) -> Layout:
        nodes, _, procs = text.partition("x")
        return cls(int(nodes), int(procs or 1))

    @property
    def world(self) -> int:
        return self.nodes * self.procs

    @property
    def crash_rank(self) -> int:
        return self.procs + 1 if self.nodes > 1 and self.procs > 1 else 1

    def __str__(self) -> str:
        return f"{self.nodes}x{self.procs}" if self.procs > 1 else str(self.nodes)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(kind: str, layout: Layout) -> float:
    """One measured run: "aegis", "torchrun" (one group of N*K processes) or "torchrun-nodes"
    (N torchrun agents with --nnodes N, K processes each, on loopback)."""
    with tempfile.TemporaryDirectory() as tmp:
        times = Path(tmp) / "times"
        env = {
            **os.environ,
            "CRASH_ONCE_RANK": str(layout.crash_rank),
            "CRASH_DIR": tmp,
            "TIMES_FILE": str(times),
        }
        torchrun = [sys.executable, "-m", "torch.distributed.run", "--max-restarts", "1"]
        if kind == "aegis":
            argv = [sys.executable, "-m", "aegis.cli", "run", "--nnodes", str(layout.nodes),
                    "--nproc-per-node", str(layout.procs), "--state-dir", f"{tmp}/state",
                    "--", sys.executable, TRAIN]  # fmt: skip
            procs = [
                subprocess.Popen(
                    argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
                )
            ]
        elif kind == "torchrun":
            argv = [*torchrun, "--nproc-per-node", str(layout.world), TRAIN]
            procs = [
                subprocess.Popen(
                    argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
                )
            ]
        else:
            port = free_port()
            procs = [
                subprocess.Popen(
                    [
                        *torchrun,
                        "--nnodes",
                        str(layout.nodes),
                        "--node-rank",
                        str(i),
                        "--nproc-per-node",
                        str(layout.procs),
                        "--master-addr",
                        "127.0.0.1",
                        "--master-port",
                        str(port),
                        TRAIN,
                    ],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    text=True,
                )
                for i in range(layout.nodes)
            ]
        errors = []
        for proc in procs:
            try:
                _, err = proc.communicate(timeout=300)
            except subprocess.TimeoutExpired:
                for q in procs:
                    q.kill()
                raise
            if proc.returncode != 0:
                errors.append(f"{kind} {layout} exited {proc.returncode}: {err[-2000:]}")
        if errors:
            raise RuntimeError(errors[0])
        return relaunch_seconds(times, layout.world)


def measure(kind: str, layout: Layout, times: list[float], failures: list[str]) -> None:
    """One run: its relaunch time into `times`, or why it failed into `failures`."""
    try:
        times.append(run(kind, layout))
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
    parser.add_argument(
        "sizes",
        nargs="*",
        default=["2", "4"],
        help="layouts: N (N ranks, one per node agent) or NxK (N node agents of K processes)",
    )
    parser.add_argument("-r", "--repeat", type=int, default=5, help="runs of each (median)")
    args = parser.parse_args(argv)
    print(
        f"{'layout':>6} {'aegis s (min-max)':>22} {'torchrun s (min-max)':>24} "
        f"{'aegis/torchrun':>15}   medians of {args.repeat} interleaved runs"
    )
    for layout in (Layout.parse(s) for s in args.sizes):
        peers = ["torchrun"] + (["torchrun-nodes"] if layout.nodes > 1 else [])
        results: dict[str, tuple[list[float], list[str]]] = {k: ([], []) for k in ("aegis", *peers)}
        for _ in range(args.repeat):
            for kind, (times, fails) in results.items():
                measure(kind, layout, times, fails)
        a = results["aegis"][0]
        for peer in peers:
            t, t_fail = results[peer]
            ratio = statistics.median(a) / statistics.median(t) if a and t else float("nan")
            label = f"{layout}" if peer == "torchrun" else f"  vs {layout.nodes} torchrun agents"
            print(
                f"{label:>6} {summary(a, results['aegis'][1])} {summary(t, t_fail):>24} "
                f"{ratio:>15.2f}",
                flush=True,
            )
        for kind, (_, fails) in results.items():
            for why in fails:
                print(f"      {kind} run failed: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
