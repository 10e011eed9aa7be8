"""`aegis spec update`: the spec-edit loop in one command, then what a human must decide.

Translate the PlusCal, model-check with TLC, regenerate the package, compare it with TLC's
state graph, regenerate the behaviours file, re-verify both mutant lists
(aegis.conformance.recheck). Each step is the one its own command runs; the first that
fails stops the loop (a violated invariant or a mismatch is for a human to read first).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field
from pathlib import Path

from aegis.conformance.behaviours import generate_behaviours, step_kind, write_ndjson
from aegis.conformance.recheck import MUTANT_CHECKS, Recheck
from aegis.conformance.report import report_text
from aegis.conformance.session import Baseline, baseline, conform
from codegen import pipeline
from tools.tlc.report import format_result
from tools.tlc.runner import run_tlc
from tools.tlc.translation import has_pluscal, translate
from tools.tlc.workspace import display_path

BEHAVIOURS_DIR = Path("tests/conformance/behaviours")
MUTANT_MODES = ("run", "apply", "skip")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `update` to the `aegis spec` subcommands."""
    p = sub.add_parser(
        "update",
        help="after a spec edit: translate, check, generate, conform, regenerate the "
        "behaviours and re-verify the mutants; print what is left to decide",
    )
    p.add_argument("spec", nargs="?", type=Path, help="spec (default: spec/AegisPhase.tla)")
    p.add_argument("--cfg", type=Path, help="model config (default: SPEC with .cfg)")
    p.add_argument("--out", type=Path, help="generated code (default: aegis/generated)")
    p.add_argument(
        "--behaviours",
        type=Path,
        help="behaviours file to regenerate (default: tests/conformance/behaviours/"
        "<Spec>.ndjson when it exists)",
    )
    p.add_argument(
        "--mutants",
        choices=MUTANT_MODES,
        default="run",
        help="run: TLC on every spec mutant and conformance on the fast code mutants (slow); "
        "apply: only check each still applies; skip (default: run)",
    )
    p.add_argument("--workers", type=int, default=1, help="TLC worker threads (default: 1)")
    p.add_argument(
        "--deadlock",
        action="store_true",
        help="do not report a state with no successor (TLC's -deadlock; the cfg's "
        "CHECK_DEADLOCK FALSE does the same)",
    )
    p.set_defaults(func=run)


# how long each step took on the CI model, on the 2-core development machine under a load
# average of about 12 (docs/changing-the-spec.md, "How long it takes"): said when the step
# starts, so that a long one is not taken for a hang; an idle machine is several times faster
EXPECTED = {
    "translate": "a few seconds",
    "check": "about 2 min (15 s on an idle machine)",
    "gen": "a few seconds",
    "conform": "about 7 min",
    "behaviours": "about 15 s",
    "spec mutants": "seconds; with --mutants run a TLC run per mutant, about 11 min, each "
    "said as it ends",
    "code mutants": "seconds; with --mutants run a conformance run per fast mutant, each "
    "said as it ends",
}


@dataclass
class _Loop:
    """Says each step as it starts (with its expected time) and as it ends; collects what is
    left to decide."""

    decide: list[str] = field(default_factory=list)
    start: float = field(default_factory=time.monotonic)

    def begin(self, name: str) -> None:
        expected = EXPECTED.get(name, "")
        self.say(f"{name}: started" + (f" (expected: {expected})" if expected else ""))

    def step(self, name: str, outcome: str) -> None:
        self.say(f"{name}: {outcome}")

    def say(self, line: str) -> None:
        print(f"[{time.monotonic() - self.start:6.1f}s] {line}", flush=True)

    def finish(self) -> int:
        if not self.decide:
            print("nothing left to decide: review `git diff`, then commit")
            return 0
        print("left for a human to decide:")
        for item in self.decide:
            print(f"  - {item}")
        return 1


def run(args: argparse.Namespace) -> int:
    """Run the loop; 0 iff every step passed and nothing is left to decide."""
    default_spec, default_out = pipeline.default_paths()
    spec = args.spec or default_spec
    cfg = args.cfg or spec.with_suffix(".cfg")
    out = args.out or default_out
    loop = _Loop()
    shown = display_path(spec)
    _translate(spec, loop)
    extra = ("-deadlock",) if args.deadlock else ()
    loop.begin("check")
    result = run_tlc(spec, cfg, workers=args.workers, extra_args=extra)
    loop.step("check", format_result(result, f"{shown} with {display_path(cfg)}").splitlines()[0])
    if not result.ok:
        print(format_result(result, shown))
        loop.decide.append("TLC found a violation (above): fix the spec, or the property")
        return loop.finish()
    loop.begin("gen")
    gen = pipeline.generate(spec, cfg)
    written = pipeline.write(gen, out)
    loop.step("gen", f"{len(written)} files rewritten in {display_path(out / gen.package)}")
    package = pipeline.load(out, gen.package)
    loop.begin("conform")
    base = baseline(spec, cfg, package=package, deadlock=not args.deadlock)
    report = conform(base)
    loop.step("conform", f"{report.states} states, {len(report.mismatches)} mismatches")
    if not report.ok:
        print(report_text(base.graph.variables, report))
        loop.decide.append("the generated code disagrees with TLC (above): a codegen bug")
        return loop.finish()
    _behaviours(args.behaviours, spec, base, loop)
    if args.mutants != "skip":
        _mutants(Recheck(spec, cfg, base, run=args.mutants == "run", progress=loop.say), loop)
    return loop.finish()


def _translate(spec: Path, loop: _Loop) -> None:
    """Translate the spec's PlusCal (when it has some) into its TLA+."""
    loop.begin("translate")
    if has_pluscal(spec.read_text(encoding="utf-8")):
        loop.step("translate", "updated" if translate(spec) else "already current")
    else:
        loop.step("translate", "no PlusCal algorithm: nothing to translate")


def _mutants(ctx: Recheck, loop: _Loop) -> None:
    """Recheck the spec's and the generated code's mutants; what they find is to decide."""
    for name, check in MUTANT_CHECKS.items():
        loop.begin(f"{name} mutants")
        total, found = check(ctx)
        loop.step(f"{name} mutants", f"{total} listed, {len(found)} to look at")
        loop.decide += [str(f) for f in found]


def _behaviours(path: Path | None, spec: Path, base: Baseline, loop: _Loop) -> None:
    """Regenerate the behaviours file (when there is one) and say whether it changed."""
    root = pipeline.project_root(spec) or Path.cwd()
    target = path or root / BEHAVIOURS_DIR / f"{spec.stem}.ndjson"
    if path is None and not target.is_file():
        loop.step("behaviours", f"no {display_path(target)}: skipped")
        return
    loop.begin("behaviours")
    before = target.read_text(encoding="utf-8") if target.is_file() else ""
    model = base.bind()
    variables = base.graph.variables
    kind = step_kind(variables) if "phase" in variables else None  # None: every edge
    behaviours = generate_behaviours(base.graph, model, kind=kind)
    rows = write_ndjson(target, behaviours, model)
    changed = target.read_text(encoding="utf-8") != before
    loop.step("behaviours", f"{rows} steps, {'rewritten' if changed else 'unchanged'}")
    if changed:
        loop.decide.append(
            f"{display_path(target)} changed: the runtime replays it "
            "(tests/runtime/test_replay_behaviours.py); run that test"
        )
