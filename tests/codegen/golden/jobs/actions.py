# Generated from tests/codegen/fixtures/Jobs.tla by codegen — do not edit.
"""Jobs: Init and one pair of functions per label, as TLC's Next explores them."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping

from aegis.values import Fn, Value, apply, except_, fn

from . import _tla
from .defs import Min, NextPhase, ProcSet
from .model import VARIABLES, ActionInfo, Constants, Label, State, Successor

# Quantifiers kept current per state (see _tla.Site).
_S_Ctl_1 = _tla.Site("Ctl", ("retries",), (), by_value=True)


def initial_states(c: Constants) -> list[State]:
    """Every initial state (Init, tests/codegen/fixtures/Jobs.tla)."""
    return list(dict.fromkeys(_init(c)))


def _init(c: Constants) -> Iterator[State]:
    # /\ phase = "Idle"
    phase = "Idle"
    # /\ retries = [w \in Workers |-> 0]
    retries = _tla.const_fn(c.Workers, lambda: 0)
    # /\ info = [count |-> 0, last |-> "none"]
    info = Fn({"count": 0, "last": "none"})
    # /\ log = <<>>
    log = ()
    # /\ seen = {}
    seen = frozenset[Value]()
    # /\ mine = [self \in Workers |-> 0]
    mine = _tla.const_fn(c.Workers, lambda: 0)
    # /\ pc = [self \in ProcSet |-> CASE self = Master -> "Ctl"
    pc = fn(
        (
            self,
            "Ctl"
            if self == c.Master
            else "Work"
            if self in c.Workers
            else _tla.case_error("tests/codegen/fixtures/Jobs.tla (Init)"),
        )
        for self in ProcSet(c)
    )
    yield State(phase=phase, retries=retries, info=info, log=log, seen=seen, pc=pc, mine=mine)


def process_ids_Ctl(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs Ctl (process ctl)."""
    return frozenset({c.Master})


