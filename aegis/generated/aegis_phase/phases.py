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
PHASE_TRANSITIONS: tuple[tuple[str, str, str], ...] = (
    ("advance", "Pending", "BootChecking"),
    ("quitRequested", "Pending", "Failed"),
    ("advance", "BootChecking", "RunCommand"),
    ("quitRequested", "BootChecking", "Failed"),
    ("advance", "RunCommand", "Succeed"),
    ("restartInRun", "RunCommand", "Restarting"),
    ("quitRequested", "RunCommand", "Failed"),
    ("receive", "RunCommand", "Troubleshooting"),
    ("evictSlow", "RunCommand", "Restarting"),
    ("restartDone", "Restarting", "Troubleshooting"),
    ("quitRequested", "Restarting", "Failed"),
    ("advance", "Troubleshooting", "RunCommand"),
    ("retriesExhausted", "Troubleshooting", "Failed"),
    ("quitRequested", "Troubleshooting", "Failed"),
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
