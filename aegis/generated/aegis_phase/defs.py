# Generated from spec/AegisPhase.tla by codegen — do not edit.
"""AegisPhase: the spec's state- and constant-level definitions, one function each."""

from __future__ import annotations

from aegis.values import Value, apply, fn

from .model import Constants, State


# spec/AegisPhase.tla:54
def Phases(c: Constants) -> Value:
    """Phases at line 54."""
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


# spec/AegisPhase.tla:58
def OrderPhases(c: Constants) -> Value:
    """OrderPhases at line 58."""
    return frozenset({"BootChecking", "RunCommand", "Troubleshooting"})


# spec/AegisPhase.tla:61
def AdvancePhases(c: Constants) -> Value:
    """AdvancePhases at line 61."""
    return frozenset({"Pending", "BootChecking", "RunCommand", "Troubleshooting"})


# spec/AegisPhase.tla:63
def NextPhase(c: Constants, p: Value) -> Value:
    """NextPhase(p) at line 63."""
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


# spec/AegisPhase.tla:69
def Min(c: Constants, a: Value, b: Value) -> Value:
    """Min(a, b) at line 69."""
    return a if a < b else b


# spec/AegisPhase.tla:691
def Terminated(c: Constants, s: State) -> Value:
    """Terminated at line 691."""
    return s.phase == "Succeed" or (
        s.phase == "Failed" and s.shouldQuit and s.recoverCount == c.MaxRetry + 1
    )


# spec/AegisPhase.tla:694
def Exhausted(c: Constants, s: State) -> Value:
    """Exhausted at line 694."""
    return any(apply(s.retries, w) > c.MaxRetry for w in c.Workers)


# spec/AegisPhase.tla:696
def AllReady(c: Constants, s: State) -> Value:
    """AllReady at line 696."""
    return all(apply(s.finished, w) and not apply(s.podRestarted, w) for w in c.Workers)


# spec/AegisPhase.tla:699
def UnseenRestarts(c: Constants, s: State) -> Value:
    """UnseenRestarts at line 699."""
    return frozenset(
        x for x in c.Workers if apply(s.podRestarted, x) and apply(s.innerPhase, x) != "Restarting"
    )


# spec/AegisPhase.tla:702
def CanAdvance(c: Constants, s: State) -> Value:
    """CanAdvance at line 702."""
    return (
        s.phase in AdvancePhases(c)
        and AllReady(c, s)
        and not (s.phase == "Troubleshooting" and Exhausted(c, s))
    )


# spec/AegisPhase.tla:704
def CanRestartInRun(c: Constants, s: State) -> Value:
    """CanRestartInRun at line 704."""
    return s.phase == "RunCommand" and UnseenRestarts(c, s) != frozenset()


# spec/AegisPhase.tla:705
def CanRestartOutsideRun(c: Constants, s: State) -> Value:
    """CanRestartOutsideRun at line 705."""
    return s.phase != "RunCommand" and not Terminated(c, s) and UnseenRestarts(c, s) != frozenset()


# spec/AegisPhase.tla:706
def CanRestartDone(c: Constants, s: State) -> Value:
    """CanRestartDone at line 706."""
    return s.phase == "Restarting" and all(
        not apply(s.podRestarted, w) and apply(s.agentState, w) != "Exited" for w in c.Workers
    )


# spec/AegisPhase.tla:708
def CanFailExhausted(c: Constants, s: State) -> Value:
    """CanFailExhausted at line 708."""
    return s.phase == "Troubleshooting" and AllReady(c, s) and Exhausted(c, s)


# spec/AegisPhase.tla:709
def CanWrapUp(c: Constants, s: State) -> Value:
    """CanWrapUp at line 709."""
    return s.phase == "Failed" and not (s.shouldQuit and s.recoverCount == c.MaxRetry + 1)


# spec/AegisPhase.tla:710
def CanAlign(c: Constants, s: State) -> Value:
    """CanAlign at line 710."""
    return s.phase in frozenset({"BootChecking", "RunCommand"}) and any(
        apply(s.retries, w) != s.recoverCount for w in c.Workers
    )


# spec/AegisPhase.tla:712
def CanQuit(c: Constants, s: State) -> Value:
    """CanQuit at line 712."""
    return s.shouldQuit and s.phase not in frozenset({"Succeed", "Failed"})


