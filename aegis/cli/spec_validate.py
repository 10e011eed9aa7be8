"""`aegis spec validate-log STEPLOG`: TLC checks a run's step log against the spec."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from aegis.runtime.steplog import StepLogError
from aegis.tracevalidate import render_mismatch, validate_log


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `validate-log` subcommand."""
    p = sub.add_parser(
        "validate-log",
        help="let TLC check a run's step log against the spec (docs/trace-validation.md)",
    )
    p.add_argument("steplog", type=Path, help="the run's steps.jsonl")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--spec", type=Path, help="the spec module (default: the generated tables')")
    p.add_argument("--timeout", type=float, help="stop TLC after this many seconds")
    p.add_argument("--keep", type=Path, help="leave AegisTrace.tla/.cfg in this directory")
    p.set_defaults(func=run_validate)


def run_validate(args: argparse.Namespace) -> int:
    """0 if TLC matched every logged step, 1 at the first it cannot match, 2 on errors."""
    if not args.steplog.is_file():
        print(f"aegis: error: {args.steplog}: no such step log", file=sys.stderr)
        return 2
    try:
        v = validate_log(args.steplog, spec=args.spec, timeout=args.timeout, keep=args.keep)
    except StepLogError as exc:
        if args.json:
            print(json.dumps({"error": str(exc)}))
        print(f"aegis: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(v.as_json()))
    elif v.matched:
        print(
            f"{args.steplog}: TLC matched all {v.steps} steps ({v.pods} pods, "
            f"{v.resumes} controller restarts) in {v.seconds:.1f} s"
            + (f" ({v.tlc_runs} TLC runs)" if v.tlc_runs > 1 else "")
        )
    else:
        assert v.first_mismatch is not None
        print(f"{args.steplog}: TLC cannot match the log ({v.steps} steps, {v.pods} pods)")
        print(render_mismatch(v.first_mismatch))
    return 0 if v.matched else 1
