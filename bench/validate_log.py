"""Time `aegis spec validate-log` (TLC on a real step log) on two logs, print JSON.

    python bench/validate_log.py [--pods 1000] [--small-steps 1000] [--no-large]

small: a 10-pod job driven through ControllerCore (in-process) until its log has about
       `--small-steps` steps: joins, bootcheck, then command rounds in which one pod crashes,
       its new incarnation rejoins and everyone troubleshoots (MaxRetry high enough to go on),
       with one controller restart half-way. Target: validated in <= 30 s.
large: a healthy `--pods`-pod job through the same ControllerCore: every agent joins, reports
       its bootcheck Finish and its command Finish (about 5 steps per pod). Target: TLC
       <= 120 s. Today the engine computes every successor of an observation and keeps the
       one with the observed choices: O(pods^2) per event, too slow for 1,000 pods here (a
       200-pod job takes ~40 s). So by default the bench binds the observed choice while the
       tables enumerate (`_tla.enum` puts it first and `candidates` stops at the first
       match: the same successor, since Engine.find requires exactly one), which is what the
       scale work's incremental engine will do; `--unbound` drives the engine as it is.
       The log is the runtime's either way, and TLC checks it independently.

Per log: steps, pods, log bytes, bytes per step, drive_seconds (producing the log),
fast_check_seconds (the replay through the generated tables; skipped for the large log, where
it is O(pods^2) per step today), validate_seconds (all of
validate-log: reading, the trace module, TLC), tlc_seconds (the JVM alone), matched.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from aegis.runtime.trace_check import check_steplog  # noqa: E402
from aegis.tracevalidate import validate_log  # noqa: E402
from tests.support import MemoryStore  # noqa: E402
from tests.tracevalidate.jobs import Job, pods  # noqa: E402


def small_log(dir: Path, steps: int) -> Path:
    """A 10-pod job of about `steps` steps (crash-and-recover rounds, one controller restart)."""
    job = Job(dir, pods(10), max_retry=steps // 20)
    job.all_join()
    job.all_finish()
    restarted = False
    while job.core.engine.seq_no < steps - 20:
        victim = job.pods[job.core.engine.seq_no % 10]
        job.crash(victim)
        if not restarted and job.core.engine.seq_no > steps // 2:
            job.restart_controller()
            restarted = True
        job.join(victim)
        job.all_finish()  # troubleshoot
    job.all_finish()  # command
    assert job.core.state.phase == "Succeed", job.core.state.phase
    job.close()
    return job.steplog


def bind_choices() -> None:
    """Make the engine evaluate an observation's tables for its observed choice first."""
    from aegis.generated.aegis_phase import ACTIONS, _tla
    from aegis.generated.aegis_phase import actions as generated
    from aegis.runtime import engine
    from aegis.values import sorted_values

    preferred: list[Any] = []
    plain_enum = _tla.enum

    def enum(s: Any) -> list[Any]:
        first = [v for v in preferred if v in s]
        if not first:
            return plain_enum(s)
        return first + [v for v in sorted_values(s) if v not in first]

    def candidates(c: Any, s: Any, label: str, wanted: dict[str, Any]) -> list[Any]:
        if not wanted:
            return plain_candidates(c, s, label, wanted)
        steps = getattr(generated, f"_steps_{label}")
        preferred[:] = list(wanted.values())
        try:
            for pid in sorted(ACTIONS[label].process_ids(c), key=repr):
                for succ in steps(c, s, pid):
                    if engine.matches(succ, wanted):
                        return [(pid, succ)]
            return []
        finally:
            preferred.clear()

    plain_candidates = engine.candidates
    _tla.enum = enum
    engine.candidates = candidates


def large_log(dir: Path, n: int) -> Path:
    """A healthy n-pod job: joins, bootcheck Finish reports, command Finish reports."""
    store = MemoryStore()
    job = Job.__new__(Job)
    job.dir, job.pods, job.max_retry = dir, pods(n), 3
    job.incarnation = {p: "i1" for p in job.pods}
    job.orders = []
    from aegis.runtime.controller import ControllerCore, JobConfig
    from aegis.runtime.steplog import StepLog

    job.log = StepLog(job.steplog)
    config = JobConfig("tv", "default", job.pods, 3, heartbeat_timeout=0)
    job.core = ControllerCore(config, store, job.log)
    job.all_join()
    job.all_finish()
    job.all_finish()
    assert job.core.state.phase == "Succeed"
    job.close()
    return job.steplog


def measure(
    name: str, make: Any, target: float, target_of: str, *, fast: bool = True
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"aegis-bench-{name}-") as tmp:
        t0 = time.monotonic()
        path = make(Path(tmp))
        drive = time.monotonic() - t0
        t0 = time.monotonic()
        checked = check_steplog(path) if fast else None
        fast_s = time.monotonic() - t0 if fast else None
        v = validate_log(path)
        size = path.stat().st_size
        out = {
            "pods": v.pods,
            "steps": v.steps,
            "resumes": v.resumes,
            "log_bytes": size,
            "bytes_per_step": round(size / max(v.steps, 1)),
            "drive_seconds": round(drive, 2),
            "fast_check_seconds": None if fast_s is None else round(fast_s, 2),
            "fast_check_steps": checked,
            "validate_seconds": round(v.seconds, 2),
            "tlc_seconds": round(v.tlc_seconds, 2),
            "matched": v.matched,
            "target": f"{target_of} <= {target:g} s",
            "within_target": (v.seconds if target_of == "validate" else v.tlc_seconds) <= target,
        }
        print(f"{name}: {json.dumps(out)}", file=sys.stderr)
        return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pods", type=int, default=1000, help="pods of the large healthy job")
    ap.add_argument("--small-steps", type=int, default=1000, help="steps of the 10-pod log")
    ap.add_argument("--no-large", action="store_true", help="skip the large job")
    ap.add_argument("--unbound", action="store_true", help="the engine as it is (O(pods^2))")
    args = ap.parse_args()
    result = {"small": measure("small", lambda d: small_log(d, args.small_steps), 30, "validate")}
    if not args.no_large:
        if not args.unbound:
            bind_choices()
        # the fast check replays through the tables as they are (O(pods^2) per step): skipped
        large = measure("large", lambda d: large_log(d, args.pods), 120, "tlc", fast=False)
        result["large"] = large
    print(json.dumps(result, indent=2))
    return 0 if all(r["matched"] for r in result.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
