# Generated from spec/AegisPhase.tla by codegen — do not edit.
"""AegisPhase: the global phase machine of variable `phase`.

Derived statically from spec/AegisPhase.tla: starting from Init's value of the
variable, every label's paths are evaluated with the variable known and the
other variables unknown; an assignment `phase' = e` that evaluates to Y on
a path feasible from X gives the transition X -> Y named by the label
(self-loops left out). It over-approximates the reachable phases.
"""

from __future__ import annotations

from statemachine import State, StateMachine

from .model import Label

PHASE_VARIABLE = "phase"
PHASES: tuple[str, ...] = (
    "Pending",
    "BootChecking",
    "Failed",
    "RunCommand",
    "Succeed",
    "Restarting",
    "Troubleshooting",
)
INITIAL_PHASE = "Pending"
# (label, from phase, to phase)
PHASE_TRANSITIONS: tuple[tuple[Label, str, str], ...] = (
    (Label.advance, "Pending", "BootChecking"),
    (Label.quitRequested, "Pending", "Failed"),
    (Label.advance, "BootChecking", "RunCommand"),
    (Label.quitRequested, "BootChecking", "Failed"),
    (Label.advance, "RunCommand", "Succeed"),
    (Label.restartInRun, "RunCommand", "Restarting"),
    (Label.quitRequested, "RunCommand", "Failed"),
    (Label.receive, "RunCommand", "Troubleshooting"),
    (Label.evictSlow, "RunCommand", "Restarting"),
    (Label.restartDone, "Restarting", "Troubleshooting"),
    (Label.quitRequested, "Restarting", "Failed"),
    (Label.advance, "Troubleshooting", "RunCommand"),
    (Label.retriesExhausted, "Troubleshooting", "Failed"),
    (Label.quitRequested, "Troubleshooting", "Failed"),
)


class PhaseMachine(StateMachine):
    """phase as a state machine; events are labels: send(label, phase=new value)."""

    Pending = State("Pending", value="Pending", initial=True)
    BootChecking = State("BootChecking", value="BootChecking")
    Failed = State("Failed", value="Failed", final=True)
    RunCommand = State("RunCommand", value="RunCommand")
    Succeed = State("Succeed", value="Succeed", final=True)
    Restarting = State("Restarting", value="Restarting")
    Troubleshooting = State("Troubleshooting", value="Troubleshooting")

    advance = (
        Pending.to(BootChecking)
        | BootChecking.to(RunCommand)
        | RunCommand.to(Succeed)
        | Troubleshooting.to(RunCommand)
    )
    quitRequested = (
        Pending.to(Failed)
        | BootChecking.to(Failed)
        | RunCommand.to(Failed)
        | Restarting.to(Failed)
        | Troubleshooting.to(Failed)
    )
    restartInRun = RunCommand.to(Restarting)
    receive = RunCommand.to(Troubleshooting)
    evictSlow = RunCommand.to(Restarting)
    restartDone = Restarting.to(Troubleshooting)
    retriesExhausted = Troubleshooting.to(Failed)