def enabled_Ctl(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> bool:
    """Whether Ctl can take a step from s (with the choices in bind)."""
    return next(_steps_Ctl(c, s, self, bind), None) is not None


def successors_Ctl(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> list[Successor]:
    """Every successor of s by Ctl (with the choices in bind)."""
    return _tla.unique(list(_steps_Ctl(c, s, self, bind)))


def _steps_Ctl(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> Iterator[Successor]:
    """Ctl in tests/codegen/fixtures/Jobs.tla: its successors in a fixed order."""
    # Ctl == /\ pc[Master] = "Ctl"
    if apply(s.pc, c.Master) != "Ctl":
        return
    # /\ IF phase \notin {"Done", "Failed"}
    if s.phase not in frozenset({"Done", "Failed"}):
        # THEN /\ \/ /\ phase = "Idle"
        if s.phase == "Idle":
            # /\ phase' = "Busy"
            phase_next = "Busy"
            # /\ pc' = [pc EXCEPT ![Master] = "Ctl"]
            pc_next = _tla.except_value(s.pc, (c.Master,), "Ctl")
            # /\ UNCHANGED << retries, info, log, seen, mine >>
            retries_next = s.retries
            info_next = s.info
            log_next = s.log
            seen_next = s.seen
            mine_next = s.mine
            yield Successor(
                _tla.child(
                    s,
                    State(
                        phase=phase_next,
                        retries=retries_next,
                        info=info_next,
                        log=log_next,
                        seen=seen_next,
                        pc=pc_next,
                        mine=mine_next,
                    ),
                ),
                (),
            )
        # \/ /\ phase = "Busy" /\ seen = Workers
        if s.phase == "Busy" and s.seen == c.Workers:
            # /\ phase' = NextPhase(phase)
            phase_next = NextPhase(c, s.phase)
            # /\ pc' = [pc EXCEPT ![Master] = "Ctl"]
            pc_next = _tla.except_value(s.pc, (c.Master,), "Ctl")
            # /\ UNCHANGED << retries, info, log, seen, mine >>
            retries_next = s.retries
            info_next = s.info
            log_next = s.log
            seen_next = s.seen
            mine_next = s.mine
            yield Successor(
                _tla.child(
                    s,
                    State(
                        phase=phase_next,
                        retries=retries_next,
                        info=info_next,
                        log=log_next,
                        seen=seen_next,
                        pc=pc_next,
                        mine=mine_next,
                    ),
                ),
                (),
            )
        # \/ /\ \E w \in Workers : retries[w] >= MaxRetry
        if _tla.exists(
            _S_Ctl_1, c, s, c.Workers, lambda c, s, w: apply(s.retries, w) >= c.MaxRetry
        ):
            # /\ phase' = "Failed"
            phase_next = "Failed"
            # /\ pc' = [pc EXCEPT ![Master] = "Ctl"]
            pc_next = _tla.except_value(s.pc, (c.Master,), "Ctl")
            # /\ UNCHANGED << retries, info, log, seen, mine >>
            retries_next = s.retries
            info_next = s.info
            log_next = s.log
            seen_next = s.seen
            mine_next = s.mine
            yield Successor(
                _tla.child(
                    s,
                    State(
                        phase=phase_next,
                        retries=retries_next,
                        info=info_next,
                        log=log_next,
                        seen=seen_next,
                        pc=pc_next,
                        mine=mine_next,
                    ),
                ),
                (),
            )
    else:
        # ELSE /\ pc' = [pc EXCEPT ![Master] = "Done"]
        pc_next = _tla.except_value(s.pc, (c.Master,), "Done")
        # /\ phase' = phase
        phase_next = s.phase
        # /\ UNCHANGED << retries, info, log, seen, mine >>
        retries_next = s.retries
        info_next = s.info
        log_next = s.log
        seen_next = s.seen
        mine_next = s.mine
        yield Successor(
            _tla.child(
                s,
                State(
                    phase=phase_next,
                    retries=retries_next,
                    info=info_next,
                    log=log_next,
                    seen=seen_next,
                    pc=pc_next,
                    mine=mine_next,
                ),
            ),
            (),
        )


def process_ids_Work(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs Work (process set worker)."""
    return frozenset(c.Workers)


def enabled_Work(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> bool:
    """Whether Work can take a step from s (with the choices in bind)."""
    return next(_steps_Work(c, s, self, bind), None) is not None


def successors_Work(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> list[Successor]:
    """Every successor of s by Work (with the choices in bind)."""
    return _tla.unique(list(_steps_Work(c, s, self, bind)))


def _steps_Work(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> Iterator[Successor]:
    """Work(self) in tests/codegen/fixtures/Jobs.tla: its successors in a fixed order."""
    # Work(self) == /\ pc[self] = "Work"
    if apply(s.pc, self) != "Work":
        return
    # /\ IF phase = "Idle" \/ phase = "Busy"
    if s.phase == "Idle" or s.phase == "Busy":
        # THEN /\ phase = "Busy"
        if s.phase == "Busy":
            # /\ \E r \in 0..1:
            for r in (
                _tla.bound(bind["r"], bind["r"] in _tla.interval(0, 1))
                if "r" in bind
                else _tla.enum(_tla.interval(0, 1))
            ):
                # \E tag \in {"a", "b"}:
                for tag in (
                    _tla.bound(bind["tag"], bind["tag"] in frozenset({"a", "b"}))
                    if "tag" in bind
                    else _tla.enum(frozenset({"a", "b"}))
                ):
                    # /\ retries' = [retries EXCEPT ![self] = Min(retries[self] + r, MaxRetry)]
                    retries_next = _tla.except_value(
                        s.retries, (self,), Min(c, apply(s.retries, self) + r, c.MaxRetry)
                    )
                    # /\ info' = [info EXCEPT !.count = @ + 1, !.last = tag]
                    info_next = _tla.except_value(
                        except_(s.info, ("count",), lambda at_2: at_2 + 1), ("last",), tag
                    )
                    # /\ pc' = [pc EXCEPT ![self] = "Record"]
                    pc_next = _tla.except_value(s.pc, (self,), "Record")
                    # /\ UNCHANGED << phase, log, seen, mine >>
                    phase_next = s.phase
                    log_next = s.log
                    seen_next = s.seen
                    mine_next = s.mine
                    yield Successor(
                        _tla.child(
                            s,
                            State(
                                phase=phase_next,
                                retries=retries_next,
                                info=info_next,
                                log=log_next,
                                seen=seen_next,
                                pc=pc_next,
                                mine=mine_next,
                            ),
                        ),
                        (("r", r), ("tag", tag)),
                    )
    else:
        # ELSE /\ pc' = [pc EXCEPT ![self] = "Done"]
        pc_next = _tla.except_value(s.pc, (self,), "Done")
        # /\ UNCHANGED << retries, info >>
        retries_next = s.retries
        info_next = s.info
        # /\ UNCHANGED << phase, log, seen, mine >>
        phase_next = s.phase
        log_next = s.log
        seen_next = s.seen
        mine_next = s.mine
        yield Successor(
            _tla.child(
                s,
                State(
                    phase=phase_next,
                    retries=retries_next,
                    info=info_next,
                    log=log_next,
                    seen=seen_next,
                    pc=pc_next,
                    mine=mine_next,
                ),
            ),
            (),
        )


def process_ids_Record(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs Record (process set worker)."""
    return frozenset(c.Workers)


def enabled_Record(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> bool:
    """Whether Record can take a step from s (with the choices in bind)."""
    return next(_steps_Record(c, s, self, bind), None) is not None


def successors_Record(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> list[Successor]:
    """Every successor of s by Record (with the choices in bind)."""
    return _tla.unique(list(_steps_Record(c, s, self, bind)))


def _steps_Record(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> Iterator[Successor]:
    """Record(self) in tests/codegen/fixtures/Jobs.tla: its successors in a fixed order."""
    # Record(self) == /\ pc[self] = "Record"
    if apply(s.pc, self) != "Record":
        return
    # /\ seen' = (seen \cup {self})
    seen_next = s.seen | frozenset({self})
    # /\ log' = (IF Len(log) < 2 THEN Append(log, self) ELSE Tail(log) \o <<self>>)
    log_next = (
        _tla.append(s.log, self) if len(s.log) < 2 else _tla.concat(_tla.tail(s.log), (self,))
    )
    # /\ mine' = [mine EXCEPT ![self] = (mine[self] + 1) % 2]
    mine_next = _tla.except_value(s.mine, (self,), _tla.mod(apply(s.mine, self) + 1, 2))
    # /\ pc' = [pc EXCEPT ![self] = "Work"]
    pc_next = _tla.except_value(s.pc, (self,), "Work")
    # /\ UNCHANGED << phase, retries, info >>
    phase_next = s.phase
    retries_next = s.retries
    info_next = s.info
    yield Successor(
        _tla.child(
            s,
            State(
                phase=phase_next,
                retries=retries_next,
                info=info_next,
                log=log_next,
                seen=seen_next,
                pc=pc_next,
                mine=mine_next,
            ),
        ),
        (),
    )


def process_ids_Terminating(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs Terminating (no process: id None)."""
    return frozenset({None})


def enabled_Terminating(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> bool:
    """Whether Terminating can take a step from s (with the choices in bind)."""
    return next(_steps_Terminating(c, s, self, bind), None) is not None


def successors_Terminating(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> list[Successor]:
    """Every successor of s by Terminating (with the choices in bind)."""
    return _tla.unique(list(_steps_Terminating(c, s, self, bind)))


def _steps_Terminating(
    c: Constants, s: State, self: Value, bind: Mapping[str, Value] = _tla.NO_BIND
) -> Iterator[Successor]:
    """Terminating in tests/codegen/fixtures/Jobs.tla: its successors in a fixed order."""
    # Terminating == /\ \A self \in ProcSet: pc[self] = "Done"
    if not all(apply(s.pc, self_2) == "Done" for self_2 in ProcSet(c)):
        return
    # /\ UNCHANGED vars
    phase_next = s.phase
    retries_next = s.retries
    info_next = s.info
    log_next = s.log
    seen_next = s.seen
    pc_next = s.pc
    mine_next = s.mine
    yield Successor(
        _tla.child(
            s,
            State(
                phase=phase_next,
                retries=retries_next,
                info=info_next,
                log=log_next,
                seen=seen_next,
                pc=pc_next,
                mine=mine_next,
            ),
        ),
        (),
    )


# Keyed by Label; a Label is a str, so ACTIONS["label"] finds it too.
ACTIONS: dict[str, ActionInfo] = {
    Label.Ctl: ActionInfo(
        label=Label.Ctl,
        process="ctl",
        kind="single",
        process_ids=process_ids_Ctl,
        enabled=enabled_Ctl,
        successors=successors_Ctl,
        steps=_steps_Ctl,
        source="tests/codegen/fixtures/Jobs.tla",
    ),
    Label.Work: ActionInfo(
        label=Label.Work,
        process="worker",
        kind="set",
        process_ids=process_ids_Work,
        enabled=enabled_Work,
        successors=successors_Work,
        steps=_steps_Work,
        source="tests/codegen/fixtures/Jobs.tla",
    ),
    Label.Record: ActionInfo(
        label=Label.Record,
        process="worker",
        kind="set",
        process_ids=process_ids_Record,
        enabled=enabled_Record,
        successors=successors_Record,
        steps=_steps_Record,
        source="tests/codegen/fixtures/Jobs.tla",
    ),
    Label.Terminating: ActionInfo(
        label=Label.Terminating,
        process=None,
        kind="none",
        process_ids=process_ids_Terminating,
        enabled=enabled_Terminating,
        successors=successors_Terminating,
        steps=_steps_Terminating,
        source="tests/codegen/fixtures/Jobs.tla",
    ),
}

# Process name (None: the uniprocess algorithm or Terminating) → its labels, as in Next.
PROCESSES: dict[str | None, tuple[Label, ...]] = {
    "ctl": (Label.Ctl,),
    "worker": (Label.Work, Label.Record),
    None: (Label.Terminating,),
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
