"""Bug mutants of the spec: every anchor resolves, and a handful are caught by TLC in CI.

The whole list is scored by `python bench/spec_mutation.py` (minutes: one TLC run each).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from aegis.errors import SpecError
from tools.tlc import run_tlc
from tools.tlc.mutants import (
    Mutant,
    apply_patch,
    drop_checks,
    load_mutants,
    mutated_copy,
    run_mutant,
    verdict,
)

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "spec" / "AegisPhase.tla"
CFG = ROOT / "spec" / "AegisPhase.cfg"
MUTANTS = load_mutants(ROOT / "spec" / "mutants" / "mutants.toml")
BY_NAME = {m.name: m for m in MUTANTS}

# CI's handful: a seed bug (a deadlock), issue 15's survivors, one per kind of promise, and
# issue 46's two;
# each stops at its counterexample after a shallow search (seconds each on an idle machine).
IN_CI = (
    "restarted-finish-deduplicated",
    "quit-clears-should-quit",
    "error-counted-outside-run",
    "eviction-costs-no-retry",
    "restart-in-run-not-counted",
    "min-is-max",
    "checkpoint-before-decision",
    # issue 46: the two promises that no invariant pinned before
    "quit-ignored-while-running",
    "replaced-incarnation-reports-kept",
    # and the two promises its fresh mutants showed missing
    "bootcheck-skipped",
    "duplicate-after-restart-counted",
)


def test_the_list_holds_the_seed_and_held_out_bugs() -> None:
    origins = [m.origin for m in MUTANTS]
    assert origins.count("seed") == 4
    assert origins.count("held-out") == 9  # issue 15: 6 that survived, 3 that were caught
    assert sum(m.equivalent is None for m in MUTANTS) >= 30
    fresh = [m for m in MUTANTS if m.origin == "fresh"]  # issue 46, from the user's promises
    assert len(fresh) >= 10 and sum(m.equivalent is None for m in fresh) >= 10
    assert all(m.why for m in MUTANTS)


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.name for m in MUTANTS])
def test_every_anchor_resolves_on_the_current_spec(mutant: Mutant) -> None:
    text = SPEC.read_text(encoding="utf-8")
    mutated = apply_patch(text, mutant)
    assert mutated != text
    # only the PlusCal source changes: the translation is redone from it
    marker = "\\* BEGIN TRANSLATION"
    assert mutated.partition(marker)[2] == text.partition(marker)[2]


@pytest.mark.parametrize("name", IN_CI)
def test_a_mutant_is_caught_with_a_counterexample(name: str) -> None:
    mutant = BY_NAME[name]
    result = run_mutant(SPEC, CFG, mutant)
    caught, said = verdict(mutant, result)
    assert caught, f"{name}: want {mutant.expected}, TLC said {said}"
    violation = result.violation
    assert violation is not None
    # a parsed counterexample: starts in the initial state, every step a full state
    assert len(violation.trace) >= 2
    first = violation.trace[0].state
    assert first["phase"] == "Pending" and first["masterSeq"] == 0
    assert all(set(step.state) == set(first) for step in violation.trace)


def test_the_unmutated_spec_with_each_mutant_cfg_passes() -> None:
    # the smaller models the mutants use are not themselves violated by the real spec
    for constants in {tuple(sorted(m.constants.items())) for m in MUTANTS if m.constants}:
        identity = Mutant("identity", "Min", "a < b", "a < b", "no change", "invariant")
        identity = Mutant(**{**identity.__dict__, "constants": dict(constants)})
        with mutated_copy(SPEC, CFG, identity) as (spec, cfg):
            assert run_tlc(spec, cfg, workers=1).ok


def test_a_mutant_whose_anchor_moved_away_is_an_error() -> None:
    gone = Mutant("gone", "Exhausted", "retries[w] >= MaxRetry", "x", "off by one", "invariant")
    with pytest.raises(SpecError, match=r"mutant gone: anchor Exhausted: .* occurs 0 times"):
        apply_patch(SPEC.read_text(encoding="utf-8"), gone)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ('expect_kind = "invariant"\nequivalent = "x"', "give expect_kind, or equivalent"),
        ("", "give expect_kind, or equivalent"),
        ('expect_kind = "crash"', "expect_kind must be one of"),
        ('expect_kind = "deadlock"\norigin = "mine"', "origin must be one of"),
        ('expect_kind = "deadlock"\nexpected = "deadlock"', "unknown key"),
    ],
)
def test_a_malformed_mutant_is_refused(tmp_path: Path, entry: str, message: str) -> None:
    toml = tmp_path / "mutants.toml"
    toml.write_text(
        f'[[mutant]]\nname = "m"\nanchor = "A"\nfind = "x"\nreplace = "y"\nwhy = "w"\n{entry}\n'
    )
    with pytest.raises(SpecError, match=message):
        load_mutants(toml)


def test_a_mutant_can_leave_out_the_checks_that_find_its_behaviour_first() -> None:
    cfg = "INVARIANT A\nINVARIANT AB\nPROPERTY P\n"
    assert drop_checks(cfg, ["A", "P"]) == "INVARIANT AB\n"
    with pytest.raises(SpecError, match="check Missing is listed 0 times"):
        drop_checks(cfg, ["Missing"])
    for mutant in MUTANTS:  # every name a mutant leaves out is one the cfg checks
        drop_checks(CFG.read_text(encoding="utf-8"), mutant.without)
