"""Recovery from one rank's crash: `aegis run` vs `torchrun --max-restarts 1`.

Both run examples/train_ddp.py (or --script) with CRASH_ONCE_RANK: one rank exits 1 on its
first attempt. The script appends to TIMES_FILE its crash ("crash <rank> <t>"), each rank's
start ("start <rank> <t>") and when each rank's `init_process_group` returned ("pg <rank> <t>";
the first attempt gets there only with --crash-after: its crashed rank joins, then crashes).
`--aegis bare` also runs `aegis run --standby`, `--aegis standby` `aegis run --preload torch`
(docs/restart.md). Per run:
  recovered   the command exited 0 and every rank was relaunched once after the crash (one
              start after the crash and one process group, ready after the crash)
  relaunch s  crash -> the last rank's start in the second attempt
  pg-ready s  crash -> the last rank's process group ready again
  spawn->pg s the slowest rank's start -> its process group ready, in the second attempt
Usage: python bench/restart_vs_torchrun.py [N | NxK ...] [--rounds R] [--script PATH]
                                          [--aegis cold bare standby] [--crash-after S]
                                          [--run-timeout S]
                                          [--peers torchrun [torchrun-nodes]]
                                          [--keep-failed DIR] [-v]
(NxK: N node agents of K processes; torchrun runs one group of N*K processes and, as a second
peer, N `--nnodes` agents on loopback.) Runs are interleaved; medians over recovered runs.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

TRAIN = str(Path(__file__).resolve().parents[1] / "examples" / "train_ddp.py")
RUN_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class Times:
    """What one run's TIMES_FILE says about its recovery (seconds from the crash)."""

    relaunch: float  # the last rank's start in the second attempt
    pg_ready: float  # the last rank's process group ready in the second attempt
    spawn_to_pg: float  # the slowest rank's start -> process group, second attempt


class NotRecovered(RuntimeError):
    """The run did not recover as expected (the message says how)."""


def parse_times(text: str, world: int) -> Times:
    """The recovery of one run from its TIMES_FILE; NotRecovered unless exactly one rank
    crashed and every rank of `world` was relaunched after the crash and got its process
    group once after it, in that attempt, and never started again (process groups before
    the crash are the first attempt's: a crash mid-training)."""
    crashes, starts, pgs = _records(text)
    if len(crashes) != 1:
        raise NotRecovered(f"{len(crashes)} crashes recorded, expected 1")
    crash = crashes[0]
    each = [
        _recovery(rank, crash, starts.get(rank, []), pgs.get(rank, [])) for rank in range(world)
    ]
    relaunch, ready, spawn = zip(*each, strict=True)
    return Times(max(relaunch), max(ready), max(spawn))


def _records(text: str) -> tuple[list[float], dict[int, list[float]], dict[int, list[float]]]:
    """The TIMES_FILE's crash times, and each rank's start and process-group times."""
    crashes: list[float] = []
    starts: dict[int, list[float]] = {}
    pgs: dict[int, list[float]] = {}
    for line in text.splitlines():
        kind, who, t = line.split()
        if kind == "crash":
            crashes.append(float(t))
        elif kind in ("start", "pg"):
            (starts if kind == "start" else pgs).setdefault(int(who), []).append(float(t))
    return crashes, starts, pgs


def _recovery(
    rank: int, crash: float, starts: list[float], pgs: list[float]
) -> tuple[float, float, float]:
    """One rank's (relaunch, process group ready, spawn -> process group) after the crash."""
    pg = [t for t in pgs if t > crash]
    if len(pg) != 1:
        raise NotRecovered(f"rank {rank}: process groups at {pg}, expected one after the crash")
    # the second attempt's start: the last one before its process group (a first attempt
    # may start just after the crash, or be stopped before it could say so)
    before = sorted(t for t in starts if t <= pg[0])
    if not before or before[-1] <= crash:
        raise NotRecovered(f"rank {rank} was not relaunched after the crash")
    if len(starts) > len(before):
        raise NotRecovered(f"rank {rank} started again after its process group was ready")
    return before[-1] - crash, pg[0] - crash, pg[0] - before[-1]


@dataclass(frozen=True)
class Layout:
    """N node agents of K processes each ("2" is 2x1); the crash hits local rank 1 of node 1
    (of node 0 when there is one node)."""

    nodes: int
    procs: int

    @classmethod
    def parse(cls, text: str) -> Layout:
        nodes, _, procs = text.partition("x")
        layout = cls(int(nodes), int(procs or 1))
        if layout.nodes < 1 or layout.procs < 1 or layout.world < 2:
            raise ValueError(f"{text}: a layout needs at least 2 ranks")
        return layout

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


