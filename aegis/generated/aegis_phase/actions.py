# Generated from spec/AegisPhase.tla by codegen — do not edit.
"""AegisPhase: Init and one pair of functions per label, as TLC's Next explores them."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping

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
from .model import VARIABLES, ActionInfo, Constants, Label, State, Successor

# Quantifiers kept current per state (see _tla.Site).
_S_agentJoin_1 = _tla.Site(
    "agentJoin", ("agentState", "innerPhase", "podRestarted"), (), by_value=True
)
_S_agentWork_1 = _tla.Site("agentWork", ("agentSeq", "agentState"), ("masterSeq",), by_value=True)
_S_agentHang_1 = _tla.Site("agentHang", ("agentSeq", "agentState"), ("masterSeq",), by_value=True)
_S_agentCheckpoint_1 = _tla.Site(
    "agentCheckpoint", ("agentSeq", "agentState"), ("masterSeq",), by_value=True
)
_S_agentEvict_1 = _tla.Site(
    "agentEvict", ("agentSeq", "agentState", "evict"), ("masterSeq",), by_value=True
)
_S_envDuplicate_1 = _tla.Site("envDuplicate", ("lastFinishSeq",), (), by_value=True)
_S_reschedule_1 = _tla.Site("reschedule", ("agentState",), (), by_value=True)


def initial_states(c: Constants) -> list[State]:
    """Every initial state (Init, spec/AegisPhase.tla)."""
    return list(dict.fromkeys(_init(c)))


def _init(c: Constants) -> Iterator[State]:
    # /\ phase = "Pending"
    phase = "Pending"
    # /\ shouldQuit = FALSE
    shouldQuit = False
    # /\ recoverCount = 0
    recoverCount = 0
    # /\ innerPhase = [w \in Workers |-> "Pending"]
    innerPhase = _tla.const_fn(c.Workers, lambda: "Pending")
    # /\ finished = [w \in Workers |-> FALSE]
    finished = _tla.const_fn(c.Workers, lambda: False)
    # /\ retries = [w \in Workers |-> 0]
    retries = _tla.const_fn(c.Workers, lambda: 0)
    # /\ podRestarted = [w \in Workers |-> FALSE]
    podRestarted = _tla.const_fn(c.Workers, lambda: False)
    # /\ masterSeq = InitSeqNum
    masterSeq = c.InitSeqNum
    # /\ lastFinishSeq = [w \in Workers |-> InitSeqNum - 1]
    lastFinishSeq = _tla.const_fn(c.Workers, lambda: c.InitSeqNum - 1)
    # /\ msgs = {}
    msgs = frozenset[Value]()
    # /\ agentSeq = [w \in Workers |-> InitSeqNum]
    agentSeq = _tla.const_fn(c.Workers, lambda: c.InitSeqNum)
    # /\ agentState = [w \in Workers |-> "Fresh"]
    agentState = _tla.const_fn(c.Workers, lambda: "Fresh")
    # /\ slow = [w \in Workers |-> FALSE]
    slow = _tla.const_fn(c.Workers, lambda: False)
    # /\ evict = [w \in Workers |-> FALSE]
    evict = _tla.const_fn(c.Workers, lambda: False)
    # /\ checkpointed = FALSE
    checkpointed = False
    # /\ faults = FaultBudget
    faults = c.FaultBudget
    # /\ prevMasterSeq = InitSeqNum
    prevMasterSeq = c.InitSeqNum
    # /\ finishCount = [w \in Workers |-> 0]
    finishCount = _tla.const_fn(c.Workers, lambda: 0)
    # /\ countedFailures = 0
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


def enabled_advance(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> bool:
    """Whether advance can take a step from s (with the choices in bind)."""
    return next(_steps_advance(c, s, self, bind), None) is not None


def successors_advance(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> list[Successor]:
    """Every successor of s by advance (with the choices in bind)."""
    return _tla.unique(list(_steps_advance(c, s, self, bind)))


def _steps_advance(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> Iterator[Successor]:
    """advance in spec/AegisPhase.tla: its successors in a fixed order."""
    # advance == /\ CanAdvance
    if not CanAdvance(c, s):
        return
    # /\ LET next == NextPhase(phase) IN
    # /\ phase' = next
    phase_next = NextPhase(c, s.phase)
    # /\ innerPhase' = [w \in Workers |-> next]
    innerPhase_next = fn((w, NextPhase(c, s.phase)) for w in c.Workers)
    # /\ IF next \in OrderPhases
    if NextPhase(c, s.phase) in OrderPhases(c):
        # THEN /\ prevMasterSeq' = masterSeq
        prevMasterSeq_next = s.masterSeq
        # /\ masterSeq' = masterSeq + 1
        masterSeq_next = s.masterSeq + 1
        # /\ slow' = [w \in Workers |-> FALSE]
        slow_next = _tla.const_fn(c.Workers, lambda: False)
        # /\ evict' = [w \in Workers |-> FALSE]
        evict_next = _tla.const_fn(c.Workers, lambda: False)
        # /\ checkpointed' = FALSE
        checkpointed_next = False
        # /\ finished' = [w \in Workers |-> FALSE]
        finished_next = _tla.const_fn(c.Workers, lambda: False)
        # /\ finishCount' = [w \in Workers |-> 0]
        finishCount_next = _tla.const_fn(c.Workers, lambda: 0)
        # /\ UNCHANGED << shouldQuit, recoverCount, retries, podRestarted,
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
            _tla.child(
                s,
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
            ),
            (),
        )
    else:
        # /\ UNCHANGED << finished, masterSeq, slow, evict,
        finished_next = s.finished
        masterSeq_next = s.masterSeq
        slow_next = s.slow
        evict_next = s.evict
        checkpointed_next = s.checkpointed
        prevMasterSeq_next = s.prevMasterSeq
        finishCount_next = s.finishCount
        # /\ UNCHANGED << shouldQuit, recoverCount, retries, podRestarted,
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
            _tla.child(
                s,
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
            ),
            (),
        )


def process_ids_restartInRun(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs restartInRun (process restartInRun)."""
    return frozenset({"restartInRun"})


