# Generated from tests/codegen/fixtures/Jobs.tla by codegen — do not edit.
"""Jobs: the global phase machine of variable `phase`.

Derived statically from tests/codegen/fixtures/Jobs.tla: starting from Init's value of the
variable, every label's paths are evaluated with the variable known and the
other variables unknown; an assignment `phase' = e` that evaluates to Y on
a path feasible from X gives the transition X -> Y named by the label
(self-loops left out). It over-approximates the reachable phases.
"""

from __future__ import annotations

from typing import Any

from statemachine import State, StateMachine

from .model import Label

PHASE_VARIABLE = "phase"
PHASES: tuple[str, ...] = ("Idle", "Busy", "Failed", "Done")
INITIAL_PHASE = "Idle"
# (label, from phase, to phase)
PHASE_TRANSITIONS: tuple[tuple[Label, str, str], ...] = (
    (Label.Ctl, "Idle", "Busy"),
    (Label.Ctl, "Idle", "Failed"),
    (Label.Ctl, "Busy", "Done"),
    (Label.Ctl, "Busy", "Failed"),
)


class PhaseMachine(StateMachine):
    """phase as a state machine; events are labels: send(label, phase=new value)."""

    Idle = State("Idle", value="Idle", initial=True)
    Busy = State("Busy", value="Busy")
    Failed = State("Failed", value="Failed", final=True)
    Done = State("Done", value="Done", final=True)

    Ctl = (
        Idle.to(Busy, cond="is_observed")
        | Idle.to(Failed, cond="is_observed")
        | Busy.to(Done, cond="is_observed")
        | Busy.to(Failed, cond="is_observed")
    )

    def is_observed(self, target: State, **kwargs: Any) -> bool:
        """Pick, among one label's transitions, the one to the phase the step produced."""
        new = kwargs.get(PHASE_VARIABLE)
        return new is None or target.value == new
