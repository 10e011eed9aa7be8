# Generated from spec/AegisPhase.tla by codegen — do not edit.
"""AegisPhase: what the agent's actions read, and those actions on its one-worker view."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from aegis.values import Fn, Value, apply

from . import _tla
from .defs import Evicting, OrderPhases, Outcomes, Quiescent
from .model import Constants, Label, State, Successor

# The agent's own actions, bound to the acting worker by the choice ACTOR.
AGENT_ACTIONS: tuple[Label, ...] = (
    Label.agentWork,
    Label.agentHang,
    Label.agentCheckpoint,
    Label.agentEvict,
)
ACTOR = "w"
# Variables that are not per worker, read by those actions: in every order.
GLOBALS: tuple[str, ...] = (
    "phase",
    "masterSeq",
    "msgs",
    "checkpointed",
    "faults",
)
# Per-worker variables read at the acting worker only and written by the agent's
# actions: the agent keeps its own entry.
OWN: tuple[str, ...] = (
    "agentSeq",
    "agentState",
)
# Per-worker variables read at the acting worker only, not written by the agent:
# the controller sends each pod its entry.
PER_POD: tuple[str, ...] = (
    "slow",
    "evict",
)
# Definitions the actions read over every worker: evaluated by the controller.
DERIVED: tuple[str, ...] = (
    "Evicting",
    "Quiescent",
)


@dataclass(frozen=True)
class Derived:
    """The values of DERIVED in one state of the whole job."""

    Evicting: Value
    Quiescent: Value


def derive(c: Constants, s: State) -> Derived:
    """DERIVED evaluated on a state of the whole job (the controller's)."""
    return Derived(Evicting=Evicting(c, s), Quiescent=Quiescent(c, s))


def successors_agentWork(c: Constants, s: State, d: Derived, self: Value) -> list[Successor]:
    """Every successor of the one-worker view s by agentWork."""
    return list(dict.fromkeys(_steps_agentWork(c, s, d, self)))


def _steps_agentWork(c: Constants, s: State, d: Derived, self: Value) -> Iterator[Successor]:
    """agentWork with the derived definitions taken from d."""
    # agentWork == /\ \E w \in {x \in Workers : agentState[x] = "Ready" /\ agentSeq[x] < masterSeq}:
    for w in _tla.enum(
        frozenset(
            x
            for x in c.Workers
            if apply(s.agentState, x) == "Ready" and apply(s.agentSeq, x) < s.masterSeq
        )
    ):
        # \E outcome \in Outcomes:
        for outcome in _tla.enum(Outcomes(c, s)):
            # /\ Quiescent /\ phase \in OrderPhases
            if d.Quiescent and s.phase in OrderPhases(c):
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


def successors_agentHang(c: Constants, s: State, d: Derived, self: Value) -> list[Successor]:
    """Every successor of the one-worker view s by agentHang."""
    return list(dict.fromkeys(_steps_agentHang(c, s, d, self)))


def _steps_agentHang(c: Constants, s: State, d: Derived, self: Value) -> Iterator[Successor]:
    """agentHang with the derived definitions taken from d."""
    # agentHang == /\ \E w \in {x \in Workers : agentState[x] = "Ready" /\ agentSeq[x] < masterSeq}:
    for w in _tla.enum(
        frozenset(
            x
            for x in c.Workers
            if apply(s.agentState, x) == "Ready" and apply(s.agentSeq, x) < s.masterSeq
        )
    ):
        # /\ Quiescent /\ phase = "RunCommand" /\ faults > 0 /\ ~slow[w]
        if d.Quiescent and s.phase == "RunCommand" and s.faults > 0 and not apply(s.slow, w):
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


def successors_agentCheckpoint(c: Constants, s: State, d: Derived, self: Value) -> list[Successor]:
    """Every successor of the one-worker view s by agentCheckpoint."""
    return list(dict.fromkeys(_steps_agentCheckpoint(c, s, d, self)))


def _steps_agentCheckpoint(c: Constants, s: State, d: Derived, self: Value) -> Iterator[Successor]:
    """agentCheckpoint with the derived definitions taken from d."""
    # agentCheckpoint == /\ \E w \in {x \in Workers : agentState[x] = "Ready" /\ agentSeq[x] < ma...
    for w in _tla.enum(
        frozenset(
            x
            for x in c.Workers
            if apply(s.agentState, x) == "Ready" and apply(s.agentSeq, x) < s.masterSeq
        )
    ):
        # /\ Quiescent /\ phase = "RunCommand" /\ ~checkpointed /\ Evicting # {}
        if (
            d.Quiescent
            and s.phase == "RunCommand"
            and not s.checkpointed
            and d.Evicting != frozenset()
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


def successors_agentEvict(c: Constants, s: State, d: Derived, self: Value) -> list[Successor]:
    """Every successor of the one-worker view s by agentEvict."""
    return list(dict.fromkeys(_steps_agentEvict(c, s, d, self)))


def _steps_agentEvict(c: Constants, s: State, d: Derived, self: Value) -> Iterator[Successor]:
    """agentEvict with the derived definitions taken from d."""
    # agentEvict == /\ \E w \in {x \in Workers : evict[x] /\ agentState[x] = "Ready"
    for w in _tla.enum(
        frozenset(
            x
            for x in c.Workers
            if apply(s.evict, x)
            and apply(s.agentState, x) == "Ready"
            and apply(s.agentSeq, x) < s.masterSeq
        )
    ):
        # /\ Quiescent /\ phase = "RunCommand" /\ checkpointed
        if d.Quiescent and s.phase == "RunCommand" and s.checkpointed:
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


# Label -> successors of the one-worker view (constants, view, derived, process id).
AGENT_STEPS: dict[str, Callable[[Constants, State, Derived, Value], list[Successor]]] = {
    Label.agentWork: successors_agentWork,
    Label.agentHang: successors_agentHang,
    Label.agentCheckpoint: successors_agentCheckpoint,
    Label.agentEvict: successors_agentEvict,
}
