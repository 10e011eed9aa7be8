"""No generated name shadows another: TLA+ names that are also the generated code's own
names are renamed apart, and a clash that cannot be is refused at the definition to rename."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from aegis.conformance.compare import Report
from codegen import ir
from codegen.errors import CodegenError
from codegen.names import check_names
from codegen.pipeline import generate

# Variables, constants and bound variables named like the generated code's parameters (c, s,
# self), its classes (State, Fn) and the locals it makes for primed variables (x_next).
SPEC = """---- MODULE Shadow ----
EXTENDS Naturals
CONSTANTS c, Fn
VARIABLES s, self, x, x_next, State
len == {0, 1}
apply(v) == v + 1
Ok == s \\in 0..3 /\\ x \\in len /\\ apply(x) \\in 1..2
Init == s = 0 /\\ self = c /\\ x = 0 /\\ x_next = 0 /\\ State = Fn
Step == \\E s_next \\in len, c_ \\in {c} :
          /\\ s < 3
          /\\ s' = s + s_next
          /\\ x' = 1 - x
          /\\ x_next' = x
          /\\ self' = c_
          /\\ UNCHANGED State
Swap == \\E v \\in {c, Fn} : State' = v /\\ UNCHANGED << s, self, x, x_next >>
Next == Step \\/ Swap
====
"""
CFG = "INIT Init\nNEXT Next\nINVARIANT Ok\nCONSTANTS c = 5\n  Fn = 7\n"


def _write(tmp_path: Path, text: str) -> Path:
    spec = tmp_path / "Shadow.tla"
    spec.write_text(text, encoding="utf-8")
    (tmp_path / "Shadow.cfg").write_text(CFG, encoding="utf-8")
    return spec


def test_names_of_the_generated_code_agree_with_tlc(
    tmp_path: Path, conforms: Callable[..., Report]
) -> None:
    report = conforms(_write(tmp_path, SPEC), tmp_path / "out")
    assert report.ok, report.mismatches
    assert report.states == report.tlc_states == 18  # as TLC counts them


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (  # both are set_ in Python: the second would replace the first
            "len == {0, 1}",
            "len == {0, 1}\nset == 1\nset_ == 2",
            r"Shadow\.tla:7:1: rename set and set_: the generated defs\.py would bind set_ twice",
        ),
        (  # a definition imported into actions.py next to its own initial_states
            "len == {0, 1}",
            "len == {0, 1}\ninitial_states == {0, 1}",
            r"Shadow\.tla:6:1: rename initial_states: the generated actions\.py would bind",
        ),
    ],
)
def test_a_name_clash_is_refused_at_the_definition(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    text = SPEC.replace(old, new).replace("x \\in len", "x \\in len /\\ set + set_ = 3")
    if "initial_states" in new:
        text = SPEC.replace(old, new).replace("s_next \\in len", "s_next \\in initial_states")
    with pytest.raises(CodegenError, match=r"^(.*/)?" + message):
        generate(_write(tmp_path, text), phase_variable=None)


def test_check_names_sees_every_kind_of_binding() -> None:
    empty = ir.Module("M", "M.tla", (), (), {}, ())
    clean = "from __future__ import annotations\nimport os\nX: int = 1\ndef f(): pass\n"
    check_names({"a.py": clean}, empty)
    for dup in ("import os", "X = 2", "def X(): pass", "class f: pass", "from m import f"):
        with pytest.raises(CodegenError, match=r"^rename \w+: the generated a\.py would bind"):
            check_names({"a.py": clean + dup + "\n"}, empty)
