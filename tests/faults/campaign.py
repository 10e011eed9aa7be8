"""A campaign of randomized fault schedules over real `aegis run -n 2` jobs (from the repository
root; CI runs a few of them, tests/faults/test_fault_schedules.py):

    python -m tests.faults.campaign -n 1000 [--seed S] [--jobs J] [--budget S] [--json]
        [--train] [--tlc] [--limit SECONDS]

Schedule i uses seed S + i (tests/faults/schedules.py draws it: command crashes, SIGKILL and
SIGSTOP of an agent, the controller, nats-server and the launcher, a corrupted status file,
and message faults on orders, reports and heartbeats through a seeded NATS proxy). Each run
has a hard bound (--limit, default 150 s) past which it counts as hung. Prints a table:
schedules, recovered (Succeed as the spec's counting predicts), failed as expected (Failed /
exit 1 where predicted), launcher killed (every process gone), hung, orphans, wrong counts
(recover count or final phase not the predicted ones), wrong exit, bad step log; and the
seeds and schedules of every bad run. `--tlc` also has TLC validate every step log (slow).
`--train` runs examples/train_ddp.py (torch, gloo) instead of the cheap rank command.
`--budget S` starts no schedule after S seconds (the table covers those run). `--keep DIR`
copies the directory of every bad run (launcher output, state dir, step log) to DIR/seed-N.
`--jobs J` runs J schedules at once, each in its own worker process (jobs share no state: each
has its own directory, ports and processes; a loaded machine stretches every bound).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import json
import math
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from .schedules import (
    Result,
    draw,
    expect,
    run_schedule,
    validate_with_tlc,
)

COLUMNS = (
    "schedules",
    "recovered",
    "failed as expected",
    "launcher killed",
    "hung",
    "orphans",
    "wrong counts",
    "wrong exit",
    "bad step log",
)


def category(verdict: str, phase: str | None, terminal: str | None) -> str:
    if verdict == "ok":
        if terminal == "launcher_kill" and phase != "Failed":
            return "launcher killed"
        return "recovered" if phase == "Succeed" else "failed as expected"
    return {
        "hung": "hung",
        "orphans": "orphans",
        "wrong-count": "wrong counts",
        "wrong-exit": "wrong exit",
        "bad-steplog": "bad step log",
    }[verdict]


# train, drop_orders, limit, tlc, where to keep the directory of a bad run (None: nowhere)
Options = tuple[bool, float | None, float, bool, str | None]


def run_one(seed: int, opts: Options) -> tuple[Result, str]:
    """Draw, run and judge schedule `seed` in a fresh directory (in a worker process)."""
    train, drop_orders, limit, tlc, keep = opts
    s = draw(seed, train=train, drop_orders=drop_orders)
    with tempfile.TemporaryDirectory(prefix="aegis-faults-") as tmp:
        r = run_schedule(s, Path(tmp), limit)
        steplog = Path(tmp) / "state/steps.jsonl"
        if tlc and r.verdict == "ok" and steplog.exists():
            out = validate_with_tlc(steplog)
            if out.returncode != 0 and s.terminal != "corrupt_status":
                r.verdict, r.detail = "bad-steplog", (out.stdout + out.stderr)[-300:]
        if keep is not None and r.verdict != "ok":
            # the launcher's output, the state dir and the step log, for a post-mortem
            shutil.copytree(tmp, Path(keep) / f"seed-{seed}", dirs_exist_ok=True, symlinks=True)
    return r, category(r.verdict, r.phase, s.terminal)


def run_all(
    seeds: Iterable[int],
    opts: Options,
    jobs: int,
    budget: float | None,
    runner: Callable[[int, Options], tuple[Result, str]] = run_one,
) -> Iterator[tuple[Result, str]]:
    """Run each seed's schedule, `jobs` at once, starting none after `budget` seconds."""
    todo = iter(seeds)
    stop_at = None if budget is None else time.monotonic() + budget
    with concurrent.futures.ProcessPoolExecutor(max_workers=jobs) as pool:
        running: set[concurrent.futures.Future[tuple[Result, str]]] = set()
        while True:
            while len(running) < jobs and (stop_at is None or time.monotonic() < stop_at):
                seed = next(todo, None)
                if seed is None:
                    break
                running.add(pool.submit(runner, seed, opts))
            if not running:
                return
            finished, running = concurrent.futures.wait(
                running, return_when=concurrent.futures.FIRST_COMPLETED
            )
            for future in finished:
                yield future.result()


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def positive_float(text: str) -> float:
    """argparse type: a finite number > 0."""
    value = float(text)
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number above 0, not {text}")
    return value


