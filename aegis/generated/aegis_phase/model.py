# Generated from spec/AegisPhase.tla by codegen — do not edit.
"""AegisPhase: constants, state and step types."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from aegis.values import ModelValue, Value

VARIABLES: tuple[str, ...] = (
    "phase",
    "shouldQuit",
    "recoverCount",
    "innerPhase",
    "finished",
    "retries",
    "podRestarted",
    "masterSeq",
    "lastFinishSeq",
    "msgs",
    "agentSeq",
    "agentState",
    "slow",
    "evict",
    "checkpointed",
    "faults",
    "prevMasterSeq",
    "finishCount",
)
CONSTANT_NAMES: tuple[str, ...] = ("Workers", "MaxRetry", "InitSeqNum", "FaultBudget", "MaxSeqGap")


@dataclass(frozen=True, slots=True)
class Constants:
    """The spec's CONSTANTs, bound at run time."""

    Workers: Value  # spec/AegisPhase.tla:45
    MaxRetry: Value  # spec/AegisPhase.tla:46
    InitSeqNum: Value  # spec/AegisPhase.tla:47
    FaultBudget: Value  # spec/AegisPhase.tla:48
    MaxSeqGap: Value  # spec/AegisPhase.tla:49


@dataclass(frozen=True, slots=True)
class State:
    """One state: a value per VARIABLE, equal to TLC's state value for value."""

    phase: Value  # spec/AegisPhase.tla:567
    shouldQuit: Value  # spec/AegisPhase.tla:567
    recoverCount: Value  # spec/AegisPhase.tla:567
    innerPhase: Value  # spec/AegisPhase.tla:567
    finished: Value  # spec/AegisPhase.tla:567
    retries: Value  # spec/AegisPhase.tla:567
    podRestarted: Value  # spec/AegisPhase.tla:568
    masterSeq: Value  # spec/AegisPhase.tla:568
    lastFinishSeq: Value  # spec/AegisPhase.tla:568
    msgs: Value  # spec/AegisPhase.tla:568
    agentSeq: Value  # spec/AegisPhase.tla:568
    agentState: Value  # spec/AegisPhase.tla:568
    slow: Value  # spec/AegisPhase.tla:569
    evict: Value  # spec/AegisPhase.tla:569
    checkpointed: Value  # spec/AegisPhase.tla:569
    faults: Value  # spec/AegisPhase.tla:569
    prevMasterSeq: Value  # spec/AegisPhase.tla:569
    finishCount: Value  # spec/AegisPhase.tla:569

    def as_dict(self) -> dict[str, Value]:
        """The state as {variable: value}."""
        return {name: getattr(self, name) for name in VARIABLES}

    @classmethod
    def from_dict(cls, values: Mapping[str, Value]) -> State:
        """The state with these variable values."""
        return cls(**{name: values[name] for name in VARIABLES})


@dataclass(frozen=True, slots=True)
class Successor:
    """A next state, with the \\E / with / x' \\in S choices made on the path to it."""

    state: State
    choices: tuple[tuple[str, Value], ...]


@dataclass(frozen=True, slots=True)
class ActionInfo:
    """One label: its process and its two functions (self is the process id)."""

    label: str
    process: str | None
    kind: str  # "set": a process set; "single": one process; "none": uniprocess/Terminating
    process_ids: Callable[[Constants], frozenset[Value]]
    enabled: Callable[[Constants, State, Value], bool]
    successors: Callable[[Constants, State, Value], list[Successor]]
    source: str


# The constants of spec/AegisPhase.cfg.
CFG_CONSTANTS: Constants | None = Constants(
    Workers=frozenset({ModelValue("w1"), ModelValue("w2")}),
    MaxRetry=2,
    InitSeqNum=0,
    FaultBudget=3,
    MaxSeqGap=7,
)
