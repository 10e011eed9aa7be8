# Generated from spec/AegisPhase.tla by codegen — do not edit.
"""AegisPhase: Init and one pair of functions per label, as TLC's Next explores them."""

from __future__ import annotations

from collections.abc import Iterator

from aegis.values import Fn, Value, apply, fn

from . import _tla
from .defs import (
    CanAdvance,
    CanAlign,
    CanEvictSlow,
    CanFailExhausted,
    CanHangWithQuit,
    CanQuit,
    CanRestartDone,
    CanRestartInRun,
    CanRestartOutsideRun,
    CanWrapUp,
    Evicted,
    Evicting,
    FreshFinish,
    Min,
    NextPhase,
    OrderPhases,
    Outcomes,
    Quiescent,
    SlowToEvict,
    Terminated,
    UnseenRestarts,
)
from .model import ActionInfo, Constants, Label, State, Successor


def initial_states(c: Constants) -> list[State]:
    """Every initial state (Init, spec/AegisPhase.tla:924)."""
    return list(dict.fromkeys(_init(c)))


def _init(c: Constants) -> Iterator[State]:
    # 924: /\ phase = "Pending"
    phase = "Pending"
    # 925: /\ shouldQuit = FALSE
    shouldQuit = False
    # 926: /\ recoverCount = 0
    recoverCount = 0
    # 927: /\ innerPhase = [w \in Workers |-> "Pending"]
    innerPhase = fn((w, "Pending") for w in c.Workers)
    # 928: /\ finished = [w \in Workers |-> FALSE]
    finished = fn((w_2, False) for w_2 in c.Workers)
    # 929: /\ retries = [w \in Workers |-> 0]
    retries = fn((w_3, 0) for w_3 in c.Workers)
    # 930: /\ podRestarted = [w \in Workers |-> FALSE]
    podRestarted = fn((w_4, False) for w_4 in c.Workers)
    # 931: /\ masterSeq = InitSeqNum
    masterSeq = c.InitSeqNum
    # 932: /\ lastFinishSeq = [w \in Workers |-> InitSeqNum - 1]
    lastFinishSeq = fn((w_5, c.InitSeqNum - 1) for w_5 in c.Workers)
    # 933: /\ msgs = {}
    msgs = frozenset[Value]()
    # 934: /\ agentSeq = [w \in Workers |-> InitSeqNum]
    agentSeq = fn((w_6, c.InitSeqNum) for w_6 in c.Workers)
    # 935: /\ agentState = [w \in Workers |-> "Fresh"]
    agentState = fn((w_7, "Fresh") for w_7 in c.Workers)
    # 936: /\ slow = [w \in Workers |-> FALSE]
    slow = fn((w_8, False) for w_8 in c.Workers)
    # 937: /\ evict = [w \in Workers |-> FALSE]
    evict = fn((w_9, False) for w_9 in c.Workers)
    # 938: /\ checkpointed = FALSE
    checkpointed = False
    # 939: /\ faults = FaultBudget
    faults = c.FaultBudget
    # 940: /\ prevMasterSeq = InitSeqNum
    prevMasterSeq = c.InitSeqNum
    # 941: /\ finishCount = [w \in Workers |-> 0]
    finishCount = fn((w_10, 0) for w_10 in c.Workers)
    # 942: /\ countedFailures = 0
    countedFailures = 0
    yield State(
        phase=phase,
        shouldQuit=shouldQuit,
        recoverCount=recoverCount,
        innerPhase=innerPhase,
        finished=finished,
        retries=retries,
        podRestarted=podRestarted,
        masterSeq=masterSeq,
        lastFinishSeq=lastFinishSeq,
        msgs=msgs,
        agentSeq=agentSeq,
        agentState=agentState,
        slow=slow,
        evict=evict,
        checkpointed=checkpointed,
        faults=faults,
        prevMasterSeq=prevMasterSeq,
        finishCount=finishCount,
        countedFailures=countedFailures,
    )


