"""`aegis spec conform`: prove the generated tables and TLC agree on every state of a model."""

from __future__ import annotations

import argparse
import importlib
import json
import time
from pathlib import Path

from aegis.conformance.behaviours import generate_behaviours, step_kind, write_ndjson
from aegis.conformance.report import report_json, report_text
from aegis.conformance.session import baseline, conform


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "conform",
        help="compare the generated Python with TLC's state graph, state by state",
        description="Run TLC once on the model, explore the generated tables with the same "
        "constants, and report every state, action and invariant verdict on which they differ. "
        "Exit 0 iff none.",
    )
    p.add_argument("spec", nargs="?", default="spec/AegisPhase.tla", help="the .tla spec")
    p.add_argument("--config", type=Path, help="the model cfg (default: SPEC's .cfg)")
    p.add_argument("--module", help="generated package to check (default: aegis.generated.<spec>)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--no-probes", action="store_true", help="skip the near-miss invariant probes")
    p.add_argument("--limit", type=int, default=20, help="stop after this many mismatches")
    p.add_argument(
        "--deadlock",
        action="store_true",
        help="do not report a state with no successor (TLC's -deadlock; the cfg's "
        "CHECK_DEADLOCK FALSE does the same)",
    )
    p.add_argument("--behaviours", type=Path, help="also write covering behaviours (NDJSON)")
    p.add_argument(
        "--every-edge",
        action="store_true",
        help="behaviours cover every edge (default: every kind of step: action, phase "
        "before and after, variables changed; every edge when there is no phase variable)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Compare, print, and (optionally) write behaviours; 0 iff no mismatch."""
    start = time.monotonic()
    package = importlib.import_module(args.module) if args.module else None
    base = baseline(
        Path(args.spec),
        args.config,
        package=package,
        probes=not args.no_probes,
        deadlock=not args.deadlock,
    )
    report = conform(base, limit=args.limit)
    variables = base.graph.variables
    if args.behaviours and report.ok:
        model = base.bind()
        every_edge = args.every_edge or "phase" not in variables  # no phase: every edge
        kind = None if every_edge else step_kind(variables)
        lines = write_ndjson(
            args.behaviours, generate_behaviours(base.graph, model, kind=kind), model
        )
        print(f"wrote {lines} steps to {args.behaviours}")
    total = time.monotonic() - start
    if args.json:
        out = report_json(variables, report)
        out["seconds"] = round(total, 3)
        out["tlc_seconds"] = round(base.tlc_seconds, 3)
        out["probes"] = len(base.probes.states) if base.probes else 0
        print(json.dumps(out, indent=2))
    else:
        print(report_text(variables, report))
        probes = f", {len(base.probes.states)} probes" if base.probes else ""
        print(f"(TLC {base.tlc_seconds:.1f}s{probes}; total {total:.1f}s)")
    return 0 if report.ok else 1
