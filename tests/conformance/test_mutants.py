"""Mutants of the generated code are killed by conformance (CI runs a fast subset)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aegis.conformance.mutants import FAST, MUTANTS, Mutant, MutantError, by_name, patch
from aegis.conformance.session import Baseline, kill


def _source(base: Baseline, m: Mutant) -> str:
    return (Path(str(base.package.__file__)).parent / f"{m.file}.py").read_text(encoding="utf-8")


def test_every_mutant_applies_exactly_once(small_baseline: Baseline) -> None:
    assert len(MUTANTS) >= 20 and len({m.name for m in MUTANTS}) == len(MUTANTS)
    for m in MUTANTS:
        assert patch(_source(small_baseline, m), m) != _source(small_baseline, m)


def test_a_patch_that_does_not_apply_is_an_error(small_baseline: Baseline) -> None:
    m = by_name("FreshFinish_ge")
    bad = Mutant(m.name, m.file, m.function, "no such text", "x", m.why)
    with pytest.raises(MutantError, match="occurs 0 times"):
        patch(_source(small_baseline, m), bad)


@pytest.mark.parametrize("name", FAST)
def test_fast_mutant_is_killed(
    name: str, small_baseline: Baseline, request: pytest.FixtureRequest
) -> None:
    result = kill([small_baseline], by_name(name))
    # the CI model (a TLC run of ~45 s) only where the small one is not enough
    if not result.killed:
        result = kill([request.getfixturevalue("main_baseline")], by_name(name))
    assert result.killed, f"{name} survived conformance"
