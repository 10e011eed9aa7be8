"""`aegis check`: run the seven troubleshoot checks on this node as a world of one."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import uuid
from collections.abc import Sequence

from aegis.checks.client import DiagnosisClient
from aegis.checks.params import DEFAULT_HANG_TIMEOUT_S, CheckParams, Rendezvous
from aegis.checks.progress import PROGRESS_FILE_ENV
from aegis.checks.result import TROUBLESHOOT_CHECKS, CheckResult


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `check` to the given subparsers."""
    p = sub.add_parser(
        "check",
        help="run the 7 troubleshoot checks on this node, as a job of one (`aegis ctl check` "
        "runs the 4 local ones on a running job's pods)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object per check")
    p.add_argument("--dir", default=None, help="directory for the io check (default: tmp)")
    p.add_argument("--simulate", default="", help="comma-separated faults, e.g. gpu_lost")
    p.add_argument(
        "--progress-file",
        default=os.environ.get(PROGRESS_FILE_ENV),
        help=f"progress file for the hang check (default: ${PROGRESS_FILE_ENV})",
    )
    p.add_argument(
        "--hang-threshold",
        type=float,
        default=DEFAULT_HANG_TIMEOUT_S,
        metavar="S",
        help="seconds without progress that count as a hang",
    )
    p.set_defaults(func=func)


def func(args: argparse.Namespace) -> int:
    """Run the checks; exit 0 iff every applicable check passed."""
    params = CheckParams(
        rendezvous=Rendezvous(host="127.0.0.1", port=0, rank=0, world_size=1, host_store=True),
        simulate=tuple(s.strip() for s in args.simulate.split(",") if s.strip()),
        io_dir=args.dir,
        progress_file=args.progress_file,
        hang_threshold_s=args.hang_threshold,
    )
    results = asyncio.run(_run(params))
    _print(results, as_json=args.json)
    return exit_code(results)


def exit_code(results: Sequence[CheckResult]) -> int:
    """0 iff every applicable check passed."""
    return 1 if any(r.failed for r in results) else 0


async def _run(params: CheckParams) -> list[CheckResult]:
    async with DiagnosisClient() as client:
        return await client.run(TROUBLESHOOT_CHECKS, f"check-{uuid.uuid4().hex[:8]}", params)


def _print(results: Sequence[CheckResult], *, as_json: bool) -> None:
    for r in results:
        if as_json:
            print(json.dumps(r.to_dict(), sort_keys=True, default=str))
            continue
        status = "PASS" if r.passed else "FAIL"
        status = status if r.applicable else "N/A "
        print(f"{status}  {r.check_type:<22} {r.duration_s * 1000:8.1f} ms  {r.result}")
