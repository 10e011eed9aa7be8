# Generated from spec/AegisPhase.tla by codegen — do not edit.
"""AegisPhase: constants, state and step types."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum

from aegis.values import ModelValue, Value

from ._tla import Memo

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

    advance = "advance"  # spec/AegisPhase.tla
    restartInRun = "restartInRun"  # spec/AegisPhase.tla
    restartOutsideRun = "restartOutsideRun"  # spec/AegisPhase.tla
    restartDone = "restartDone"  # spec/AegisPhase.tla
    retriesExhausted = "retriesExhausted"  # spec/AegisPhase.tla
    failedWrapUp = "failedWrapUp"  # spec/AegisPhase.tla
    alignRetries = "alignRetries"  # spec/AegisPhase.tla
    quitRequested = "quitRequested"  # spec/AegisPhase.tla
    receive = "receive"  # spec/AegisPhase.tla
    hangWithQuit = "hangWithQuit"  # spec/AegisPhase.tla
    evictSlow = "evictSlow"  # spec/AegisPhase.tla
    agentJoin = "agentJoin"  # spec/AegisPhase.tla
    agentWork = "agentWork"  # spec/AegisPhase.tla
    agentHang = "agentHang"  # spec/AegisPhase.tla
    agentCheckpoint = "agentCheckpoint"  # spec/AegisPhase.tla
    agentEvict = "agentEvict"  # spec/AegisPhase.tla
    envPodRestart = "envPodRestart"  # spec/AegisPhase.tla
    envDuplicate = "envDuplicate"  # spec/AegisPhase.tla
    envQuit = "envQuit"  # spec/AegisPhase.tla
    reschedule = "reschedule"  # spec/AegisPhase.tla
    jobDone = "jobDone"  # spec/AegisPhase.tla


@dataclass(frozen=True, slots=True)
class Constants:
    """The spec's CONSTANTs, bound at run time."""

    Workers: Value  # spec/AegisPhase.tla
    MaxRetry: Value  # spec/AegisPhase.tla
    InitSeqNum: Value  # spec/AegisPhase.tla
    FaultBudget: Value  # spec/AegisPhase.tla
    MaxSeqGap: Value  # spec/AegisPhase.tla


@dataclass(frozen=True, slots=True)
class State(Memo):
    """One state: a value per VARIABLE, equal to TLC's state value for value."""

    phase: Value  # spec/AegisPhase.tla
    shouldQuit: Value  # spec/AegisPhase.tla
    recoverCount: Value  # spec/AegisPhase.tla
    innerPhase: Value  # spec/AegisPhase.tla
    finished: Value  # spec/AegisPhase.tla
    retries: Value  # spec/AegisPhase.tla
    podRestarted: Value  # spec/AegisPhase.tla
    masterSeq: Value  # spec/AegisPhase.tla
    lastFinishSeq: Value  # spec/AegisPhase.tla
    msgs: Value  # spec/AegisPhase.tla
    agentSeq: Value  # spec/AegisPhase.tla
    agentState: Value  # spec/AegisPhase.tla
    slow: Value  # spec/AegisPhase.tla
    evict: Value  # spec/AegisPhase.tla
    checkpointed: Value  # spec/AegisPhase.tla
    faults: Value  # spec/AegisPhase.tla
    prevMasterSeq: Value  # spec/AegisPhase.tla
    finishCount: Value  # spec/AegisPhase.tla
    countedFailures: Value  # spec/AegisPhase.tla

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
    """One label: its process and its functions (self is the process id; `steps` takes the
    observed choices to bind and yields successors lazily, duplicates not removed)."""

    label: Label
    process: str | None
    kind: str  # "set": a process set; "single": one process; "none": uniprocess/Terminating
    process_ids: Callable[[Constants], frozenset[Value]]
    enabled: Callable[[Constants, State, Value], bool]
    successors: Callable[[Constants, State, Value], list[Successor]]
    steps: Callable[[Constants, State, Value, Mapping[str, Value]], Iterator[Successor]]
    source: str


# The constants of spec/AegisPhase.cfg.
CFG_CONSTANTS: Constants | None = Constants(
    Workers=frozenset({ModelValue("w1"), ModelValue("w2")}),
    MaxRetry=2,
    InitSeqNum=0,
    FaultBudget=3,
    MaxSeqGap=7,
)
