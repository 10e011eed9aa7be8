# Generated from spec/AegisPhase.tla by codegen — do not edit.
"""AegisPhase: Init and one pair of functions per label, as TLC's Next explores them."""

from __future__ import annotations

from collections.abc import Iterator

from aegis.values import Fn, Value, apply, fn

from . import _tla
from .defs import (
    CanAdvance,
    CanAlign,
    CanFailExhausted,
    CanQuit,
    CanRestartDone,
    CanRestartInRun,
    CanRestartOutsideRun,
    CanWrapUp,
    FreshFinish,
    Min,
    NextPhase,
    OrderPhases,
    Outcomes,
    Quiescent,
    Terminated,
    UnseenRestarts,
)
from .model import ActionInfo, Constants, State, Successor


def initial_states(c: Constants) -> list[State]:
    """Every initial state (Init, spec/AegisPhase.tla:551)."""
    return list(dict.fromkeys(_init(c)))


def _init(c: Constants) -> Iterator[State]:
    # 551: /\ phase = "Pending"
    phase = "Pending"
    # 552: /\ shouldQuit = FALSE
    shouldQuit = False
    # 553: /\ recoverCount = 0
    recoverCount = 0
    # 554: /\ innerPhase = [w \in Workers |-> "Pending"]
    innerPhase = fn((w, "Pending") for w in c.Workers)
    # 555: /\ finished = [w \in Workers |-> FALSE]
    finished = fn((w_2, False) for w_2 in c.Workers)
    # 556: /\ retries = [w \in Workers |-> 0]
    retries = fn((w_3, 0) for w_3 in c.Workers)
    # 557: /\ podRestarted = [w \in Workers |-> FALSE]
    podRestarted = fn((w_4, False) for w_4 in c.Workers)
    # 558: /\ masterSeq = InitSeqNum
    masterSeq = c.InitSeqNum
    # 559: /\ lastFinishSeq = [w \in Workers |-> InitSeqNum - 1]
    lastFinishSeq = fn((w_5, c.InitSeqNum - 1) for w_5 in c.Workers)
    # 560: /\ msgs = {}
    msgs = frozenset[Value]()
    # 561: /\ agentSeq = [w \in Workers |-> InitSeqNum]
    agentSeq = fn((w_6, c.InitSeqNum) for w_6 in c.Workers)
    # 562: /\ agentState = [w \in Workers |-> "Fresh"]
    agentState = fn((w_7, "Fresh") for w_7 in c.Workers)
    # 563: /\ faults = FaultBudget
    faults = c.FaultBudget
    # 564: /\ prevMasterSeq = InitSeqNum
    prevMasterSeq = c.InitSeqNum
    # 565: /\ finishCount = [w \in Workers |-> 0]
    finishCount = fn((w_8, 0) for w_8 in c.Workers)
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
        faults=faults,
        prevMasterSeq=prevMasterSeq,
        finishCount=finishCount,
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
    """advance at spec/AegisPhase.tla:567."""
    # 567: advance == /\ CanAdvance
    if not CanAdvance(c, s):
        return
    # 568: /\ LET next == NextPhase(phase) IN
    # 569: /\ phase' = next
    phase_next = NextPhase(c, s.phase)
    # 570: /\ innerPhase' = [w \in Workers |-> next]
    innerPhase_next = fn((w, NextPhase(c, s.phase)) for w in c.Workers)
    # 571: /\ IF next \in OrderPhases
    if NextPhase(c, s.phase) in OrderPhases(c):
        # 572: THEN /\ prevMasterSeq' = masterSeq
        prevMasterSeq_next = s.masterSeq
        # 573: /\ masterSeq' = masterSeq + 1
        masterSeq_next = s.masterSeq + 1
        # 574: /\ finished' = [w \in Workers |-> FALSE]
        finished_next = fn((w_2, False) for w_2 in c.Workers)
        # 575: /\ finishCount' = [w \in Workers |-> 0]
        finishCount_next = fn((w_3, 0) for w_3 in c.Workers)
        # 579: /\ UNCHANGED << shouldQuit, recoverCount, retries, podRestarted,
        shouldQuit_next = s.shouldQuit
        recoverCount_next = s.recoverCount
        retries_next = s.retries
        podRestarted_next = s.podRestarted
        lastFinishSeq_next = s.lastFinishSeq
        msgs_next = s.msgs
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
                faults=faults_next,
                prevMasterSeq=prevMasterSeq_next,
                finishCount=finishCount_next,
            ),
            (),
        )
    else:
        # 577: /\ UNCHANGED << finished, masterSeq, prevMasterSeq,
        finished_next = s.finished
        masterSeq_next = s.masterSeq
        prevMasterSeq_next = s.prevMasterSeq
        finishCount_next = s.finishCount
        # 579: /\ UNCHANGED << shouldQuit, recoverCount, retries, podRestarted,
        shouldQuit_next = s.shouldQuit
        recoverCount_next = s.recoverCount
        retries_next = s.retries
        podRestarted_next = s.podRestarted
        lastFinishSeq_next = s.lastFinishSeq
        msgs_next = s.msgs
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
                faults=faults_next,
                prevMasterSeq=prevMasterSeq_next,
                finishCount=finishCount_next,
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
    """restartInRun at spec/AegisPhase.tla:582."""
    # 582: restartInRun == /\ CanRestartInRun
    if not CanRestartInRun(c, s):
        return
    # 583: /\ \E w \in UnseenRestarts:
    for w in _tla.enum(UnseenRestarts(c, s)):
        # 584: /\ phase' = "Restarting"
        phase_next = "Restarting"
        # 585: /\ innerPhase' = [innerPhase EXCEPT ![w] = "Restarting"]
        innerPhase_next = _tla.except_value(s.innerPhase, (w,), "Restarting")
        # 586: /\ finished' = [finished EXCEPT ![w] = FALSE]
        finished_next = _tla.except_value(s.finished, (w,), False)
        # 587: /\ finishCount' = [finishCount EXCEPT ![w] = 0]
        finishCount_next = _tla.except_value(s.finishCount, (w,), 0)
        # 588: /\ lastFinishSeq' = [lastFinishSeq EXCEPT ![w] = InitSeqNum - 1]
        lastFinishSeq_next = _tla.except_value(s.lastFinishSeq, (w,), c.InitSeqNum - 1)
        # 589: /\ msgs' = {m \in msgs : m.from # w}
        msgs_next = frozenset(m for m in s.msgs if apply(m, "from") != w)
        # 590: /\ retries' = [retries EXCEPT ![w] = retries[w] + 1]
        retries_next = _tla.except_value(s.retries, (w,), apply(s.retries, w) + 1)
        # 591: /\ recoverCount' = Min(recoverCount + 1, MaxRetry)
        recoverCount_next = Min(c, s.recoverCount + 1, c.MaxRetry)
        # 592: /\ UNCHANGED << shouldQuit, podRestarted, masterSeq, agentSeq,
        shouldQuit_next = s.shouldQuit
        podRestarted_next = s.podRestarted
        masterSeq_next = s.masterSeq
        agentSeq_next = s.agentSeq
        agentState_next = s.agentState
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
                faults=faults_next,
                prevMasterSeq=prevMasterSeq_next,
                finishCount=finishCount_next,
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
    """restartOutsideRun at spec/AegisPhase.tla:595."""
    # 595: restartOutsideRun == /\ CanRestartOutsideRun
    if not CanRestartOutsideRun(c, s):
        return
    # 596: /\ \E w \in UnseenRestarts:
    for w in _tla.enum(UnseenRestarts(c, s)):
        # 597: /\ innerPhase' = [innerPhase EXCEPT ![w] = "Restarting"]
        innerPhase_next = _tla.except_value(s.innerPhase, (w,), "Restarting")
        # 598: /\ finished' = [finished EXCEPT ![w] = FALSE]
        finished_next = _tla.except_value(s.finished, (w,), False)
        # 599: /\ finishCount' = [finishCount EXCEPT ![w] = 0]
        finishCount_next = _tla.except_value(s.finishCount, (w,), 0)
        # 600: /\ lastFinishSeq' = [lastFinishSeq EXCEPT ![w] = InitSeqNum - 1]
        lastFinishSeq_next = _tla.except_value(s.lastFinishSeq, (w,), c.InitSeqNum - 1)
        # 601: /\ msgs' = {m \in msgs : m.from # w}
        msgs_next = frozenset(m for m in s.msgs if apply(m, "from") != w)
        # 602: /\ UNCHANGED << phase, shouldQuit, recoverCount, retries,
        phase_next = s.phase
        shouldQuit_next = s.shouldQuit
        recoverCount_next = s.recoverCount
        retries_next = s.retries
        podRestarted_next = s.podRestarted
        masterSeq_next = s.masterSeq
        agentSeq_next = s.agentSeq
        agentState_next = s.agentState
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
                faults=faults_next,
                prevMasterSeq=prevMasterSeq_next,
                finishCount=finishCount_next,
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
    """restartDone at spec/AegisPhase.tla:606."""
    # 606: restartDone == /\ CanRestartDone
    if not CanRestartDone(c, s):
        return
    # 607: /\ phase' = "Troubleshooting"
    phase_next = "Troubleshooting"
    # 608: /\ innerPhase' = [w \in Workers |-> "Troubleshooting"]
    innerPhase_next = fn((w, "Troubleshooting") for w in c.Workers)
    # 609: /\ finished' = [w \in Workers |-> FALSE]
    finished_next = fn((w_2, False) for w_2 in c.Workers)
    # 610: /\ finishCount' = [w \in Workers |-> 0]
    finishCount_next = fn((w_3, 0) for w_3 in c.Workers)
    # 611: /\ prevMasterSeq' = masterSeq
    prevMasterSeq_next = s.masterSeq
    # 612: /\ masterSeq' = masterSeq + 1
    masterSeq_next = s.masterSeq + 1
    # 613: /\ UNCHANGED << shouldQuit, recoverCount, retries, podRestarted,
    shouldQuit_next = s.shouldQuit
    recoverCount_next = s.recoverCount
    retries_next = s.retries
    podRestarted_next = s.podRestarted
    lastFinishSeq_next = s.lastFinishSeq
    msgs_next = s.msgs
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
            faults=faults_next,
            prevMasterSeq=prevMasterSeq_next,
            finishCount=finishCount_next,
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
    """retriesExhausted at spec/AegisPhase.tla:617."""
    # 617: retriesExhausted == /\ CanFailExhausted
    if not CanFailExhausted(c, s):
        return
    # 618: /\ phase' = "Failed"
    phase_next = "Failed"
    # 619: /\ innerPhase' = [w \in Workers |-> "Failed"]
    innerPhase_next = fn((w, "Failed") for w in c.Workers)
    # 620: /\ UNCHANGED << shouldQuit, recoverCount, finished,
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
    faults_next = s.faults
    prevMasterSeq_next = s.prevMasterSeq
    finishCount_next = s.finishCount
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
            faults=faults_next,
            prevMasterSeq=prevMasterSeq_next,
            finishCount=finishCount_next,
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
    """failedWrapUp at spec/AegisPhase.tla:625."""
    # 625: failedWrapUp == /\ CanWrapUp
    if not CanWrapUp(c, s):
        return
    # 626: /\ recoverCount' = MaxRetry + 1
    recoverCount_next = c.MaxRetry + 1
    # 627: /\ shouldQuit' = TRUE
    shouldQuit_next = True
    # 628: /\ UNCHANGED << phase, innerPhase, finished, retries,
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
    faults_next = s.faults
    prevMasterSeq_next = s.prevMasterSeq
    finishCount_next = s.finishCount
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
            faults=faults_next,
            prevMasterSeq=prevMasterSeq_next,
            finishCount=finishCount_next,
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
    """alignRetries at spec/AegisPhase.tla:633."""
    # 633: alignRetries == /\ CanAlign
    if not CanAlign(c, s):
        return
    # 634: /\ retries' = [w \in Workers |-> recoverCount]
    retries_next = fn((w, s.recoverCount) for w in c.Workers)
    # 635: /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase,
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
    faults_next = s.faults
    prevMasterSeq_next = s.prevMasterSeq
    finishCount_next = s.finishCount
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
            faults=faults_next,
            prevMasterSeq=prevMasterSeq_next,
            finishCount=finishCount_next,
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
    """quitRequested at spec/AegisPhase.tla:640."""
    # 640: quitRequested == /\ CanQuit
    if not CanQuit(c, s):
        return
    # 641: /\ phase' = "Failed"
    phase_next = "Failed"
    # 642: /\ innerPhase' = [w \in Workers |-> "Failed"]
    innerPhase_next = fn((w, "Failed") for w in c.Workers)
    # 643: /\ UNCHANGED << shouldQuit, recoverCount, finished, retries,
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
    faults_next = s.faults
    prevMasterSeq_next = s.prevMasterSeq
    finishCount_next = s.finishCount
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
            faults=faults_next,
            prevMasterSeq=prevMasterSeq_next,
            finishCount=finishCount_next,
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
    """receive at spec/AegisPhase.tla:648."""
    # 648: receive == /\ Quiescent
    if not Quiescent(c, s):
        return
    # 649: /\ \E m \in msgs:
    for m in _tla.enum(s.msgs):
        # 650: /\ msgs' = msgs \ {m}
        msgs_next = s.msgs - frozenset({m})
        # 651: /\ IF m.type = "Finish"
        if apply(m, "type") == "Finish":
            # 652: THEN /\ IF phase \in OrderPhases /\ ~podRestarted[m.from] /\ FreshFinish(m)
            if (
                s.phase in OrderPhases(c)
                and not apply(s.podRestarted, apply(m, "from"))
                and FreshFinish(c, s, m)
            ):
                # 653: THEN /\ finished' = [finished EXCEPT ![m.from] = TRUE]
                finished_next = _tla.except_value(s.finished, (apply(m, "from"),), True)
                # 654: /\ lastFinishSeq' = [lastFinishSeq EXCEPT ![m.from] = m.seq]
                lastFinishSeq_next = _tla.except_value(
                    s.lastFinishSeq, (apply(m, "from"),), apply(m, "seq")
                )
                # 655: /\ finishCount' = [finishCount EXCEPT ![m.from] = finishCount[m.from] + 1]
                finishCount_next = _tla.except_value(
                    s.finishCount, (apply(m, "from"),), apply(s.finishCount, apply(m, "from")) + 1
                )
                # 659: /\ UNCHANGED << phase, recoverCount, innerPhase,
                phase_next = s.phase
                recoverCount_next = s.recoverCount
                innerPhase_next = s.innerPhase
                retries_next = s.retries
                masterSeq_next = s.masterSeq
                prevMasterSeq_next = s.prevMasterSeq
                # 677: /\ UNCHANGED << shouldQuit, podRestarted, agentSeq, agentState,
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
                        faults=faults_next,
                        prevMasterSeq=prevMasterSeq_next,
                        finishCount=finishCount_next,
                    ),
                    (("m", m),),
                )
            else:
                # 657: /\ UNCHANGED << finished, lastFinishSeq,
                finished_next = s.finished
                lastFinishSeq_next = s.lastFinishSeq
                finishCount_next = s.finishCount
                # 659: /\ UNCHANGED << phase, recoverCount, innerPhase,
                phase_next = s.phase
                recoverCount_next = s.recoverCount
                innerPhase_next = s.innerPhase
                retries_next = s.retries
                masterSeq_next = s.masterSeq
                prevMasterSeq_next = s.prevMasterSeq
                # 677: /\ UNCHANGED << shouldQuit, podRestarted, agentSeq, agentState,
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
                        faults=faults_next,
                        prevMasterSeq=prevMasterSeq_next,
                        finishCount=finishCount_next,
                    ),
                    (("m", m),),
                )
        else:
            # 661: ELSE /\ IF phase = "RunCommand" /\ m.seq = masterSeq /\ ~podRestarted[m.from]
            if (
                s.phase == "RunCommand"
                and apply(m, "seq") == s.masterSeq
                and not apply(s.podRestarted, apply(m, "from"))
            ):
                # 662: THEN /\ retries' = [retries EXCEPT ![(m.from)] = retries[(m.from)] + 1]
                retries_next = _tla.except_value(
                    s.retries, (apply(m, "from"),), apply(s.retries, apply(m, "from")) + 1
                )
                # 663: /\ recoverCount' = Min(recoverCount + 1, MaxRetry)
                recoverCount_next = Min(c, s.recoverCount + 1, c.MaxRetry)
                # 664: /\ phase' = "Troubleshooting"
                phase_next = "Troubleshooting"
                # 665: /\ innerPhase' = [w \in Workers |-> "Troubleshooting"]
                innerPhase_next = fn((w, "Troubleshooting") for w in c.Workers)
                # 666: /\ finished' = [w \in Workers |-> FALSE]
                finished_next = fn((w_2, False) for w_2 in c.Workers)
                # 667: /\ finishCount' = [w \in Workers |-> 0]
                finishCount_next = fn((w_3, 0) for w_3 in c.Workers)
                # 668: /\ prevMasterSeq' = masterSeq
                prevMasterSeq_next = s.masterSeq
                # 669: /\ masterSeq' = masterSeq + 1
                masterSeq_next = s.masterSeq + 1
                # 676: /\ UNCHANGED lastFinishSeq
                lastFinishSeq_next = s.lastFinishSeq
                # 677: /\ UNCHANGED << shouldQuit, podRestarted, agentSeq, agentState,
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
                        faults=faults_next,
                        prevMasterSeq=prevMasterSeq_next,
                        finishCount=finishCount_next,
                    ),
                    (("m", m),),
                )
            else:
                # 671: /\ UNCHANGED << phase, recoverCount,
                phase_next = s.phase
                recoverCount_next = s.recoverCount
                innerPhase_next = s.innerPhase
                finished_next = s.finished
                retries_next = s.retries
                masterSeq_next = s.masterSeq
                prevMasterSeq_next = s.prevMasterSeq
                finishCount_next = s.finishCount
                # 676: /\ UNCHANGED lastFinishSeq
                lastFinishSeq_next = s.lastFinishSeq
                # 677: /\ UNCHANGED << shouldQuit, podRestarted, agentSeq, agentState,
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
                        faults=faults_next,
                        prevMasterSeq=prevMasterSeq_next,
                        finishCount=finishCount_next,
                    ),
                    (("m", m),),
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
    """agentJoin at spec/AegisPhase.tla:680."""
    # 680: agentJoin == /\ Quiescent /\ ~Terminated
    if not Quiescent(c, s):
        return
    if Terminated(c, s):
        return
    # 681: /\ \E w \in {x \in Workers : agentState[x] = "Fresh"
    for w in _tla.enum(
        frozenset(
            x
            for x in c.Workers
            if apply(s.agentState, x) == "Fresh"
            and (not apply(s.podRestarted, x) or apply(s.innerPhase, x) == "Restarting")
        )
    ):
        # 683: LET ack == [from |-> w, type |-> "ACK", seq |-> agentSeq[w]] IN
        # 684: /\ agentState' = [agentState EXCEPT ![w] = "Ready"]
        agentState_next = _tla.except_value(s.agentState, (w,), "Ready")
        # 685: /\ IF podRestarted[w]
        if apply(s.podRestarted, w):
            # 686: THEN /\ podRestarted' = [podRestarted EXCEPT ![w] = FALSE]
            podRestarted_next = _tla.except_value(s.podRestarted, (w,), False)
            # 687: /\ innerPhase' = [innerPhase EXCEPT ![w] = phase]
            innerPhase_next = _tla.except_value(s.innerPhase, (w,), s.phase)
            # 690: /\ IF phase = "Pending" /\ FreshFinish(ack)
            if s.phase == "Pending" and FreshFinish(
                c, s, Fn({"from": w, "type": "ACK", "seq": apply(s.agentSeq, w)})
            ):
                # 691: THEN /\ finished' = [finished EXCEPT ![w] = TRUE]
                finished_next = _tla.except_value(s.finished, (w,), True)
                # 692: /\ lastFinishSeq' = [lastFinishSeq EXCEPT ![w] = ack.seq]
                lastFinishSeq_next = _tla.except_value(
                    s.lastFinishSeq,
                    (w,),
                    apply(Fn({"from": w, "type": "ACK", "seq": apply(s.agentSeq, w)}), "seq"),
                )
                # 693: /\ finishCount' = [finishCount EXCEPT ![w] = finishCount[w] + 1]
                finishCount_next = _tla.except_value(
                    s.finishCount, (w,), apply(s.finishCount, w) + 1
                )
                # 697: /\ UNCHANGED << phase, shouldQuit, recoverCount, retries,
                phase_next = s.phase
                shouldQuit_next = s.shouldQuit
                recoverCount_next = s.recoverCount
                retries_next = s.retries
                masterSeq_next = s.masterSeq
                msgs_next = s.msgs
                agentSeq_next = s.agentSeq
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
                        faults=faults_next,
                        prevMasterSeq=prevMasterSeq_next,
                        finishCount=finishCount_next,
                    ),
                    (("w", w),),
                )
            else:
                # 695: /\ UNCHANGED << finished, lastFinishSeq,
                finished_next = s.finished
                lastFinishSeq_next = s.lastFinishSeq
                finishCount_next = s.finishCount
                # 697: /\ UNCHANGED << phase, shouldQuit, recoverCount, retries,
                phase_next = s.phase
                shouldQuit_next = s.shouldQuit
                recoverCount_next = s.recoverCount
                retries_next = s.retries
                masterSeq_next = s.masterSeq
                msgs_next = s.msgs
                agentSeq_next = s.agentSeq
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
                        faults=faults_next,
                        prevMasterSeq=prevMasterSeq_next,
                        finishCount=finishCount_next,
                    ),
                    (("w", w),),
                )
        else:
            # 689: /\ UNCHANGED << innerPhase, podRestarted >>
            innerPhase_next = s.innerPhase
            podRestarted_next = s.podRestarted
            # 690: /\ IF phase = "Pending" /\ FreshFinish(ack)
            if s.phase == "Pending" and FreshFinish(
                c, s, Fn({"from": w, "type": "ACK", "seq": apply(s.agentSeq, w)})
            ):
                # 691: THEN /\ finished' = [finished EXCEPT ![w] = TRUE]
                finished_next = _tla.except_value(s.finished, (w,), True)
                # 692: /\ lastFinishSeq' = [lastFinishSeq EXCEPT ![w] = ack.seq]
                lastFinishSeq_next = _tla.except_value(
                    s.lastFinishSeq,
                    (w,),
                    apply(Fn({"from": w, "type": "ACK", "seq": apply(s.agentSeq, w)}), "seq"),
                )
                # 693: /\ finishCount' = [finishCount EXCEPT ![w] = finishCount[w] + 1]
                finishCount_next = _tla.except_value(
                    s.finishCount, (w,), apply(s.finishCount, w) + 1
                )
                # 697: /\ UNCHANGED << phase, shouldQuit, recoverCount, retries,
                phase_next = s.phase
                shouldQuit_next = s.shouldQuit
                recoverCount_next = s.recoverCount
                retries_next = s.retries
                masterSeq_next = s.masterSeq
                msgs_next = s.msgs
                agentSeq_next = s.agentSeq
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
                        faults=faults_next,
                        prevMasterSeq=prevMasterSeq_next,
                        finishCount=finishCount_next,
                    ),
                    (("w", w),),
                )
            else:
                # 695: /\ UNCHANGED << finished, lastFinishSeq,
                finished_next = s.finished
                lastFinishSeq_next = s.lastFinishSeq
                finishCount_next = s.finishCount
                # 697: /\ UNCHANGED << phase, shouldQuit, recoverCount, retries,
                phase_next = s.phase
                shouldQuit_next = s.shouldQuit
                recoverCount_next = s.recoverCount
                retries_next = s.retries
                masterSeq_next = s.masterSeq
                msgs_next = s.msgs
                agentSeq_next = s.agentSeq
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
                        faults=faults_next,
                        prevMasterSeq=prevMasterSeq_next,
                        finishCount=finishCount_next,
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
    """agentWork at spec/AegisPhase.tla:700."""
    # 700: agentWork == /\ \E w \in {x \in Workers : agentState[x] = "Ready" /\ agentSeq[x] < mas...
    for w in _tla.enum(
        frozenset(
            x
            for x in c.Workers
            if apply(s.agentState, x) == "Ready" and apply(s.agentSeq, x) < s.masterSeq
        )
    ):
        # 701: \E outcome \in Outcomes:
        for outcome in _tla.enum(Outcomes(c, s)):
            # 702: /\ Quiescent /\ phase \in OrderPhases
            if Quiescent(c, s) and s.phase in OrderPhases(c):
                # 703: /\ agentSeq' = [agentSeq EXCEPT ![w] = masterSeq]
                agentSeq_next = _tla.except_value(s.agentSeq, (w,), s.masterSeq)
                # 704: /\ msgs' = (msgs \cup {[from |-> w, type |-> outcome, seq |-> masterSeq]})
                msgs_next = s.msgs | frozenset(
                    {Fn({"from": w, "type": outcome, "seq": s.masterSeq})}
                )
                # 705: /\ IF outcome = "Error"
                if outcome == "Error":
                    # 706: THEN /\ faults' = faults - 1
                    faults_next = s.faults - 1
                    # 707: /\ IF phase # "RunCommand"
                    if s.phase != "RunCommand":
                        # 708: THEN /\ agentState' = [agentState EXCEPT ![w] = "Exited"]
                        agentState_next = _tla.except_value(s.agentState, (w,), "Exited")
                        # 713: /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase,
                        phase_next = s.phase
                        shouldQuit_next = s.shouldQuit
                        recoverCount_next = s.recoverCount
                        innerPhase_next = s.innerPhase
                        finished_next = s.finished
                        retries_next = s.retries
                        podRestarted_next = s.podRestarted
                        masterSeq_next = s.masterSeq
                        lastFinishSeq_next = s.lastFinishSeq
                        prevMasterSeq_next = s.prevMasterSeq
                        finishCount_next = s.finishCount
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
                                faults=faults_next,
                                prevMasterSeq=prevMasterSeq_next,
                                finishCount=finishCount_next,
                            ),
                            (("w", w), ("outcome", outcome)),
                        )
                    else:
                        # 710: /\ UNCHANGED agentState
                        agentState_next = s.agentState
                        # 713: /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase,
                        phase_next = s.phase
                        shouldQuit_next = s.shouldQuit
                        recoverCount_next = s.recoverCount
                        innerPhase_next = s.innerPhase
                        finished_next = s.finished
                        retries_next = s.retries
                        podRestarted_next = s.podRestarted
                        masterSeq_next = s.masterSeq
                        lastFinishSeq_next = s.lastFinishSeq
                        prevMasterSeq_next = s.prevMasterSeq
                        finishCount_next = s.finishCount
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
                                faults=faults_next,
                                prevMasterSeq=prevMasterSeq_next,
                                finishCount=finishCount_next,
                            ),
                            (("w", w), ("outcome", outcome)),
                        )
                else:
                    # 712: /\ UNCHANGED << agentState, faults >>
                    agentState_next = s.agentState
                    faults_next = s.faults
                    # 713: /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase,
                    phase_next = s.phase
                    shouldQuit_next = s.shouldQuit
                    recoverCount_next = s.recoverCount
                    innerPhase_next = s.innerPhase
                    finished_next = s.finished
                    retries_next = s.retries
                    podRestarted_next = s.podRestarted
                    masterSeq_next = s.masterSeq
                    lastFinishSeq_next = s.lastFinishSeq
                    prevMasterSeq_next = s.prevMasterSeq
                    finishCount_next = s.finishCount
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
                            faults=faults_next,
                            prevMasterSeq=prevMasterSeq_next,
                            finishCount=finishCount_next,
                        ),
                        (("w", w), ("outcome", outcome)),
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
    """envPodRestart at spec/AegisPhase.tla:717."""
    # 717: envPodRestart == /\ \E w \in Workers:
    for w in _tla.enum(c.Workers):
        # 718: /\ Quiescent /\ faults > 0 /\ ~Terminated
        if Quiescent(c, s) and s.faults > 0 and not Terminated(c, s):
            # 719: /\ faults' = faults - 1
            faults_next = s.faults - 1
            # 720: /\ podRestarted' = [podRestarted EXCEPT ![w] = TRUE]
            podRestarted_next = _tla.except_value(s.podRestarted, (w,), True)
            # 721: /\ agentState' = [agentState EXCEPT ![w] = "Fresh"]
            agentState_next = _tla.except_value(s.agentState, (w,), "Fresh")
            # 722: /\ agentSeq' = [agentSeq EXCEPT ![w] = InitSeqNum]
            agentSeq_next = _tla.except_value(s.agentSeq, (w,), c.InitSeqNum)
            # 723: /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase,
            phase_next = s.phase
            shouldQuit_next = s.shouldQuit
            recoverCount_next = s.recoverCount
            innerPhase_next = s.innerPhase
            finished_next = s.finished
            retries_next = s.retries
            masterSeq_next = s.masterSeq
            lastFinishSeq_next = s.lastFinishSeq
            msgs_next = s.msgs
            prevMasterSeq_next = s.prevMasterSeq
            finishCount_next = s.finishCount
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
                    faults=faults_next,
                    prevMasterSeq=prevMasterSeq_next,
                    finishCount=finishCount_next,
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
    """envDuplicate at spec/AegisPhase.tla:727."""
    # 727: envDuplicate == /\ \E w \in {x \in Workers : lastFinishSeq[x] >= InitSeqNum}:
    for w in _tla.enum(
        frozenset(x for x in c.Workers if apply(s.lastFinishSeq, x) >= c.InitSeqNum)
    ):
        # 728: /\ Quiescent /\ faults > 0 /\ ~Terminated
        if Quiescent(c, s) and s.faults > 0 and not Terminated(c, s):
            # 729: /\ faults' = faults - 1
            faults_next = s.faults - 1
            # 730: /\ msgs' = (msgs \cup {[from |-> w, type |-> "Finish", seq |-> lastFinishSeq[w...
            msgs_next = s.msgs | frozenset(
                {Fn({"from": w, "type": "Finish", "seq": apply(s.lastFinishSeq, w)})}
            )
            # 731: /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase,
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
            prevMasterSeq_next = s.prevMasterSeq
            finishCount_next = s.finishCount
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
                    faults=faults_next,
                    prevMasterSeq=prevMasterSeq_next,
                    finishCount=finishCount_next,
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
    """envQuit at spec/AegisPhase.tla:736."""
    # 736: envQuit == /\ Quiescent /\ faults > 0 /\ ~shouldQuit /\ ~Terminated
    if not Quiescent(c, s):
        return
    if s.faults <= 0:
        return
    if s.shouldQuit:
        return
    if Terminated(c, s):
        return
    # 737: /\ faults' = faults - 1
    faults_next = s.faults - 1
    # 738: /\ shouldQuit' = TRUE
    shouldQuit_next = True
    # 739: /\ UNCHANGED << phase, recoverCount, innerPhase, finished, retries,
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
    prevMasterSeq_next = s.prevMasterSeq
    finishCount_next = s.finishCount
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
            faults=faults_next,
            prevMasterSeq=prevMasterSeq_next,
            finishCount=finishCount_next,
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
    """reschedule at spec/AegisPhase.tla:743."""
    # 743: reschedule == /\ Quiescent /\ ~Terminated
    if not Quiescent(c, s):
        return
    if Terminated(c, s):
        return
    # 744: /\ \E w \in {x \in Workers : agentState[x] = "Exited"}:
    for w in _tla.enum(frozenset(x for x in c.Workers if apply(s.agentState, x) == "Exited")):
        # 745: /\ podRestarted' = [podRestarted EXCEPT ![w] = TRUE]
        podRestarted_next = _tla.except_value(s.podRestarted, (w,), True)
        # 746: /\ agentState' = [agentState EXCEPT ![w] = "Fresh"]
        agentState_next = _tla.except_value(s.agentState, (w,), "Fresh")
        # 747: /\ agentSeq' = [agentSeq EXCEPT ![w] = InitSeqNum]
        agentSeq_next = _tla.except_value(s.agentSeq, (w,), c.InitSeqNum)
        # 748: /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase,
        phase_next = s.phase
        shouldQuit_next = s.shouldQuit
        recoverCount_next = s.recoverCount
        innerPhase_next = s.innerPhase
        finished_next = s.finished
        retries_next = s.retries
        masterSeq_next = s.masterSeq
        lastFinishSeq_next = s.lastFinishSeq
        msgs_next = s.msgs
        faults_next = s.faults
        prevMasterSeq_next = s.prevMasterSeq
        finishCount_next = s.finishCount
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
                faults=faults_next,
                prevMasterSeq=prevMasterSeq_next,
                finishCount=finishCount_next,
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
    """jobDone at spec/AegisPhase.tla:752."""
    # 752: jobDone == /\ Terminated
    if not Terminated(c, s):
        return
    # 753: /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase,
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
    faults_next = s.faults
    prevMasterSeq_next = s.prevMasterSeq
    finishCount_next = s.finishCount
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
            faults=faults_next,
            prevMasterSeq=prevMasterSeq_next,
            finishCount=finishCount_next,
        ),
        (),
    )