def process_ids_advance(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs advance (process advance)."""
    return frozenset({"advance"})


def enabled_advance(c: Constants, s: State, self: Value) -> bool:
    """Whether advance can take a step from s."""
    return next(_steps_advance(c, s, self), None) is not None


def successors_advance(c: Constants, s: State, self: Value) -> list[Successor]:
    """Every successor of s by advance."""
    return list(dict.fromkeys(_steps_advance(c, s, self)))


def _steps_advance(c: Constants, s: State, self: Value) -> Iterator[Successor]:
    """advance at spec/AegisPhase.tla:944."""
    # 944: advance == /\ CanAdvance
    if not CanAdvance(c, s):
        return
    # 945: /\ LET next == NextPhase(phase) IN
    # 946: /\ phase' = next
    phase_next = NextPhase(c, s.phase)
    # 947: /\ innerPhase' = [w \in Workers |-> next]
    innerPhase_next = fn((w, NextPhase(c, s.phase)) for w in c.Workers)
    # 948: /\ IF next \in OrderPhases
    if NextPhase(c, s.phase) in OrderPhases(c):
        # 949: THEN /\ prevMasterSeq' = masterSeq
        prevMasterSeq_next = s.masterSeq
        # 950: /\ masterSeq' = masterSeq + 1
        masterSeq_next = s.masterSeq + 1
        # 951: /\ slow' = [w \in Workers |-> FALSE]
        slow_next = fn((w_2, False) for w_2 in c.Workers)
        # 952: /\ evict' = [w \in Workers |-> FALSE]
        evict_next = fn((w_3, False) for w_3 in c.Workers)
        # 953: /\ checkpointed' = FALSE
        checkpointed_next = False
        # 954: /\ finished' = [w \in Workers |-> FALSE]
        finished_next = fn((w_4, False) for w_4 in c.Workers)
        # 955: /\ finishCount' = [w \in Workers |-> 0]
        finishCount_next = fn((w_5, 0) for w_5 in c.Workers)
        # 960: /\ UNCHANGED << shouldQuit, recoverCount, retries, podRestarted,
        shouldQuit_next = s.shouldQuit
        recoverCount_next = s.recoverCount
        retries_next = s.retries
        podRestarted_next = s.podRestarted
        lastFinishSeq_next = s.lastFinishSeq
        msgs_next = s.msgs
        agentSeq_next = s.agentSeq
        agentState_next = s.agentState
        faults_next = s.faults
        countedFailures_next = s.countedFailures
        yield Successor(
            State(
                phase=phase_next,
                shouldQuit=shouldQuit_next,
                recoverCount=recoverCount_next,
                innerPhase=innerPhase_next,
                finished=finished_next,
                retries=retries_next,
                podRestarted=podRestarted_next,
                masterSeq=masterSeq_next,
                lastFinishSeq=lastFinishSeq_next,
                msgs=msgs_next,
                agentSeq=agentSeq_next,
                agentState=agentState_next,
                slow=slow_next,
                evict=evict_next,
                checkpointed=checkpointed_next,
                faults=faults_next,
                prevMasterSeq=prevMasterSeq_next,
                finishCount=finishCount_next,
                countedFailures=countedFailures_next,
            ),
            (),
        )
    else:
        # 957: /\ UNCHANGED << finished, masterSeq, slow, evict,
        finished_next = s.finished
        masterSeq_next = s.masterSeq
        slow_next = s.slow
        evict_next = s.evict
        checkpointed_next = s.checkpointed
        prevMasterSeq_next = s.prevMasterSeq
        finishCount_next = s.finishCount
        # 960: /\ UNCHANGED << shouldQuit, recoverCount, retries, podRestarted,
        shouldQuit_next = s.shouldQuit
        recoverCount_next = s.recoverCount
        retries_next = s.retries
        podRestarted_next = s.podRestarted
        lastFinishSeq_next = s.lastFinishSeq
        msgs_next = s.msgs
        agentSeq_next = s.agentSeq
        agentState_next = s.agentState
        faults_next = s.faults
        countedFailures_next = s.countedFailures
        yield Successor(
            State(
                phase=phase_next,
                shouldQuit=shouldQuit_next,
                recoverCount=recoverCount_next,
                innerPhase=innerPhase_next,
                finished=finished_next,
                retries=retries_next,
                podRestarted=podRestarted_next,
                masterSeq=masterSeq_next,
                lastFinishSeq=lastFinishSeq_next,
                msgs=msgs_next,
                agentSeq=agentSeq_next,
                agentState=agentState_next,
                slow=slow_next,
                evict=evict_next,
                checkpointed=checkpointed_next,
                faults=faults_next,
                prevMasterSeq=prevMasterSeq_next,
                finishCount=finishCount_next,
                countedFailures=countedFailures_next,
            ),
            (),
        )


def process_ids_restartInRun(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs restartInRun (process restartInRun)."""
    return frozenset({"restartInRun"})


def enabled_restartInRun(c: Constants, s: State, self: Value) -> bool:
    """Whether restartInRun can take a step from s."""
    return next(_steps_restartInRun(c, s, self), None) is not None


def successors_restartInRun(c: Constants, s: State, self: Value) -> list[Successor]:
    """Every successor of s by restartInRun."""
    return list(dict.fromkeys(_steps_restartInRun(c, s, self)))


def _steps_restartInRun(c: Constants, s: State, self: Value) -> Iterator[Successor]:
    """restartInRun at spec/AegisPhase.tla:964."""
    # 964: restartInRun == /\ CanRestartInRun
    if not CanRestartInRun(c, s):
        return
    # 965: /\ \E w \in UnseenRestarts:
    for w in _tla.enum(UnseenRestarts(c, s)):
        # 966: /\ phase' = "Restarting"
        phase_next = "Restarting"
        # 967: /\ innerPhase' = [innerPhase EXCEPT ![w] = "Restarting"]
        innerPhase_next = _tla.except_value(s.innerPhase, (w,), "Restarting")
        # 968: /\ finished' = [finished EXCEPT ![w] = FALSE]
        finished_next = _tla.except_value(s.finished, (w,), False)
        # 969: /\ finishCount' = [finishCount EXCEPT ![w] = 0]
        finishCount_next = _tla.except_value(s.finishCount, (w,), 0)
        # 970: /\ lastFinishSeq' = [lastFinishSeq EXCEPT ![w] = InitSeqNum - 1]
        lastFinishSeq_next = _tla.except_value(s.lastFinishSeq, (w,), c.InitSeqNum - 1)
        # 971: /\ msgs' = {m \in msgs : m.from # w}
        msgs_next = frozenset(m for m in s.msgs if apply(m, "from") != w)
        # 972: /\ slow' = [slow EXCEPT ![w] = FALSE]
        slow_next = _tla.except_value(s.slow, (w,), False)
        # 973: /\ evict' = [evict EXCEPT ![w] = FALSE]
        evict_next = _tla.except_value(s.evict, (w,), False)
        # 974: /\ retries' = [retries EXCEPT ![w] = retries[w] + 1]
        retries_next = _tla.except_value(s.retries, (w,), apply(s.retries, w) + 1)
        # 975: /\ recoverCount' = Min(recoverCount + 1, MaxRetry)
        recoverCount_next = Min(c, s.recoverCount + 1, c.MaxRetry)
        # 976: /\ countedFailures' = countedFailures + 1
        countedFailures_next = s.countedFailures + 1
        # 977: /\ UNCHANGED << shouldQuit, podRestarted, masterSeq, agentSeq,
        shouldQuit_next = s.shouldQuit
        podRestarted_next = s.podRestarted
        masterSeq_next = s.masterSeq
        agentSeq_next = s.agentSeq
        agentState_next = s.agentState
        checkpointed_next = s.checkpointed
        faults_next = s.faults
        prevMasterSeq_next = s.prevMasterSeq
        yield Successor(
            State(
                phase=phase_next,
                shouldQuit=shouldQuit_next,
                recoverCount=recoverCount_next,
                innerPhase=innerPhase_next,
                finished=finished_next,
                retries=retries_next,
                podRestarted=podRestarted_next,
                masterSeq=masterSeq_next,
                lastFinishSeq=lastFinishSeq_next,
                msgs=msgs_next,
                agentSeq=agentSeq_next,
                agentState=agentState_next,
                slow=slow_next,
                evict=evict_next,
                checkpointed=checkpointed_next,
                faults=faults_next,
                prevMasterSeq=prevMasterSeq_next,
                finishCount=finishCount_next,
                countedFailures=countedFailures_next,
            ),
            (("w", w),),
        )


def process_ids_restartOutsideRun(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs restartOutsideRun (process restartOutsideRun)."""
    return frozenset({"restartOutsideRun"})


def enabled_restartOutsideRun(c: Constants, s: State, self: Value) -> bool:
    """Whether restartOutsideRun can take a step from s."""
    return next(_steps_restartOutsideRun(c, s, self), None) is not None


def successors_restartOutsideRun(c: Constants, s: State, self: Value) -> list[Successor]:
    """Every successor of s by restartOutsideRun."""
    return list(dict.fromkeys(_steps_restartOutsideRun(c, s, self)))


def _steps_restartOutsideRun(c: Constants, s: State, self: Value) -> Iterator[Successor]:
    """restartOutsideRun at spec/AegisPhase.tla:981."""
    # 981: restartOutsideRun == /\ CanRestartOutsideRun
    if not CanRestartOutsideRun(c, s):
        return
    # 982: /\ \E w \in UnseenRestarts:
    for w in _tla.enum(UnseenRestarts(c, s)):
        # 983: /\ innerPhase' = [innerPhase EXCEPT ![w] = "Restarting"]
        innerPhase_next = _tla.except_value(s.innerPhase, (w,), "Restarting")
        # 984: /\ finished' = [finished EXCEPT ![w] = FALSE]
        finished_next = _tla.except_value(s.finished, (w,), False)
        # 985: /\ finishCount' = [finishCount EXCEPT ![w] = 0]
        finishCount_next = _tla.except_value(s.finishCount, (w,), 0)
        # 986: /\ lastFinishSeq' = [lastFinishSeq EXCEPT ![w] = InitSeqNum - 1]
        lastFinishSeq_next = _tla.except_value(s.lastFinishSeq, (w,), c.InitSeqNum - 1)
        # 987: /\ msgs' = {m \in msgs : m.from # w}
        msgs_next = frozenset(m for m in s.msgs if apply(m, "from") != w)
        # 988: /\ slow' = [slow EXCEPT ![w] = FALSE]
        slow_next = _tla.except_value(s.slow, (w,), False)
        # 989: /\ evict' = [evict EXCEPT ![w] = FALSE]
        evict_next = _tla.except_value(s.evict, (w,), False)
        # 990: /\ UNCHANGED << phase, shouldQuit, recoverCount, retries,
        phase_next = s.phase
        shouldQuit_next = s.shouldQuit
        recoverCount_next = s.recoverCount
        retries_next = s.retries
        podRestarted_next = s.podRestarted
        masterSeq_next = s.masterSeq
        agentSeq_next = s.agentSeq
        agentState_next = s.agentState
        checkpointed_next = s.checkpointed
        faults_next = s.faults
        prevMasterSeq_next = s.prevMasterSeq
        countedFailures_next = s.countedFailures
        yield Successor(
            State(
                phase=phase_next,
                shouldQuit=shouldQuit_next,
                recoverCount=recoverCount_next,
                innerPhase=innerPhase_next,
                finished=finished_next,
                retries=retries_next,
                podRestarted=podRestarted_next,
                masterSeq=masterSeq_next,
                lastFinishSeq=lastFinishSeq_next,
                msgs=msgs_next,
                agentSeq=agentSeq_next,
                agentState=agentState_next,
                slow=slow_next,
                evict=evict_next,
                checkpointed=checkpointed_next,
                faults=faults_next,
                prevMasterSeq=prevMasterSeq_next,
                finishCount=finishCount_next,
                countedFailures=countedFailures_next,
            ),
            (("w", w),),
        )


def process_ids_restartDone(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs restartDone (process restartDone)."""
    return frozenset({"restartDone"})


def enabled_restartDone(c: Constants, s: State, self: Value) -> bool:
    """Whether restartDone can take a step from s."""
    return next(_steps_restartDone(c, s, self), None) is not None


def successors_restartDone(c: Constants, s: State, self: Value) -> list[Successor]:
    """Every successor of s by restartDone."""
    return list(dict.fromkeys(_steps_restartDone(c, s, self)))


def _steps_restartDone(c: Constants, s: State, self: Value) -> Iterator[Successor]:
    """restartDone at spec/AegisPhase.tla:995."""
    # 995: restartDone == /\ CanRestartDone
    if not CanRestartDone(c, s):
        return
    # 996: /\ phase' = "Troubleshooting"
    phase_next = "Troubleshooting"
    # 997: /\ innerPhase' = [w \in Workers |-> "Troubleshooting"]
    innerPhase_next = fn((w, "Troubleshooting") for w in c.Workers)
    # 998: /\ finished' = [w \in Workers |-> FALSE]
    finished_next = fn((w_2, False) for w_2 in c.Workers)
    # 999: /\ finishCount' = [w \in Workers |-> 0]
    finishCount_next = fn((w_3, 0) for w_3 in c.Workers)
    # 1000: /\ prevMasterSeq' = masterSeq
    prevMasterSeq_next = s.masterSeq
    # 1001: /\ masterSeq' = masterSeq + 1
    masterSeq_next = s.masterSeq + 1
    # 1002: /\ slow' = [w \in Workers |-> FALSE]
    slow_next = fn((w_4, False) for w_4 in c.Workers)
    # 1003: /\ evict' = [w \in Workers |-> FALSE]
    evict_next = fn((w_5, False) for w_5 in c.Workers)
    # 1004: /\ checkpointed' = FALSE
    checkpointed_next = False
    # 1005: /\ UNCHANGED << shouldQuit, recoverCount, retries, podRestarted,
    shouldQuit_next = s.shouldQuit
    recoverCount_next = s.recoverCount
    retries_next = s.retries
    podRestarted_next = s.podRestarted
    lastFinishSeq_next = s.lastFinishSeq
    msgs_next = s.msgs
    agentSeq_next = s.agentSeq
    agentState_next = s.agentState
    faults_next = s.faults
    countedFailures_next = s.countedFailures
    yield Successor(
        State(
            phase=phase_next,
            shouldQuit=shouldQuit_next,
            recoverCount=recoverCount_next,
            innerPhase=innerPhase_next,
            finished=finished_next,
            retries=retries_next,
            podRestarted=podRestarted_next,
            masterSeq=masterSeq_next,
            lastFinishSeq=lastFinishSeq_next,
            msgs=msgs_next,
            agentSeq=agentSeq_next,
            agentState=agentState_next,
            slow=slow_next,
            evict=evict_next,
            checkpointed=checkpointed_next,
            faults=faults_next,
            prevMasterSeq=prevMasterSeq_next,
            finishCount=finishCount_next,
            countedFailures=countedFailures_next,
        ),
        (),
    )


def process_ids_retriesExhausted(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs retriesExhausted (process retriesExhausted)."""
    return frozenset({"retriesExhausted"})


def enabled_retriesExhausted(c: Constants, s: State, self: Value) -> bool:
    """Whether retriesExhausted can take a step from s."""
    return next(_steps_retriesExhausted(c, s, self), None) is not None


def successors_retriesExhausted(c: Constants, s: State, self: Value) -> list[Successor]:
    """Every successor of s by retriesExhausted."""
    return list(dict.fromkeys(_steps_retriesExhausted(c, s, self)))


def _steps_retriesExhausted(c: Constants, s: State, self: Value) -> Iterator[Successor]:
    """retriesExhausted at spec/AegisPhase.tla:1009."""
    # 1009: retriesExhausted == /\ CanFailExhausted
    if not CanFailExhausted(c, s):
        return
    # 1010: /\ phase' = "Failed"
    phase_next = "Failed"
    # 1011: /\ innerPhase' = [w \in Workers |-> "Failed"]
    innerPhase_next = fn((w, "Failed") for w in c.Workers)
    # 1012: /\ UNCHANGED << shouldQuit, recoverCount, finished,
    shouldQuit_next = s.shouldQuit
    recoverCount_next = s.recoverCount
    finished_next = s.finished
    retries_next = s.retries
    podRestarted_next = s.podRestarted
    masterSeq_next = s.masterSeq
    lastFinishSeq_next = s.lastFinishSeq
    msgs_next = s.msgs
    agentSeq_next = s.agentSeq
    agentState_next = s.agentState
    slow_next = s.slow
    evict_next = s.evict
    checkpointed_next = s.checkpointed
    faults_next = s.faults
    prevMasterSeq_next = s.prevMasterSeq
    finishCount_next = s.finishCount
    countedFailures_next = s.countedFailures
    yield Successor(
        State(
            phase=phase_next,
            shouldQuit=shouldQuit_next,
            recoverCount=recoverCount_next,
            innerPhase=innerPhase_next,
            finished=finished_next,
            retries=retries_next,
            podRestarted=podRestarted_next,
            masterSeq=masterSeq_next,
            lastFinishSeq=lastFinishSeq_next,
            msgs=msgs_next,
            agentSeq=agentSeq_next,
            agentState=agentState_next,
            slow=slow_next,
            evict=evict_next,
            checkpointed=checkpointed_next,
            faults=faults_next,
            prevMasterSeq=prevMasterSeq_next,
            finishCount=finishCount_next,
            countedFailures=countedFailures_next,
        ),
        (),
    )


def process_ids_failedWrapUp(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs failedWrapUp (process failedWrapUp)."""
    return frozenset({"failedWrapUp"})


def enabled_failedWrapUp(c: Constants, s: State, self: Value) -> bool:
    """Whether failedWrapUp can take a step from s."""
    return next(_steps_failedWrapUp(c, s, self), None) is not None


def successors_failedWrapUp(c: Constants, s: State, self: Value) -> list[Successor]:
    """Every successor of s by failedWrapUp."""
    return list(dict.fromkeys(_steps_failedWrapUp(c, s, self)))


def _steps_failedWrapUp(c: Constants, s: State, self: Value) -> Iterator[Successor]:
    """failedWrapUp at spec/AegisPhase.tla:1019."""
    # 1019: failedWrapUp == /\ CanWrapUp
    if not CanWrapUp(c, s):
        return
    # 1020: /\ recoverCount' = MaxRetry + 1
    recoverCount_next = c.MaxRetry + 1
    # 1021: /\ shouldQuit' = TRUE
    shouldQuit_next = True
    # 1022: /\ UNCHANGED << phase, innerPhase, finished, retries,
    phase_next = s.phase
    innerPhase_next = s.innerPhase
    finished_next = s.finished
    retries_next = s.retries
    podRestarted_next = s.podRestarted
    masterSeq_next = s.masterSeq
    lastFinishSeq_next = s.lastFinishSeq
    msgs_next = s.msgs
    agentSeq_next = s.agentSeq
    agentState_next = s.agentState
    slow_next = s.slow
    evict_next = s.evict
    checkpointed_next = s.checkpointed
    faults_next = s.faults
    prevMasterSeq_next = s.prevMasterSeq
    finishCount_next = s.finishCount
    countedFailures_next = s.countedFailures
    yield Successor(
        State(
            phase=phase_next,
            shouldQuit=shouldQuit_next,
            recoverCount=recoverCount_next,
            innerPhase=innerPhase_next,
            finished=finished_next,
            retries=retries_next,
            podRestarted=podRestarted_next,
            masterSeq=masterSeq_next,
            lastFinishSeq=lastFinishSeq_next,
            msgs=msgs_next,
            agentSeq=agentSeq_next,
            agentState=agentState_next,
            slow=slow_next,
            evict=evict_next,
            checkpointed=checkpointed_next,
            faults=faults_next,
            prevMasterSeq=prevMasterSeq_next,
            finishCount=finishCount_next,
            countedFailures=countedFailures_next,
        ),
        (),
    )


def process_ids_alignRetries(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs alignRetries (process alignRetries)."""
    return frozenset({"alignRetries"})


def enabled_alignRetries(c: Constants, s: State, self: Value) -> bool:
    """Whether alignRetries can take a step from s."""
    return next(_steps_alignRetries(c, s, self), None) is not None


def successors_alignRetries(c: Constants, s: State, self: Value) -> list[Successor]:
    """Every successor of s by alignRetries."""
    return list(dict.fromkeys(_steps_alignRetries(c, s, self)))


def _steps_alignRetries(c: Constants, s: State, self: Value) -> Iterator[Successor]:
    """alignRetries at spec/AegisPhase.tla:1028."""
    # 1028: alignRetries == /\ CanAlign
    if not CanAlign(c, s):
        return
    # 1029: /\ retries' = [w \in Workers |-> recoverCount]
    retries_next = fn((w, s.recoverCount) for w in c.Workers)
    # 1030: /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase,
    phase_next = s.phase
    shouldQuit_next = s.shouldQuit
    recoverCount_next = s.recoverCount
    innerPhase_next = s.innerPhase
    finished_next = s.finished
    podRestarted_next = s.podRestarted
    masterSeq_next = s.masterSeq
    lastFinishSeq_next = s.lastFinishSeq
    msgs_next = s.msgs
    agentSeq_next = s.agentSeq
    agentState_next = s.agentState
    slow_next = s.slow
    evict_next = s.evict
    checkpointed_next = s.checkpointed
    faults_next = s.faults
    prevMasterSeq_next = s.prevMasterSeq
    finishCount_next = s.finishCount
    countedFailures_next = s.countedFailures
    yield Successor(
        State(
            phase=phase_next,
            shouldQuit=shouldQuit_next,
            recoverCount=recoverCount_next,
            innerPhase=innerPhase_next,
            finished=finished_next,
            retries=retries_next,
            podRestarted=podRestarted_next,
            masterSeq=masterSeq_next,
            lastFinishSeq=lastFinishSeq_next,
            msgs=msgs_next,
            agentSeq=agentSeq_next,
            agentState=agentState_next,
            slow=slow_next,
            evict=evict_next,
            checkpointed=checkpointed_next,
            faults=faults_next,
            prevMasterSeq=prevMasterSeq_next,
            finishCount=finishCount_next,
            countedFailures=countedFailures_next,
        ),
        (),
    )


def process_ids_quitRequested(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs quitRequested (process quitRequested)."""
    return frozenset({"quitRequested"})


def enabled_quitRequested(c: Constants, s: State, self: Value) -> bool:
    """Whether quitRequested can take a step from s."""
    return next(_steps_quitRequested(c, s, self), None) is not None


def successors_quitRequested(c: Constants, s: State, self: Value) -> list[Successor]:
    """Every successor of s by quitRequested."""
    return list(dict.fromkeys(_steps_quitRequested(c, s, self)))


def _steps_quitRequested(c: Constants, s: State, self: Value) -> Iterator[Successor]:
    """quitRequested at spec/AegisPhase.tla:1036."""
    # 1036: quitRequested == /\ CanQuit
    if not CanQuit(c, s):
        return
    # 1037: /\ phase' = "Failed"
    phase_next = "Failed"
    # 1038: /\ innerPhase' = [w \in Workers |-> "Failed"]
    innerPhase_next = fn((w, "Failed") for w in c.Workers)
    # 1039: /\ UNCHANGED << shouldQuit, recoverCount, finished, retries,
    shouldQuit_next = s.shouldQuit
    recoverCount_next = s.recoverCount
    finished_next = s.finished
    retries_next = s.retries
    podRestarted_next = s.podRestarted
    masterSeq_next = s.masterSeq
    lastFinishSeq_next = s.lastFinishSeq
    msgs_next = s.msgs
    agentSeq_next = s.agentSeq
    agentState_next = s.agentState
    slow_next = s.slow
    evict_next = s.evict
    checkpointed_next = s.checkpointed
    faults_next = s.faults
    prevMasterSeq_next = s.prevMasterSeq
    finishCount_next = s.finishCount
    countedFailures_next = s.countedFailures
    yield Successor(
        State(
            phase=phase_next,
            shouldQuit=shouldQuit_next,
            recoverCount=recoverCount_next,
            innerPhase=innerPhase_next,
            finished=finished_next,
            retries=retries_next,
            podRestarted=podRestarted_next,
            masterSeq=masterSeq_next,
            lastFinishSeq=lastFinishSeq_next,
            msgs=msgs_next,
            agentSeq=agentSeq_next,
            agentState=agentState_next,
            slow=slow_next,
            evict=evict_next,
            checkpointed=checkpointed_next,
            faults=faults_next,
            prevMasterSeq=prevMasterSeq_next,
            finishCount=finishCount_next,
            countedFailures=countedFailures_next,
        ),
        (),
    )


def process_ids_receive(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs receive (process receive)."""
    return frozenset({"receive"})


def enabled_receive(c: Constants, s: State, self: Value) -> bool:
    """Whether receive can take a step from s."""
    return next(_steps_receive(c, s, self), None) is not None


def successors_receive(c: Constants, s: State, self: Value) -> list[Successor]:
    """Every successor of s by receive."""
    return list(dict.fromkeys(_steps_receive(c, s, self)))


def _steps_receive(c: Constants, s: State, self: Value) -> Iterator[Successor]:
    """receive at spec/AegisPhase.tla:1045."""
    # 1045: receive == /\ Quiescent
    if not Quiescent(c, s):
        return
    # 1046: /\ \E m \in msgs:
    for m in _tla.enum(s.msgs):
        # 1047: /\ msgs' = msgs \ {m}
        msgs_next = s.msgs - frozenset({m})
        # 1048: /\ IF m.type = "Finish"
        if apply(m, "type") == "Finish":
            # 1049: THEN /\ IF phase \in OrderPhases /\ ~podRestarted[m.from] /\ FreshFinish(m)
            if (
                s.phase in OrderPhases(c)
                and not apply(s.podRestarted, apply(m, "from"))
                and FreshFinish(c, s, m)
            ):
                # 1050: THEN /\ finished' = [finished EXCEPT ![m.from] = TRUE]
                finished_next = _tla.except_value(s.finished, (apply(m, "from"),), True)
                # 1051: /\ lastFinishSeq' = [lastFinishSeq EXCEPT ![m.from] = m.seq]
                lastFinishSeq_next = _tla.except_value(
                    s.lastFinishSeq, (apply(m, "from"),), apply(m, "seq")
                )
                # 1052: /\ finishCount' = [finishCount EXCEPT ![m.from] = finishCount[m.from] + 1]
                finishCount_next = _tla.except_value(
                    s.finishCount, (apply(m, "from"),), apply(s.finishCount, apply(m, "from")) + 1
                )
                # 1056: /\ UNCHANGED << phase, recoverCount, innerPhase,
                phase_next = s.phase
                recoverCount_next = s.recoverCount
                innerPhase_next = s.innerPhase
                retries_next = s.retries
                masterSeq_next = s.masterSeq
                slow_next = s.slow
                evict_next = s.evict
                checkpointed_next = s.checkpointed
                prevMasterSeq_next = s.prevMasterSeq
                countedFailures_next = s.countedFailures
                # 1114: /\ UNCHANGED << shouldQuit, podRestarted, agentSeq, agentState,
                shouldQuit_next = s.shouldQuit
                podRestarted_next = s.podRestarted
                agentSeq_next = s.agentSeq
                agentState_next = s.agentState
                faults_next = s.faults
                yield Successor(
                    State(
                        phase=phase_next,
                        shouldQuit=shouldQuit_next,
                        recoverCount=recoverCount_next,
                        innerPhase=innerPhase_next,
                        finished=finished_next,
                        retries=retries_next,
                        podRestarted=podRestarted_next,
                        masterSeq=masterSeq_next,
                        lastFinishSeq=lastFinishSeq_next,
                        msgs=msgs_next,
                        agentSeq=agentSeq_next,
                        agentState=agentState_next,
                        slow=slow_next,
                        evict=evict_next,
                        checkpointed=checkpointed_next,
                        faults=faults_next,
                        prevMasterSeq=prevMasterSeq_next,
                        finishCount=finishCount_next,
                        countedFailures=countedFailures_next,
                    ),
                    (("m", m),),
                )
            else:
                # 1054: /\ UNCHANGED << finished, lastFinishSeq,
                finished_next = s.finished
                lastFinishSeq_next = s.lastFinishSeq
                finishCount_next = s.finishCount
                # 1056: /\ UNCHANGED << phase, recoverCount, innerPhase,
                phase_next = s.phase
                recoverCount_next = s.recoverCount
                innerPhase_next = s.innerPhase
                retries_next = s.retries
                masterSeq_next = s.masterSeq
                slow_next = s.slow
                evict_next = s.evict
                checkpointed_next = s.checkpointed
                prevMasterSeq_next = s.prevMasterSeq
                countedFailures_next = s.countedFailures
                # 1114: /\ UNCHANGED << shouldQuit, podRestarted, agentSeq, agentState,
                shouldQuit_next = s.shouldQuit
                podRestarted_next = s.podRestarted
                agentSeq_next = s.agentSeq
                agentState_next = s.agentState
                faults_next = s.faults
                yield Successor(
                    State(
                        phase=phase_next,
                        shouldQuit=shouldQuit_next,
                        recoverCount=recoverCount_next,
                        innerPhase=innerPhase_next,
                        finished=finished_next,
                        retries=retries_next,
                        podRestarted=podRestarted_next,
                        masterSeq=masterSeq_next,
                        lastFinishSeq=lastFinishSeq_next,
                        msgs=msgs_next,
                        agentSeq=agentSeq_next,
                        agentState=agentState_next,
                        slow=slow_next,
                        evict=evict_next,
                        checkpointed=checkpointed_next,
                        faults=faults_next,
                        prevMasterSeq=prevMasterSeq_next,
                        finishCount=finishCount_next,
                        countedFailures=countedFailures_next,
                    ),
                    (("m", m),),
                )
        else:
            # 1060: ELSE /\ IF m.type = "Hang"
            if apply(m, "type") == "Hang":
                # 1061: THEN /\ IF phase = "RunCommand" /\ m.seq = masterSeq /\ ~podRestarted[m.f...
                if (
                    s.phase == "RunCommand"
                    and apply(m, "seq") == s.masterSeq
                    and not apply(s.podRestarted, apply(m, "from"))
                ):
                    # 1062: THEN /\ slow' = [slow EXCEPT ![m.from] = TRUE]
                    slow_next = _tla.except_value(s.slow, (apply(m, "from"),), True)
                    # 1065: /\ UNCHANGED << phase, recoverCount,
                    phase_next = s.phase
                    recoverCount_next = s.recoverCount
                    innerPhase_next = s.innerPhase
                    finished_next = s.finished
                    retries_next = s.retries
                    masterSeq_next = s.masterSeq
                    evict_next = s.evict
                    checkpointed_next = s.checkpointed
                    prevMasterSeq_next = s.prevMasterSeq
                    finishCount_next = s.finishCount
                    countedFailures_next = s.countedFailures
                    # 1113: /\ UNCHANGED lastFinishSeq
                    lastFinishSeq_next = s.lastFinishSeq
                    # 1114: /\ UNCHANGED << shouldQuit, podRestarted, agentSeq, agentState,
                    shouldQuit_next = s.shouldQuit
                    podRestarted_next = s.podRestarted
                    agentSeq_next = s.agentSeq
                    agentState_next = s.agentState
                    faults_next = s.faults
                    yield Successor(
                        State(
                            phase=phase_next,
                            shouldQuit=shouldQuit_next,
                            recoverCount=recoverCount_next,
                            innerPhase=innerPhase_next,
                            finished=finished_next,
                            retries=retries_next,
                            podRestarted=podRestarted_next,
                            masterSeq=masterSeq_next,
                            lastFinishSeq=lastFinishSeq_next,
                            msgs=msgs_next,
                            agentSeq=agentSeq_next,
                            agentState=agentState_next,
                            slow=slow_next,
                            evict=evict_next,
                            checkpointed=checkpointed_next,
                            faults=faults_next,
                            prevMasterSeq=prevMasterSeq_next,
                            finishCount=finishCount_next,
                            countedFailures=countedFailures_next,
                        ),
                        (("m", m),),
                    )
                else:
                    # 1064: /\ slow' = slow
                    slow_next = s.slow
                    # 1065: /\ UNCHANGED << phase, recoverCount,
                    phase_next = s.phase
                    recoverCount_next = s.recoverCount
                    innerPhase_next = s.innerPhase
                    finished_next = s.finished
                    retries_next = s.retries
                    masterSeq_next = s.masterSeq
                    evict_next = s.evict
                    checkpointed_next = s.checkpointed
                    prevMasterSeq_next = s.prevMasterSeq
                    finishCount_next = s.finishCount
                    countedFailures_next = s.countedFailures
                    # 1113: /\ UNCHANGED lastFinishSeq
                    lastFinishSeq_next = s.lastFinishSeq
                    # 1114: /\ UNCHANGED << shouldQuit, podRestarted, agentSeq, agentState,
                    shouldQuit_next = s.shouldQuit
                    podRestarted_next = s.podRestarted
                    agentSeq_next = s.agentSeq
                    agentState_next = s.agentState
                    faults_next = s.faults
                    yield Successor(
                        State(
                            phase=phase_next,
                            shouldQuit=shouldQuit_next,
                            recoverCount=recoverCount_next,
                            innerPhase=innerPhase_next,
                            finished=finished_next,
                            retries=retries_next,
                            podRestarted=podRestarted_next,
                            masterSeq=masterSeq_next,
                            lastFinishSeq=lastFinishSeq_next,
                            msgs=msgs_next,
                            agentSeq=agentSeq_next,
                            agentState=agentState_next,
                            slow=slow_next,
                            evict=evict_next,
                            checkpointed=checkpointed_next,
                            faults=faults_next,
                            prevMasterSeq=prevMasterSeq_next,
                            finishCount=finishCount_next,
                            countedFailures=countedFailures_next,
                        ),
                        (("m", m),),
                    )
            else:
                # 1072: ELSE /\ IF m.type = "Checkpoint"
                if apply(m, "type") == "Checkpoint":
                    # 1073: THEN /\ IF phase = "RunCommand" /\ m.seq = masterSeq /\ Evicting # {}
                    if (
                        s.phase == "RunCommand"
                        and apply(m, "seq") == s.masterSeq
                        and Evicting(c, s) != frozenset()
                    ):
                        # 1074: THEN /\ checkpointed' = TRUE
                        checkpointed_next = True
                        # 1077: /\ UNCHANGED << phase,
                        phase_next = s.phase
                        recoverCount_next = s.recoverCount
                        innerPhase_next = s.innerPhase
                        finished_next = s.finished
                        retries_next = s.retries
                        masterSeq_next = s.masterSeq
                        slow_next = s.slow
                        evict_next = s.evict
                        prevMasterSeq_next = s.prevMasterSeq
                        finishCount_next = s.finishCount
                        countedFailures_next = s.countedFailures
                        # 1113: /\ UNCHANGED lastFinishSeq
                        lastFinishSeq_next = s.lastFinishSeq
                        # 1114: /\ UNCHANGED << shouldQuit, podRestarted, agentSeq, agentState,
                        shouldQuit_next = s.shouldQuit
                        podRestarted_next = s.podRestarted
                        agentSeq_next = s.agentSeq
                        agentState_next = s.agentState
                        faults_next = s.faults
                        yield Successor(
                            State(
                                phase=phase_next,
                                shouldQuit=shouldQuit_next,
                                recoverCount=recoverCount_next,
                                innerPhase=innerPhase_next,
                                finished=finished_next,
                                retries=retries_next,
                                podRestarted=podRestarted_next,
                                masterSeq=masterSeq_next,
                                lastFinishSeq=lastFinishSeq_next,
                                msgs=msgs_next,
                                agentSeq=agentSeq_next,
                                agentState=agentState_next,
                                slow=slow_next,
                                evict=evict_next,
                                checkpointed=checkpointed_next,
                                faults=faults_next,
                                prevMasterSeq=prevMasterSeq_next,
                                finishCount=finishCount_next,
                                countedFailures=countedFailures_next,
                            ),
                            (("m", m),),
                        )
                    else:
                        # 1076: /\ UNCHANGED checkpointed
                        checkpointed_next = s.checkpointed
                        # 1077: /\ UNCHANGED << phase,
                        phase_next = s.phase
                        recoverCount_next = s.recoverCount
                        innerPhase_next = s.innerPhase
                        finished_next = s.finished
                        retries_next = s.retries
                        masterSeq_next = s.masterSeq
                        slow_next = s.slow
                        evict_next = s.evict
                        prevMasterSeq_next = s.prevMasterSeq
                        finishCount_next = s.finishCount
                        countedFailures_next = s.countedFailures
                        # 1113: /\ UNCHANGED lastFinishSeq
                        lastFinishSeq_next = s.lastFinishSeq
                        # 1114: /\ UNCHANGED << shouldQuit, podRestarted, agentSeq, agentState,
                        shouldQuit_next = s.shouldQuit
                        podRestarted_next = s.podRestarted
                        agentSeq_next = s.agentSeq
                        agentState_next = s.agentState
                        faults_next = s.faults
                        yield Successor(
                            State(
                                phase=phase_next,
                                shouldQuit=shouldQuit_next,
                                recoverCount=recoverCount_next,
                                innerPhase=innerPhase_next,
                                finished=finished_next,
                                retries=retries_next,
                                podRestarted=podRestarted_next,
                                masterSeq=masterSeq_next,
                                lastFinishSeq=lastFinishSeq_next,
                                msgs=msgs_next,
                                agentSeq=agentSeq_next,
                                agentState=agentState_next,
                                slow=slow_next,
                                evict=evict_next,
                                checkpointed=checkpointed_next,
                                faults=faults_next,
                                prevMasterSeq=prevMasterSeq_next,
                                finishCount=finishCount_next,
                                countedFailures=countedFailures_next,
                            ),
                            (("m", m),),
                        )
                else:
                    # 1087: ELSE /\ IF phase = "RunCommand" /\ m.seq = masterSeq /\ ~podRestarted...
                    if (
                        s.phase == "RunCommand"
                        and apply(m, "seq") == s.masterSeq
                        and not apply(s.podRestarted, apply(m, "from"))
                    ):
                        # 1088: THEN /\ retries' = [retries EXCEPT ![(m.from)] = retries[(m.from)...
                        retries_next = _tla.except_value(
                            s.retries, (apply(m, "from"),), apply(s.retries, apply(m, "from")) + 1
                        )
                        # 1089: /\ recoverCount' = Min(recoverCount + 1, MaxRetry)
                        recoverCount_next = Min(c, s.recoverCount + 1, c.MaxRetry)
                        # 1090: /\ countedFailures' = countedFailures + 1
                        countedFailures_next = s.countedFailures + 1
                        # 1091: /\ phase' = "Troubleshooting"
                        phase_next = "Troubleshooting"
                        # 1092: /\ innerPhase' = [w \in Workers |-> "Troubleshooting"]
                        innerPhase_next = fn((w, "Troubleshooting") for w in c.Workers)
                        # 1093: /\ finished' = [w \in Workers |-> FALSE]
                        finished_next = fn((w_2, False) for w_2 in c.Workers)
                        # 1094: /\ finishCount' = [w \in Workers |-> 0]
                        finishCount_next = fn((w_3, 0) for w_3 in c.Workers)
                        # 1095: /\ prevMasterSeq' = masterSeq
                        prevMasterSeq_next = s.masterSeq
                        # 1096: /\ masterSeq' = masterSeq + 1
                        masterSeq_next = s.masterSeq + 1
                        # 1097: /\ slow' = [w \in Workers |-> FALSE]
                        slow_next = fn((w_4, False) for w_4 in c.Workers)
                        # 1098: /\ evict' = [w \in Workers |-> FALSE]
                        evict_next = fn((w_5, False) for w_5 in c.Workers)
                        # 1099: /\ checkpointed' = FALSE
                        checkpointed_next = False
                        # 1113: /\ UNCHANGED lastFinishSeq
                        lastFinishSeq_next = s.lastFinishSeq
                        # 1114: /\ UNCHANGED << shouldQuit, podRestarted, agentSeq, agentState,
                        shouldQuit_next = s.shouldQuit
                        podRestarted_next = s.podRestarted
                        agentSeq_next = s.agentSeq
                        agentState_next = s.agentState
                        faults_next = s.faults
                        yield Successor(
                            State(
                                phase=phase_next,
                                shouldQuit=shouldQuit_next,
                                recoverCount=recoverCount_next,
                                innerPhase=innerPhase_next,
                                finished=finished_next,
                                retries=retries_next,
                                podRestarted=podRestarted_next,
                                masterSeq=masterSeq_next,
                                lastFinishSeq=lastFinishSeq_next,
                                msgs=msgs_next,
                                agentSeq=agentSeq_next,
                                agentState=agentState_next,
                                slow=slow_next,
                                evict=evict_next,
                                checkpointed=checkpointed_next,
                                faults=faults_next,
                                prevMasterSeq=prevMasterSeq_next,
                                finishCount=finishCount_next,
                                countedFailures=countedFailures_next,
                            ),
                            (("m", m),),
                        )
                    else:
                        # 1101: /\ UNCHANGED << phase,
                        phase_next = s.phase
                        recoverCount_next = s.recoverCount
                        innerPhase_next = s.innerPhase
                        finished_next = s.finished
                        retries_next = s.retries
                        masterSeq_next = s.masterSeq
                        slow_next = s.slow
                        evict_next = s.evict
                        checkpointed_next = s.checkpointed
                        prevMasterSeq_next = s.prevMasterSeq
                        finishCount_next = s.finishCount
                        countedFailures_next = s.countedFailures
                        # 1113: /\ UNCHANGED lastFinishSeq
                        lastFinishSeq_next = s.lastFinishSeq
                        # 1114: /\ UNCHANGED << shouldQuit, podRestarted, agentSeq, agentState,
                        shouldQuit_next = s.shouldQuit
                        podRestarted_next = s.podRestarted
                        agentSeq_next = s.agentSeq
                        agentState_next = s.agentState
                        faults_next = s.faults
                        yield Successor(
                            State(
                                phase=phase_next,
                                shouldQuit=shouldQuit_next,
                                recoverCount=recoverCount_next,
                                innerPhase=innerPhase_next,
                                finished=finished_next,
                                retries=retries_next,
                                podRestarted=podRestarted_next,
                                masterSeq=masterSeq_next,
                                lastFinishSeq=lastFinishSeq_next,
                                msgs=msgs_next,
                                agentSeq=agentSeq_next,
                                agentState=agentState_next,
                                slow=slow_next,
                                evict=evict_next,
                                checkpointed=checkpointed_next,
                                faults=faults_next,
                                prevMasterSeq=prevMasterSeq_next,
                                finishCount=finishCount_next,
                                countedFailures=countedFailures_next,
                            ),
                            (("m", m),),
                        )


def process_ids_hangWithQuit(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs hangWithQuit (process hangWithQuit)."""
    return frozenset({"hangWithQuit"})


def enabled_hangWithQuit(c: Constants, s: State, self: Value) -> bool:
    """Whether hangWithQuit can take a step from s."""
    return next(_steps_hangWithQuit(c, s, self), None) is not None


def successors_hangWithQuit(c: Constants, s: State, self: Value) -> list[Successor]:
    """Every successor of s by hangWithQuit."""
    return list(dict.fromkeys(_steps_hangWithQuit(c, s, self)))


def _steps_hangWithQuit(c: Constants, s: State, self: Value) -> Iterator[Successor]:
    """hangWithQuit at spec/AegisPhase.tla:1117."""
    # 1117: hangWithQuit == /\ CanHangWithQuit
    if not CanHangWithQuit(c, s):
        return
    # 1118: /\ \E w \in SlowToEvict:
    for w in _tla.enum(SlowToEvict(c, s)):
        # 1119: evict' = [evict EXCEPT ![w] = TRUE]
        evict_next = _tla.except_value(s.evict, (w,), True)
        # 1120: /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase,
        phase_next = s.phase
        shouldQuit_next = s.shouldQuit
        recoverCount_next = s.recoverCount
        innerPhase_next = s.innerPhase
        finished_next = s.finished
        retries_next = s.retries
        podRestarted_next = s.podRestarted
        masterSeq_next = s.masterSeq
        lastFinishSeq_next = s.lastFinishSeq
        msgs_next = s.msgs
        agentSeq_next = s.agentSeq
        agentState_next = s.agentState
        slow_next = s.slow
        checkpointed_next = s.checkpointed
        faults_next = s.faults
        prevMasterSeq_next = s.prevMasterSeq
        finishCount_next = s.finishCount
        countedFailures_next = s.countedFailures
        yield Successor(
            State(
                phase=phase_next,
                shouldQuit=shouldQuit_next,
                recoverCount=recoverCount_next,
                innerPhase=innerPhase_next,
                finished=finished_next,
                retries=retries_next,
                podRestarted=podRestarted_next,
                masterSeq=masterSeq_next,
                lastFinishSeq=lastFinishSeq_next,
                msgs=msgs_next,
                agentSeq=agentSeq_next,
                agentState=agentState_next,
                slow=slow_next,
                evict=evict_next,
                checkpointed=checkpointed_next,
                faults=faults_next,
                prevMasterSeq=prevMasterSeq_next,
                finishCount=finishCount_next,
                countedFailures=countedFailures_next,
            ),
            (("w", w),),
        )


def process_ids_evictSlow(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs evictSlow (process evictSlow)."""
    return frozenset({"evictSlow"})


def enabled_evictSlow(c: Constants, s: State, self: Value) -> bool:
    """Whether evictSlow can take a step from s."""
    return next(_steps_evictSlow(c, s, self), None) is not None


def successors_evictSlow(c: Constants, s: State, self: Value) -> list[Successor]:
    """Every successor of s by evictSlow."""
    return list(dict.fromkeys(_steps_evictSlow(c, s, self)))


def _steps_evictSlow(c: Constants, s: State, self: Value) -> Iterator[Successor]:
    """evictSlow at spec/AegisPhase.tla:1126."""
    # 1126: evictSlow == /\ CanEvictSlow
    if not CanEvictSlow(c, s):
        return
    # 1127: /\ \E w \in Evicted:
    for w in _tla.enum(Evicted(c, s)):
        # 1128: /\ phase' = "Restarting"
        phase_next = "Restarting"
        # 1129: /\ innerPhase' = [innerPhase EXCEPT ![w] = "Restarting"]
        innerPhase_next = _tla.except_value(s.innerPhase, (w,), "Restarting")
        # 1130: /\ finished' = [finished EXCEPT ![w] = FALSE]
        finished_next = _tla.except_value(s.finished, (w,), False)
        # 1131: /\ finishCount' = [finishCount EXCEPT ![w] = 0]
        finishCount_next = _tla.except_value(s.finishCount, (w,), 0)
        # 1132: /\ lastFinishSeq' = [lastFinishSeq EXCEPT ![w] = InitSeqNum - 1]
        lastFinishSeq_next = _tla.except_value(s.lastFinishSeq, (w,), c.InitSeqNum - 1)
        # 1133: /\ msgs' = {m \in msgs : m.from # w}
        msgs_next = frozenset(m for m in s.msgs if apply(m, "from") != w)
        # 1134: /\ slow' = [slow EXCEPT ![w] = FALSE]
        slow_next = _tla.except_value(s.slow, (w,), False)
        # 1135: /\ evict' = [evict EXCEPT ![w] = FALSE]
        evict_next = _tla.except_value(s.evict, (w,), False)
        # 1136: /\ retries' = [retries EXCEPT ![w] = retries[w] + 1]
        retries_next = _tla.except_value(s.retries, (w,), apply(s.retries, w) + 1)
        # 1137: /\ recoverCount' = Min(recoverCount + 1, MaxRetry)
        recoverCount_next = Min(c, s.recoverCount + 1, c.MaxRetry)
        # 1138: /\ countedFailures' = countedFailures + 1
        countedFailures_next = s.countedFailures + 1
        # 1139: /\ UNCHANGED << shouldQuit, podRestarted, masterSeq, agentSeq,
        shouldQuit_next = s.shouldQuit
        podRestarted_next = s.podRestarted
        masterSeq_next = s.masterSeq
        agentSeq_next = s.agentSeq
        agentState_next = s.agentState
        checkpointed_next = s.checkpointed
        faults_next = s.faults
        prevMasterSeq_next = s.prevMasterSeq
        yield Successor(
            State(
                phase=phase_next,
                shouldQuit=shouldQuit_next,
                recoverCount=recoverCount_next,
                innerPhase=innerPhase_next,
                finished=finished_next,
                retries=retries_next,
                podRestarted=podRestarted_next,
                masterSeq=masterSeq_next,
                lastFinishSeq=lastFinishSeq_next,
                msgs=msgs_next,
                agentSeq=agentSeq_next,
                agentState=agentState_next,
                slow=slow_next,
                evict=evict_next,
                checkpointed=checkpointed_next,
                faults=faults_next,
                prevMasterSeq=prevMasterSeq_next,
                finishCount=finishCount_next,
                countedFailures=countedFailures_next,
            ),
            (("w", w),),
        )


def process_ids_agentJoin(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs agentJoin (process agentJoin)."""
    return frozenset({"agentJoin"})


def enabled_agentJoin(c: Constants, s: State, self: Value) -> bool:
    """Whether agentJoin can take a step from s."""
    return next(_steps_agentJoin(c, s, self), None) is not None


def successors_agentJoin(c: Constants, s: State, self: Value) -> list[Successor]:
    """Every successor of s by agentJoin."""
    return list(dict.fromkeys(_steps_agentJoin(c, s, self)))


def _steps_agentJoin(c: Constants, s: State, self: Value) -> Iterator[Successor]:
    """agentJoin at spec/AegisPhase.tla:1142."""
    # 1142: agentJoin == /\ Quiescent /\ ~Terminated
    if not Quiescent(c, s):
        return
    if Terminated(c, s):
        return
    # 1143: /\ \E w \in {x \in Workers : agentState[x] = "Fresh"
    for w in _tla.enum(
        frozenset(
            x
            for x in c.Workers
            if apply(s.agentState, x) == "Fresh"
            and (not apply(s.podRestarted, x) or apply(s.innerPhase, x) == "Restarting")
        )
    ):
        # 1145: LET ack == [from |-> w, type |-> "ACK", seq |-> agentSeq[w]] IN
        # 1146: /\ agentState' = [agentState EXCEPT ![w] = "Ready"]
        agentState_next = _tla.except_value(s.agentState, (w,), "Ready")
        # 1147: /\ IF podRestarted[w]
        if apply(s.podRestarted, w):
            # 1148: THEN /\ podRestarted' = [podRestarted EXCEPT ![w] = FALSE]
            podRestarted_next = _tla.except_value(s.podRestarted, (w,), False)
            # 1149: /\ innerPhase' = [innerPhase EXCEPT ![w] = phase]
            innerPhase_next = _tla.except_value(s.innerPhase, (w,), s.phase)
            # 1152: /\ IF phase = "Pending" /\ FreshFinish(ack)
            if s.phase == "Pending" and FreshFinish(
                c, s, Fn({"from": w, "type": "ACK", "seq": apply(s.agentSeq, w)})
            ):
                # 1153: THEN /\ finished' = [finished EXCEPT ![w] = TRUE]
                finished_next = _tla.except_value(s.finished, (w,), True)
                # 1154: /\ lastFinishSeq' = [lastFinishSeq EXCEPT ![w] = ack.seq]
                lastFinishSeq_next = _tla.except_value(
                    s.lastFinishSeq,
                    (w,),
                    apply(Fn({"from": w, "type": "ACK", "seq": apply(s.agentSeq, w)}), "seq"),
                )
                # 1155: /\ finishCount' = [finishCount EXCEPT ![w] = finishCount[w] + 1]
                finishCount_next = _tla.except_value(
                    s.finishCount, (w,), apply(s.finishCount, w) + 1
                )
                # 1159: /\ UNCHANGED << phase, shouldQuit, recoverCount, retries,
                phase_next = s.phase
                shouldQuit_next = s.shouldQuit
                recoverCount_next = s.recoverCount
                retries_next = s.retries
                masterSeq_next = s.masterSeq
                msgs_next = s.msgs
                agentSeq_next = s.agentSeq
                slow_next = s.slow
                evict_next = s.evict
                checkpointed_next = s.checkpointed
                faults_next = s.faults
                prevMasterSeq_next = s.prevMasterSeq
                countedFailures_next = s.countedFailures
                yield Successor(
                    State(
                        phase=phase_next,
                        shouldQuit=shouldQuit_next,
                        recoverCount=recoverCount_next,
                        innerPhase=innerPhase_next,
                        finished=finished_next,
                        retries=retries_next,
                        podRestarted=podRestarted_next,
                        masterSeq=masterSeq_next,
                        lastFinishSeq=lastFinishSeq_next,
                        msgs=msgs_next,
                        agentSeq=agentSeq_next,
                        agentState=agentState_next,
                        slow=slow_next,
                        evict=evict_next,
                        checkpointed=checkpointed_next,
                        faults=faults_next,
                        prevMasterSeq=prevMasterSeq_next,
                        finishCount=finishCount_next,
                        countedFailures=countedFailures_next,
                    ),
                    (("w", w),),
                )
            else:
                # 1157: /\ UNCHANGED << finished, lastFinishSeq,
                finished_next = s.finished
                lastFinishSeq_next = s.lastFinishSeq
                finishCount_next = s.finishCount
                # 1159: /\ UNCHANGED << phase, shouldQuit, recoverCount, retries,
                phase_next = s.phase
                shouldQuit_next = s.shouldQuit
                recoverCount_next = s.recoverCount
                retries_next = s.retries
                masterSeq_next = s.masterSeq
                msgs_next = s.msgs
                agentSeq_next = s.agentSeq
                slow_next = s.slow
                evict_next = s.evict
                checkpointed_next = s.checkpointed
                faults_next = s.faults
                prevMasterSeq_next = s.prevMasterSeq
                countedFailures_next = s.countedFailures
                yield Successor(
                    State(
                        phase=phase_next,
                        shouldQuit=shouldQuit_next,
                        recoverCount=recoverCount_next,
                        innerPhase=innerPhase_next,
                        finished=finished_next,
                        retries=retries_next,
                        podRestarted=podRestarted_next,
                        masterSeq=masterSeq_next,
                        lastFinishSeq=lastFinishSeq_next,
                        msgs=msgs_next,
                        agentSeq=agentSeq_next,
                        agentState=agentState_next,
                        slow=slow_next,
                        evict=evict_next,
                        checkpointed=checkpointed_next,
                        faults=faults_next,
                        prevMasterSeq=prevMasterSeq_next,
                        finishCount=finishCount_next,
                        countedFailures=countedFailures_next,
                    ),
                    (("w", w),),
                )
        else:
            # 1151: /\ UNCHANGED << innerPhase, podRestarted >>
            innerPhase_next = s.innerPhase
            podRestarted_next = s.podRestarted
            # 1152: /\ IF phase = "Pending" /\ FreshFinish(ack)
            if s.phase == "Pending" and FreshFinish(
                c, s, Fn({"from": w, "type": "ACK", "seq": apply(s.agentSeq, w)})
            ):
                # 1153: THEN /\ finished' = [finished EXCEPT ![w] = TRUE]
                finished_next = _tla.except_value(s.finished, (w,), True)
                # 1154: /\ lastFinishSeq' = [lastFinishSeq EXCEPT ![w] = ack.seq]
                lastFinishSeq_next = _tla.except_value(
                    s.lastFinishSeq,
                    (w,),
                    apply(Fn({"from": w, "type": "ACK", "seq": apply(s.agentSeq, w)}), "seq"),
                )
                # 1155: /\ finishCount' = [finishCount EXCEPT ![w] = finishCount[w] + 1]
                finishCount_next = _tla.except_value(
                    s.finishCount, (w,), apply(s.finishCount, w) + 1
                )
                # 1159: /\ UNCHANGED << phase, shouldQuit, recoverCount, retries,
                phase_next = s.phase
                shouldQuit_next = s.shouldQuit
                recoverCount_next = s.recoverCount
                retries_next = s.retries
                masterSeq_next = s.masterSeq
                msgs_next = s.msgs
                agentSeq_next = s.agentSeq
                slow_next = s.slow
                evict_next = s.evict
                checkpointed_next = s.checkpointed
                faults_next = s.faults
                prevMasterSeq_next = s.prevMasterSeq
                countedFailures_next = s.countedFailures
                yield Successor(
                    State(
                        phase=phase_next,
                        shouldQuit=shouldQuit_next,
                        recoverCount=recoverCount_next,
                        innerPhase=innerPhase_next,
                        finished=finished_next,
                        retries=retries_next,
                        podRestarted=podRestarted_next,
                        masterSeq=masterSeq_next,
                        lastFinishSeq=lastFinishSeq_next,
                        msgs=msgs_next,
                        agentSeq=agentSeq_next,
                        agentState=agentState_next,
                        slow=slow_next,
                        evict=evict_next,
                        checkpointed=checkpointed_next,
                        faults=faults_next,
                        prevMasterSeq=prevMasterSeq_next,
                        finishCount=finishCount_next,
                        countedFailures=countedFailures_next,
                    ),
                    (("w", w),),
                )
            else:
                # 1157: /\ UNCHANGED << finished, lastFinishSeq,
                finished_next = s.finished
                lastFinishSeq_next = s.lastFinishSeq
                finishCount_next = s.finishCount
                # 1159: /\ UNCHANGED << phase, shouldQuit, recoverCount, retries,
                phase_next = s.phase
                shouldQuit_next = s.shouldQuit
                recoverCount_next = s.recoverCount
                retries_next = s.retries
                masterSeq_next = s.masterSeq
                msgs_next = s.msgs
                agentSeq_next = s.agentSeq
                slow_next = s.slow
                evict_next = s.evict
                checkpointed_next = s.checkpointed
                faults_next = s.faults
                prevMasterSeq_next = s.prevMasterSeq
                countedFailures_next = s.countedFailures
                yield Successor(
                    State(
                        phase=phase_next,
                        shouldQuit=shouldQuit_next,
                        recoverCount=recoverCount_next,
                        innerPhase=innerPhase_next,
                        finished=finished_next,
                        retries=retries_next,
                        podRestarted=podRestarted_next,
                        masterSeq=masterSeq_next,
                        lastFinishSeq=lastFinishSeq_next,
                        msgs=msgs_next,
                        agentSeq=agentSeq_next,
                        agentState=agentState_next,
                        slow=slow_next,
                        evict=evict_next,
                        checkpointed=checkpointed_next,
                        faults=faults_next,
                        prevMasterSeq=prevMasterSeq_next,
                        finishCount=finishCount_next,
                        countedFailures=countedFailures_next,
                    ),
                    (("w", w),),
                )


def process_ids_agentWork(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs agentWork (process agentWork)."""
    return frozenset({"agentWork"})


def enabled_agentWork(c: Constants, s: State, self: Value) -> bool:
    """Whether agentWork can take a step from s."""
    return next(_steps_agentWork(c, s, self), None) is not None


def successors_agentWork(c: Constants, s: State, self: Value) -> list[Successor]:
    """Every successor of s by agentWork."""
    return list(dict.fromkeys(_steps_agentWork(c, s, self)))


def _steps_agentWork(c: Constants, s: State, self: Value) -> Iterator[Successor]:
    """agentWork at spec/AegisPhase.tla:1164."""
    # 1164: agentWork == /\ \E w \in {x \in Workers : agentState[x] = "Ready" /\ agentSeq[x] < ma...
    for w in _tla.enum(
        frozenset(
            x
            for x in c.Workers
            if apply(s.agentState, x) == "Ready" and apply(s.agentSeq, x) < s.masterSeq
        )
    ):
        # 1165: \E outcome \in Outcomes:
        for outcome in _tla.enum(Outcomes(c, s)):
            # 1166: /\ Quiescent /\ phase \in OrderPhases
            if Quiescent(c, s) and s.phase in OrderPhases(c):
                # 1167: /\ agentSeq' = [agentSeq EXCEPT ![w] = masterSeq]
                agentSeq_next = _tla.except_value(s.agentSeq, (w,), s.masterSeq)
                # 1168: /\ msgs' = (msgs \cup {[from |-> w, type |-> outcome, seq |-> masterSeq]})
                msgs_next = s.msgs | frozenset(
                    {Fn({"from": w, "type": outcome, "seq": s.masterSeq})}
                )
                # 1169: /\ IF outcome = "Error"
                if outcome == "Error":
                    # 1170: THEN /\ faults' = faults - 1
                    faults_next = s.faults - 1
                    # 1171: /\ IF phase # "RunCommand"
                    if s.phase != "RunCommand":
                        # 1172: THEN /\ agentState' = [agentState EXCEPT ![w] = "Exited"]
                        agentState_next = _tla.except_value(s.agentState, (w,), "Exited")
                        # 1177: /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase,
                        phase_next = s.phase
                        shouldQuit_next = s.shouldQuit
                        recoverCount_next = s.recoverCount
                        innerPhase_next = s.innerPhase
                        finished_next = s.finished
                        retries_next = s.retries
                        podRestarted_next = s.podRestarted
                        masterSeq_next = s.masterSeq
                        lastFinishSeq_next = s.lastFinishSeq
                        slow_next = s.slow
                        evict_next = s.evict
                        checkpointed_next = s.checkpointed
                        prevMasterSeq_next = s.prevMasterSeq
                        finishCount_next = s.finishCount
                        countedFailures_next = s.countedFailures
                        yield Successor(
                            State(
                                phase=phase_next,
                                shouldQuit=shouldQuit_next,
                                recoverCount=recoverCount_next,
                                innerPhase=innerPhase_next,
                                finished=finished_next,
                                retries=retries_next,
                                podRestarted=podRestarted_next,
                                masterSeq=masterSeq_next,
                                lastFinishSeq=lastFinishSeq_next,
                                msgs=msgs_next,
                                agentSeq=agentSeq_next,
                                agentState=agentState_next,
                                slow=slow_next,
                                evict=evict_next,
                                checkpointed=checkpointed_next,
                                faults=faults_next,
                                prevMasterSeq=prevMasterSeq_next,
                                finishCount=finishCount_next,
                                countedFailures=countedFailures_next,
                            ),
                            (("w", w), ("outcome", outcome)),
                        )
                    else:
                        # 1174: /\ UNCHANGED agentState
                        agentState_next = s.agentState
                        # 1177: /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase,
                        phase_next = s.phase
                        shouldQuit_next = s.shouldQuit
                        recoverCount_next = s.recoverCount
                        innerPhase_next = s.innerPhase
                        finished_next = s.finished
                        retries_next = s.retries
                        podRestarted_next = s.podRestarted
                        masterSeq_next = s.masterSeq
                        lastFinishSeq_next = s.lastFinishSeq
                        slow_next = s.slow
                        evict_next = s.evict
                        checkpointed_next = s.checkpointed
                        prevMasterSeq_next = s.prevMasterSeq
                        finishCount_next = s.finishCount
                        countedFailures_next = s.countedFailures
                        yield Successor(
                            State(
                                phase=phase_next,
                                shouldQuit=shouldQuit_next,
                                recoverCount=recoverCount_next,
                                innerPhase=innerPhase_next,
                                finished=finished_next,
                                retries=retries_next,
                                podRestarted=podRestarted_next,
                                masterSeq=masterSeq_next,
                                lastFinishSeq=lastFinishSeq_next,
                                msgs=msgs_next,
                                agentSeq=agentSeq_next,
                                agentState=agentState_next,
                                slow=slow_next,
                                evict=evict_next,
                                checkpointed=checkpointed_next,
                                faults=faults_next,
                                prevMasterSeq=prevMasterSeq_next,
                                finishCount=finishCount_next,
                                countedFailures=countedFailures_next,
                            ),
                            (("w", w), ("outcome", outcome)),
                        )
                else:
                    # 1176: /\ UNCHANGED << agentState, faults >>
                    agentState_next = s.agentState
                    faults_next = s.faults
                    # 1177: /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase,
                    phase_next = s.phase
                    shouldQuit_next = s.shouldQuit
                    recoverCount_next = s.recoverCount
                    innerPhase_next = s.innerPhase
                    finished_next = s.finished
                    retries_next = s.retries
                    podRestarted_next = s.podRestarted
                    masterSeq_next = s.masterSeq
                    lastFinishSeq_next = s.lastFinishSeq
                    slow_next = s.slow
                    evict_next = s.evict
                    checkpointed_next = s.checkpointed
                    prevMasterSeq_next = s.prevMasterSeq
                    finishCount_next = s.finishCount
                    countedFailures_next = s.countedFailures
                    yield Successor(
                        State(
                            phase=phase_next,
                            shouldQuit=shouldQuit_next,
                            recoverCount=recoverCount_next,
                            innerPhase=innerPhase_next,
                            finished=finished_next,
                            retries=retries_next,
                            podRestarted=podRestarted_next,
                            masterSeq=masterSeq_next,
                            lastFinishSeq=lastFinishSeq_next,
                            msgs=msgs_next,
                            agentSeq=agentSeq_next,
                            agentState=agentState_next,
                            slow=slow_next,
                            evict=evict_next,
                            checkpointed=checkpointed_next,
                            faults=faults_next,
                            prevMasterSeq=prevMasterSeq_next,
                            finishCount=finishCount_next,
                            countedFailures=countedFailures_next,
                        ),
                        (("w", w), ("outcome", outcome)),
                    )


def process_ids_agentHang(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs agentHang (process agentHang)."""
    return frozenset({"agentHang"})


def enabled_agentHang(c: Constants, s: State, self: Value) -> bool:
    """Whether agentHang can take a step from s."""
    return next(_steps_agentHang(c, s, self), None) is not None


def successors_agentHang(c: Constants, s: State, self: Value) -> list[Successor]:
    """Every successor of s by agentHang."""
    return list(dict.fromkeys(_steps_agentHang(c, s, self)))


def _steps_agentHang(c: Constants, s: State, self: Value) -> Iterator[Successor]:
    """agentHang at spec/AegisPhase.tla:1182."""
    # 1182: agentHang == /\ \E w \in {x \in Workers : agentState[x] = "Ready" /\ agentSeq[x] < ma...
    for w in _tla.enum(
        frozenset(
            x
            for x in c.Workers
            if apply(s.agentState, x) == "Ready" and apply(s.agentSeq, x) < s.masterSeq
        )
    ):
        # 1183: /\ Quiescent /\ phase = "RunCommand" /\ faults > 0 /\ ~slow[w]
        if Quiescent(c, s) and s.phase == "RunCommand" and s.faults > 0 and not apply(s.slow, w):
            # 1184: /\ faults' = faults - 1
            faults_next = s.faults - 1
            # 1185: /\ msgs' = (msgs \cup {[from |-> w, type |-> "Hang", seq |-> masterSeq]})
            msgs_next = s.msgs | frozenset({Fn({"from": w, "type": "Hang", "seq": s.masterSeq})})
            # 1186: /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase,
            phase_next = s.phase
            shouldQuit_next = s.shouldQuit
            recoverCount_next = s.recoverCount
            innerPhase_next = s.innerPhase
            finished_next = s.finished
            retries_next = s.retries
            podRestarted_next = s.podRestarted
            masterSeq_next = s.masterSeq
            lastFinishSeq_next = s.lastFinishSeq
            agentSeq_next = s.agentSeq
            agentState_next = s.agentState
            slow_next = s.slow
            evict_next = s.evict
            checkpointed_next = s.checkpointed
            prevMasterSeq_next = s.prevMasterSeq
            finishCount_next = s.finishCount
            countedFailures_next = s.countedFailures
            yield Successor(
                State(
                    phase=phase_next,
                    shouldQuit=shouldQuit_next,
                    recoverCount=recoverCount_next,
                    innerPhase=innerPhase_next,
                    finished=finished_next,
                    retries=retries_next,
                    podRestarted=podRestarted_next,
                    masterSeq=masterSeq_next,
                    lastFinishSeq=lastFinishSeq_next,
                    msgs=msgs_next,
                    agentSeq=agentSeq_next,
                    agentState=agentState_next,
                    slow=slow_next,
                    evict=evict_next,
                    checkpointed=checkpointed_next,
                    faults=faults_next,
                    prevMasterSeq=prevMasterSeq_next,
                    finishCount=finishCount_next,
                    countedFailures=countedFailures_next,
                ),
                (("w", w),),
            )


def process_ids_agentCheckpoint(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs agentCheckpoint (process agentCheckpoint)."""
    return frozenset({"agentCheckpoint"})


def enabled_agentCheckpoint(c: Constants, s: State, self: Value) -> bool:
    """Whether agentCheckpoint can take a step from s."""
    return next(_steps_agentCheckpoint(c, s, self), None) is not None


def successors_agentCheckpoint(c: Constants, s: State, self: Value) -> list[Successor]:
    """Every successor of s by agentCheckpoint."""
    return list(dict.fromkeys(_steps_agentCheckpoint(c, s, self)))


def _steps_agentCheckpoint(c: Constants, s: State, self: Value) -> Iterator[Successor]:
    """agentCheckpoint at spec/AegisPhase.tla:1192."""
    # 1192: agentCheckpoint == /\ \E w \in {x \in Workers : agentState[x] = "Ready" /\ agentSeq[x...
    for w in _tla.enum(
        frozenset(
            x
            for x in c.Workers
            if apply(s.agentState, x) == "Ready" and apply(s.agentSeq, x) < s.masterSeq
        )
    ):
        # 1193: /\ Quiescent /\ phase = "RunCommand" /\ ~checkpointed /\ Evicting # {}
        if (
            Quiescent(c, s)
            and s.phase == "RunCommand"
            and not s.checkpointed
            and Evicting(c, s) != frozenset()
        ):
            # 1194: /\ msgs' = (msgs \cup {[from |-> w, type |-> "Checkpoint", seq |-> masterSeq]})
            msgs_next = s.msgs | frozenset(
                {Fn({"from": w, "type": "Checkpoint", "seq": s.masterSeq})}
            )
            # 1195: /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase,
            phase_next = s.phase
            shouldQuit_next = s.shouldQuit
            recoverCount_next = s.recoverCount
            innerPhase_next = s.innerPhase
            finished_next = s.finished
            retries_next = s.retries
            podRestarted_next = s.podRestarted
            masterSeq_next = s.masterSeq
            lastFinishSeq_next = s.lastFinishSeq
            agentSeq_next = s.agentSeq
            agentState_next = s.agentState
            slow_next = s.slow
            evict_next = s.evict
            checkpointed_next = s.checkpointed
            faults_next = s.faults
            prevMasterSeq_next = s.prevMasterSeq
            finishCount_next = s.finishCount
            countedFailures_next = s.countedFailures
            yield Successor(
                State(
                    phase=phase_next,
                    shouldQuit=shouldQuit_next,
                    recoverCount=recoverCount_next,
                    innerPhase=innerPhase_next,
                    finished=finished_next,
                    retries=retries_next,
                    podRestarted=podRestarted_next,
                    masterSeq=masterSeq_next,
                    lastFinishSeq=lastFinishSeq_next,
                    msgs=msgs_next,
                    agentSeq=agentSeq_next,
                    agentState=agentState_next,
                    slow=slow_next,
                    evict=evict_next,
                    checkpointed=checkpointed_next,
                    faults=faults_next,
                    prevMasterSeq=prevMasterSeq_next,
                    finishCount=finishCount_next,
                    countedFailures=countedFailures_next,
                ),
                (("w", w),),
            )


def process_ids_agentEvict(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs agentEvict (process agentEvict)."""
    return frozenset({"agentEvict"})


def enabled_agentEvict(c: Constants, s: State, self: Value) -> bool:
    """Whether agentEvict can take a step from s."""
    return next(_steps_agentEvict(c, s, self), None) is not None


def successors_agentEvict(c: Constants, s: State, self: Value) -> list[Successor]:
    """Every successor of s by agentEvict."""
    return list(dict.fromkeys(_steps_agentEvict(c, s, self)))


def _steps_agentEvict(c: Constants, s: State, self: Value) -> Iterator[Successor]:
    """agentEvict at spec/AegisPhase.tla:1201."""
    # 1201: agentEvict == /\ \E w \in {x \in Workers : evict[x] /\ agentState[x] = "Ready"
    for w in _tla.enum(
        frozenset(
            x
            for x in c.Workers
            if apply(s.evict, x)
            and apply(s.agentState, x) == "Ready"
            and apply(s.agentSeq, x) < s.masterSeq
        )
    ):
        # 1203: /\ Quiescent /\ phase = "RunCommand" /\ checkpointed
        if Quiescent(c, s) and s.phase == "RunCommand" and s.checkpointed:
            # 1204: /\ agentSeq' = [agentSeq EXCEPT ![w] = masterSeq]
            agentSeq_next = _tla.except_value(s.agentSeq, (w,), s.masterSeq)
            # 1205: /\ agentState' = [agentState EXCEPT ![w] = "Exited"]
            agentState_next = _tla.except_value(s.agentState, (w,), "Exited")
            # 1206: /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase,
            phase_next = s.phase
            shouldQuit_next = s.shouldQuit
            recoverCount_next = s.recoverCount
            innerPhase_next = s.innerPhase
            finished_next = s.finished
            retries_next = s.retries
            podRestarted_next = s.podRestarted
            masterSeq_next = s.masterSeq
            lastFinishSeq_next = s.lastFinishSeq
            msgs_next = s.msgs
            slow_next = s.slow
            evict_next = s.evict
            checkpointed_next = s.checkpointed
            faults_next = s.faults
            prevMasterSeq_next = s.prevMasterSeq
            finishCount_next = s.finishCount
            countedFailures_next = s.countedFailures
            yield Successor(
                State(
                    phase=phase_next,
                    shouldQuit=shouldQuit_next,
                    recoverCount=recoverCount_next,
                    innerPhase=innerPhase_next,
                    finished=finished_next,
                    retries=retries_next,
                    podRestarted=podRestarted_next,
                    masterSeq=masterSeq_next,
                    lastFinishSeq=lastFinishSeq_next,
                    msgs=msgs_next,
                    agentSeq=agentSeq_next,
                    agentState=agentState_next,
                    slow=slow_next,
                    evict=evict_next,
                    checkpointed=checkpointed_next,
                    faults=faults_next,
                    prevMasterSeq=prevMasterSeq_next,
                    finishCount=finishCount_next,
                    countedFailures=countedFailures_next,
                ),
                (("w", w),),
            )


def process_ids_envPodRestart(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs envPodRestart (process envPodRestart)."""
    return frozenset({"envPodRestart"})


def enabled_envPodRestart(c: Constants, s: State, self: Value) -> bool:
    """Whether envPodRestart can take a step from s."""
    return next(_steps_envPodRestart(c, s, self), None) is not None


def successors_envPodRestart(c: Constants, s: State, self: Value) -> list[Successor]:
    """Every successor of s by envPodRestart."""
    return list(dict.fromkeys(_steps_envPodRestart(c, s, self)))


def _steps_envPodRestart(c: Constants, s: State, self: Value) -> Iterator[Successor]:
    """envPodRestart at spec/AegisPhase.tla:1212."""
    # 1212: envPodRestart == /\ \E w \in Workers:
    for w in _tla.enum(c.Workers):
        # 1213: /\ Quiescent /\ faults > 0 /\ ~Terminated
        if Quiescent(c, s) and s.faults > 0 and not Terminated(c, s):
            # 1214: /\ faults' = faults - 1
            faults_next = s.faults - 1
            # 1215: /\ podRestarted' = [podRestarted EXCEPT ![w] = TRUE]
            podRestarted_next = _tla.except_value(s.podRestarted, (w,), True)
            # 1216: /\ agentState' = [agentState EXCEPT ![w] = "Fresh"]
            agentState_next = _tla.except_value(s.agentState, (w,), "Fresh")
            # 1217: /\ agentSeq' = [agentSeq EXCEPT ![w] = InitSeqNum]
            agentSeq_next = _tla.except_value(s.agentSeq, (w,), c.InitSeqNum)
            # 1218: /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase,
            phase_next = s.phase
            shouldQuit_next = s.shouldQuit
            recoverCount_next = s.recoverCount
            innerPhase_next = s.innerPhase
            finished_next = s.finished
            retries_next = s.retries
            masterSeq_next = s.masterSeq
            lastFinishSeq_next = s.lastFinishSeq
            msgs_next = s.msgs
            slow_next = s.slow
            evict_next = s.evict
            checkpointed_next = s.checkpointed
            prevMasterSeq_next = s.prevMasterSeq
            finishCount_next = s.finishCount
            countedFailures_next = s.countedFailures
            yield Successor(
                State(
                    phase=phase_next,
                    shouldQuit=shouldQuit_next,
                    recoverCount=recoverCount_next,
                    innerPhase=innerPhase_next,
                    finished=finished_next,
                    retries=retries_next,
                    podRestarted=podRestarted_next,
                    masterSeq=masterSeq_next,
                    lastFinishSeq=lastFinishSeq_next,
                    msgs=msgs_next,
                    agentSeq=agentSeq_next,
                    agentState=agentState_next,
                    slow=slow_next,
                    evict=evict_next,
                    checkpointed=checkpointed_next,
                    faults=faults_next,
                    prevMasterSeq=prevMasterSeq_next,
                    finishCount=finishCount_next,
                    countedFailures=countedFailures_next,
                ),
                (("w", w),),
            )


def process_ids_envDuplicate(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs envDuplicate (process envDuplicate)."""
    return frozenset({"envDuplicate"})


def enabled_envDuplicate(c: Constants, s: State, self: Value) -> bool:
    """Whether envDuplicate can take a step from s."""
    return next(_steps_envDuplicate(c, s, self), None) is not None


def successors_envDuplicate(c: Constants, s: State, self: Value) -> list[Successor]:
    """Every successor of s by envDuplicate."""
    return list(dict.fromkeys(_steps_envDuplicate(c, s, self)))


def _steps_envDuplicate(c: Constants, s: State, self: Value) -> Iterator[Successor]:
    """envDuplicate at spec/AegisPhase.tla:1223."""
    # 1223: envDuplicate == /\ \E w \in {x \in Workers : lastFinishSeq[x] >= InitSeqNum}:
    for w in _tla.enum(
        frozenset(x for x in c.Workers if apply(s.lastFinishSeq, x) >= c.InitSeqNum)
    ):
        # 1224: /\ Quiescent /\ faults > 0 /\ ~Terminated
        if Quiescent(c, s) and s.faults > 0 and not Terminated(c, s):
            # 1225: /\ faults' = faults - 1
            faults_next = s.faults - 1
            # 1226: /\ msgs' = (msgs \cup {[from |-> w, type |-> "Finish", seq |-> lastFinishSeq[...
            msgs_next = s.msgs | frozenset(
                {Fn({"from": w, "type": "Finish", "seq": apply(s.lastFinishSeq, w)})}
            )
            # 1227: /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase,
            phase_next = s.phase
            shouldQuit_next = s.shouldQuit
            recoverCount_next = s.recoverCount
            innerPhase_next = s.innerPhase
            finished_next = s.finished
            retries_next = s.retries
            podRestarted_next = s.podRestarted
            masterSeq_next = s.masterSeq
            lastFinishSeq_next = s.lastFinishSeq
            agentSeq_next = s.agentSeq
            agentState_next = s.agentState
            slow_next = s.slow
            evict_next = s.evict
            checkpointed_next = s.checkpointed
            prevMasterSeq_next = s.prevMasterSeq
            finishCount_next = s.finishCount
            countedFailures_next = s.countedFailures
            yield Successor(
                State(
                    phase=phase_next,
                    shouldQuit=shouldQuit_next,
                    recoverCount=recoverCount_next,
                    innerPhase=innerPhase_next,
                    finished=finished_next,
                    retries=retries_next,
                    podRestarted=podRestarted_next,
                    masterSeq=masterSeq_next,
                    lastFinishSeq=lastFinishSeq_next,
                    msgs=msgs_next,
                    agentSeq=agentSeq_next,
                    agentState=agentState_next,
                    slow=slow_next,
                    evict=evict_next,
                    checkpointed=checkpointed_next,
                    faults=faults_next,
                    prevMasterSeq=prevMasterSeq_next,
                    finishCount=finishCount_next,
                    countedFailures=countedFailures_next,
                ),
                (("w", w),),
            )


def process_ids_envQuit(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs envQuit (process envQuit)."""
    return frozenset({"envQuit"})


def enabled_envQuit(c: Constants, s: State, self: Value) -> bool:
    """Whether envQuit can take a step from s."""
    return next(_steps_envQuit(c, s, self), None) is not None


def successors_envQuit(c: Constants, s: State, self: Value) -> list[Successor]:
    """Every successor of s by envQuit."""
    return list(dict.fromkeys(_steps_envQuit(c, s, self)))


def _steps_envQuit(c: Constants, s: State, self: Value) -> Iterator[Successor]:
    """envQuit at spec/AegisPhase.tla:1233."""
    # 1233: envQuit == /\ Quiescent /\ faults > 0 /\ ~shouldQuit /\ ~Terminated
    if not Quiescent(c, s):
        return
    if s.faults <= 0:
        return
    if s.shouldQuit:
        return
    if Terminated(c, s):
        return
    # 1234: /\ faults' = faults - 1
    faults_next = s.faults - 1
    # 1235: /\ shouldQuit' = TRUE
    shouldQuit_next = True
    # 1236: /\ UNCHANGED << phase, recoverCount, innerPhase, finished, retries,
    phase_next = s.phase
    recoverCount_next = s.recoverCount
    innerPhase_next = s.innerPhase
    finished_next = s.finished
    retries_next = s.retries
    podRestarted_next = s.podRestarted
    masterSeq_next = s.masterSeq
    lastFinishSeq_next = s.lastFinishSeq
    msgs_next = s.msgs
    agentSeq_next = s.agentSeq
    agentState_next = s.agentState
    slow_next = s.slow
    evict_next = s.evict
    checkpointed_next = s.checkpointed
    prevMasterSeq_next = s.prevMasterSeq
    finishCount_next = s.finishCount
    countedFailures_next = s.countedFailures
    yield Successor(
        State(
            phase=phase_next,
            shouldQuit=shouldQuit_next,
            recoverCount=recoverCount_next,
            innerPhase=innerPhase_next,
            finished=finished_next,
            retries=retries_next,
            podRestarted=podRestarted_next,
            masterSeq=masterSeq_next,
            lastFinishSeq=lastFinishSeq_next,
            msgs=msgs_next,
            agentSeq=agentSeq_next,
            agentState=agentState_next,
            slow=slow_next,
            evict=evict_next,
            checkpointed=checkpointed_next,
            faults=faults_next,
            prevMasterSeq=prevMasterSeq_next,
            finishCount=finishCount_next,
            countedFailures=countedFailures_next,
        ),
        (),
    )


def process_ids_reschedule(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs reschedule (process reschedule)."""
    return frozenset({"reschedule"})


def enabled_reschedule(c: Constants, s: State, self: Value) -> bool:
    """Whether reschedule can take a step from s."""
    return next(_steps_reschedule(c, s, self), None) is not None


def successors_reschedule(c: Constants, s: State, self: Value) -> list[Successor]:
    """Every successor of s by reschedule."""
    return list(dict.fromkeys(_steps_reschedule(c, s, self)))


def _steps_reschedule(c: Constants, s: State, self: Value) -> Iterator[Successor]:
    """reschedule at spec/AegisPhase.tla:1241."""
    # 1241: reschedule == /\ Quiescent /\ ~Terminated
    if not Quiescent(c, s):
        return
    if Terminated(c, s):
        return
    # 1242: /\ \E w \in {x \in Workers : agentState[x] = "Exited"}:
    for w in _tla.enum(frozenset(x for x in c.Workers if apply(s.agentState, x) == "Exited")):
        # 1243: /\ podRestarted' = [podRestarted EXCEPT ![w] = TRUE]
        podRestarted_next = _tla.except_value(s.podRestarted, (w,), True)
        # 1244: /\ agentState' = [agentState EXCEPT ![w] = "Fresh"]
        agentState_next = _tla.except_value(s.agentState, (w,), "Fresh")
        # 1245: /\ agentSeq' = [agentSeq EXCEPT ![w] = InitSeqNum]
        agentSeq_next = _tla.except_value(s.agentSeq, (w,), c.InitSeqNum)
        # 1246: /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase,
        phase_next = s.phase
        shouldQuit_next = s.shouldQuit
        recoverCount_next = s.recoverCount
        innerPhase_next = s.innerPhase
        finished_next = s.finished
        retries_next = s.retries
        masterSeq_next = s.masterSeq
        lastFinishSeq_next = s.lastFinishSeq
        msgs_next = s.msgs
        slow_next = s.slow
        evict_next = s.evict
        checkpointed_next = s.checkpointed
        faults_next = s.faults
        prevMasterSeq_next = s.prevMasterSeq
        finishCount_next = s.finishCount
        countedFailures_next = s.countedFailures
        yield Successor(
            State(
                phase=phase_next,
                shouldQuit=shouldQuit_next,
                recoverCount=recoverCount_next,
                innerPhase=innerPhase_next,
                finished=finished_next,
                retries=retries_next,
                podRestarted=podRestarted_next,
                masterSeq=masterSeq_next,
                lastFinishSeq=lastFinishSeq_next,
                msgs=msgs_next,
                agentSeq=agentSeq_next,
                agentState=agentState_next,
                slow=slow_next,
                evict=evict_next,
                checkpointed=checkpointed_next,
                faults=faults_next,
                prevMasterSeq=prevMasterSeq_next,
                finishCount=finishCount_next,
                countedFailures=countedFailures_next,
            ),
            (("w", w),),
        )


def process_ids_jobDone(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs jobDone (process jobDone)."""
    return frozenset({"jobDone"})


def enabled_jobDone(c: Constants, s: State, self: Value) -> bool:
    """Whether jobDone can take a step from s."""
    return next(_steps_jobDone(c, s, self), None) is not None


def successors_jobDone(c: Constants, s: State, self: Value) -> list[Successor]:
    """Every successor of s by jobDone."""
    return list(dict.fromkeys(_steps_jobDone(c, s, self)))


def _steps_jobDone(c: Constants, s: State, self: Value) -> Iterator[Successor]:
    """jobDone at spec/AegisPhase.tla:1251."""
    # 1251: jobDone == /\ Terminated
    if not Terminated(c, s):
        return
    # 1252: /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase,
    phase_next = s.phase
    shouldQuit_next = s.shouldQuit
    recoverCount_next = s.recoverCount
    innerPhase_next = s.innerPhase
    finished_next = s.finished
    retries_next = s.retries
    podRestarted_next = s.podRestarted
    masterSeq_next = s.masterSeq
    lastFinishSeq_next = s.lastFinishSeq
    msgs_next = s.msgs
    agentSeq_next = s.agentSeq
    agentState_next = s.agentState
    slow_next = s.slow
    evict_next = s.evict
    checkpointed_next = s.checkpointed
    faults_next = s.faults
    prevMasterSeq_next = s.prevMasterSeq
    finishCount_next = s.finishCount
    countedFailures_next = s.countedFailures
    yield Successor(
        State(
            phase=phase_next,
            shouldQuit=shouldQuit_next,
            recoverCount=recoverCount_next,
            innerPhase=innerPhase_next,
            finished=finished_next,
            retries=retries_next,
            podRestarted=podRestarted_next,
            masterSeq=masterSeq_next,
            lastFinishSeq=lastFinishSeq_next,
            msgs=msgs_next,
            agentSeq=agentSeq_next,
            agentState=agentState_next,
            slow=slow_next,
            evict=evict_next,
            checkpointed=checkpointed_next,
            faults=faults_next,
            prevMasterSeq=prevMasterSeq_next,
            finishCount=finishCount_next,
            countedFailures=countedFailures_next,
        ),
        (),
    )


# Keyed by Label; a Label is a str, so ACTIONS["label"] finds it too.
ACTIONS: dict[str, ActionInfo] = {
    Label.advance: ActionInfo(
        label=Label.advance,
        process="advance",
        kind="single",
        process_ids=process_ids_advance,
        enabled=enabled_advance,
        successors=successors_advance,
        source="spec/AegisPhase.tla:944",
    ),
    Label.restartInRun: ActionInfo(
        label=Label.restartInRun,
        process="restartInRun",
        kind="single",
        process_ids=process_ids_restartInRun,
        enabled=enabled_restartInRun,
        successors=successors_restartInRun,
        source="spec/AegisPhase.tla:964",
    ),
    Label.restartOutsideRun: ActionInfo(
        label=Label.restartOutsideRun,
        process="restartOutsideRun",
        kind="single",
        process_ids=process_ids_restartOutsideRun,
        enabled=enabled_restartOutsideRun,
        successors=successors_restartOutsideRun,
        source="spec/AegisPhase.tla:981",
    ),
    Label.restartDone: ActionInfo(
        label=Label.restartDone,
        process="restartDone",
        kind="single",
        process_ids=process_ids_restartDone,
        enabled=enabled_restartDone,
        successors=successors_restartDone,
        source="spec/AegisPhase.tla:995",
    ),
    Label.retriesExhausted: ActionInfo(
        label=Label.retriesExhausted,
        process="retriesExhausted",
        kind="single",
        process_ids=process_ids_retriesExhausted,
        enabled=enabled_retriesExhausted,
        successors=successors_retriesExhausted,
        source="spec/AegisPhase.tla:1009",
    ),
    Label.failedWrapUp: ActionInfo(
        label=Label.failedWrapUp,
        process="failedWrapUp",
        kind="single",
        process_ids=process_ids_failedWrapUp,
        enabled=enabled_failedWrapUp,
        successors=successors_failedWrapUp,
        source="spec/AegisPhase.tla:1019",
    ),
    Label.alignRetries: ActionInfo(
        label=Label.alignRetries,
        process="alignRetries",
        kind="single",
        process_ids=process_ids_alignRetries,
        enabled=enabled_alignRetries,
        successors=successors_alignRetries,
        source="spec/AegisPhase.tla:1028",
    ),
    Label.quitRequested: ActionInfo(
        label=Label.quitRequested,
        process="quitRequested",
        kind="single",
        process_ids=process_ids_quitRequested,
        enabled=enabled_quitRequested,
        successors=successors_quitRequested,
        source="spec/AegisPhase.tla:1036",
    ),
    Label.receive: ActionInfo(
        label=Label.receive,
        process="receive",
        kind="single",
        process_ids=process_ids_receive,
        enabled=enabled_receive,
        successors=successors_receive,
        source="spec/AegisPhase.tla:1045",
    ),
    Label.hangWithQuit: ActionInfo(
        label=Label.hangWithQuit,
        process="hangWithQuit",
        kind="single",
        process_ids=process_ids_hangWithQuit,
        enabled=enabled_hangWithQuit,
        successors=successors_hangWithQuit,
        source="spec/AegisPhase.tla:1117",
    ),
    Label.evictSlow: ActionInfo(
        label=Label.evictSlow,
        process="evictSlow",
        kind="single",
        process_ids=process_ids_evictSlow,
        enabled=enabled_evictSlow,
        successors=successors_evictSlow,
        source="spec/AegisPhase.tla:1126",
    ),
    Label.agentJoin: ActionInfo(
        label=Label.agentJoin,
        process="agentJoin",
        kind="single",
        process_ids=process_ids_agentJoin,
        enabled=enabled_agentJoin,
        successors=successors_agentJoin,
        source="spec/AegisPhase.tla:1142",
    ),
    Label.agentWork: ActionInfo(
        label=Label.agentWork,
        process="agentWork",
        kind="single",
        process_ids=process_ids_agentWork,
        enabled=enabled_agentWork,
        successors=successors_agentWork,
        source="spec/AegisPhase.tla:1164",
    ),
    Label.agentHang: ActionInfo(
        label=Label.agentHang,
        process="agentHang",
        kind="single",
        process_ids=process_ids_agentHang,
        enabled=enabled_agentHang,
        successors=successors_agentHang,
        source="spec/AegisPhase.tla:1182",
    ),
    Label.agentCheckpoint: ActionInfo(
        label=Label.agentCheckpoint,
        process="agentCheckpoint",
        kind="single",
        process_ids=process_ids_agentCheckpoint,
        enabled=enabled_agentCheckpoint,
        successors=successors_agentCheckpoint,
        source="spec/AegisPhase.tla:1192",
    ),
    Label.agentEvict: ActionInfo(
        label=Label.agentEvict,
        process="agentEvict",
        kind="single",
        process_ids=process_ids_agentEvict,
        enabled=enabled_agentEvict,
        successors=successors_agentEvict,
        source="spec/AegisPhase.tla:1201",
    ),
    Label.envPodRestart: ActionInfo(
        label=Label.envPodRestart,
        process="envPodRestart",
        kind="single",
        process_ids=process_ids_envPodRestart,
        enabled=enabled_envPodRestart,
        successors=successors_envPodRestart,
        source="spec/AegisPhase.tla:1212",
    ),
    Label.envDuplicate: ActionInfo(
        label=Label.envDuplicate,
        process="envDuplicate",
        kind="single",
        process_ids=process_ids_envDuplicate,
        enabled=enabled_envDuplicate,
        successors=successors_envDuplicate,
        source="spec/AegisPhase.tla:1223",
    ),
    Label.envQuit: ActionInfo(
        label=Label.envQuit,
        process="envQuit",
        kind="single",
        process_ids=process_ids_envQuit,
        enabled=enabled_envQuit,
        successors=successors_envQuit,
        source="spec/AegisPhase.tla:1233",
    ),
    Label.reschedule: ActionInfo(
        label=Label.reschedule,
        process="reschedule",
        kind="single",
        process_ids=process_ids_reschedule,
        enabled=enabled_reschedule,
        successors=successors_reschedule,
        source="spec/AegisPhase.tla:1241",
    ),
    Label.jobDone: ActionInfo(
        label=Label.jobDone,
        process="jobDone",
        kind="single",
        process_ids=process_ids_jobDone,
        enabled=enabled_jobDone,
        successors=successors_jobDone,
        source="spec/AegisPhase.tla:1251",
    ),
}

# Process name (None: the uniprocess algorithm or Terminating) → its labels, as in Next.
PROCESSES: dict[str | None, tuple[Label, ...]] = {
    "advance": (Label.advance,),
    "restartInRun": (Label.restartInRun,),
    "restartOutsideRun": (Label.restartOutsideRun,),
    "restartDone": (Label.restartDone,),
    "retriesExhausted": (Label.retriesExhausted,),
    "failedWrapUp": (Label.failedWrapUp,),
    "alignRetries": (Label.alignRetries,),
    "quitRequested": (Label.quitRequested,),
    "receive": (Label.receive,),
    "hangWithQuit": (Label.hangWithQuit,),
    "evictSlow": (Label.evictSlow,),
    "agentJoin": (Label.agentJoin,),
    "agentWork": (Label.agentWork,),
    "agentHang": (Label.agentHang,),
    "agentCheckpoint": (Label.agentCheckpoint,),
    "agentEvict": (Label.agentEvict,),
    "envPodRestart": (Label.envPodRestart,),
    "envDuplicate": (Label.envDuplicate,),
    "envQuit": (Label.envQuit,),
    "reschedule": (Label.reschedule,),
    "jobDone": (Label.jobDone,),
}


def next_states(c: Constants, s: State) -> Iterator[tuple[Label, Value, Successor]]:
    """Every step of Next from s: (label, process id, successor)."""
    for info in ACTIONS.values():
        for pid in _tla.ordered(info.process_ids(c)):
            for succ in info.successors(c, s, pid):
                yield info.label, pid, succ
