"""A plain TLA+ Next: its actions are split and named as TLC names them (TLC's dot is the
judge, through the conformance machinery), whatever the spec's variables are called."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from aegis.conformance.compare import Report
from codegen.pipeline import generate, load, write

# A hand-written spec with a `pc` variable, but no PlusCal: proc is split into A and B (as
# TLC does), Inner into Reset and a part that is no operator (named Inner, as TLC does).
HAND = """---- MODULE Hand ----
EXTENDS Naturals
VARIABLES pc, n
Procs == {1, 2}
Init == pc = [p \\in Procs |-> "a"] /\\ n = 0
A(p) == pc[p] = "a" /\\ pc' = [pc EXCEPT ![p] = "b"] /\\ UNCHANGED n
B(p) == pc[p] = "b" /\\ n < 2 /\\ n' = n + 1 /\\ pc' = [pc EXCEPT ![p] = "a"]
proc(p) == A(p) \\/ B(p)
Reset == n = 2 /\\ n' = 0 /\\ UNCHANGED pc
Inner == Reset \\/ (n = 1 /\\ pc[1] = "a" /\\ n' = 2 /\\ UNCHANGED pc)
Next == (\\E p \\in Procs : proc(p)) \\/ Inner
Spec == Init /\\ [][Next]_<< pc, n >>
TypeOK == n \\in 0..2
====
"""


def test_actions_are_named_as_tlc_names_them(
    tmp_path: Path, conforms: Callable[..., Report]
) -> None:
    spec = tmp_path / "Hand.tla"
    spec.write_text(HAND, encoding="utf-8")
    spec.with_suffix(".cfg").write_text("SPECIFICATION Spec\nINVARIANT TypeOK\n", "utf-8")
    gen = generate(spec, phase_variable=None)
    write(gen, tmp_path / "out")
    m = load(tmp_path / "out", gen.package)
    assert list(m.ACTIONS) == ["A", "B", "Reset", "Inner"]
    report = conforms(spec, tmp_path / "conform")
    assert report.ok, report.mismatches
    assert report.tlc_states == report.states > 4
