"""The phase machine derived statically from the spec, and the python-statemachine class."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from statemachine.exceptions import TransitionNotAllowed

from codegen import diagram

if TYPE_CHECKING:
    from tests.codegen.conftest import Build, Explorer


def test_jobs_phase_machine(build: Build) -> None:
    m = build("Jobs").module
    assert m.PHASE_VARIABLE == "phase"
    assert m.INITIAL_PHASE == "Idle"
    assert set(m.PHASES) == {"Idle", "Busy", "Done", "Failed"}
    assert set(m.PHASE_TRANSITIONS) == {
        ("Ctl", "Idle", "Busy"),
        ("Ctl", "Idle", "Failed"),
        ("Ctl", "Busy", "Done"),
        ("Ctl", "Busy", "Failed"),
    }


def test_static_machine_covers_every_explored_phase_change(
    build: Build, explorer: Explorer
) -> None:
    m = build("Jobs").module
    _, edges = explorer(m)
    seen = {(label, a.phase, b.phase) for a, label, b in edges if a.phase != b.phase}
    assert seen <= set(m.PHASE_TRANSITIONS)  # static derivation over-approximates
    assert ("Ctl", "Busy", "Done") in seen


def test_state_machine_follows_observed_phases(build: Build) -> None:
    m = build("Jobs").module
    sm = m.PhaseMachine()
    sm.send("Ctl", phase="Busy")
    assert sm.current_state_value == "Busy"
    sm.send("Ctl", phase="Failed")
    assert sm.is_terminated
    with pytest.raises(TransitionNotAllowed):
        m.PhaseMachine().send("Ctl", phase="Done")


def test_no_phase_variable_no_machine(build: Build) -> None:
    m = build("Toggle").module
    assert not hasattr(m, "PhaseMachine")
    assert "phases.py" not in build("Toggle").gen.files


def test_diagrams(build: Build) -> None:
    m = build("Jobs").module
    mermaid = diagram.render(m, "mermaid")
    assert mermaid.startswith("stateDiagram-v2")
    assert "Idle --> Busy : Ctl" in mermaid
    dot = diagram.render(m, "dot")
    assert '"Busy" -> "Done" [label="Ctl"];' in dot
    assert dot.startswith("digraph PhaseMachine {")
