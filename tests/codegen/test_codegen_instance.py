"""INSTANCE is scoped: an instantiated module's names never leak, its declarations are
replaced by their substitutes, and what cannot run is refused where it is written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from aegis.conformance.compare import Report
from codegen.errors import CodegenError
from codegen.pipeline import generate, load, write

# A module whose names (v, Step, Bump, Small) the specs below also define, differently.
CELL = """---- MODULE Cell ----
EXTENDS Naturals
CONSTANT Step
VARIABLE v
Bump == v' = v + Step
Small == v < 3
Twice == Bump /\\ Small
====
"""

NAMED = """---- MODULE Named ----
EXTENDS Naturals
CONSTANT Step
VARIABLES v, w
Fast == INSTANCE Cell WITH v <- w, Step <- Step + 1
Bump == v' = v + Step /\\ UNCHANGED w
Small == v < 2
Init == v = 0 /\\ w = 0
Slow == Small /\\ Bump
Quick == Fast!Small /\\ Fast!Bump /\\ UNCHANGED v
Next == Slow \\/ Quick
Spec == Init /\\ [][Next]_<< v, w >>
TypeOK == v \\in 0..2 /\\ w \\in 0..4 /\\ (Fast!Small => w < 3)
====
"""

PARAMETERISED = """---- MODULE Param ----
EXTENDS Naturals
VARIABLE f
C(i) == INSTANCE Cell WITH v <- f[i], Step <- i
Init == f = [i \\in 1..2 |-> 0]
Grow(i) == C(i)!Small /\\ f' = [f EXCEPT ![i] = f[i] + i]
Next == \\E i \\in 1..2 : Grow(i)
Spec == Init /\\ [][Next]_f
====
"""


def _spec(tmp_path: Path, text: str, cfg: str) -> Path:
    (tmp_path / "Cell.tla").write_text(CELL, encoding="utf-8")
    name = text.split("MODULE ", 1)[1].split(" ", 1)[0]
    spec = tmp_path / f"{name}.tla"
    spec.write_text(text, encoding="utf-8")
    spec.with_suffix(".cfg").write_text(cfg, encoding="utf-8")
    return spec


def test_a_named_instance_is_scoped_and_agrees_with_tlc(
    tmp_path: Path, conforms: Callable[..., Report]
) -> None:
    cfg = "SPECIFICATION Spec\nCONSTANT Step = 1\nINVARIANT TypeOK\nCHECK_DEADLOCK FALSE\n"
    spec = _spec(tmp_path, NAMED, cfg)
    gen = generate(spec, phase_variable=None)
    write(gen, tmp_path / "out")
    m = load(tmp_path / "out", gen.package)
    assert m.VARIABLES == ("v", "w") and m.CONSTANT_NAMES == ("Step",)
    assert list(m.ACTIONS) == ["Slow", "Quick"]
    c = m.CFG_CONSTANTS
    (init,) = m.initial_states(c)
    quick = [s.state for s in m.ACTIONS["Quick"].successors(c, init, None)]
    assert quick == [m.State(v=0, w=2)]  # Fast's Bump adds Step + 1 to w, not Step to v
    report = conforms(spec, tmp_path / "conform")
    assert report.ok, report.mismatches
    assert report.states == report.tlc_states == 3 * 3  # v in 0..2, w in {0, 2, 4}


def test_a_parameterised_instance_agrees_with_tlc(
    tmp_path: Path, conforms: Callable[..., Report]
) -> None:
    spec = _spec(tmp_path, PARAMETERISED, "SPECIFICATION Spec\nCHECK_DEADLOCK FALSE\n")
    report = conforms(spec, tmp_path / "out")
    assert report.ok, report.mismatches
    assert report.tlc_states == 4 * 3  # f[1] in 0..3, f[2] in {0, 2, 4}


def test_priming_a_substituted_expression_is_refused_where_it_is_primed(tmp_path: Path) -> None:
    text = PARAMETERISED.replace("C(i)!Small /\\ f' = [f EXCEPT ![i] = f[i] + i]", "C(i)!Bump")
    spec = _spec(tmp_path, text, "SPECIFICATION Spec\n")
    with pytest.raises(CodegenError, match=r"^(.*/)?Cell\.tla:5:\d+: priming an expression"):
        generate(spec, phase_variable=None)


def test_an_instance_action_named_in_next_is_refused_where_it_is_used(tmp_path: Path) -> None:
    text = NAMED.replace("Next == Slow \\/ Quick", "Next == Slow \\/ Fast!Twice")
    spec = _spec(tmp_path, text, "SPECIFICATION Spec\nCONSTANT Step = 1\n")
    with pytest.raises(
        CodegenError, match=r"^(.*/)?Named\.tla:11:\d+: TLC names this action Fast!Tw"
    ):
        generate(spec, phase_variable=None)
