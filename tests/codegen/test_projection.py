"""codegen/projection.py: what the agent's actions read, found from the spec, or refused."""

from __future__ import annotations

from dataclasses import fields, is_dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from codegen import ir
from codegen.errors import CodegenError
from codegen.frontend import ModuleIndex
from codegen.pipeline import display_path
from codegen.projection import analyse, emit_agent_view, per_worker_variables
from codegen.structure import build_spec
from tools.tlc.cfg import read_cfg
from tools.tlc.sany import export_xml

SPEC = Path(__file__).resolve().parents[2] / "spec" / "AegisPhase.tla"


@pytest.fixture(scope="module")
def spec() -> ir.Spec:
    shown = display_path(SPEC)
    index = ModuleIndex(export_xml(SPEC, shown), SPEC, shown)
    return build_spec(index, read_cfg(SPEC.with_suffix(".cfg"), display_path(SPEC)))


def test_the_projection_of_aegis_phase(spec: ir.Spec) -> None:
    assert per_worker_variables(spec) >= {"agentSeq", "agentState", "slow", "evict", "finished"}
    p = analyse(spec)
    assert p.actor == "w"
    assert p.globals == ("phase", "masterSeq", "msgs", "checkpointed", "faults")
    assert (p.own, p.per_pod) == (("agentSeq", "agentState"), ("slow", "evict"))
    # Quiescent reads every worker's state (through CanAdvance, AllReady...): sent, not read
    assert p.derived == ("Evicting", "Quiescent")


def _with_action(spec: ir.Spec, label: str, body: ir.Expr) -> ir.Spec:
    actions = tuple(replace(a, body=body) if a.label == label else a for a in spec.actions)
    return replace(spec, actions=actions)


def _rewrite(e: Any, change: Any) -> Any:
    """`e` with `change(node)` applied bottom-up (None: keep the node)."""
    if isinstance(e, tuple):
        return tuple(_rewrite(x, change) for x in e)
    if is_dataclass(e) and not isinstance(e, type) and not isinstance(e, ir.Loc | ir.Ident):
        e = replace(e, **{f.name: _rewrite(getattr(e, f.name), change) for f in fields(e)})
        new = change(e)
        return e if new is None else new
    return e


def test_a_read_of_another_workers_entry_is_refused(spec: ir.Spec) -> None:
    hang = next(a for a in spec.actions if a.label == "agentHang")

    def peer(e: Any) -> Any:  # ~slow[w] becomes ~slow["a-peer"]
        if (
            isinstance(e, ir.Builtin)
            and e.op == "apply"
            and getattr(e.args[0], "name", "") == "slow"
        ):
            return replace(e, args=(e.args[0], ir.Lit(e.loc, 0, "a-peer")))
        return None

    bad = _with_action(spec, "agentHang", _rewrite(hang.body, peer))
    with pytest.raises(CodegenError, match=r"agentHang reads slow\[\.\.\.\] beyond the acting"):
        analyse(bad)


def test_an_action_without_an_acting_worker_is_refused(spec: ir.Spec) -> None:
    work = next(a for a in spec.actions if a.label == "agentWork")
    bad = _with_action(
        spec, "agentWork", ir.Builtin(work.loc, 2, "and", (ir.Lit(work.loc, 0, True),))
    )
    with pytest.raises(CodegenError, match="acting worker cannot be found"):
        analyse(bad)


def test_a_spec_without_agent_actions_gets_no_agent_view(spec: ir.Spec) -> None:
    others = tuple(a for a in spec.actions if a.label != "agentEvict")
    assert emit_agent_view(replace(spec, actions=others)) == {}
