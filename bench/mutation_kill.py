"""Kill rate of conformance over every mutant of the generated code.

    python bench/mutation_kill.py [--only NAME ...] [--no-main]

TLC runs once per model (state graph + near-miss probes): tests/conformance/models/
AegisPhase_maxretry1.cfg (small, reaches the retries-exhausted path and the Min cap) and
spec/AegisPhase.cfg. Each mutant is a patched private copy of aegis/generated/aegis_phase,
explored in Python until its first mismatch, small model first. Exit 0 iff every mutant dies.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from aegis.conformance.mutants import MUTANTS, by_name
from aegis.conformance.session import Baseline, baseline, kill

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "spec" / "AegisPhase.tla"
SMALL = ROOT / "tests" / "conformance" / "models" / "AegisPhase_maxretry1.cfg"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="run only these mutants")
    parser.add_argument("--no-main", action="store_true", help="skip spec/AegisPhase.cfg")
    args = parser.parse_args()
    mutants = [by_name(n) for n in args.only] if args.only else list(MUTANTS)
    start = time.monotonic()
    bases: list[Baseline] = [baseline(SPEC, SMALL)]
    if not args.no_main:
        bases.append(baseline(SPEC))
    for b in bases:
        probes = len(b.probes.states) if b.probes else 0
        cfg = b.cfg.path.name if b.cfg.path else SPEC.name
        print(
            f"{cfg}: {len(b.graph.states)} states, {probes} probes "
            f"(TLC + reading {b.tlc_seconds:.1f}s)"
        )
    killed = 0
    for m in mutants:
        result = kill(bases, m)
        killed += result.killed
        mark = "killed  " if result.killed else "SURVIVED"
        print(f"{mark} {m.name:34} {result.reason:52} {result.seconds:5.1f}s  ({m.why})")
    rate = 100.0 * killed / len(mutants)
    print(f"kill rate: {killed}/{len(mutants)} = {rate:.0f}% in {time.monotonic() - start:.0f}s")
    return 0 if killed == len(mutants) else 1


if __name__ == "__main__":
    sys.exit(main())