def probability(text: str) -> float:
    """argparse type: a number in [0, 1]."""
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, not {text}")
    return value


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=positive_int, default=50, help="schedules to run")
    ap.add_argument("--jobs", type=positive_int, default=1, help="schedules run at once")
    ap.add_argument("--seed", type=int, default=0, help="seed of the first schedule")
    ap.add_argument("--json", action="store_true", help="one JSON object instead of a table")
    ap.add_argument("--train", action="store_true", help="examples/train_ddp.py as command")
    ap.add_argument("--tlc", action="store_true", help="TLC validates every step log too")
    ap.add_argument(
        "--drop-orders",
        type=probability,
        default=None,
        help="drop orders with this probability in every schedule (default: as drawn, 0 or 0.2)",
    )
    ap.add_argument("--limit", type=positive_float, default=150.0, help="hard bound per run (s)")
    ap.add_argument("--keep", metavar="DIR", help="copy each bad run's directory to DIR/seed-N")
    ap.add_argument(
        "--budget",
        type=positive_float,
        default=None,
        help="start no schedule after this many seconds; the table covers those run",
    )
    args = ap.parse_args()
    totals: Counter[str] = Counter()
    bad, runs = [], []
    bounds: dict[str, list[float]] = {}
    t0 = time.monotonic()
    opts = (args.train, args.drop_orders, args.limit, args.tlc, args.keep)
    seeds = range(args.seed, args.seed + args.n)
    for r, cat in run_all(seeds, opts, args.jobs, args.budget):
        totals["schedules"] += 1
        totals[cat] += 1
        runs.append(dataclasses.asdict(r))
        for kind, secs in r.fault_s:
            bounds.setdefault(kind, []).append(secs)
        if r.verdict != "ok":
            bad.append(r)
        if not args.json:
            print(
                f"seed {r.seed:>6} {r.seconds:6.1f}s {cat:<20} {r.schedule}"
                + (f"  -- {r.detail}" if r.detail else ""),
                file=sys.stderr,
                flush=True,
            )
    wall = time.monotonic() - t0
    if args.json:
        print(
            json.dumps(
                {
                    "totals": {c: totals[c] for c in COLUMNS},
                    "wall_s": round(wall, 1),
                    "jobs": args.jobs,
                    "bounds": {k: {"n": len(v), "max_s": max(v)} for k, v in bounds.items()},
                    "bad": [dataclasses.asdict(b) for b in bad],
                    "runs": runs,
                }
            )
        )
    else:
        print(" | ".join(COLUMNS))
        print(" | ".join(str(totals[c]).rjust(len(c)) for c in COLUMNS))
        ran = totals["schedules"]
        if ran < args.n:
            print(f"ran {ran} of {args.n} schedules (--budget {args.budget:g} s)")
        print(f"wall {wall:.0f} s, {wall / max(1, ran):.1f} s per schedule, {args.jobs} at once")
        print("fault -> back in RunCommand (or ended): n, median s, max s")
        for kind, xs in sorted(bounds.items()):
            xs.sort()
            print(f"  {kind:<28} {len(xs):>4} {xs[len(xs) // 2]:>7.2f} {xs[-1]:>7.2f}")
        for b in bad:
            exp = expect(draw(b.seed, train=args.train, drop_orders=args.drop_orders))
            print(f"BAD seed {b.seed}: {b.verdict}: {b.schedule}: {b.detail} (expected {exp})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
