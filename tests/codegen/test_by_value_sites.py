"""Which quantifiers the generator evaluates by value, and which functions it builds once.

A site is `by_value` only when its body uses the bound key nowhere but in `v[key]` (its
truth is then a function of the keyed values); `[x \\in S |-> e]` becomes `_tla.const_fn`
only when e never names x. A small spec with both shapes is generated and compared with
TLC's state graph, so the shortcuts are checked against the model checker too.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from aegis.conformance.compare import Report
from codegen.pipeline import generate

SPEC = r"""---- MODULE ByValue ----
EXTENDS Naturals
CONSTANTS Workers, Boss
VARIABLES f, g

Idle == \E w \in Workers : f[w] = 0
BossIdle == \E w \in Workers : w = Boss /\ f[w] = 0
Done == \A w \in Workers : f[w] + g[w] >= 1

Init == f = [w \in Workers |-> 0] /\ g = [w \in Workers |-> 0]
Work == \E w \in Workers : f[w] = 0 /\ f' = [f EXCEPT ![w] = 1] /\ UNCHANGED g
Reset == /\ Done /\ ~BossIdle /\ f' = [w \in Workers |-> 0]
         /\ g' = [w \in Workers |-> IF w = Boss THEN 1 ELSE 0]
Next == (Idle /\ Work) \/ Reset
Spec == Init /\ [][Next]_<<f, g>>
TypeOK == \A w \in Workers : f[w] \in 0..1 /\ g[w] \in 0..1
====
"""
CFG = """SPECIFICATION Spec
CONSTANTS Workers = {a, b, c}
          Boss = a
INVARIANT TypeOK
CHECK_DEADLOCK FALSE
"""


def sites(text: str) -> dict[str, bool]:
    """Each site's anchor → whether it is evaluated by value."""
    found = re.findall(r'_tla\.Site\(\s*"(\w+)",(.*?)\)\n', text, re.S)
    return {anchor: "by_value=True" in rest for anchor, rest in found}


def test_only_a_body_that_indexes_with_the_key_alone_is_by_value(
    tmp_path: Path, conforms: Callable[..., Report]
) -> None:
    spec, cfg = tmp_path / "ByValue.tla", tmp_path / "ByValue.cfg"
    spec.write_text(SPEC, encoding="utf-8")
    cfg.write_text(CFG, encoding="utf-8")
    gen = generate(spec, cfg, phase_variable=None)
    text = "".join(gen.files.values())
    assert sites(text) == {"Idle": True, "BossIdle": False, "Done": True, "TypeOK": True}
    # Init's two functions (its states and the Init predicate), and Reset's f'
    assert len(re.findall(r"_tla\.const_fn\(\s*c\.Workers,\s*lambda: 0\s*\)", text)) == 5
    assert re.search(r"g_next = fn\(\(w\w*, 1 if w\w* == c\.Boss else 0\)", text)
    report = conforms(spec, tmp_path / "out", cfg)
    assert report.ok, report.mismatches
    assert report.states == report.tlc_states > 1
