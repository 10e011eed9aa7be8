"""One rank's crash on a job across three hosts: `aegis run` vs `torchrun --rdzv-backend c10d`.

The hosts are Linux network namespaces on a bridge, each with its own address
(aegis.testing.netns; needs root and iproute2). Both peers run examples/train_ddp.py with
`--nnodes 3` and K ranks per node; rank K+1 (local rank 1 of node 1, or rank 1 when K is 1)
exits 1 on its first attempt (CRASH_ONCE_RANK). Aegis: `aegis run --nnodes 3 --node-rank R
--rdzv-endpoint 10.77.0.1:29400` on each host (a join secret in the environment); torchrun:
`torchrun --nnodes 3 --rdzv-backend c10d --rdzv-endpoint 10.77.0.1:29500 --max-restarts 1`
on each host (host 0 hosts the c10d store: `is_host=1`). Both get GLOO_SOCKET_IFNAME=eth0,
as a torchrun user on such hosts must set (Aegis would choose it itself). Per run, read from
the ranks' TIMES_FILE as bench/restart_vs_torchrun.py reads it:
  recovered   every node exited 0 and every rank was relaunched once after the crash
  relaunch s  crash -> the last rank's start in the second attempt
  pg-ready s  crash -> the last rank's process group ready again
Usage: python bench/multihost_vs_torchrun.py [--rounds R] [--nproc K] [--run-timeout S] [-v]
Runs are interleaved (aegis, torchrun, aegis, ...); medians over the recovered runs, and the
ratio aegis / torchrun of each.
"""

from __future__ import annotations

import argparse
import math
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from aegis.testing.netns import Hosts, unavailable  # noqa: E402
from bench.restart_vs_torchrun import NotRecovered, Times, parse_times  # noqa: E402

TRAIN = str(ROOT / "examples" / "train_ddp.py")
NODES = 3
AEGIS_PORT, TORCHRUN_PORT = 29400, 29500
RUN_TIMEOUT_S = 300.0
PEERS = ("aegis", "torchrun")


def commands(kind: str, hosts: Hosts, nproc: int, tmp: Path) -> list[list[str]]:
    """Each host's command of one run."""
    head = hosts[0].address
    script = [sys.executable, TRAIN]
    size = ["--nnodes", str(NODES), "--nproc-per-node", str(nproc)]
    if kind == "aegis":
        aegis = [sys.executable, "-m", "aegis.cli", "run", *size, "--max-retry", "1"]
        aegis += ["--rdzv-endpoint", f"{head}:{AEGIS_PORT}"]
        state = ["--state-dir", str(tmp / "state")]
        return [
            [*aegis, "--node-rank", str(i), *(state if i == 0 else []), "--", *script]
            for i in range(NODES)
        ]
    torchrun = [sys.executable, "-m", "torch.distributed.run", *size, "--max-restarts", "1"]
    torchrun += ["--rdzv-backend", "c10d", "--rdzv-endpoint", f"{head}:{TORCHRUN_PORT}"]
    torchrun += ["--rdzv-id", tmp.name]
    # host 0 hosts the c10d store; each agent advertises its own address (its host name
    # resolves to none that another namespace reaches)
    return [
        [
            *torchrun,
            *("--rdzv-conf", f"is_host={1 if i == 0 else 0}"),
            *("--local-addr", hosts[i].address),
            TRAIN,  # torchrun runs it with its own Python
        ]
        for i in range(NODES)
    ]


def run(kind: str, hosts: Hosts, nproc: int, timeout: float) -> Times:
    """One run on the hosts; NotRecovered (saying how) unless it recovered."""
    with tempfile.TemporaryDirectory(prefix=f"mh-{kind}-") as work:
        tmp = Path(work)
        times = tmp / "times"
        crash_rank = nproc + 1 if nproc > 1 else 1
        env = {
            **os.environ,
            "CRASH_ONCE_RANK": str(crash_rank),
            "CRASH_DIR": str(tmp),
            "TIMES_FILE": str(times),
            "GLOO_SOCKET_IFNAME": "eth0",
            "AEGIS_JOIN_SECRET": secrets.token_hex(32),
        }
        procs = [
            hosts.popen(i, argv, env=env, out=tmp / f"node{i}.out", cwd=ROOT)
            for i, argv in enumerate(commands(kind, hosts, nproc, tmp))
        ]
        deadline = time.monotonic() + timeout
        try:
            codes = [p.wait(max(0.1, deadline - time.monotonic())) for p in procs]
        except subprocess.TimeoutExpired:
            raise NotRecovered(f"still running after {timeout:g} s") from None
        finally:
            for host in hosts.hosts:  # a run leaves nothing behind for the next
                hosts.kill_host(host.index)
        if any(codes):
            tail = (tmp / f"node{codes.index(next(c for c in codes if c))}.out").read_text()
            raise NotRecovered(f"exit codes {codes}: {tail[-300:]!r}")
        return parse_times(times.read_text() if times.exists() else "", NODES * nproc)


@dataclass
class Results:
    """One peer's runs."""

    times: list[Times] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def median(self, what: str) -> float:
        values = [getattr(t, what) for t in self.times]
        return statistics.median(values) if values else math.nan


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("-r", "--rounds", type=int, default=3, help="interleaved runs of each")
    parser.add_argument("--nproc", type=int, default=1, help="ranks per node (default 1)")
    parser.add_argument("--run-timeout", type=float, default=RUN_TIMEOUT_S, metavar="S")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every run")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.nproc < 1:
        parser.error("--rounds and --nproc must be at least 1")
    why = unavailable()
    if why is not None:
        print(f"cannot make namespaced hosts here: {why}", file=sys.stderr)
        return 2
    results = {kind: Results() for kind in PEERS}
    hosts = Hosts(NODES)
    try:
        for i in range(args.rounds):
            for kind, res in results.items():
                what = _measure(kind, hosts, args.nproc, args.run_timeout, res)
                if args.verbose:
                    print(f"  round {i + 1} {kind}: {what}", flush=True)
    finally:
        hosts.close()
    _report(results, args.nproc, args.rounds)
    return 0


def _measure(kind: str, hosts: Hosts, nproc: int, timeout: float, res: Results) -> str:
    """One run: its times into `res`, or why it did not recover; what happened."""
    try:
        res.times.append(run(kind, hosts, nproc, timeout))
    except NotRecovered as exc:
        res.failures.append(str(exc))
        return f"not recovered: {exc}"
    return str(res.times[-1])


def _report(results: dict[str, Results], nproc: int, rounds: int) -> None:
    """Each peer's medians, their ratio, and why the runs that did not recover did not."""
    print(
        f"3 namespaced hosts x {nproc} rank(s), rank {nproc + 1 if nproc > 1 else 1}"
        f" crashes once; medians of the recovered runs of {rounds} rounds"
    )
    print(f"{'':<10} {'recovered':>9} {'relaunch s':>11} {'pg-ready s':>11}")
    for kind, res in results.items():
        done = f"{len(res.times)}/{len(res.times) + len(res.failures)}"
        print(
            f"{kind:<10} {done:>9} {res.median('relaunch'):>11.2f} {res.median('pg_ready'):>11.2f}"
        )
    a, t = results["aegis"], results["torchrun"]
    print(
        f"{'ratio':<10} {'':>9} {a.median('relaunch') / t.median('relaunch'):>11.2f} "
        f"{a.median('pg_ready') / t.median('pg_ready'):>11.2f}   (aegis / torchrun)"
    )
    for kind, res in results.items():
        for why in res.failures:
            print(f"{kind} did not recover: {why}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
