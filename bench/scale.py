"""How the controller scales: a fleet of simulated agents against the real controller.

    python bench/scale.py --agents N [--faults F] [--json] [--in-process]

It starts what `aegis run` starts (nats-server in operator mode with the job's account, the
gRPC credential service, the `aegis controller` process reading launcher events on stdin)
and, instead of N agent processes, N simulated agents in this process (bench/fleet.py: each
its own NKey, credential, NATS identity and real AgentCore). It runs a healthy job, then,
with --faults F, a job in which F pods crash once (one per RunCommand order), and prints one
JSON object of figures (bench/scale_figures.py says what each one measures; docs/scale.md,
"The benches"). --in-process measures the controller core alone (no network, no processes).
Timings on a shared machine are noisy.

The parts: bench/scale_job.py runs one job (the control plane, the fleet, the samples),
bench/fleet.py and bench/fleet_procs.py simulate the agents, bench/procstat.py reads the
processes' CPU and memory, bench/scale_figures.py turns a run into figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from aegis.protocol.environment import DEFAULT_HEARTBEAT_RATE
from bench.fleet import FLEET_GC_THRESHOLDS
from bench.procstat import raise_nofile
from bench.scale_figures import figures
from bench.scale_job import JOB, run_job


def needed_fds(agents: int) -> int:
    """File descriptors this process needs: one socket per simulated agent, plus slack."""
    return agents + 256


def in_process(args: argparse.Namespace) -> dict[str, Any]:
    """The controller core alone (bench/fleet_core.py): ACKs and reports through ControllerCore
    and AgentCore, no network; bench/scale_core.py measures the engine and the core by event
    kind."""
    from bench.fleet_core import measure

    keep = None
    if args.state_dir is not None:
        keep = args.state_dir / "in-process"
        keep.mkdir(parents=True)
    result: dict[str, Any] = measure(args.agents, keep=keep)
    return result


def gc_thresholds(text: str) -> tuple[int, int, int]:
    """Three collector thresholds "G0,G1,G2" (G0 >= 1; argparse's type for --fleet-gc)."""
    parts = text.split(",")
    try:
        values = tuple(int(v) for v in parts)
    except ValueError:
        values = ()
    if len(values) != 3 or values[0] < 1 or min(values) < 0:
        raise argparse.ArgumentTypeError(f"expected G0,G1,G2 (integers, G0 >= 1); got {text!r}")
    return values[0], values[1], values[2]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--agents", type=int, required=True, help="simulated agents (pods)")
    p.add_argument("--faults", type=int, default=0, help="pods that crash once (second job)")
    p.add_argument("--json", action="store_true", help="print only the JSON object")
    p.add_argument(
        "--state-dir",
        type=Path,
        help="keep each job's controller state (status, WAL, step log, metrics) in "
        "DIR/healthy and DIR/faulty, which must not exist (default: temporary, removed)",
    )
    p.add_argument("--in-process", action="store_true", help="the controller core alone")
    p.add_argument("--heartbeat-s", type=float, default=5.0, help="each agent's beat period")
    p.add_argument("--heartbeat-timeout", type=float, default=30.0)
    p.add_argument(
        "--heartbeat-rate",
        type=float,
        default=DEFAULT_HEARTBEAT_RATE,
        help="the controller's heartbeat budget (beats a second, all agents; 0: none)",
    )
    p.add_argument("--work-s", type=float, default=0.0, help="seconds each order's work takes")
    p.add_argument(
        "--crash-at",
        type=float,
        default=0.5,
        help="when a crashing pod dies, as a fraction of --work-s after its order (0.5: "
        "halfway, the others working; 1: as the others report; up to 2: while the controller "
        "may still be taking their burst of reports)",
    )
    p.add_argument(
        "--start-rate", type=float, default=0.0, help="agents started per second (0: all at once)"
    )
    p.add_argument("--timeout", type=float, default=600.0, help="seconds one job may take")
    p.add_argument(
        "--kill-controller-after",
        type=float,
        default=None,
        metavar="S",
        help="SIGKILL the healthy job's controller S seconds after the fleet starts and start "
        "it again on the same state directory, as `aegis run`'s launcher does",
    )
    p.add_argument(
        "--drop-orders",
        type=float,
        default=0.0,
        help="each agent loses each order published on the order subject with this chance "
        "(the controller must send it again when the agent's heartbeat shows it)",
    )
    p.add_argument(
        "--fleet-procs",
        type=int,
        default=1,
        help="processes the simulated agents run in (the crash job's crashing pods and their "
        "replacements run in this one, beside the launcher's hook; the others in the "
        "rest); one Python process is one core's work",
    )
    p.add_argument(
        "--fleet-gc",
        type=gc_thresholds,
        default=FLEET_GC_THRESHOLDS,
        metavar="G0,G1,G2",
        help="the cyclic collector's thresholds in the fleet's processes (default "
        f"{','.join(map(str, FLEET_GC_THRESHOLDS))}; CPython's own: 700,10,10)",
    )
    args = p.parse_args(argv)
    problem = next((why for bad, why in _problems(args) if bad), None)
    if problem is not None:
        p.error(problem)
    return args


def _problems(args: argparse.Namespace) -> list[tuple[bool, str]]:
    """(wrong, what must be) for each check of the flags, in the order they are reported."""
    kill = args.kill_controller_after
    rate = args.heartbeat_rate
    return [
        (args.fleet_procs < 1 or args.fleet_procs > max(1, args.agents),
         "--fleet-procs must be in 1..agents"),
        (not 0.0 <= args.crash_at <= 2.0, "--crash-at must be in 0..2"),
        (args.agents < 1 or not 0 <= args.faults <= args.agents,
         "--agents must be >= 1 and --faults in 0..agents"),
        (kill is not None and not (math.isfinite(kill) and kill >= 0),
         "--kill-controller-after must be a finite number of seconds >= 0"),
        (not 0 <= args.drop_orders <= 1, "--drop-orders must be in 0..1"),
        (not (math.isfinite(rate) and rate >= 0),
         "--heartbeat-rate must be a finite number >= 0 (0: no budget)"),
        (args.state_dir is not None and args.state_dir.exists(),
         f"--state-dir {args.state_dir}: exists (give a new directory)"),
    ]  # fmt: skip


async def _main(args: argparse.Namespace) -> dict[str, Any]:
    healthy = await run_job(args, (), max_retry=3, name="healthy")
    faulty = None
    if args.faults:
        crashes = tuple(
            f"{JOB}-worker-{i * args.agents // args.faults}" for i in range(args.faults)
        )
        faulty = await run_job(args, crashes, max_retry=args.faults + 1, name="faulty")
    return figures(args, healthy, faulty)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    soft, hard = raise_nofile()
    if not args.in_process and soft < needed_fds(args.agents):
        print(
            f"scale: {args.agents} agents need about {needed_fds(args.agents)} open files; "
            f"the limit is {soft} (hard {hard}): raise it (ulimit -n) or use fewer agents",
            file=sys.stderr,
        )
        return 2
    started = time.monotonic()
    result = in_process(args) if args.in_process else asyncio.run(_main(args))
    result["bench_s"] = round(time.monotonic() - started, 2)
    print(json.dumps(result) if args.json else json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