# spec/AegisPhase.tla:717
def Evicting(c: Constants, s: State) -> Value:
    """Evicting at line 717."""
    return frozenset(x for x in c.Workers if apply(s.evict, x))


# spec/AegisPhase.tla:718
def SlowToEvict(c: Constants, s: State) -> Value:
    """SlowToEvict at line 718."""
    return frozenset(
        x
        for x in c.Workers
        if apply(s.slow, x) and not apply(s.evict, x) and not apply(s.podRestarted, x)
    )


# spec/AegisPhase.tla:719
def CanHangWithQuit(c: Constants, s: State) -> Value:
    """CanHangWithQuit at line 719."""
    return (
        s.phase == "RunCommand"
        and not s.shouldQuit
        and SlowToEvict(c, s) != frozenset()
        and s.recoverCount + len(Evicting(c, s)) < c.MaxRetry
    )


# spec/AegisPhase.tla:722
def Evicted(c: Constants, s: State) -> Value:
    """Evicted at line 722."""
    return frozenset(
        x for x in c.Workers if apply(s.evict, x) and apply(s.agentState, x) == "Exited"
    )


# spec/AegisPhase.tla:723
def CanEvictSlow(c: Constants, s: State) -> Value:
    """CanEvictSlow at line 723."""
    return s.phase == "RunCommand" and Evicted(c, s) != frozenset()


