"""Spec mutation score: how many bug mutants of the spec TLC catches with the expected verdict.

    python bench/spec_mutation.py [--only NAME ...] [--origin ORIGIN] [--jobs N] [--timeout S]

Each mutant of spec/mutants/mutants.toml is applied to a temp copy of spec/AegisPhase.tla,
re-translated and model-checked with spec/AegisPhase.cfg (one TLC worker each, liveness at
the end). The unmutated spec is checked first, in the same run, as the baseline: its time
is what a surviving mutant costs. Prints one row per mutant and the score: caught / mutants
that are not listed as equivalent. Exit 0 iff every mutant gave its expected verdict.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from aegis.errors import AegisError
from tools.tlc import run_tlc
from tools.tlc.mutants import ORIGINS, Mutant, load_mutants, run_mutant, verdict

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "spec" / "AegisPhase.tla"
CFG = ROOT / "spec" / "AegisPhase.cfg"
MUTANTS = ROOT / "spec" / "mutants" / "mutants.toml"


@dataclass(frozen=True)
class Row:
    """One mutant's outcome."""

    mutant: Mutant
    ok: bool
    said: str
    seconds: float


def check(mutant: Mutant, timeout: float) -> Row:
    """Run TLC on one mutant and compare its verdict with the expected one."""
    start = time.monotonic()
    try:
        ok, said = verdict(mutant, run_mutant(SPEC, CFG, mutant, timeout=timeout))
    except AegisError as exc:
        ok, said = False, f"error: {exc}"
    return Row(mutant, ok, said, time.monotonic() - start)


def mark(row: Row) -> str:
    """The row's verdict in one word."""
    if row.mutant.equivalent is not None:
        return "equiv   " if row.ok else "NOT-EQUIV"
    return "caught  " if row.ok else "SURVIVED" if row.said == "no error" else "WRONG   "


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="run only these mutants")
    parser.add_argument(
        "--origin", choices=ORIGINS, help="run only the mutants of this origin (e.g. fresh)"
    )
    parser.add_argument("--jobs", type=int, default=1, help="TLC runs at once (default 1)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per TLC run")
    args = parser.parse_args()
    mutants = selected(parser, args)
    start = time.monotonic()
    base = run_tlc(SPEC, CFG, workers=1, extra_args=("-lncheck", "final"))
    print(
        f"baseline: unmutated spec {'passes' if base.ok else 'FAILS'}, "
        f"{base.distinct_states:,} states, {base.seconds:.1f}s (one TLC worker; 2 shared "
        "cores here, so every figure is noisy)"
    )
    if not base.ok:
        return 1
    rows = check_all(mutants, args.jobs, args.timeout)
    print_score(rows, time.monotonic() - start)
    return 0 if all(r.ok for r in rows) else 1


def selected(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[Mutant]:
    """The mutants `--only` and `--origin` select (all by default)."""
    mutants = load_mutants(MUTANTS)
    if args.only:
        unknown = set(args.only) - {m.name for m in mutants}
        if unknown:
            parser.error(f"no such mutant(s): {', '.join(sorted(unknown))}")
        mutants = [m for m in mutants if m.name in args.only]
    if args.origin:
        mutants = [m for m in mutants if m.origin == args.origin]
    return mutants


def check_all(mutants: list[Mutant], jobs: int, timeout: float) -> list[Row]:
    """Check every mutant, `jobs` at once, printing each row as it comes."""
    rows: list[Row] = []
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for row in pool.map(lambda m: check(m, timeout), mutants):
            rows.append(row)
            m = row.mutant
            print(
                f"{mark(row)} {m.name:34} {m.origin:9} want {m.expected:45} "
                f"got {row.said:45} {row.seconds:5.1f}s",
                flush=True,
            )
    return rows


def print_score(rows: list[Row], seconds: float) -> None:
    """The mutation score: real mutants caught, equivalent ones confirmed."""
    real = [r for r in rows if r.mutant.equivalent is None]
    caught = sum(r.ok for r in real)
    equiv = len(rows) - len(real)
    score = 100.0 * caught / len(real) if real else 100.0
    print(
        f"spec mutation score: {caught}/{len(real)} = {score:.0f}% caught "
        f"({equiv} listed as equivalent, {sum(r.ok for r in rows) - caught} of them confirmed) "
        f"in {seconds:.0f}s"
    )


if __name__ == "__main__":
    sys.exit(main())
