# Generated from spec/AegisPhase.tla by codegen — do not edit.
"""AegisPhase: the invariants and state constraints named in the model config.

Config: spec/AegisPhase.cfg
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from . import _tla
from .defs import (
    EvictAtCheckpoint,
    EvictionAffordable,
    EvictionChargedInRun,
    EvictOnlySlow,
    FailedOnlyWhenExhaustedOrQuit,
    FinishedOnlyWhenDone,
    MasterSeqNumMonotonic,
    NoFinishDoubleProcessed,
    NoRunAfterRetriesExhausted,
    PhaseConsistency,
    RecoverCountBound,
    RecoverCountCountsFailures,
    RetriesBound,
    SafePointOnlyForAnEviction,
    SeqBound,
    StaleFinishRejected,
    ValidInnerPhase,
    ValidPhase,
    WorkerSeqNumBound,
)
from .model import Constants, State


def inv_ValidPhase(c: Constants, s: State) -> bool:
    """ValidPhase (spec/AegisPhase.tla)."""
    return _tla.boolean(ValidPhase(c, s), "ValidPhase")


def inv_ValidInnerPhase(c: Constants, s: State) -> bool:
    """ValidInnerPhase (spec/AegisPhase.tla)."""
    return _tla.boolean(ValidInnerPhase(c, s), "ValidInnerPhase")


def inv_RecoverCountBound(c: Constants, s: State) -> bool:
    """RecoverCountBound (spec/AegisPhase.tla)."""
    return _tla.boolean(RecoverCountBound(c, s), "RecoverCountBound")


def inv_RetriesBound(c: Constants, s: State) -> bool:
    """RetriesBound (spec/AegisPhase.tla)."""
    return _tla.boolean(RetriesBound(c, s), "RetriesBound")


def inv_PhaseConsistency(c: Constants, s: State) -> bool:
    """PhaseConsistency (spec/AegisPhase.tla)."""
    return _tla.boolean(PhaseConsistency(c, s), "PhaseConsistency")


def inv_NoFinishDoubleProcessed(c: Constants, s: State) -> bool:
    """NoFinishDoubleProcessed (spec/AegisPhase.tla)."""
    return _tla.boolean(NoFinishDoubleProcessed(c, s), "NoFinishDoubleProcessed")


def inv_MasterSeqNumMonotonic(c: Constants, s: State) -> bool:
    """MasterSeqNumMonotonic (spec/AegisPhase.tla)."""
    return _tla.boolean(MasterSeqNumMonotonic(c, s), "MasterSeqNumMonotonic")


def inv_WorkerSeqNumBound(c: Constants, s: State) -> bool:
    """WorkerSeqNumBound (spec/AegisPhase.tla)."""
    return _tla.boolean(WorkerSeqNumBound(c, s), "WorkerSeqNumBound")


def inv_StaleFinishRejected(c: Constants, s: State) -> bool:
    """StaleFinishRejected (spec/AegisPhase.tla)."""
    return _tla.boolean(StaleFinishRejected(c, s), "StaleFinishRejected")


def inv_EvictOnlySlow(c: Constants, s: State) -> bool:
    """EvictOnlySlow (spec/AegisPhase.tla)."""
    return _tla.boolean(EvictOnlySlow(c, s), "EvictOnlySlow")


def inv_EvictAtCheckpoint(c: Constants, s: State) -> bool:
    """EvictAtCheckpoint (spec/AegisPhase.tla)."""
    return _tla.boolean(EvictAtCheckpoint(c, s), "EvictAtCheckpoint")


def inv_EvictionAffordable(c: Constants, s: State) -> bool:
    """EvictionAffordable (spec/AegisPhase.tla)."""
    return _tla.boolean(EvictionAffordable(c, s), "EvictionAffordable")


def inv_FailedOnlyWhenExhaustedOrQuit(c: Constants, s: State) -> bool:
    """FailedOnlyWhenExhaustedOrQuit (spec/AegisPhase.tla)."""
    return _tla.boolean(FailedOnlyWhenExhaustedOrQuit(c, s), "FailedOnlyWhenExhaustedOrQuit")


def inv_NoRunAfterRetriesExhausted(c: Constants, s: State) -> bool:
    """NoRunAfterRetriesExhausted (spec/AegisPhase.tla)."""
    return _tla.boolean(NoRunAfterRetriesExhausted(c, s), "NoRunAfterRetriesExhausted")


def inv_RecoverCountCountsFailures(c: Constants, s: State) -> bool:
    """RecoverCountCountsFailures (spec/AegisPhase.tla)."""
    return _tla.boolean(RecoverCountCountsFailures(c, s), "RecoverCountCountsFailures")


def inv_SafePointOnlyForAnEviction(c: Constants, s: State) -> bool:
    """SafePointOnlyForAnEviction (spec/AegisPhase.tla)."""
    return _tla.boolean(SafePointOnlyForAnEviction(c, s), "SafePointOnlyForAnEviction")


def inv_EvictionChargedInRun(c: Constants, s: State) -> bool:
    """EvictionChargedInRun (spec/AegisPhase.tla)."""
    return _tla.boolean(EvictionChargedInRun(c, s), "EvictionChargedInRun")


def inv_FinishedOnlyWhenDone(c: Constants, s: State) -> bool:
    """FinishedOnlyWhenDone (spec/AegisPhase.tla)."""
    return _tla.boolean(FinishedOnlyWhenDone(c, s), "FinishedOnlyWhenDone")


def constraint_SeqBound(c: Constants, s: State) -> bool:
    """SeqBound (spec/AegisPhase.tla)."""
    return _tla.boolean(SeqBound(c, s), "SeqBound")


INVARIANTS: dict[str, Callable[[Constants, State], bool]] = {
    "ValidPhase": inv_ValidPhase,
    "ValidInnerPhase": inv_ValidInnerPhase,
    "RecoverCountBound": inv_RecoverCountBound,
    "RetriesBound": inv_RetriesBound,
    "PhaseConsistency": inv_PhaseConsistency,
    "NoFinishDoubleProcessed": inv_NoFinishDoubleProcessed,
    "MasterSeqNumMonotonic": inv_MasterSeqNumMonotonic,
    "WorkerSeqNumBound": inv_WorkerSeqNumBound,
    "StaleFinishRejected": inv_StaleFinishRejected,
    "EvictOnlySlow": inv_EvictOnlySlow,
    "EvictAtCheckpoint": inv_EvictAtCheckpoint,
    "EvictionAffordable": inv_EvictionAffordable,
    "FailedOnlyWhenExhaustedOrQuit": inv_FailedOnlyWhenExhaustedOrQuit,
    "NoRunAfterRetriesExhausted": inv_NoRunAfterRetriesExhausted,
    "RecoverCountCountsFailures": inv_RecoverCountCountsFailures,
    "SafePointOnlyForAnEviction": inv_SafePointOnlyForAnEviction,
    "EvictionChargedInRun": inv_EvictionChargedInRun,
    "FinishedOnlyWhenDone": inv_FinishedOnlyWhenDone,
}

# The variables each invariant reads, through the definitions it calls (None: not known).
INVARIANT_READS: dict[str, frozenset[str] | None] = {
    "ValidPhase": frozenset({"phase"}),
    "ValidInnerPhase": frozenset({"innerPhase"}),
    "RecoverCountBound": frozenset({"phase", "recoverCount"}),
    "RetriesBound": frozenset({"retries"}),
    "PhaseConsistency": frozenset({"finished", "innerPhase", "phase", "podRestarted"}),
    "NoFinishDoubleProcessed": frozenset({"finishCount"}),
    "MasterSeqNumMonotonic": frozenset({"masterSeq", "prevMasterSeq"}),
    "WorkerSeqNumBound": frozenset({"agentSeq", "masterSeq", "msgs"}),
    "StaleFinishRejected": frozenset({"finished", "lastFinishSeq", "masterSeq"}),
    "EvictOnlySlow": frozenset({"evict", "slow"}),
    "EvictAtCheckpoint": frozenset({"agentState", "checkpointed", "evict"}),
    "EvictionAffordable": frozenset({"evict", "phase", "recoverCount"}),
    "FailedOnlyWhenExhaustedOrQuit": frozenset({"phase", "retries", "shouldQuit"}),
    "NoRunAfterRetriesExhausted": frozenset({"countedFailures", "phase", "retries"}),
    "RecoverCountCountsFailures": frozenset({"countedFailures", "phase", "recoverCount"}),
    "SafePointOnlyForAnEviction": frozenset({"checkpointed", "evict", "phase"}),
    "EvictionChargedInRun": frozenset({"agentState", "evict", "phase"}),
    "FinishedOnlyWhenDone": frozenset({"agentSeq", "finished", "masterSeq", "podRestarted"}),
}

CONSTRAINTS: dict[str, Callable[[Constants, State], bool]] = {
    "SeqBound": constraint_SeqBound,
}

# Temporal properties of the cfg (checked by TLC only).
PROPERTIES: tuple[str, ...] = (
    "Termination",
    "RetriesMoveOnlyByCountedFailures",
    "EvictionCostsOneRetry",
    "FailureInRunCostsOneRetry",
    "EvictionOnlyAtSafePoint",
    "QuitIsNeverCleared",
    "QuitNeverEndsSucceed",
    "ReplacedIncarnationIgnored",
    "TerminalPhasesAreFinal",
    "SucceedOnlyWhenAllFinished",
    "CommandAfterChecks",
    "StaleErrorIgnored",
    "StaleHangIgnored",
    "StaleCheckpointIgnored",
    "CheckpointAfterDecision",
)


def violated_invariants(
    c: Constants, s: State, changed: Collection[str] | None = None
) -> list[str]:
    """The names of the invariants s violates.

    With `changed`, s is a successor of a state that satisfies every invariant, and
    `changed` holds each variable whose value may differ between the two: an invariant that
    reads none of them has the value it had there (true), so only the others are evaluated."""
    if changed is None:
        return [name for name, holds in INVARIANTS.items() if not holds(c, s)]
    return [
        name
        for name, holds in INVARIANTS.items()
        if ((reads := INVARIANT_READS[name]) is None or not reads.isdisjoint(changed))
        and not holds(c, s)
    ]


def within_constraints(c: Constants, s: State) -> bool:
    """Whether s satisfies every CONSTRAINT (TLC drops a state that does not, unexplored)."""
    return all(holds(c, s) for holds in CONSTRAINTS.values())
