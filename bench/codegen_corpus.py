"""Generate and conform every corpus spec: what each step costs, beside TLC's own time.

    python bench/codegen_corpus.py [NAME ...]

For each model in tests/codegen/corpus/ (or the ones named): generation (SANY, emission,
ruff format, the import-and-first-steps trial), TLC's state graph and probe run, and the
Python side of the comparison, each in seconds, with the state and edge counts both sides
agree on; a spec generation refuses (the corpus has four) is a row saying why. Exit 0 iff
every model generated conforms. Timings on a shared machine are noisy.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from aegis.conformance.session import baseline, conform
from aegis.errors import AegisError
from codegen.pipeline import generate, load, write

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "codegen" / "corpus"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="run only these models")
    args = parser.parse_args()
    cfgs = [c for c in sorted(CORPUS.glob("*.cfg")) if not args.names or c.stem in args.names]
    print(f"{'model':14} {'states':>7} {'edges':>7} {'gen s':>7} {'TLC s':>7} {'python s':>9}")
    failed = refused = 0
    for cfg in cfgs:
        spec = cfg.with_suffix(".tla")
        start = time.monotonic()
        try:
            gen = generate(spec, cfg, phase_variable=None)
        except AegisError as exc:  # the corpus's specs that generation must refuse
            refused += 1
            print(f"{cfg.stem:14} refused: {str(exc).splitlines()[-1]}", flush=True)
            continue
        gen_s = time.monotonic() - start
        with tempfile.TemporaryDirectory(prefix="aegis-corpus-") as tmp:
            write(gen, Path(tmp))
            base = baseline(spec, cfg, package=load(Path(tmp), gen.package))
            report = conform(base)
        failed += not report.ok
        verdict = "" if report.ok else f"  MISMATCH {report.mismatches[:1]}"
        print(
            f"{cfg.stem:14} {report.states:7} {report.edges:7} {gen_s:7.1f} "
            f"{base.tlc_seconds:7.1f} {report.seconds:9.3f}{verdict}",
            flush=True,
        )
    generated = len(cfgs) - refused
    print(f"{generated - failed}/{generated} models conform ({refused} refused)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
