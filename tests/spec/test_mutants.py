"""Each bug the original design's TLC runs found, re-introduced, is caught again by TLC."""

from __future__ import annotations

from pathlib import Path

import pytest

from aegis.errors import SpecError
from tools.tlc import run_tlc
from tools.tlc.mutants import Mutant, apply_patch, load_mutants, run_mutant

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "spec" / "AegisPhase.tla"
CFG = ROOT / "spec" / "AegisPhase.cfg"
MUTANTS = load_mutants(ROOT / "spec" / "mutants" / "mutants.toml")


def test_the_four_seed_bugs_are_listed() -> None:
    seed = [m for m in MUTANTS if not m.seed_bug.startswith("(ours)")]
    assert len(seed) == 4


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.name for m in MUTANTS])
def test_mutant_is_caught_with_a_counterexample(mutant: Mutant) -> None:
    result = run_mutant(SPEC, CFG, mutant)
    assert not result.ok
    violation = result.violation
    assert violation is not None, result.errors
    assert violation.kind == mutant.expect_kind
    if mutant.expect_name is not None:
        assert violation.name == mutant.expect_name
    # a parsed counterexample: starts in the initial state, every step a full state
    assert len(violation.trace) >= 2
    first = violation.trace[0].state
    assert first["phase"] == "Pending" and first["masterSeq"] == 0
    assert all(set(step.state) == set(first) for step in violation.trace)


def test_the_unmutated_spec_with_each_mutant_cfg_passes() -> None:
    # the smaller models the mutants use are not themselves violated by the real spec
    for mutant in [m for m in MUTANTS if m.constants]:
        from tools.tlc.mutants import mutated_copy

        identity = Mutant(mutant.name, "", mutant.find, mutant.find, "", None, mutant.constants)
        with mutated_copy(SPEC, CFG, identity) as (spec, cfg):
            assert run_tlc(spec, cfg).ok


def test_a_patch_that_does_not_apply_is_an_error() -> None:
    bogus = Mutant("bogus", "", "no such text", "x", "invariant")
    with pytest.raises(SpecError, match="matches 0 places"):
        apply_patch(SPEC.read_text(), bogus)
