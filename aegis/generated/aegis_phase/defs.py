# Generated from spec/AegisPhase.tla by codegen — do not edit.
"""AegisPhase: the spec's state- and constant-level definitions, one function each."""

from __future__ import annotations

from aegis.values import Value, apply

from . import _tla
from .model import Constants, State

# Quantifiers kept current per state (see _tla.Site).
_S_Exhausted_1 = _tla.Site("Exhausted", ("retries",), (), by_value=True)
_S_AllReady_1 = _tla.Site("AllReady", ("finished", "podRestarted"), (), by_value=True)
_S_UnseenRestarts_1 = _tla.Site("UnseenRestarts", ("innerPhase", "podRestarted"), (), by_value=True)
_S_CanRestartDone_1 = _tla.Site("CanRestartDone", ("agentState", "podRestarted"), (), by_value=True)
_S_CanAlign_1 = _tla.Site("CanAlign", ("retries",), ("recoverCount",), by_value=True)
_S_Evicting_1 = _tla.Site("Evicting", ("evict",), (), by_value=True)
_S_SlowToEvict_1 = _tla.Site("SlowToEvict", ("evict", "podRestarted", "slow"), (), by_value=True)
_S_Evicted_1 = _tla.Site("Evicted", ("agentState", "evict"), (), by_value=True)
_S_ValidInnerPhase_1 = _tla.Site("ValidInnerPhase", ("innerPhase",), (), by_value=True)
_S_RetriesBound_1 = _tla.Site("RetriesBound", ("retries",), (), by_value=True)
_S_PhaseConsistency_1 = _tla.Site(
    "PhaseConsistency", ("finished", "innerPhase", "podRestarted"), ("phase",), by_value=True
)
_S_NoFinishDoubleProcessed_1 = _tla.Site(
    "NoFinishDoubleProcessed", ("finishCount",), (), by_value=True
)
_S_WorkerSeqNumBound_1 = _tla.Site(
    "WorkerSeqNumBound", ("agentSeq",), ("masterSeq",), by_value=True
)
_S_StaleFinishRejected_1 = _tla.Site(
    "StaleFinishRejected", ("finished", "lastFinishSeq"), ("masterSeq",), by_value=True
)
_S_EvictOnlySlow_1 = _tla.Site("EvictOnlySlow", ("evict", "slow"), (), by_value=True)
_S_EvictAtCheckpoint_1 = _tla.Site(
    "EvictAtCheckpoint", ("agentState", "evict"), ("checkpointed",), by_value=True
)
_S_FailedOnlyWhenExhaustedOrQuit_1 = _tla.Site(
    "FailedOnlyWhenExhaustedOrQuit", ("retries",), (), by_value=True
)
_S_NoRunAfterRetriesExhausted_1 = _tla.Site(
    "NoRunAfterRetriesExhausted", ("retries",), (), by_value=True
)
_S_FinishedOnlyWhenDone_1 = _tla.Site(
    "FinishedOnlyWhenDone", ("agentSeq", "finished", "podRestarted"), ("masterSeq",), by_value=True
)
_S_SafePointOnlyForAnEviction_1 = _tla.Site(
    "SafePointOnlyForAnEviction", ("evict",), (), by_value=True
)
_S_EvictionChargedInRun_1 = _tla.Site(
    "EvictionChargedInRun", ("agentState", "evict"), ("phase",), by_value=True
)


def Phases(c: Constants) -> Value:
    """Phases (spec/AegisPhase.tla)."""
    return frozenset(
        {
            "Pending",
            "BootChecking",
            "RunCommand",
            "Restarting",
            "Troubleshooting",
            "Succeed",
            "Failed",
        }
    )


def OrderPhases(c: Constants) -> Value:
    """OrderPhases (spec/AegisPhase.tla)."""
    return frozenset({"BootChecking", "RunCommand", "Troubleshooting"})