ACTIONS: dict[str, ActionInfo] = {
    "advance": ActionInfo(
        label="advance",
        process="advance",
        kind="single",
        process_ids=process_ids_advance,
        enabled=enabled_advance,
        successors=successors_advance,
        source="spec/AegisPhase.tla:567",
    ),
    "restartInRun": ActionInfo(
        label="restartInRun",
        process="restartInRun",
        kind="single",
        process_ids=process_ids_restartInRun,
        enabled=enabled_restartInRun,
        successors=successors_restartInRun,
        source="spec/AegisPhase.tla:582",
    ),
    "restartOutsideRun": ActionInfo(
        label="restartOutsideRun",
        process="restartOutsideRun",
        kind="single",
        process_ids=process_ids_restartOutsideRun,
        enabled=enabled_restartOutsideRun,
        successors=successors_restartOutsideRun,
        source="spec/AegisPhase.tla:595",
    ),
    "restartDone": ActionInfo(
        label="restartDone",
        process="restartDone",
        kind="single",
        process_ids=process_ids_restartDone,
        enabled=enabled_restartDone,
        successors=successors_restartDone,
        source="spec/AegisPhase.tla:606",
    ),
    "retriesExhausted": ActionInfo(
        label="retriesExhausted",
        process="retriesExhausted",
        kind="single",
        process_ids=process_ids_retriesExhausted,
        enabled=enabled_retriesExhausted,
        successors=successors_retriesExhausted,
        source="spec/AegisPhase.tla:617",
    ),
    "failedWrapUp": ActionInfo(
        label="failedWrapUp",
        process="failedWrapUp",
        kind="single",
        process_ids=process_ids_failedWrapUp,
        enabled=enabled_failedWrapUp,
        successors=successors_failedWrapUp,
        source="spec/AegisPhase.tla:625",
    ),
    "alignRetries": ActionInfo(
        label="alignRetries",
        process="alignRetries",
        kind="single",
        process_ids=process_ids_alignRetries,
        enabled=enabled_alignRetries,
        successors=successors_alignRetries,
        source="spec/AegisPhase.tla:633",
    ),
    "quitRequested": ActionInfo(
        label="quitRequested",
        process="quitRequested",
        kind="single",
        process_ids=process_ids_quitRequested,
        enabled=enabled_quitRequested,
        successors=successors_quitRequested,
        source="spec/AegisPhase.tla:640",
    ),
    "receive": ActionInfo(
        label="receive",
        process="receive",
        kind="single",
        process_ids=process_ids_receive,
        enabled=enabled_receive,
        successors=successors_receive,
        source="spec/AegisPhase.tla:648",
    ),
    "agentJoin": ActionInfo(
        label="agentJoin",
        process="agentJoin",
        kind="single",
        process_ids=process_ids_agentJoin,
        enabled=enabled_agentJoin,
        successors=successors_agentJoin,
        source="spec/AegisPhase.tla:680",
    ),
    "agentWork": ActionInfo(
        label="agentWork",
        process="agentWork",
        kind="single",
        process_ids=process_ids_agentWork,
        enabled=enabled_agentWork,
        successors=successors_agentWork,
        source="spec/AegisPhase.tla:700",
    ),
    "envPodRestart": ActionInfo(
        label="envPodRestart",
        process="envPodRestart",
        kind="single",
        process_ids=process_ids_envPodRestart,
        enabled=enabled_envPodRestart,
        successors=successors_envPodRestart,
        source="spec/AegisPhase.tla:717",
    ),
    "envDuplicate": ActionInfo(
        label="envDuplicate",
        process="envDuplicate",
        kind="single",
        process_ids=process_ids_envDuplicate,
        enabled=enabled_envDuplicate,
        successors=successors_envDuplicate,
        source="spec/AegisPhase.tla:727",
    ),
    "envQuit": ActionInfo(
        label="envQuit",
        process="envQuit",
        kind="single",
        process_ids=process_ids_envQuit,
        enabled=enabled_envQuit,
        successors=successors_envQuit,
        source="spec/AegisPhase.tla:736",
    ),
    "reschedule": ActionInfo(
        label="reschedule",
        process="reschedule",
        kind="single",
        process_ids=process_ids_reschedule,
        enabled=enabled_reschedule,
        successors=successors_reschedule,
        source="spec/AegisPhase.tla:743",
    ),
    "jobDone": ActionInfo(
        label="jobDone",
        process="jobDone",
        kind="single",
        process_ids=process_ids_jobDone,
        enabled=enabled_jobDone,
        successors=successors_jobDone,
        source="spec/AegisPhase.tla:752",
    ),
}

# Process name (None: the uniprocess algorithm or Terminating) → its labels, as in Next.
PROCESSES: dict[str | None, tuple[str, ...]] = {
    "advance": ("advance",),
    "restartInRun": ("restartInRun",),
    "restartOutsideRun": ("restartOutsideRun",),
    "restartDone": ("restartDone",),
    "retriesExhausted": ("retriesExhausted",),
    "failedWrapUp": ("failedWrapUp",),
    "alignRetries": ("alignRetries",),
    "quitRequested": ("quitRequested",),
    "receive": ("receive",),
    "agentJoin": ("agentJoin",),
    "agentWork": ("agentWork",),
    "envPodRestart": ("envPodRestart",),
    "envDuplicate": ("envDuplicate",),
    "envQuit": ("envQuit",),
    "reschedule": ("reschedule",),
    "jobDone": ("jobDone",),
}


def next_states(c: Constants, s: State) -> Iterator[tuple[str, Value, Successor]]:
    """Every step of Next from s: (label, process id, successor)."""
    for info in ACTIONS.values():
        for pid in _tla.ordered(info.process_ids(c)):
            for succ in info.successors(c, s, pid):
                yield info.label, pid, succ