def commands(kind: str, layout: Layout, script: str, tmp: str) -> list[list[str]]:
    """The processes of one run: "aegis", "aegis-bare" (`aegis run --standby`: each rank's
    next attempt started ahead), "aegis-standby" (`aegis run --preload torch`: started ahead
    with torch imported), "torchrun" (one group of N*K processes) or
    "torchrun-nodes" (N torchrun agents with --nnodes N, K processes each, on loopback)."""
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--max-restarts", "1"]
    if kind in AEGIS_KINDS:
        standby = {"aegis-bare": ["--standby"], "aegis-standby": ["--preload", "torch"]}
        start = standby.get(kind, [])
        return [[sys.executable, "-m", "aegis.cli", "run", "--nnodes", str(layout.nodes),
                 "--nproc-per-node", str(layout.procs), "--state-dir", f"{tmp}/state",
                 *start, "--", sys.executable, script]]  # fmt: skip
    if kind == "torchrun":
        return [[*torchrun, "--nproc-per-node", str(layout.world), script]]
    port = str(free_port())
    return [[*torchrun, "--nnodes", str(layout.nodes), "--node-rank", str(i),
             "--nproc-per-node", str(layout.procs), "--master-addr", "127.0.0.1",
             "--master-port", port, script] for i in range(layout.nodes)]  # fmt: skip


@dataclass(frozen=True)
class Setup:
    """How every run goes: the script, where failed runs are kept, when the rank crashes (at
    its start, or `crash_after` s after its process group is ready), how long a run may take."""

    script: str = TRAIN
    keep: Path | None = None
    crash_after: float | None = None
    timeout: float = RUN_TIMEOUT_S


def run(kind: str, layout: Layout, setup: Setup = Setup()) -> Times:
    """One measured run; NotRecovered (or TimeoutExpired) when it did not recover (its
    directory, with the times, Aegis' state dir and faults, then copied under `keep`)."""
    keep = setup.keep
    with tempfile.TemporaryDirectory() as tmp:
        try:
            return _run(kind, layout, setup, tmp)
        except (NotRecovered, subprocess.TimeoutExpired) as exc:
            if keep is not None:
                kept = Path(tempfile.mkdtemp(prefix=f"{kind}-{layout}-", dir=keep))
                shutil.copytree(tmp, kept, dirs_exist_ok=True)
                raise NotRecovered(f"{str(exc).splitlines()[0]} (kept in {kept})") from exc
            raise


def _run(kind: str, layout: Layout, setup: Setup, tmp: str) -> Times:
    times = Path(tmp) / "times"
    env = {
        **os.environ,
        "CRASH_ONCE_RANK": str(layout.crash_rank),
        "CRASH_DIR": tmp,
        "TIMES_FILE": str(times),
    }
    if setup.crash_after is not None:
        env["CRASH_AFTER_S"] = repr(setup.crash_after)
    argvs = commands(kind, layout, setup.script, tmp)
    with contextlib.ExitStack() as files:
        outs = [
            files.enter_context(open(Path(tmp) / f"stdout-{i}.log", "w")) for i in range(len(argvs))
        ]
        procs = [
            subprocess.Popen(
                argv,
                env=env,
                stdout=out,  # kept with a run that did not recover
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,  # a run that hangs is killed with all its processes
            )
            for argv, out in zip(argvs, outs, strict=True)
        ]
    try:
        errors = _errors(procs, setup.timeout)
    finally:
        _kill_all(procs)
    if errors:
        raise NotRecovered(errors[0])
    return parse_times(times.read_text() if times.exists() else "", layout.world)


def _errors(procs: list[subprocess.Popen[str]], timeout: float) -> list[str]:
    """Wait for each process; how those that failed ended."""
    errors = []
    for proc in procs:
        _, err = proc.communicate(timeout=timeout)
        if proc.returncode != 0:
            errors.append(f"exited {proc.returncode}: {err[-2000:]}")
    return errors


def _kill_all(procs: list[subprocess.Popen[str]]) -> None:
    """Kill each process's session, and every process below it (in sessions of its own)."""
    left = [d for proc in procs for d in descendants(proc.pid)]
    for proc in procs:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    for pid in left:  # e.g. the workers of a torchrun that hung in its re-rendezvous
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def descendants(pid: int) -> list[int]:
    """Every live process below `pid` (children in sessions of their own included)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            ppid = int((entry / "stat").read_text().rpartition(")")[2].split()[1])
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


@dataclass
class Results:
    """The runs of one kind: the times of those that recovered, why the others did not."""

    times: list[Times] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    @property
    def rounds(self) -> int:
        return len(self.times) + len(self.failures)

    def median(self, what: str) -> float:
        values = [getattr(t, what) for t in self.times]
        return statistics.median(values) if values else float("nan")

    def cell(self, what: str) -> str:
        """median (min-max) of one measure over the recovered runs."""
        values = [getattr(t, what) for t in self.times]
        if not values:
            return "-"
        return f"{statistics.median(values):.3f} ({min(values):.2f}-{max(values):.2f})"


def measure(kind: str, layout: Layout, results: Results, setup: Setup = Setup()) -> str:
    """One run: its times into `results`, or why it did not recover; what happened."""
    try:
        times = run(kind, layout, setup)
    except (NotRecovered, subprocess.TimeoutExpired, OSError) as exc:
        lines = str(exc).splitlines() or [""]
        results.failures.append(f"{type(exc).__name__}: {lines[0][:200]}")
        return results.failures[-1]
    results.times.append(times)
    return str(times)


AEGIS_KINDS = ("aegis", "aegis-bare", "aegis-standby")
AEGIS_STARTS = ("cold", "bare", "standby")  # --aegis's choices, in AEGIS_KINDS' order
PEERS = ("torchrun", "torchrun-nodes")
MEASURES = (("relaunch", "relaunch s"), ("pg_ready", "pg-ready s"), ("spawn_to_pg", "spawn->pg s"))


def table(layout: Layout, results: dict[str, Results]) -> list[str]:
    """The rows of one layout: each kind's recovery count and medians, then the ratios."""
    label = {
        "aegis": "aegis",
        "aegis-bare": "aegis --standby",
        "aegis-standby": "aegis --preload",
        "torchrun": "torchrun",
        "torchrun-nodes": "torchrun x nodes",
    }
    rows = []
    for kind, res in results.items():
        cells = "".join(f" {res.cell(m):>22}" for m, _ in MEASURES)
        recovered = f"{len(res.times)}/{res.rounds}"
        rows.append(f"{layout!s:>6} {label[kind]:<17} {recovered:>9}{cells}")
    for ours in (k for k in results if k in AEGIS_KINDS):
        a = results[ours]
        for kind in (k for k in results if k not in AEGIS_KINDS):
            t = results[kind]
            ratios = "".join(f" {a.median(m) / t.median(m):>22.2f}" for m, _ in MEASURES)
            rows.append(f"{'':>6} {ours + '/' + kind:<27}{ratios}")
    return rows


