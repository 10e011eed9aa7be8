# Generated from spec/AegisPhase.tla by codegen — do not edit.
"""AegisPhase: constants, state and step types."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum

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
    "countedFailures",
)
CONSTANT_NAMES: tuple[str, ...] = ("Workers", "MaxRetry", "InitSeqNum", "FaultBudget", "MaxSeqGap")


class Label(StrEnum):
    """The spec's action labels, in Next's order (a member's name is its label)."""

    advance = "advance"  # spec/AegisPhase.tla:944
    restartInRun = "restartInRun"  # spec/AegisPhase.tla:964
    restartOutsideRun = "restartOutsideRun"  # spec/AegisPhase.tla:981
    restartDone = "restartDone"  # spec/AegisPhase.tla:995
    retriesExhausted = "retriesExhausted"  # spec/AegisPhase.tla:1009
    failedWrapUp = "failedWrapUp"  # spec/AegisPhase.tla:1019
    alignRetries = "alignRetries"  # spec/AegisPhase.tla:1028
    quitRequested = "quitRequested"  # spec/AegisPhase.tla:1036
    receive = "receive"  # spec/AegisPhase.tla:1045
    hangWithQuit = "hangWithQuit"  # spec/AegisPhase.tla:1117
    evictSlow = "evictSlow"  # spec/AegisPhase.tla:1126
    agentJoin = "agentJoin"  # spec/AegisPhase.tla:1142
    agentWork = "agentWork"  # spec/AegisPhase.tla:1164
    agentHang = "agentHang"  # spec/AegisPhase.tla:1182
    agentCheckpoint = "agentCheckpoint"  # spec/AegisPhase.tla:1192
    agentEvict = "agentEvict"  # spec/AegisPhase.tla:1201
    envPodRestart = "envPodRestart"  # spec/AegisPhase.tla:1212
    envDuplicate = "envDuplicate"  # spec/AegisPhase.tla:1223
    envQuit = "envQuit"  # spec/AegisPhase.tla:1233
    reschedule = "reschedule"  # spec/AegisPhase.tla:1241
    jobDone = "jobDone"  # spec/AegisPhase.tla:1251


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

    phase: Value  # spec/AegisPhase.tla:685
    shouldQuit: Value  # spec/AegisPhase.tla:685
    recoverCount: Value  # spec/AegisPhase.tla:685
    innerPhase: Value  # spec/AegisPhase.tla:685
    finished: Value  # spec/AegisPhase.tla:685
    retries: Value  # spec/AegisPhase.tla:685
    podRestarted: Value  # spec/AegisPhase.tla:686
    masterSeq: Value  # spec/AegisPhase.tla:686
    lastFinishSeq: Value  # spec/AegisPhase.tla:686
    msgs: Value  # spec/AegisPhase.tla:686
    agentSeq: Value  # spec/AegisPhase.tla:686
    agentState: Value  # spec/AegisPhase.tla:686
    slow: Value  # spec/AegisPhase.tla:687
    evict: Value  # spec/AegisPhase.tla:687
    checkpointed: Value  # spec/AegisPhase.tla:687
    faults: Value  # spec/AegisPhase.tla:687
    prevMasterSeq: Value  # spec/AegisPhase.tla:687
    finishCount: Value  # spec/AegisPhase.tla:687
    countedFailures: Value  # spec/AegisPhase.tla:688

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

    label: Label
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
