"""Time `aegis spec validate-log` (TLC on a real step log) on two logs, print JSON.

    python bench/validate_log.py [--pods 1000] [--small-steps 1000] [--no-large]

small: a 10-pod job driven through ControllerCore (in-process) until its log has about
       `--small-steps` steps: joins, bootcheck, then command rounds in which one pod crashes,
       its new incarnation rejoins and everyone troubleshoots (MaxRetry high enough to go on),
       with one controller restart half-way. Target: validated in <= 30 s.
large: a healthy `--pods`-pod job through the controller's core as the controller runs it
       (bench/fleet_core.py): every agent joins, reports its bootcheck Finish and its command
       Finish (about 5 steps per pod). Target: TLC
       <= 120 s at 1,000 pods. A log of more than 1 MB of events is validated in parts, one
       TLC run per core (`tlc_runs`; docs/trace-validation.md, "Long logs"); `--pods 12500`
       is the scale issue's job.

Per log: steps, pods, log bytes, bytes per step, drive_seconds (producing the log),
fast_check_seconds (the replay through the generated tables), validate_seconds (all of
validate-log: reading, the trace module, TLC), tlc_seconds (the TLC runs' own times, added
up), tlc_runs, matched.
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
from aegis.testing.scripted_job import Job, pods  # noqa: E402
from aegis.tracevalidate import validate_log  # noqa: E402
from bench import fleet_core  # noqa: E402


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


def large_log(dir: Path, n: int) -> Path:
    """A healthy n-pod job through the controller's core as the controller runs it (its step
    log, WAL and group commits: bench/fleet_core.py): joins, bootcheck and command reports."""
    figures = fleet_core.measure(n, keep=dir)
    assert figures["succeeded"], figures
    return dir / "steps.jsonl"


def measure(name: str, make: Any, target: float, target_of: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"aegis-bench-{name}-") as tmp:
        t0 = time.monotonic()
        path = make(Path(tmp))
        drive = time.monotonic() - t0
        t0 = time.monotonic()
        checked = check_steplog(path)
        fast_s = time.monotonic() - t0
        v = validate_log(path)
        size = path.stat().st_size
        out = {
            "pods": v.pods,
            "steps": v.steps,
            "resumes": v.resumes,
            "log_bytes": size,
            "bytes_per_step": round(size / max(v.steps, 1)),
            "drive_seconds": round(drive, 2),
            "fast_check_seconds": round(fast_s, 2),
            "fast_check_steps": checked,
            "validate_seconds": round(v.seconds, 2),
            "tlc_seconds": round(v.tlc_seconds, 2),
            "tlc_runs": v.tlc_runs,
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
    args = ap.parse_args()
    result = {"small": measure("small", lambda d: small_log(d, args.small_steps), 30, "validate")}
    if not args.no_large:
        large = measure("large", lambda d: large_log(d, args.pods), 120, "tlc")
        result["large"] = large
    print(json.dumps(result, indent=2))
    return 0 if all(r["matched"] for r in result.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