def enabled_restartInRun(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> bool:
    """Whether restartInRun can take a step from s (with the choices in bind)."""
    return next(_steps_restartInRun(c, s, self, bind), None) is not None


def successors_restartInRun(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> list[Successor]:
    """Every successor of s by restartInRun (with the choices in bind)."""
    return _tla.unique(list(_steps_restartInRun(c, s, self, bind)))


def _steps_restartInRun(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> Iterator[Successor]:
    """restartInRun in spec/AegisPhase.tla: its successors in a fixed order."""
    # restartInRun == /\ CanRestartInRun
    if not CanRestartInRun(c, s):
        return
    # /\ \E w \in UnseenRestarts:
    for w in (
        _tla.bound(
            bind["w"],
            bind["w"] in c.Workers
            and apply(s.podRestarted, bind["w"])
            and apply(s.innerPhase, bind["w"]) != "Restarting",
        )
        if "w" in bind
        else _tla.enum(UnseenRestarts(c, s))
    ):
        # /\ phase' = "Restarting"
        phase_next = "Restarting"
        # /\ innerPhase' = [innerPhase EXCEPT ![w] = "Restarting"]
        innerPhase_next = _tla.except_value(s.innerPhase, (w,), "Restarting")
        # /\ finished' = [finished EXCEPT ![w] = FALSE]
        finished_next = _tla.except_value(s.finished, (w,), False)
        # /\ finishCount' = [finishCount EXCEPT ![w] = 0]
        finishCount_next = _tla.except_value(s.finishCount, (w,), 0)
        # /\ lastFinishSeq' = [lastFinishSeq EXCEPT ![w] = InitSeqNum - 1]
        lastFinishSeq_next = _tla.except_value(s.lastFinishSeq, (w,), c.InitSeqNum - 1)
        # /\ msgs' = {m \in msgs : m.from # w}
        msgs_next = frozenset(m for m in s.msgs if apply(m, "from") != w)
        # /\ slow' = [slow EXCEPT ![w] = FALSE]
        slow_next = _tla.except_value(s.slow, (w,), False)
        # /\ evict' = [evict EXCEPT ![w] = FALSE]
        evict_next = _tla.except_value(s.evict, (w,), False)
        # /\ retries' = [retries EXCEPT ![w] = retries[w] + 1]
        retries_next = _tla.except_value(s.retries, (w,), apply(s.retries, w) + 1)
        # /\ recoverCount' = Min(recoverCount + 1, MaxRetry)
        recoverCount_next = Min(c, s.recoverCount + 1, c.MaxRetry)
        # /\ countedFailures' = countedFailures + 1
        countedFailures_next = s.countedFailures + 1
        # /\ UNCHANGED << shouldQuit, podRestarted, masterSeq, agentSeq,
        shouldQuit_next = s.shouldQuit
        podRestarted_next = s.podRestarted
        masterSeq_next = s.masterSeq
        agentSeq_next = s.agentSeq
        agentState_next = s.agentState
        checkpointed_next = s.checkpointed
        faults_next = s.faults
        prevMasterSeq_next = s.prevMasterSeq
        yield Successor(
            _tla.child(
                s,
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
            ),
            (("w", w),),
        )


def process_ids_restartOutsideRun(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs restartOutsideRun (process restartOutsideRun)."""
    return frozenset({"restartOutsideRun"})


def enabled_restartOutsideRun(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> bool:
    """Whether restartOutsideRun can take a step from s (with the choices in bind)."""
    return next(_steps_restartOutsideRun(c, s, self, bind), None) is not None


def successors_restartOutsideRun(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> list[Successor]:
    """Every successor of s by restartOutsideRun (with the choices in bind)."""
    return _tla.unique(list(_steps_restartOutsideRun(c, s, self, bind)))


def _steps_restartOutsideRun(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> Iterator[Successor]:
    """restartOutsideRun in spec/AegisPhase.tla: its successors in a fixed order."""
    # restartOutsideRun == /\ CanRestartOutsideRun
    if not CanRestartOutsideRun(c, s):
        return
    # /\ \E w \in UnseenRestarts:
    for w in (
        _tla.bound(
            bind["w"],
            bind["w"] in c.Workers
            and apply(s.podRestarted, bind["w"])
            and apply(s.innerPhase, bind["w"]) != "Restarting",
        )
        if "w" in bind
        else _tla.enum(UnseenRestarts(c, s))
    ):
        # /\ innerPhase' = [innerPhase EXCEPT ![w] = "Restarting"]
        innerPhase_next = _tla.except_value(s.innerPhase, (w,), "Restarting")
        # /\ finished' = [finished EXCEPT ![w] = FALSE]
        finished_next = _tla.except_value(s.finished, (w,), False)
        # /\ finishCount' = [finishCount EXCEPT ![w] = 0]
        finishCount_next = _tla.except_value(s.finishCount, (w,), 0)
        # /\ lastFinishSeq' = [lastFinishSeq EXCEPT ![w] = InitSeqNum - 1]
        lastFinishSeq_next = _tla.except_value(s.lastFinishSeq, (w,), c.InitSeqNum - 1)
        # /\ msgs' = {m \in msgs : m.from # w}
        msgs_next = frozenset(m for m in s.msgs if apply(m, "from") != w)
        # /\ slow' = [slow EXCEPT ![w] = FALSE]
        slow_next = _tla.except_value(s.slow, (w,), False)
        # /\ evict' = [evict EXCEPT ![w] = FALSE]
        evict_next = _tla.except_value(s.evict, (w,), False)
        # /\ UNCHANGED << phase, shouldQuit, recoverCount, retries,
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
            _tla.child(
                s,
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
            ),
            (("w", w),),
        )


def process_ids_restartDone(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs restartDone (process restartDone)."""
    return frozenset({"restartDone"})


def enabled_restartDone(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> bool:
    """Whether restartDone can take a step from s (with the choices in bind)."""
    return next(_steps_restartDone(c, s, self, bind), None) is not None


def successors_restartDone(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> list[Successor]:
    """Every successor of s by restartDone (with the choices in bind)."""
    return _tla.unique(list(_steps_restartDone(c, s, self, bind)))


def _steps_restartDone(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> Iterator[Successor]:
    """restartDone in spec/AegisPhase.tla: its successors in a fixed order."""
    # restartDone == /\ CanRestartDone
    if not CanRestartDone(c, s):
        return
    # /\ phase' = "Troubleshooting"
    phase_next = "Troubleshooting"
    # /\ innerPhase' = [w \in Workers |-> "Troubleshooting"]
    innerPhase_next = _tla.const_fn(c.Workers, lambda: "Troubleshooting")
    # /\ finished' = [w \in Workers |-> FALSE]
    finished_next = _tla.const_fn(c.Workers, lambda: False)
    # /\ finishCount' = [w \in Workers |-> 0]
    finishCount_next = _tla.const_fn(c.Workers, lambda: 0)
    # /\ prevMasterSeq' = masterSeq
    prevMasterSeq_next = s.masterSeq
    # /\ masterSeq' = masterSeq + 1
    masterSeq_next = s.masterSeq + 1
    # /\ slow' = [w \in Workers |-> FALSE]
    slow_next = _tla.const_fn(c.Workers, lambda: False)
    # /\ evict' = [w \in Workers |-> FALSE]
    evict_next = _tla.const_fn(c.Workers, lambda: False)
    # /\ checkpointed' = FALSE
    checkpointed_next = False
    # /\ UNCHANGED << shouldQuit, recoverCount, retries, podRestarted,
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
        _tla.child(
            s,
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
        ),
        (),
    )


def process_ids_retriesExhausted(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs retriesExhausted (process retriesExhausted)."""
    return frozenset({"retriesExhausted"})


def enabled_retriesExhausted(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> bool:
    """Whether retriesExhausted can take a step from s (with the choices in bind)."""
    return next(_steps_retriesExhausted(c, s, self, bind), None) is not None


def successors_retriesExhausted(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> list[Successor]:
    """Every successor of s by retriesExhausted (with the choices in bind)."""
    return _tla.unique(list(_steps_retriesExhausted(c, s, self, bind)))


def _steps_retriesExhausted(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> Iterator[Successor]:
    """retriesExhausted in spec/AegisPhase.tla: its successors in a fixed order."""
    # retriesExhausted == /\ CanFailExhausted
    if not CanFailExhausted(c, s):
        return
    # /\ phase' = "Failed"
    phase_next = "Failed"
    # /\ innerPhase' = [w \in Workers |-> "Failed"]
    innerPhase_next = _tla.const_fn(c.Workers, lambda: "Failed")
    # /\ UNCHANGED << shouldQuit, recoverCount, finished,
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
        _tla.child(
            s,
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
        ),
        (),
    )


def process_ids_failedWrapUp(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs failedWrapUp (process failedWrapUp)."""
    return frozenset({"failedWrapUp"})


def enabled_failedWrapUp(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> bool:
    """Whether failedWrapUp can take a step from s (with the choices in bind)."""
    return next(_steps_failedWrapUp(c, s, self, bind), None) is not None


def successors_failedWrapUp(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> list[Successor]:
    """Every successor of s by failedWrapUp (with the choices in bind)."""
    return _tla.unique(list(_steps_failedWrapUp(c, s, self, bind)))


def _steps_failedWrapUp(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> Iterator[Successor]:
    """failedWrapUp in spec/AegisPhase.tla: its successors in a fixed order."""
    # failedWrapUp == /\ CanWrapUp
    if not CanWrapUp(c, s):
        return
    # /\ recoverCount' = MaxRetry + 1
    recoverCount_next = c.MaxRetry + 1
    # /\ shouldQuit' = TRUE
    shouldQuit_next = True
    # /\ UNCHANGED << phase, innerPhase, finished, retries,
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
        _tla.child(
            s,
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
        ),
        (),
    )


def process_ids_alignRetries(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs alignRetries (process alignRetries)."""
    return frozenset({"alignRetries"})


def enabled_alignRetries(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> bool:
    """Whether alignRetries can take a step from s (with the choices in bind)."""
    return next(_steps_alignRetries(c, s, self, bind), None) is not None


def successors_alignRetries(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> list[Successor]:
    """Every successor of s by alignRetries (with the choices in bind)."""
    return _tla.unique(list(_steps_alignRetries(c, s, self, bind)))


def _steps_alignRetries(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> Iterator[Successor]:
    """alignRetries in spec/AegisPhase.tla: its successors in a fixed order."""
    # alignRetries == /\ CanAlign
    if not CanAlign(c, s):
        return
    # /\ retries' = [w \in Workers |-> recoverCount]
    retries_next = _tla.const_fn(c.Workers, lambda: s.recoverCount)
    # /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase,
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
        _tla.child(
            s,
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
        ),
        (),
    )


def process_ids_quitRequested(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs quitRequested (process quitRequested)."""
    return frozenset({"quitRequested"})


def enabled_quitRequested(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> bool:
    """Whether quitRequested can take a step from s (with the choices in bind)."""
    return next(_steps_quitRequested(c, s, self, bind), None) is not None


def successors_quitRequested(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> list[Successor]:
    """Every successor of s by quitRequested (with the choices in bind)."""
    return _tla.unique(list(_steps_quitRequested(c, s, self, bind)))


def _steps_quitRequested(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> Iterator[Successor]:
    """quitRequested in spec/AegisPhase.tla: its successors in a fixed order."""
    # quitRequested == /\ CanQuit
    if not CanQuit(c, s):
        return
    # /\ phase' = "Failed"
    phase_next = "Failed"
    # /\ innerPhase' = [w \in Workers |-> "Failed"]
    innerPhase_next = _tla.const_fn(c.Workers, lambda: "Failed")
    # /\ UNCHANGED << shouldQuit, recoverCount, finished, retries,
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
        _tla.child(
            s,
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
        ),
        (),
    )


def process_ids_receive(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs receive (process receive)."""
    return frozenset({"receive"})


def enabled_receive(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> bool:
    """Whether receive can take a step from s (with the choices in bind)."""
    return next(_steps_receive(c, s, self, bind), None) is not None


def successors_receive(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> list[Successor]:
    """Every successor of s by receive (with the choices in bind)."""
    return _tla.unique(list(_steps_receive(c, s, self, bind)))


def _steps_receive(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> Iterator[Successor]:
    """receive in spec/AegisPhase.tla: its successors in a fixed order."""
    # receive == /\ Quiescent
    if not Quiescent(c, s):
        return
    # /\ \E m \in msgs:
    for m in _tla.bound(bind["m"], bind["m"] in s.msgs) if "m" in bind else _tla.enum(s.msgs):
        # /\ msgs' = msgs \ {m}
        msgs_next = s.msgs - frozenset({m})
        # /\ IF m.type = "Finish"
        if apply(m, "type") == "Finish":
            # THEN /\ IF phase \in OrderPhases /\ ~podRestarted[m.from] /\ FreshFinish(m)
            if (
                s.phase in OrderPhases(c)
                and not apply(s.podRestarted, apply(m, "from"))
                and FreshFinish(c, s, m)
            ):
                # THEN /\ finished' = [finished EXCEPT ![m.from] = TRUE]
                finished_next = _tla.except_value(s.finished, (apply(m, "from"),), True)
                # /\ lastFinishSeq' = [lastFinishSeq EXCEPT ![m.from] = m.seq]
                lastFinishSeq_next = _tla.except_value(
                    s.lastFinishSeq, (apply(m, "from"),), apply(m, "seq")
                )
                # /\ finishCount' = [finishCount EXCEPT ![m.from] = finishCount[m.from] + 1]
                finishCount_next = _tla.except_value(
                    s.finishCount, (apply(m, "from"),), apply(s.finishCount, apply(m, "from")) + 1
                )
                # /\ UNCHANGED << phase, recoverCount, innerPhase,
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
                # /\ UNCHANGED << shouldQuit, podRestarted, agentSeq, agentState,
                shouldQuit_next = s.shouldQuit
                podRestarted_next = s.podRestarted
                agentSeq_next = s.agentSeq
                agentState_next = s.agentState
                faults_next = s.faults
                yield Successor(
                    _tla.child(
                        s,
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
                    ),
                    (("m", m),),
                )
            else:
                # /\ UNCHANGED << finished, lastFinishSeq,
                finished_next = s.finished
                lastFinishSeq_next = s.lastFinishSeq
                finishCount_next = s.finishCount
                # /\ UNCHANGED << phase, recoverCount, innerPhase,
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
                # /\ UNCHANGED << shouldQuit, podRestarted, agentSeq, agentState,
                shouldQuit_next = s.shouldQuit
                podRestarted_next = s.podRestarted
                agentSeq_next = s.agentSeq
                agentState_next = s.agentState
                faults_next = s.faults
                yield Successor(
                    _tla.child(
                        s,
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
                    ),
                    (("m", m),),
                )
        else:
            # ELSE /\ IF m.type = "Hang"
            if apply(m, "type") == "Hang":
                # THEN /\ IF phase = "RunCommand" /\ m.seq = masterSeq /\ ~podRestarted[m.from]
                if (
                    s.phase == "RunCommand"
                    and apply(m, "seq") == s.masterSeq
                    and not apply(s.podRestarted, apply(m, "from"))
                ):
                    # THEN /\ slow' = [slow EXCEPT ![m.from] = TRUE]
                    slow_next = _tla.except_value(s.slow, (apply(m, "from"),), True)
                    # /\ UNCHANGED << phase, recoverCount,
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
                    # /\ UNCHANGED lastFinishSeq
                    lastFinishSeq_next = s.lastFinishSeq
                    # /\ UNCHANGED << shouldQuit, podRestarted, agentSeq, agentState,
                    shouldQuit_next = s.shouldQuit
                    podRestarted_next = s.podRestarted
                    agentSeq_next = s.agentSeq
                    agentState_next = s.agentState
                    faults_next = s.faults
                    yield Successor(
                        _tla.child(
                            s,
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
                        ),
                        (("m", m),),
                    )
                else:
                    # /\ slow' = slow
                    slow_next = s.slow
                    # /\ UNCHANGED << phase, recoverCount,
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
                    # /\ UNCHANGED lastFinishSeq
                    lastFinishSeq_next = s.lastFinishSeq
                    # /\ UNCHANGED << shouldQuit, podRestarted, agentSeq, agentState,
                    shouldQuit_next = s.shouldQuit
                    podRestarted_next = s.podRestarted
                    agentSeq_next = s.agentSeq
                    agentState_next = s.agentState
                    faults_next = s.faults
                    yield Successor(
                        _tla.child(
                            s,
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
                        ),
                        (("m", m),),
                    )
            else:
                # ELSE /\ IF m.type = "Checkpoint"
                if apply(m, "type") == "Checkpoint":
                    # THEN /\ IF phase = "RunCommand" /\ m.seq = masterSeq /\ Evicting # {}
                    if (
                        s.phase == "RunCommand"
                        and apply(m, "seq") == s.masterSeq
                        and Evicting(c, s) != frozenset()
                    ):
                        # THEN /\ checkpointed' = TRUE
                        checkpointed_next = True
                        # /\ UNCHANGED << phase,
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
                        # /\ UNCHANGED lastFinishSeq
                        lastFinishSeq_next = s.lastFinishSeq
                        # /\ UNCHANGED << shouldQuit, podRestarted, agentSeq, agentState,
                        shouldQuit_next = s.shouldQuit
                        podRestarted_next = s.podRestarted
                        agentSeq_next = s.agentSeq
                        agentState_next = s.agentState
                        faults_next = s.faults
                        yield Successor(
                            _tla.child(
                                s,
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
                            ),
                            (("m", m),),
                        )
                    else:
                        # /\ UNCHANGED checkpointed
                        checkpointed_next = s.checkpointed
                        # /\ UNCHANGED << phase,
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
                        # /\ UNCHANGED lastFinishSeq
                        lastFinishSeq_next = s.lastFinishSeq
                        # /\ UNCHANGED << shouldQuit, podRestarted, agentSeq, agentState,
                        shouldQuit_next = s.shouldQuit
                        podRestarted_next = s.podRestarted
                        agentSeq_next = s.agentSeq
                        agentState_next = s.agentState
                        faults_next = s.faults
                        yield Successor(
                            _tla.child(
                                s,
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
                            ),
                            (("m", m),),
                        )
                else:
                    # ELSE /\ IF phase = "RunCommand" /\ m.seq = masterSeq /\ ~podRestarted[m.from]
                    if (
                        s.phase == "RunCommand"
                        and apply(m, "seq") == s.masterSeq
                        and not apply(s.podRestarted, apply(m, "from"))
                    ):
                        # THEN /\ retries' = [retries EXCEPT ![(m.from)] = retries[(m.from)] + 1]
                        retries_next = _tla.except_value(
                            s.retries, (apply(m, "from"),), apply(s.retries, apply(m, "from")) + 1
                        )
                        # /\ recoverCount' = Min(recoverCount + 1, MaxRetry)
                        recoverCount_next = Min(c, s.recoverCount + 1, c.MaxRetry)
                        # /\ countedFailures' = countedFailures + 1
                        countedFailures_next = s.countedFailures + 1
                        # /\ phase' = "Troubleshooting"
                        phase_next = "Troubleshooting"
                        # /\ innerPhase' = [w \in Workers |-> "Troubleshooting"]
                        innerPhase_next = _tla.const_fn(c.Workers, lambda: "Troubleshooting")
                        # /\ finished' = [w \in Workers |-> FALSE]
                        finished_next = _tla.const_fn(c.Workers, lambda: False)
                        # /\ finishCount' = [w \in Workers |-> 0]
                        finishCount_next = _tla.const_fn(c.Workers, lambda: 0)
                        # /\ prevMasterSeq' = masterSeq
                        prevMasterSeq_next = s.masterSeq
                        # /\ masterSeq' = masterSeq + 1
                        masterSeq_next = s.masterSeq + 1
                        # /\ slow' = [w \in Workers |-> FALSE]
                        slow_next = _tla.const_fn(c.Workers, lambda: False)
                        # /\ evict' = [w \in Workers |-> FALSE]
                        evict_next = _tla.const_fn(c.Workers, lambda: False)
                        # /\ checkpointed' = FALSE
                        checkpointed_next = False
                        # /\ UNCHANGED lastFinishSeq
                        lastFinishSeq_next = s.lastFinishSeq
                        # /\ UNCHANGED << shouldQuit, podRestarted, agentSeq, agentState,
                        shouldQuit_next = s.shouldQuit
                        podRestarted_next = s.podRestarted
                        agentSeq_next = s.agentSeq
                        agentState_next = s.agentState
                        faults_next = s.faults
                        yield Successor(
                            _tla.child(
                                s,
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
                            ),
                            (("m", m),),
                        )
                    else:
                        # /\ UNCHANGED << phase,
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
                        # /\ UNCHANGED lastFinishSeq
                        lastFinishSeq_next = s.lastFinishSeq
                        # /\ UNCHANGED << shouldQuit, podRestarted, agentSeq, agentState,
                        shouldQuit_next = s.shouldQuit
                        podRestarted_next = s.podRestarted
                        agentSeq_next = s.agentSeq
                        agentState_next = s.agentState
                        faults_next = s.faults
                        yield Successor(
                            _tla.child(
                                s,
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
                            ),
                            (("m", m),),
                        )


def process_ids_hangWithQuit(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs hangWithQuit (process hangWithQuit)."""
    return frozenset({"hangWithQuit"})


def enabled_hangWithQuit(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> bool:
    """Whether hangWithQuit can take a step from s (with the choices in bind)."""
    return next(_steps_hangWithQuit(c, s, self, bind), None) is not None


def successors_hangWithQuit(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> list[Successor]:
    """Every successor of s by hangWithQuit (with the choices in bind)."""
    return _tla.unique(list(_steps_hangWithQuit(c, s, self, bind)))


def _steps_hangWithQuit(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> Iterator[Successor]:
    """hangWithQuit in spec/AegisPhase.tla: its successors in a fixed order."""
    # hangWithQuit == /\ CanHangWithQuit
    if not CanHangWithQuit(c, s):
        return
    # /\ \E w \in SlowToEvict:
    for w in (
        _tla.bound(
            bind["w"],
            bind["w"] in c.Workers
            and apply(s.slow, bind["w"])
            and not apply(s.evict, bind["w"])
            and not apply(s.podRestarted, bind["w"]),
        )
        if "w" in bind
        else _tla.enum(SlowToEvict(c, s))
    ):
        # evict' = [evict EXCEPT ![w] = TRUE]
        evict_next = _tla.except_value(s.evict, (w,), True)
        # /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase,
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
            _tla.child(
                s,
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
            ),
            (("w", w),),
        )


def process_ids_evictSlow(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs evictSlow (process evictSlow)."""
    return frozenset({"evictSlow"})


def enabled_evictSlow(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> bool:
    """Whether evictSlow can take a step from s (with the choices in bind)."""
    return next(_steps_evictSlow(c, s, self, bind), None) is not None


def successors_evictSlow(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> list[Successor]:
    """Every successor of s by evictSlow (with the choices in bind)."""
    return _tla.unique(list(_steps_evictSlow(c, s, self, bind)))


def _steps_evictSlow(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> Iterator[Successor]:
    """evictSlow in spec/AegisPhase.tla: its successors in a fixed order."""
    # evictSlow == /\ CanEvictSlow
    if not CanEvictSlow(c, s):
        return
    # /\ \E w \in Evicted:
    for w in (
        _tla.bound(
            bind["w"],
            bind["w"] in c.Workers
            and apply(s.evict, bind["w"])
            and apply(s.agentState, bind["w"]) == "Exited",
        )
        if "w" in bind
        else _tla.enum(Evicted(c, s))
    ):
        # /\ phase' = "Restarting"
        phase_next = "Restarting"
        # /\ innerPhase' = [innerPhase EXCEPT ![w] = "Restarting"]
        innerPhase_next = _tla.except_value(s.innerPhase, (w,), "Restarting")
        # /\ finished' = [finished EXCEPT ![w] = FALSE]
        finished_next = _tla.except_value(s.finished, (w,), False)
        # /\ finishCount' = [finishCount EXCEPT ![w] = 0]
        finishCount_next = _tla.except_value(s.finishCount, (w,), 0)
        # /\ lastFinishSeq' = [lastFinishSeq EXCEPT ![w] = InitSeqNum - 1]
        lastFinishSeq_next = _tla.except_value(s.lastFinishSeq, (w,), c.InitSeqNum - 1)
        # /\ msgs' = {m \in msgs : m.from # w}
        msgs_next = frozenset(m for m in s.msgs if apply(m, "from") != w)
        # /\ slow' = [slow EXCEPT ![w] = FALSE]
        slow_next = _tla.except_value(s.slow, (w,), False)
        # /\ evict' = [evict EXCEPT ![w] = FALSE]
        evict_next = _tla.except_value(s.evict, (w,), False)
        # /\ retries' = [retries EXCEPT ![w] = retries[w] + 1]
        retries_next = _tla.except_value(s.retries, (w,), apply(s.retries, w) + 1)
        # /\ recoverCount' = Min(recoverCount + 1, MaxRetry)
        recoverCount_next = Min(c, s.recoverCount + 1, c.MaxRetry)
        # /\ countedFailures' = countedFailures + 1
        countedFailures_next = s.countedFailures + 1
        # /\ UNCHANGED << shouldQuit, podRestarted, masterSeq, agentSeq,
        shouldQuit_next = s.shouldQuit
        podRestarted_next = s.podRestarted
        masterSeq_next = s.masterSeq
        agentSeq_next = s.agentSeq
        agentState_next = s.agentState
        checkpointed_next = s.checkpointed
        faults_next = s.faults
        prevMasterSeq_next = s.prevMasterSeq
        yield Successor(
            _tla.child(
                s,
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
            ),
            (("w", w),),
        )


def process_ids_agentJoin(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs agentJoin (process agentJoin)."""
    return frozenset({"agentJoin"})


def enabled_agentJoin(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> bool:
    """Whether agentJoin can take a step from s (with the choices in bind)."""
    return next(_steps_agentJoin(c, s, self, bind), None) is not None


def successors_agentJoin(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> list[Successor]:
    """Every successor of s by agentJoin (with the choices in bind)."""
    return _tla.unique(list(_steps_agentJoin(c, s, self, bind)))


def _steps_agentJoin(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> Iterator[Successor]:
    """agentJoin in spec/AegisPhase.tla: its successors in a fixed order."""
    # agentJoin == /\ Quiescent /\ ~Terminated
    if not Quiescent(c, s):
        return
    if Terminated(c, s):
        return
    # /\ \E w \in {x \in Workers : agentState[x] = "Fresh"
    for w in (
        _tla.bound(
            bind["w"],
            bind["w"] in c.Workers
            and apply(s.agentState, bind["w"]) == "Fresh"
            and (
                not apply(s.podRestarted, bind["w"])
                or apply(s.innerPhase, bind["w"]) == "Restarting"
            ),
        )
        if "w" in bind
        else _tla.enum(
            _tla.select(
                _S_agentJoin_1,
                c,
                s,
                c.Workers,
                lambda c, s, x: (
                    apply(s.agentState, x) == "Fresh"
                    and (not apply(s.podRestarted, x) or apply(s.innerPhase, x) == "Restarting")
                ),
            )
        )
    ):
        # LET ack == [from |-> w, type |-> "ACK", seq |-> agentSeq[w]] IN
        # /\ agentState' = [agentState EXCEPT ![w] = "Ready"]
        agentState_next = _tla.except_value(s.agentState, (w,), "Ready")
        # /\ IF podRestarted[w]
        if apply(s.podRestarted, w):
            # THEN /\ podRestarted' = [podRestarted EXCEPT ![w] = FALSE]
            podRestarted_next = _tla.except_value(s.podRestarted, (w,), False)
            # /\ innerPhase' = [innerPhase EXCEPT ![w] = phase]
            innerPhase_next = _tla.except_value(s.innerPhase, (w,), s.phase)
            # /\ IF phase = "Pending" /\ FreshFinish(ack)
            if s.phase == "Pending" and FreshFinish(
                c, s, Fn({"from": w, "type": "ACK", "seq": apply(s.agentSeq, w)})
            ):
                # THEN /\ finished' = [finished EXCEPT ![w] = TRUE]
                finished_next = _tla.except_value(s.finished, (w,), True)
                # /\ lastFinishSeq' = [lastFinishSeq EXCEPT ![w] = ack.seq]
                lastFinishSeq_next = _tla.except_value(
                    s.lastFinishSeq,
                    (w,),
                    apply(Fn({"from": w, "type": "ACK", "seq": apply(s.agentSeq, w)}), "seq"),
                )
                # /\ finishCount' = [finishCount EXCEPT ![w] = finishCount[w] + 1]
                finishCount_next = _tla.except_value(
                    s.finishCount, (w,), apply(s.finishCount, w) + 1
                )
                # /\ UNCHANGED << phase, shouldQuit, recoverCount, retries,
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
                    _tla.child(
                        s,
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
                    ),
                    (("w", w),),
                )
            else:
                # /\ UNCHANGED << finished, lastFinishSeq,
                finished_next = s.finished
                lastFinishSeq_next = s.lastFinishSeq
                finishCount_next = s.finishCount
                # /\ UNCHANGED << phase, shouldQuit, recoverCount, retries,
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
                    _tla.child(
                        s,
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
                    ),
                    (("w", w),),
                )
        else:
            # /\ UNCHANGED << innerPhase, podRestarted >>
            innerPhase_next = s.innerPhase
            podRestarted_next = s.podRestarted
            # /\ IF phase = "Pending" /\ FreshFinish(ack)
            if s.phase == "Pending" and FreshFinish(
                c, s, Fn({"from": w, "type": "ACK", "seq": apply(s.agentSeq, w)})
            ):
                # THEN /\ finished' = [finished EXCEPT ![w] = TRUE]
                finished_next = _tla.except_value(s.finished, (w,), True)
                # /\ lastFinishSeq' = [lastFinishSeq EXCEPT ![w] = ack.seq]
                lastFinishSeq_next = _tla.except_value(
                    s.lastFinishSeq,
                    (w,),
                    apply(Fn({"from": w, "type": "ACK", "seq": apply(s.agentSeq, w)}), "seq"),
                )
                # /\ finishCount' = [finishCount EXCEPT ![w] = finishCount[w] + 1]
                finishCount_next = _tla.except_value(
                    s.finishCount, (w,), apply(s.finishCount, w) + 1
                )
                # /\ UNCHANGED << phase, shouldQuit, recoverCount, retries,
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
                    _tla.child(
                        s,
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
                    ),
                    (("w", w),),
                )
            else:
                # /\ UNCHANGED << finished, lastFinishSeq,
                finished_next = s.finished
                lastFinishSeq_next = s.lastFinishSeq
                finishCount_next = s.finishCount
                # /\ UNCHANGED << phase, shouldQuit, recoverCount, retries,
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
                    _tla.child(
                        s,
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
                    ),
                    (("w", w),),
                )


def process_ids_agentWork(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs agentWork (process agentWork)."""
    return frozenset({"agentWork"})


def enabled_agentWork(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> bool:
    """Whether agentWork can take a step from s (with the choices in bind)."""
    return next(_steps_agentWork(c, s, self, bind), None) is not None


def successors_agentWork(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> list[Successor]:
    """Every successor of s by agentWork (with the choices in bind)."""
    return _tla.unique(list(_steps_agentWork(c, s, self, bind)))


def _steps_agentWork(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> Iterator[Successor]:
    """agentWork in spec/AegisPhase.tla: its successors in a fixed order."""
    # agentWork == /\ \E w \in {x \in Workers : agentState[x] = "Ready" /\ agentSeq[x] < masterSeq}:
    for w in (
        _tla.bound(
            bind["w"],
            bind["w"] in c.Workers
            and apply(s.agentState, bind["w"]) == "Ready"
            and apply(s.agentSeq, bind["w"]) < s.masterSeq,
        )
        if "w" in bind
        else _tla.enum(
            _tla.select(
                _S_agentWork_1,
                c,
                s,
                c.Workers,
                lambda c, s, x: (
                    apply(s.agentState, x) == "Ready" and apply(s.agentSeq, x) < s.masterSeq
                ),
            )
        )
    ):
        # \E outcome \in Outcomes:
        for outcome in (
            _tla.bound(bind["outcome"], bind["outcome"] in Outcomes(c, s))
            if "outcome" in bind
            else _tla.enum(Outcomes(c, s))
        ):
            # /\ Quiescent /\ phase \in OrderPhases
            if Quiescent(c, s) and s.phase in OrderPhases(c):
                # /\ agentSeq' = [agentSeq EXCEPT ![w] = masterSeq]
                agentSeq_next = _tla.except_value(s.agentSeq, (w,), s.masterSeq)
                # /\ msgs' = (msgs \cup {[from |-> w, type |-> outcome, seq |-> masterSeq, replac...
                msgs_next = s.msgs | frozenset(
                    {Fn({"from": w, "type": outcome, "seq": s.masterSeq, "replaced": False})}
                )
                # /\ IF outcome = "Error"
                if outcome == "Error":
                    # THEN /\ faults' = faults - 1
                    faults_next = s.faults - 1
                    # /\ IF phase # "RunCommand"
                    if s.phase != "RunCommand":
                        # THEN /\ agentState' = [agentState EXCEPT ![w] = "Exited"]
                        agentState_next = _tla.except_value(s.agentState, (w,), "Exited")
                        # /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase,
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
                            _tla.child(
                                s,
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
                            ),
                            (("w", w), ("outcome", outcome)),
                        )
                    else:
                        # /\ UNCHANGED agentState
                        agentState_next = s.agentState
                        # /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase,
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
                            _tla.child(
                                s,
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
                            ),
                            (("w", w), ("outcome", outcome)),
                        )
                else:
                    # /\ UNCHANGED << agentState, faults >>
                    agentState_next = s.agentState
                    faults_next = s.faults
                    # /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase,
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
                        _tla.child(
                            s,
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
                        ),
                        (("w", w), ("outcome", outcome)),
                    )


def process_ids_agentHang(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs agentHang (process agentHang)."""
    return frozenset({"agentHang"})


def enabled_agentHang(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> bool:
    """Whether agentHang can take a step from s (with the choices in bind)."""
    return next(_steps_agentHang(c, s, self, bind), None) is not None


def successors_agentHang(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> list[Successor]:
    """Every successor of s by agentHang (with the choices in bind)."""
    return _tla.unique(list(_steps_agentHang(c, s, self, bind)))


def _steps_agentHang(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> Iterator[Successor]:
    """agentHang in spec/AegisPhase.tla: its successors in a fixed order."""
    # agentHang == /\ \E w \in {x \in Workers : agentState[x] = "Ready" /\ agentSeq[x] < masterSeq}:
    for w in (
        _tla.bound(
            bind["w"],
            bind["w"] in c.Workers
            and apply(s.agentState, bind["w"]) == "Ready"
            and apply(s.agentSeq, bind["w"]) < s.masterSeq,
        )
        if "w" in bind
        else _tla.enum(
            _tla.select(
                _S_agentHang_1,
                c,
                s,
                c.Workers,
                lambda c, s, x: (
                    apply(s.agentState, x) == "Ready" and apply(s.agentSeq, x) < s.masterSeq
                ),
            )
        )
    ):
        # /\ Quiescent /\ phase = "RunCommand" /\ faults > 0 /\ ~slow[w]
        if Quiescent(c, s) and s.phase == "RunCommand" and s.faults > 0 and not apply(s.slow, w):
            # /\ faults' = faults - 1
            faults_next = s.faults - 1
            # /\ msgs' = (msgs \cup {[from |-> w, type |-> "Hang", seq |-> masterSeq, replaced |-...
            msgs_next = s.msgs | frozenset(
                {Fn({"from": w, "type": "Hang", "seq": s.masterSeq, "replaced": False})}
            )
            # /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase,
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
                _tla.child(
                    s,
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
                ),
                (("w", w),),
            )


def process_ids_agentCheckpoint(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs agentCheckpoint (process agentCheckpoint)."""
    return frozenset({"agentCheckpoint"})


def enabled_agentCheckpoint(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> bool:
    """Whether agentCheckpoint can take a step from s (with the choices in bind)."""
    return next(_steps_agentCheckpoint(c, s, self, bind), None) is not None


def successors_agentCheckpoint(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> list[Successor]:
    """Every successor of s by agentCheckpoint (with the choices in bind)."""
    return _tla.unique(list(_steps_agentCheckpoint(c, s, self, bind)))


def _steps_agentCheckpoint(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> Iterator[Successor]:
    """agentCheckpoint in spec/AegisPhase.tla: its successors in a fixed order."""
    # agentCheckpoint == /\ \E w \in {x \in Workers : agentState[x] = "Ready" /\ agentSeq[x] < ma...
    for w in (
        _tla.bound(
            bind["w"],
            bind["w"] in c.Workers
            and apply(s.agentState, bind["w"]) == "Ready"
            and apply(s.agentSeq, bind["w"]) < s.masterSeq,
        )
        if "w" in bind
        else _tla.enum(
            _tla.select(
                _S_agentCheckpoint_1,
                c,
                s,
                c.Workers,
                lambda c, s, x: (
                    apply(s.agentState, x) == "Ready" and apply(s.agentSeq, x) < s.masterSeq
                ),
            )
        )
    ):
        # /\ Quiescent /\ phase = "RunCommand" /\ ~checkpointed /\ Evicting # {}
        if (
            Quiescent(c, s)
            and s.phase == "RunCommand"
            and not s.checkpointed
            and Evicting(c, s) != frozenset()
        ):
            # /\ msgs' = (msgs \cup {[from |-> w, type |-> "Checkpoint", seq |-> masterSeq,
            msgs_next = s.msgs | frozenset(
                {Fn({"from": w, "type": "Checkpoint", "seq": s.masterSeq, "replaced": False})}
            )
            # /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase,
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
                _tla.child(
                    s,
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
                ),
                (("w", w),),
            )


def process_ids_agentEvict(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs agentEvict (process agentEvict)."""
    return frozenset({"agentEvict"})


def enabled_agentEvict(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> bool:
    """Whether agentEvict can take a step from s (with the choices in bind)."""
    return next(_steps_agentEvict(c, s, self, bind), None) is not None


def successors_agentEvict(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> list[Successor]:
    """Every successor of s by agentEvict (with the choices in bind)."""
    return _tla.unique(list(_steps_agentEvict(c, s, self, bind)))


def _steps_agentEvict(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> Iterator[Successor]:
    """agentEvict in spec/AegisPhase.tla: its successors in a fixed order."""
    # agentEvict == /\ \E w \in {x \in Workers : evict[x] /\ agentState[x] = "Ready"
    for w in (
        _tla.bound(
            bind["w"],
            bind["w"] in c.Workers
            and apply(s.evict, bind["w"])
            and apply(s.agentState, bind["w"]) == "Ready"
            and apply(s.agentSeq, bind["w"]) < s.masterSeq,
        )
        if "w" in bind
        else _tla.enum(
            _tla.select(
                _S_agentEvict_1,
                c,
                s,
                c.Workers,
                lambda c, s, x: (
                    apply(s.evict, x)
                    and apply(s.agentState, x) == "Ready"
                    and apply(s.agentSeq, x) < s.masterSeq
                ),
            )
        )
    ):
        # /\ Quiescent /\ phase = "RunCommand" /\ checkpointed
        if Quiescent(c, s) and s.phase == "RunCommand" and s.checkpointed:
            # /\ agentSeq' = [agentSeq EXCEPT ![w] = masterSeq]
            agentSeq_next = _tla.except_value(s.agentSeq, (w,), s.masterSeq)
            # /\ agentState' = [agentState EXCEPT ![w] = "Exited"]
            agentState_next = _tla.except_value(s.agentState, (w,), "Exited")
            # /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase,
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
                _tla.child(
                    s,
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
                ),
                (("w", w),),
            )


def process_ids_envPodRestart(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs envPodRestart (process envPodRestart)."""
    return frozenset({"envPodRestart"})


def enabled_envPodRestart(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> bool:
    """Whether envPodRestart can take a step from s (with the choices in bind)."""
    return next(_steps_envPodRestart(c, s, self, bind), None) is not None


def successors_envPodRestart(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> list[Successor]:
    """Every successor of s by envPodRestart (with the choices in bind)."""
    return _tla.unique(list(_steps_envPodRestart(c, s, self, bind)))


def _steps_envPodRestart(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> Iterator[Successor]:
    """envPodRestart in spec/AegisPhase.tla: its successors in a fixed order."""
    # envPodRestart == /\ \E w \in Workers:
    for w in _tla.bound(bind["w"], bind["w"] in c.Workers) if "w" in bind else _tla.enum(c.Workers):
        # /\ Quiescent /\ faults > 0 /\ ~Terminated
        if Quiescent(c, s) and s.faults > 0 and not Terminated(c, s):
            # /\ faults' = faults - 1
            faults_next = s.faults - 1
            # /\ podRestarted' = [podRestarted EXCEPT ![w] = TRUE]
            podRestarted_next = _tla.except_value(s.podRestarted, (w,), True)
            # /\ agentState' = [agentState EXCEPT ![w] = "Fresh"]
            agentState_next = _tla.except_value(s.agentState, (w,), "Fresh")
            # /\ agentSeq' = [agentSeq EXCEPT ![w] = InitSeqNum]
            agentSeq_next = _tla.except_value(s.agentSeq, (w,), c.InitSeqNum)
            # /\ msgs' = {IF m.from = w THEN [m EXCEPT !.replaced = TRUE] ELSE m : m \in msgs}
            msgs_next = frozenset(
                _tla.except_value(m, ("replaced",), True) if apply(m, "from") == w else m
                for m in s.msgs
            )
            # /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase,
            phase_next = s.phase
            shouldQuit_next = s.shouldQuit
            recoverCount_next = s.recoverCount
            innerPhase_next = s.innerPhase
            finished_next = s.finished
            retries_next = s.retries
            masterSeq_next = s.masterSeq
            lastFinishSeq_next = s.lastFinishSeq
            slow_next = s.slow
            evict_next = s.evict
            checkpointed_next = s.checkpointed
            prevMasterSeq_next = s.prevMasterSeq
            finishCount_next = s.finishCount
            countedFailures_next = s.countedFailures
            yield Successor(
                _tla.child(
                    s,
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
                ),
                (("w", w),),
            )


def process_ids_envDuplicate(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs envDuplicate (process envDuplicate)."""
    return frozenset({"envDuplicate"})


def enabled_envDuplicate(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> bool:
    """Whether envDuplicate can take a step from s (with the choices in bind)."""
    return next(_steps_envDuplicate(c, s, self, bind), None) is not None


def successors_envDuplicate(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> list[Successor]:
    """Every successor of s by envDuplicate (with the choices in bind)."""
    return _tla.unique(list(_steps_envDuplicate(c, s, self, bind)))


def _steps_envDuplicate(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> Iterator[Successor]:
    """envDuplicate in spec/AegisPhase.tla: its successors in a fixed order."""
    # envDuplicate == /\ \E w \in {x \in Workers : lastFinishSeq[x] >= InitSeqNum}:
    for w in (
        _tla.bound(
            bind["w"], bind["w"] in c.Workers and apply(s.lastFinishSeq, bind["w"]) >= c.InitSeqNum
        )
        if "w" in bind
        else _tla.enum(
            _tla.select(
                _S_envDuplicate_1,
                c,
                s,
                c.Workers,
                lambda c, s, x: apply(s.lastFinishSeq, x) >= c.InitSeqNum,
            )
        )
    ):
        # /\ Quiescent /\ faults > 0 /\ ~Terminated
        if Quiescent(c, s) and s.faults > 0 and not Terminated(c, s):
            # /\ faults' = faults - 1
            faults_next = s.faults - 1
            # /\ msgs' = (msgs \cup {[from |-> w, type |-> "Finish", seq |-> lastFinishSeq[w],
            msgs_next = s.msgs | frozenset(
                {
                    Fn(
                        {
                            "from": w,
                            "type": "Finish",
                            "seq": apply(s.lastFinishSeq, w),
                            "replaced": apply(s.podRestarted, w),
                        }
                    )
                }
            )
            # /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase,
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
                _tla.child(
                    s,
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
                ),
                (("w", w),),
            )


def process_ids_envQuit(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs envQuit (process envQuit)."""
    return frozenset({"envQuit"})


def enabled_envQuit(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> bool:
    """Whether envQuit can take a step from s (with the choices in bind)."""
    return next(_steps_envQuit(c, s, self, bind), None) is not None


def successors_envQuit(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> list[Successor]:
    """Every successor of s by envQuit (with the choices in bind)."""
    return _tla.unique(list(_steps_envQuit(c, s, self, bind)))


def _steps_envQuit(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> Iterator[Successor]:
    """envQuit in spec/AegisPhase.tla: its successors in a fixed order."""
    # envQuit == /\ Quiescent /\ faults > 0 /\ ~shouldQuit /\ ~Terminated
    if not Quiescent(c, s):
        return
    if s.faults <= 0:
        return
    if s.shouldQuit:
        return
    if Terminated(c, s):
        return
    # /\ faults' = faults - 1
    faults_next = s.faults - 1
    # /\ shouldQuit' = TRUE
    shouldQuit_next = True
    # /\ UNCHANGED << phase, recoverCount, innerPhase, finished, retries,
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
        _tla.child(
            s,
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
        ),
        (),
    )


def process_ids_reschedule(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs reschedule (process reschedule)."""
    return frozenset({"reschedule"})


def enabled_reschedule(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> bool:
    """Whether reschedule can take a step from s (with the choices in bind)."""
    return next(_steps_reschedule(c, s, self, bind), None) is not None


def successors_reschedule(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> list[Successor]:
    """Every successor of s by reschedule (with the choices in bind)."""
    return _tla.unique(list(_steps_reschedule(c, s, self, bind)))


def _steps_reschedule(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> Iterator[Successor]:
    """reschedule in spec/AegisPhase.tla: its successors in a fixed order."""
    # reschedule == /\ Quiescent /\ ~Terminated
    if not Quiescent(c, s):
        return
    if Terminated(c, s):
        return
    # /\ \E w \in {x \in Workers : agentState[x] = "Exited"}:
    for w in (
        _tla.bound(bind["w"], bind["w"] in c.Workers and apply(s.agentState, bind["w"]) == "Exited")
        if "w" in bind
        else _tla.enum(
            _tla.select(
                _S_reschedule_1, c, s, c.Workers, lambda c, s, x: apply(s.agentState, x) == "Exited"
            )
        )
    ):
        # /\ podRestarted' = [podRestarted EXCEPT ![w] = TRUE]
        podRestarted_next = _tla.except_value(s.podRestarted, (w,), True)
        # /\ agentState' = [agentState EXCEPT ![w] = "Fresh"]
        agentState_next = _tla.except_value(s.agentState, (w,), "Fresh")
        # /\ agentSeq' = [agentSeq EXCEPT ![w] = InitSeqNum]
        agentSeq_next = _tla.except_value(s.agentSeq, (w,), c.InitSeqNum)
        # /\ msgs' = {IF m.from = w THEN [m EXCEPT !.replaced = TRUE] ELSE m : m \in msgs}
        msgs_next = frozenset(
            _tla.except_value(m, ("replaced",), True) if apply(m, "from") == w else m
            for m in s.msgs
        )
        # /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase,
        phase_next = s.phase
        shouldQuit_next = s.shouldQuit
        recoverCount_next = s.recoverCount
        innerPhase_next = s.innerPhase
        finished_next = s.finished
        retries_next = s.retries
        masterSeq_next = s.masterSeq
        lastFinishSeq_next = s.lastFinishSeq
        slow_next = s.slow
        evict_next = s.evict
        checkpointed_next = s.checkpointed
        faults_next = s.faults
        prevMasterSeq_next = s.prevMasterSeq
        finishCount_next = s.finishCount
        countedFailures_next = s.countedFailures
        yield Successor(
            _tla.child(
                s,
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
            ),
            (("w", w),),
        )


def process_ids_jobDone(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs jobDone (process jobDone)."""
    return frozenset({"jobDone"})


def enabled_jobDone(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> bool:
    """Whether jobDone can take a step from s (with the choices in bind)."""
    return next(_steps_jobDone(c, s, self, bind), None) is not None


def successors_jobDone(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> list[Successor]:
    """Every successor of s by jobDone (with the choices in bind)."""
    return _tla.unique(list(_steps_jobDone(c, s, self, bind)))


def _steps_jobDone(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> Iterator[Successor]:
    """jobDone in spec/AegisPhase.tla: its successors in a fixed order."""
    # jobDone == /\ Terminated
    if not Terminated(c, s):
        return
    # /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase,
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
        _tla.child(
            s,
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
        steps=_steps_advance,
        source="spec/AegisPhase.tla",
    ),
    Label.restartInRun: ActionInfo(
        label=Label.restartInRun,
        process="restartInRun",
        kind="single",
        process_ids=process_ids_restartInRun,
        enabled=enabled_restartInRun,
        successors=successors_restartInRun,
        steps=_steps_restartInRun,
        source="spec/AegisPhase.tla",
    ),
    Label.restartOutsideRun: ActionInfo(
        label=Label.restartOutsideRun,
        process="restartOutsideRun",
        kind="single",
        process_ids=process_ids_restartOutsideRun,
        enabled=enabled_restartOutsideRun,
        successors=successors_restartOutsideRun,
        steps=_steps_restartOutsideRun,
        source="spec/AegisPhase.tla",
    ),
    Label.restartDone: ActionInfo(
        label=Label.restartDone,
        process="restartDone",
        kind="single",
        process_ids=process_ids_restartDone,
        enabled=enabled_restartDone,
        successors=successors_restartDone,
        steps=_steps_restartDone,
        source="spec/AegisPhase.tla",
    ),
    Label.retriesExhausted: ActionInfo(
        label=Label.retriesExhausted,
        process="retriesExhausted",
        kind="single",
        process_ids=process_ids_retriesExhausted,
        enabled=enabled_retriesExhausted,
        successors=successors_retriesExhausted,
        steps=_steps_retriesExhausted,
        source="spec/AegisPhase.tla",
    ),
    Label.failedWrapUp: ActionInfo(
        label=Label.failedWrapUp,
        process="failedWrapUp",
        kind="single",
        process_ids=process_ids_failedWrapUp,
        enabled=enabled_failedWrapUp,
        successors=successors_failedWrapUp,
        steps=_steps_failedWrapUp,
        source="spec/AegisPhase.tla",
    ),
    Label.alignRetries: ActionInfo(
        label=Label.alignRetries,
        process="alignRetries",
        kind="single",
        process_ids=process_ids_alignRetries,
        enabled=enabled_alignRetries,
        successors=successors_alignRetries,
        steps=_steps_alignRetries,
        source="spec/AegisPhase.tla",
    ),
    Label.quitRequested: ActionInfo(
        label=Label.quitRequested,
        process="quitRequested",
        kind="single",
        process_ids=process_ids_quitRequested,
        enabled=enabled_quitRequested,
        successors=successors_quitRequested,
        steps=_steps_quitRequested,
        source="spec/AegisPhase.tla",
    ),
    Label.receive: ActionInfo(
        label=Label.receive,
        process="receive",
        kind="single",
        process_ids=process_ids_receive,
        enabled=enabled_receive,
        successors=successors_receive,
        steps=_steps_receive,
        source="spec/AegisPhase.tla",
    ),
    Label.hangWithQuit: ActionInfo(
        label=Label.hangWithQuit,
        process="hangWithQuit",
        kind="single",
        process_ids=process_ids_hangWithQuit,
        enabled=enabled_hangWithQuit,
        successors=successors_hangWithQuit,
        steps=_steps_hangWithQuit,
        source="spec/AegisPhase.tla",
    ),
    Label.evictSlow: ActionInfo(
        label=Label.evictSlow,
        process="evictSlow",
        kind="single",
        process_ids=process_ids_evictSlow,
        enabled=enabled_evictSlow,
        successors=successors_evictSlow,
        steps=_steps_evictSlow,
        source="spec/AegisPhase.tla",
    ),
    Label.agentJoin: ActionInfo(
        label=Label.agentJoin,
        process="agentJoin",
        kind="single",
        process_ids=process_ids_agentJoin,
        enabled=enabled_agentJoin,
        successors=successors_agentJoin,
        steps=_steps_agentJoin,
        source="spec/AegisPhase.tla",
    ),
    Label.agentWork: ActionInfo(
        label=Label.agentWork,
        process="agentWork",
        kind="single",
        process_ids=process_ids_agentWork,
        enabled=enabled_agentWork,
        successors=successors_agentWork,
        steps=_steps_agentWork,
        source="spec/AegisPhase.tla",
    ),
    Label.agentHang: ActionInfo(
        label=Label.agentHang,
        process="agentHang",
        kind="single",
        process_ids=process_ids_agentHang,
        enabled=enabled_agentHang,
        successors=successors_agentHang,
        steps=_steps_agentHang,
        source="spec/AegisPhase.tla",
    ),
    Label.agentCheckpoint: ActionInfo(
        label=Label.agentCheckpoint,
        process="agentCheckpoint",
        kind="single",
        process_ids=process_ids_agentCheckpoint,
        enabled=enabled_agentCheckpoint,
        successors=successors_agentCheckpoint,
        steps=_steps_agentCheckpoint,
        source="spec/AegisPhase.tla",
    ),
    Label.agentEvict: ActionInfo(
        label=Label.agentEvict,
        process="agentEvict",
        kind="single",
        process_ids=process_ids_agentEvict,
        enabled=enabled_agentEvict,
        successors=successors_agentEvict,
        steps=_steps_agentEvict,
        source="spec/AegisPhase.tla",
    ),
    Label.envPodRestart: ActionInfo(
        label=Label.envPodRestart,
        process="envPodRestart",
        kind="single",
        process_ids=process_ids_envPodRestart,
        enabled=enabled_envPodRestart,
        successors=successors_envPodRestart,
        steps=_steps_envPodRestart,
        source="spec/AegisPhase.tla",
    ),
    Label.envDuplicate: ActionInfo(
        label=Label.envDuplicate,
        process="envDuplicate",
        kind="single",
        process_ids=process_ids_envDuplicate,
        enabled=enabled_envDuplicate,
        successors=successors_envDuplicate,
        steps=_steps_envDuplicate,
        source="spec/AegisPhase.tla",
    ),
    Label.envQuit: ActionInfo(
        label=Label.envQuit,
        process="envQuit",
        kind="single",
        process_ids=process_ids_envQuit,
        enabled=enabled_envQuit,
        successors=successors_envQuit,
        steps=_steps_envQuit,
        source="spec/AegisPhase.tla",
    ),
    Label.reschedule: ActionInfo(
        label=Label.reschedule,
        process="reschedule",
        kind="single",
        process_ids=process_ids_reschedule,
        enabled=enabled_reschedule,
        successors=successors_reschedule,
        steps=_steps_reschedule,
        source="spec/AegisPhase.tla",
    ),
    Label.jobDone: ActionInfo(
        label=Label.jobDone,
        process="jobDone",
        kind="single",
        process_ids=process_ids_jobDone,
        enabled=enabled_jobDone,
        successors=successors_jobDone,
        steps=_steps_jobDone,
        source="spec/AegisPhase.tla",
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


def commit(s: State, changed: Collection[str] | None = None) -> None:
    """s is now the runtime's current state: keep its derived sets (carried over from the
    state it came from) and forget the older states (see _tla.commit; `changed`: the
    variables whose value is another object than in that state, when the caller knows)."""
    _tla.commit(s, VARIABLES, changed)


def next_states(c: Constants, s: State) -> Iterator[tuple[Label, Value, Successor]]:
    """Every step of Next from s: (label, process id, successor)."""
    for info in ACTIONS.values():
        for pid in _tla.ordered(info.process_ids(c)):
            for succ in info.successors(c, s, pid):
                yield info.label, pid, succ