def peers_of(layout: Layout, chosen: Sequence[str] = PEERS) -> list[str]:
    """The chosen peers that apply to `layout` (torchrun across node agents needs 2+ nodes)."""
    return [p for p in PEERS if p in chosen and (p == "torchrun" or layout.nodes > 1)]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "sizes",
        nargs="*",
        default=["2", "4"],
        help="layouts: N (N ranks, one per node agent) or NxK (N node agents of K processes)",
    )
    parser.add_argument(
        "-r",
        "--rounds",
        "--repeat",
        dest="rounds",
        type=int,
        default=5,
        help="interleaved runs of each (aegis, torchrun[, torchrun x nodes]) per layout",
    )
    parser.add_argument(
        "--peers",
        nargs="+",
        choices=PEERS,
        default=list(PEERS),
        help="the peers run beside aegis (torchrun-nodes only where a layout has 2+ nodes)",
    )
    parser.add_argument(
        "--aegis",
        nargs="+",
        choices=AEGIS_STARTS,
        default=["cold", "standby"],
        help="aegis as it starts by default (cold), with --standby (bare) and with --preload "
        "torch (standby)",
    )
    parser.add_argument(
        "--crash-after",
        type=float,
        metavar="S",
        help="the rank crashes S s after its process group is ready (mid-training), not at "
        "its start",
    )
    parser.add_argument(
        "--run-timeout",
        type=float,
        default=RUN_TIMEOUT_S,
        metavar="S",
        help=f"a run that has not ended after S s did not recover (default {RUN_TIMEOUT_S:g})",
    )
    parser.add_argument("--script", default=TRAIN, help="the crash-once training script")
    parser.add_argument("--keep-failed", type=Path, help="copy the runs that did not recover here")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every run")
    return parser


def _problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the numbers on the command line (None: nothing)."""
    if args.rounds < 1:
        return "--rounds must be at least 1"
    if not 0 < args.run_timeout < math.inf:
        return "--run-timeout must be a finite number of seconds above 0"
    if args.crash_after is not None and not 0 <= args.crash_after < args.run_timeout:
        return f"--crash-after must be in 0..{args.run_timeout:g} s"
    return None


def main(argv: Sequence[str]) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    problem = _problem(args)
    if problem:
        parser.error(problem)
    setup = Setup(args.script, args.keep_failed, args.crash_after, args.run_timeout)
    ours = [k for k, v in zip(AEGIS_KINDS, AEGIS_STARTS, strict=True) if v in args.aegis]
    layouts = [Layout.parse(s) for s in args.sizes]
    head = "".join(f" {title:>22}" for _, title in MEASURES)
    print(f"{'layout':>6} {'':<17} {'recovered':>9}{head}", flush=True)
    print(f"{'':>6} medians (min-max) of the recovered runs of {args.rounds} interleaved rounds")
    for layout in layouts:
        results = {k: Results() for k in (*ours, *peers_of(layout, args.peers))}
        _rounds(layout, results, args.rounds, setup, args.verbose)
        _print_layout(layout, results)
    return 0


def _print_layout(layout: Layout, results: dict[str, Results]) -> None:
    """The layout's rows, then why each run that did not recover did not."""
    for row in table(layout, results):
        print(row, flush=True)
    for kind, res in results.items():
        for why in res.failures:
            print(f"       {kind} did not recover: {why}", flush=True)


def _rounds(
    layout: Layout, results: dict[str, Results], rounds: int, setup: Setup, verbose: bool
) -> None:
    """`rounds` interleaved runs of each kind on one layout."""
    for i in range(rounds):
        for kind, res in results.items():
            what = measure(kind, layout, res, setup)
            if verbose:
                print(f"  round {i + 1} {layout} {kind}: {what}", flush=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