# spec/AegisPhase.tla:730
def Quiescent(c: Constants, s: State) -> Value:
    """Quiescent at line 730."""
    return not (
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


# spec/AegisPhase.tla:740
def FreshFinish(c: Constants, s: State, m: Value) -> Value:
    """FreshFinish(m) at line 740."""
    return apply(m, "seq") == s.masterSeq and apply(m, "seq") > apply(
        s.lastFinishSeq, apply(m, "from")
    )


# spec/AegisPhase.tla:744
def Outcomes(c: Constants, s: State) -> Value:
    """Outcomes at line 744."""
    return frozenset({"Finish", "Error"}) if s.faults > 0 else frozenset({"Finish"})


# spec/AegisPhase.tla:747
def ValidPhase(c: Constants, s: State) -> Value:
    """ValidPhase at line 747."""
    return s.phase in Phases(c)


# spec/AegisPhase.tla:749
def ValidInnerPhase(c: Constants, s: State) -> Value:
    """ValidInnerPhase at line 749."""
    return all(apply(s.innerPhase, w) in Phases(c) for w in c.Workers)


# spec/AegisPhase.tla:753
def RecoverCountBound(c: Constants, s: State) -> Value:
    """RecoverCountBound at line 753."""
    return s.recoverCount <= c.MaxRetry + 1 and (
        s.phase == "Failed" or s.recoverCount <= c.MaxRetry
    )


# spec/AegisPhase.tla:756
def RetriesBound(c: Constants, s: State) -> Value:
    """RetriesBound at line 756."""
    return all(apply(s.retries, w) <= c.MaxRetry + 1 for w in c.Workers)


# spec/AegisPhase.tla:760
def PhaseConsistency(c: Constants, s: State) -> Value:
    """PhaseConsistency at line 760."""
    return all(
        not (not apply(s.finished, w) and not apply(s.podRestarted, w))
        or (
            apply(s.innerPhase, w) == s.phase
            or (s.phase == "Restarting" and apply(s.innerPhase, w) == "RunCommand")
        )
        for w in c.Workers
    )


# spec/AegisPhase.tla:767
def NoFinishDoubleProcessed(c: Constants, s: State) -> Value:
    """NoFinishDoubleProcessed at line 767."""
    return all(apply(s.finishCount, w) <= 1 for w in c.Workers)


# spec/AegisPhase.tla:769
def MasterSeqNumMonotonic(c: Constants, s: State) -> Value:
    """MasterSeqNumMonotonic at line 769."""
    return s.prevMasterSeq <= s.masterSeq


# spec/AegisPhase.tla:771
def WorkerSeqNumBound(c: Constants, s: State) -> Value:
    """WorkerSeqNumBound at line 771."""
    return all(apply(s.agentSeq, w) <= s.masterSeq for w in c.Workers) and all(
        apply(m, "seq") <= s.masterSeq for m in s.msgs
    )


# spec/AegisPhase.tla:775
def StaleFinishRejected(c: Constants, s: State) -> Value:
    """StaleFinishRejected at line 775."""
    return all(
        not apply(s.finished, w) or apply(s.lastFinishSeq, w) == s.masterSeq for w in c.Workers
    )


# spec/AegisPhase.tla:779
def EvictOnlySlow(c: Constants, s: State) -> Value:
    """EvictOnlySlow at line 779."""
    return all(not apply(s.evict, w) or apply(s.slow, w) for w in c.Workers)


# spec/AegisPhase.tla:782
def EvictAtCheckpoint(c: Constants, s: State) -> Value:
    """EvictAtCheckpoint at line 782."""
    return all(
        not (apply(s.evict, w) and apply(s.agentState, w) == "Exited") or s.checkpointed
        for w in c.Workers
    )


# spec/AegisPhase.tla:785
def EvictionAffordable(c: Constants, s: State) -> Value:
    """EvictionAffordable at line 785."""
    return s.phase != "RunCommand" or s.recoverCount + len(Evicting(c, s)) <= c.MaxRetry


# spec/AegisPhase.tla:794
def FailedOnlyWhenExhaustedOrQuit(c: Constants, s: State) -> Value:
    """FailedOnlyWhenExhaustedOrQuit at line 794."""
    return s.phase != "Failed" or (
        s.shouldQuit or any(apply(s.retries, w) > c.MaxRetry for w in c.Workers)
    )


# spec/AegisPhase.tla:799
def NoRunAfterRetriesExhausted(c: Constants, s: State) -> Value:
    """NoRunAfterRetriesExhausted at line 799."""
    return not (
        s.countedFailures > c.MaxRetry or any(apply(s.retries, w) > c.MaxRetry for w in c.Workers)
    ) or s.phase not in frozenset({"BootChecking", "RunCommand", "Succeed"})


# spec/AegisPhase.tla:805
def RecoverCountCountsFailures(c: Constants, s: State) -> Value:
    """RecoverCountCountsFailures at line 805."""
    return s.recoverCount == (
        s.countedFailures if s.countedFailures < c.MaxRetry else c.MaxRetry
    ) or (s.phase == "Failed" and s.recoverCount == c.MaxRetry + 1)


# spec/AegisPhase.tla:811
def SafePointOnlyForAnEviction(c: Constants, s: State) -> Value:
    """SafePointOnlyForAnEviction at line 811."""
    return not (s.phase == "RunCommand" and s.checkpointed) or any(
        apply(s.evict, w) for w in c.Workers
    )


# spec/AegisPhase.tla:816
def EvictionChargedInRun(c: Constants, s: State) -> Value:
    """EvictionChargedInRun at line 816."""
    return all(
        not (apply(s.evict, w) and apply(s.agentState, w) == "Exited") or s.phase == "RunCommand"
        for w in c.Workers
    )


# spec/AegisPhase.tla:906
def SeqBound(c: Constants, s: State) -> Value:
    """SeqBound at line 906."""
    return s.masterSeq <= c.InitSeqNum + c.MaxSeqGap


# spec/AegisPhase.tla:916
def vars_(c: Constants, s: State) -> Value:
    """vars at line 916."""
    return (
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


# spec/AegisPhase.tla:921
def ProcSet(c: Constants) -> Value:
    """ProcSet at line 921."""
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


# spec/AegisPhase.tla:923
def Init(c: Constants, s: State) -> Value:
    """Init at line 923."""
    return (
        s.phase == "Pending"
        and s.shouldQuit is False
        and s.recoverCount == 0
        and s.innerPhase == fn((w, "Pending") for w in c.Workers)
        and s.finished == fn((w_2, False) for w_2 in c.Workers)
        and s.retries == fn((w_3, 0) for w_3 in c.Workers)
        and s.podRestarted == fn((w_4, False) for w_4 in c.Workers)
        and s.masterSeq == c.InitSeqNum
        and s.lastFinishSeq == fn((w_5, c.InitSeqNum - 1) for w_5 in c.Workers)
        and s.msgs == frozenset()
        and s.agentSeq == fn((w_6, c.InitSeqNum) for w_6 in c.Workers)
        and s.agentState == fn((w_7, "Fresh") for w_7 in c.Workers)
        and s.slow == fn((w_8, False) for w_8 in c.Workers)
        and s.evict == fn((w_9, False) for w_9 in c.Workers)
        and s.checkpointed is False
        and s.faults == c.FaultBudget
        and s.prevMasterSeq == c.InitSeqNum
        and s.finishCount == fn((w_10, 0) for w_10 in c.Workers)
        and s.countedFailures == 0
    )