def AdvancePhases(c: Constants) -> Value:
    """AdvancePhases (spec/AegisPhase.tla)."""
    return frozenset({"Pending", "BootChecking", "RunCommand", "Troubleshooting"})


def NextPhase(c: Constants, p: Value) -> Value:
    """NextPhase(p) (spec/AegisPhase.tla)."""
    return (
        "BootChecking"
        if p == "Pending"
        else "RunCommand"
        if p == "BootChecking"
        else "Succeed"
        if p == "RunCommand"
        else "RunCommand"
        if p == "Troubleshooting"
        else p
    )


def Min(c: Constants, a: Value, b: Value) -> Value:
    """Min(a, b) (spec/AegisPhase.tla)."""
    return a if a < b else b


def Terminated(c: Constants, s: State) -> Value:
    """Terminated (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if Terminated in _known:
        return _known[Terminated]
    _value = _known[Terminated] = s.phase == "Succeed" or (
        s.phase == "Failed" and s.shouldQuit and s.recoverCount == c.MaxRetry + 1
    )
    return _value


def Exhausted(c: Constants, s: State) -> Value:
    """Exhausted (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if Exhausted in _known:
        return _known[Exhausted]
    _value = _known[Exhausted] = _tla.exists(
        _S_Exhausted_1, c, s, c.Workers, lambda c, s, w: apply(s.retries, w) > c.MaxRetry
    )
    return _value


def AllReady(c: Constants, s: State) -> Value:
    """AllReady (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if AllReady in _known:
        return _known[AllReady]
    _value = _known[AllReady] = _tla.forall(
        _S_AllReady_1,
        c,
        s,
        c.Workers,
        lambda c, s, w: apply(s.finished, w) and not apply(s.podRestarted, w),
    )
    return _value


def UnseenRestarts(c: Constants, s: State) -> Value:
    """UnseenRestarts (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if UnseenRestarts in _known:
        return _known[UnseenRestarts]
    _value = _known[UnseenRestarts] = _tla.select(
        _S_UnseenRestarts_1,
        c,
        s,
        c.Workers,
        lambda c, s, x: apply(s.podRestarted, x) and apply(s.innerPhase, x) != "Restarting",
    )
    return _value


def CanAdvance(c: Constants, s: State) -> Value:
    """CanAdvance (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if CanAdvance in _known:
        return _known[CanAdvance]
    _value = _known[CanAdvance] = (
        s.phase in AdvancePhases(c)
        and AllReady(c, s)
        and not (s.phase == "Troubleshooting" and Exhausted(c, s))
    )
    return _value


def CanRestartInRun(c: Constants, s: State) -> Value:
    """CanRestartInRun (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if CanRestartInRun in _known:
        return _known[CanRestartInRun]
    _value = _known[CanRestartInRun] = (
        s.phase == "RunCommand" and UnseenRestarts(c, s) != frozenset()
    )
    return _value


def CanRestartOutsideRun(c: Constants, s: State) -> Value:
    """CanRestartOutsideRun (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if CanRestartOutsideRun in _known:
        return _known[CanRestartOutsideRun]
    _value = _known[CanRestartOutsideRun] = (
        s.phase != "RunCommand" and not Terminated(c, s) and UnseenRestarts(c, s) != frozenset()
    )
    return _value


def CanRestartDone(c: Constants, s: State) -> Value:
    """CanRestartDone (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if CanRestartDone in _known:
        return _known[CanRestartDone]
    _value = _known[CanRestartDone] = s.phase == "Restarting" and _tla.forall(
        _S_CanRestartDone_1,
        c,
        s,
        c.Workers,
        lambda c, s, w: not apply(s.podRestarted, w) and apply(s.agentState, w) != "Exited",
    )
    return _value


def CanFailExhausted(c: Constants, s: State) -> Value:
    """CanFailExhausted (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if CanFailExhausted in _known:
        return _known[CanFailExhausted]
    _value = _known[CanFailExhausted] = (
        s.phase == "Troubleshooting" and AllReady(c, s) and Exhausted(c, s)
    )
    return _value


def CanWrapUp(c: Constants, s: State) -> Value:
    """CanWrapUp (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if CanWrapUp in _known:
        return _known[CanWrapUp]
    _value = _known[CanWrapUp] = s.phase == "Failed" and not (
        s.shouldQuit and s.recoverCount == c.MaxRetry + 1
    )
    return _value


def CanAlign(c: Constants, s: State) -> Value:
    """CanAlign (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if CanAlign in _known:
        return _known[CanAlign]
    _value = _known[CanAlign] = s.phase in frozenset(
        {"BootChecking", "RunCommand"}
    ) and _tla.exists(
        _S_CanAlign_1, c, s, c.Workers, lambda c, s, w: apply(s.retries, w) != s.recoverCount
    )
    return _value


def CanQuit(c: Constants, s: State) -> Value:
    """CanQuit (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if CanQuit in _known:
        return _known[CanQuit]
    _value = _known[CanQuit] = s.shouldQuit and s.phase not in frozenset({"Succeed", "Failed"})
    return _value


def Evicting(c: Constants, s: State) -> Value:
    """Evicting (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if Evicting in _known:
        return _known[Evicting]
    _value = _known[Evicting] = _tla.select(
        _S_Evicting_1, c, s, c.Workers, lambda c, s, x: apply(s.evict, x)
    )
    return _value


def SlowToEvict(c: Constants, s: State) -> Value:
    """SlowToEvict (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if SlowToEvict in _known:
        return _known[SlowToEvict]
    _value = _known[SlowToEvict] = _tla.select(
        _S_SlowToEvict_1,
        c,
        s,
        c.Workers,
        lambda c, s, x: apply(s.slow, x) and not apply(s.evict, x) and not apply(s.podRestarted, x),
    )
    return _value


def CanHangWithQuit(c: Constants, s: State) -> Value:
    """CanHangWithQuit (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if CanHangWithQuit in _known:
        return _known[CanHangWithQuit]
    _value = _known[CanHangWithQuit] = (
        s.phase == "RunCommand"
        and not s.shouldQuit
        and SlowToEvict(c, s) != frozenset()
        and s.recoverCount + len(Evicting(c, s)) < c.MaxRetry
    )
    return _value


def Evicted(c: Constants, s: State) -> Value:
    """Evicted (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if Evicted in _known:
        return _known[Evicted]
    _value = _known[Evicted] = _tla.select(
        _S_Evicted_1,
        c,
        s,
        c.Workers,
        lambda c, s, x: apply(s.evict, x) and apply(s.agentState, x) == "Exited",
    )
    return _value


def CanEvictSlow(c: Constants, s: State) -> Value:
    """CanEvictSlow (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if CanEvictSlow in _known:
        return _known[CanEvictSlow]
    _value = _known[CanEvictSlow] = s.phase == "RunCommand" and Evicted(c, s) != frozenset()
    return _value


def Quiescent(c: Constants, s: State) -> Value:
    """Quiescent (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if Quiescent in _known:
        return _known[Quiescent]
    _value = _known[Quiescent] = not (
        CanAdvance(c, s)
        or CanRestartInRun(c, s)
        or CanRestartOutsideRun(c, s)
        or CanRestartDone(c, s)
        or CanFailExhausted(c, s)
        or CanWrapUp(c, s)
        or CanAlign(c, s)
        or CanQuit(c, s)
        or CanHangWithQuit(c, s)
        or CanEvictSlow(c, s)
    )
    return _value


def FreshFinish(c: Constants, s: State, m: Value) -> Value:
    """FreshFinish(m) (spec/AegisPhase.tla)."""
    return apply(m, "seq") == s.masterSeq and apply(m, "seq") > apply(
        s.lastFinishSeq, apply(m, "from")
    )


def Outcomes(c: Constants, s: State) -> Value:
    """Outcomes (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if Outcomes in _known:
        return _known[Outcomes]
    _value = _known[Outcomes] = (
        frozenset({"Finish", "Error"}) if s.faults > 0 else frozenset({"Finish"})
    )
    return _value


def ValidPhase(c: Constants, s: State) -> Value:
    """ValidPhase (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if ValidPhase in _known:
        return _known[ValidPhase]
    _value = _known[ValidPhase] = s.phase in Phases(c)
    return _value


def ValidInnerPhase(c: Constants, s: State) -> Value:
    """ValidInnerPhase (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if ValidInnerPhase in _known:
        return _known[ValidInnerPhase]
    _value = _known[ValidInnerPhase] = _tla.forall(
        _S_ValidInnerPhase_1, c, s, c.Workers, lambda c, s, w: apply(s.innerPhase, w) in Phases(c)
    )
    return _value


def RecoverCountBound(c: Constants, s: State) -> Value:
    """RecoverCountBound (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if RecoverCountBound in _known:
        return _known[RecoverCountBound]
    _value = _known[RecoverCountBound] = s.recoverCount <= c.MaxRetry + 1 and (
        s.phase == "Failed" or s.recoverCount <= c.MaxRetry
    )
    return _value


def RetriesBound(c: Constants, s: State) -> Value:
    """RetriesBound (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if RetriesBound in _known:
        return _known[RetriesBound]
    _value = _known[RetriesBound] = _tla.forall(
        _S_RetriesBound_1, c, s, c.Workers, lambda c, s, w: apply(s.retries, w) <= c.MaxRetry + 1
    )
    return _value


def PhaseConsistency(c: Constants, s: State) -> Value:
    """PhaseConsistency (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if PhaseConsistency in _known:
        return _known[PhaseConsistency]
    _value = _known[PhaseConsistency] = _tla.forall(
        _S_PhaseConsistency_1,
        c,
        s,
        c.Workers,
        lambda c, s, w: (
            not (not apply(s.finished, w) and not apply(s.podRestarted, w))
            or (
                apply(s.innerPhase, w) == s.phase
                or (s.phase == "Restarting" and apply(s.innerPhase, w) == "RunCommand")
            )
        ),
    )
    return _value


def NoFinishDoubleProcessed(c: Constants, s: State) -> Value:
    """NoFinishDoubleProcessed (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if NoFinishDoubleProcessed in _known:
        return _known[NoFinishDoubleProcessed]
    _value = _known[NoFinishDoubleProcessed] = _tla.forall(
        _S_NoFinishDoubleProcessed_1, c, s, c.Workers, lambda c, s, w: apply(s.finishCount, w) <= 1
    )
    return _value


def MasterSeqNumMonotonic(c: Constants, s: State) -> Value:
    """MasterSeqNumMonotonic (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if MasterSeqNumMonotonic in _known:
        return _known[MasterSeqNumMonotonic]
    _value = _known[MasterSeqNumMonotonic] = s.prevMasterSeq <= s.masterSeq
    return _value


def WorkerSeqNumBound(c: Constants, s: State) -> Value:
    """WorkerSeqNumBound (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if WorkerSeqNumBound in _known:
        return _known[WorkerSeqNumBound]
    _value = _known[WorkerSeqNumBound] = _tla.forall(
        _S_WorkerSeqNumBound_1, c, s, c.Workers, lambda c, s, w: apply(s.agentSeq, w) <= s.masterSeq
    ) and all(apply(m, "seq") <= s.masterSeq for m in s.msgs)
    return _value


def StaleFinishRejected(c: Constants, s: State) -> Value:
    """StaleFinishRejected (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if StaleFinishRejected in _known:
        return _known[StaleFinishRejected]
    _value = _known[StaleFinishRejected] = _tla.forall(
        _S_StaleFinishRejected_1,
        c,
        s,
        c.Workers,
        lambda c, s, w: not apply(s.finished, w) or apply(s.lastFinishSeq, w) == s.masterSeq,
    )
    return _value


def EvictOnlySlow(c: Constants, s: State) -> Value:
    """EvictOnlySlow (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if EvictOnlySlow in _known:
        return _known[EvictOnlySlow]
    _value = _known[EvictOnlySlow] = _tla.forall(
        _S_EvictOnlySlow_1,
        c,
        s,
        c.Workers,
        lambda c, s, w: not apply(s.evict, w) or apply(s.slow, w),
    )
    return _value


def EvictAtCheckpoint(c: Constants, s: State) -> Value:
    """EvictAtCheckpoint (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if EvictAtCheckpoint in _known:
        return _known[EvictAtCheckpoint]
    _value = _known[EvictAtCheckpoint] = _tla.forall(
        _S_EvictAtCheckpoint_1,
        c,
        s,
        c.Workers,
        lambda c, s, w: (
            not (apply(s.evict, w) and apply(s.agentState, w) == "Exited") or s.checkpointed
        ),
    )
    return _value


def EvictionAffordable(c: Constants, s: State) -> Value:
    """EvictionAffordable (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if EvictionAffordable in _known:
        return _known[EvictionAffordable]
    _value = _known[EvictionAffordable] = (
        s.phase != "RunCommand" or s.recoverCount + len(Evicting(c, s)) <= c.MaxRetry
    )
    return _value


def FailedOnlyWhenExhaustedOrQuit(c: Constants, s: State) -> Value:
    """FailedOnlyWhenExhaustedOrQuit (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if FailedOnlyWhenExhaustedOrQuit in _known:
        return _known[FailedOnlyWhenExhaustedOrQuit]
    _value = _known[FailedOnlyWhenExhaustedOrQuit] = s.phase != "Failed" or (
        s.shouldQuit
        or _tla.exists(
            _S_FailedOnlyWhenExhaustedOrQuit_1,
            c,
            s,
            c.Workers,
            lambda c, s, w: apply(s.retries, w) > c.MaxRetry,
        )
    )
    return _value


def NoRunAfterRetriesExhausted(c: Constants, s: State) -> Value:
    """NoRunAfterRetriesExhausted (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if NoRunAfterRetriesExhausted in _known:
        return _known[NoRunAfterRetriesExhausted]
    _value = _known[NoRunAfterRetriesExhausted] = not (
        s.countedFailures > c.MaxRetry
        or _tla.exists(
            _S_NoRunAfterRetriesExhausted_1,
            c,
            s,
            c.Workers,
            lambda c, s, w: apply(s.retries, w) > c.MaxRetry,
        )
    ) or s.phase not in frozenset({"BootChecking", "RunCommand", "Succeed"})
    return _value


def RecoverCountCountsFailures(c: Constants, s: State) -> Value:
    """RecoverCountCountsFailures (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if RecoverCountCountsFailures in _known:
        return _known[RecoverCountCountsFailures]
    _value = _known[RecoverCountCountsFailures] = s.recoverCount == (
        s.countedFailures if s.countedFailures < c.MaxRetry else c.MaxRetry
    ) or (s.phase == "Failed" and s.recoverCount == c.MaxRetry + 1)
    return _value


def FinishedOnlyWhenDone(c: Constants, s: State) -> Value:
    """FinishedOnlyWhenDone (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if FinishedOnlyWhenDone in _known:
        return _known[FinishedOnlyWhenDone]
    _value = _known[FinishedOnlyWhenDone] = _tla.forall(
        _S_FinishedOnlyWhenDone_1,
        c,
        s,
        c.Workers,
        lambda c, s, w: (
            not (apply(s.finished, w) and not apply(s.podRestarted, w))
            or apply(s.agentSeq, w) == s.masterSeq
        ),
    )
    return _value


def SafePointOnlyForAnEviction(c: Constants, s: State) -> Value:
    """SafePointOnlyForAnEviction (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if SafePointOnlyForAnEviction in _known:
        return _known[SafePointOnlyForAnEviction]
    _value = _known[SafePointOnlyForAnEviction] = not (
        s.phase == "RunCommand" and s.checkpointed
    ) or _tla.exists(
        _S_SafePointOnlyForAnEviction_1, c, s, c.Workers, lambda c, s, w: apply(s.evict, w)
    )
    return _value


def EvictionChargedInRun(c: Constants, s: State) -> Value:
    """EvictionChargedInRun (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if EvictionChargedInRun in _known:
        return _known[EvictionChargedInRun]
    _value = _known[EvictionChargedInRun] = _tla.forall(
        _S_EvictionChargedInRun_1,
        c,
        s,
        c.Workers,
        lambda c, s, w: (
            not (apply(s.evict, w) and apply(s.agentState, w) == "Exited")
            or s.phase == "RunCommand"
        ),
    )
    return _value


def SeqBound(c: Constants, s: State) -> Value:
    """SeqBound (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if SeqBound in _known:
        return _known[SeqBound]
    _value = _known[SeqBound] = s.masterSeq <= c.InitSeqNum + c.MaxSeqGap
    return _value


def vars_(c: Constants, s: State) -> Value:
    """vars (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if vars_ in _known:
        return _known[vars_]
    _value = _known[vars_] = (
        s.phase,
        s.shouldQuit,
        s.recoverCount,
        s.innerPhase,
        s.finished,
        s.retries,
        s.podRestarted,
        s.masterSeq,
        s.lastFinishSeq,
        s.msgs,
        s.agentSeq,
        s.agentState,
        s.slow,
        s.evict,
        s.checkpointed,
        s.faults,
        s.prevMasterSeq,
        s.finishCount,
        s.countedFailures,
    )
    return _value


def ProcSet(c: Constants) -> Value:
    """ProcSet (spec/AegisPhase.tla)."""
    return (
        frozenset({"advance"})
        | frozenset({"restartInRun"})
        | frozenset({"restartOutsideRun"})
        | frozenset({"restartDone"})
        | frozenset({"retriesExhausted"})
        | frozenset({"failedWrapUp"})
        | frozenset({"alignRetries"})
        | frozenset({"quitRequested"})
        | frozenset({"receive"})
        | frozenset({"hangWithQuit"})
        | frozenset({"evictSlow"})
        | frozenset({"agentJoin"})
        | frozenset({"agentWork"})
        | frozenset({"agentHang"})
        | frozenset({"agentCheckpoint"})
        | frozenset({"agentEvict"})
        | frozenset({"envPodRestart"})
        | frozenset({"envDuplicate"})
        | frozenset({"envQuit"})
        | frozenset({"reschedule"})
        | frozenset({"jobDone"})
    )


def Init(c: Constants, s: State) -> Value:
    """Init (spec/AegisPhase.tla)."""
    _known = _tla.known(c, s)
    if Init in _known:
        return _known[Init]
    _value = _known[Init] = (
        s.phase == "Pending"
        and s.shouldQuit is False
        and s.recoverCount == 0
        and s.innerPhase == _tla.const_fn(c.Workers, lambda: "Pending")
        and s.finished == _tla.const_fn(c.Workers, lambda: False)
        and s.retries == _tla.const_fn(c.Workers, lambda: 0)
        and s.podRestarted == _tla.const_fn(c.Workers, lambda: False)
        and s.masterSeq == c.InitSeqNum
        and s.lastFinishSeq == _tla.const_fn(c.Workers, lambda: c.InitSeqNum - 1)
        and s.msgs == frozenset()
        and s.agentSeq == _tla.const_fn(c.Workers, lambda: c.InitSeqNum)
        and s.agentState == _tla.const_fn(c.Workers, lambda: "Fresh")
        and s.slow == _tla.const_fn(c.Workers, lambda: False)
        and s.evict == _tla.const_fn(c.Workers, lambda: False)
        and s.checkpointed is False
        and s.faults == c.FaultBudget
        and s.prevMasterSeq == c.InitSeqNum
        and s.finishCount == _tla.const_fn(c.Workers, lambda: 0)
        and s.countedFailures == 0
    )
    return _value
