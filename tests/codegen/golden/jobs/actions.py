# Generated from tests/codegen/fixtures/Jobs.tla by codegen — do not edit.
"""Jobs: Init and one pair of functions per label, as TLC's Next explores them."""

from __future__ import annotations

from collections.abc import Iterator

from aegis.values import Fn, Value, apply, except_, fn

from . import _tla
from .defs import Min, NextPhase, ProcSet
from .model import ActionInfo, Constants, Label, State, Successor


def initial_states(c: Constants) -> list[State]:
    """Every initial state (Init, tests/codegen/fixtures/Jobs.tla:120)."""
    return list(dict.fromkeys(_init(c)))


def _init(c: Constants) -> Iterator[State]:
    # 120: /\ phase = "Idle"
    phase = "Idle"
    # 121: /\ retries = [w \in Workers |-> 0]
    retries = fn((w, 0) for w in c.Workers)
    # 122: /\ info = [count |-> 0, last |-> "none"]
    info = Fn({"count": 0, "last": "none"})
    # 123: /\ log = <<>>
    log = ()
    # 124: /\ seen = {}
    seen = frozenset[Value]()
    # 126: /\ mine = [self \in Workers |-> 0]
    mine = fn((self, 0) for self in c.Workers)
    # 127: /\ pc = [self \in ProcSet |-> CASE self = Master -> "Ctl"
    pc = fn(
        (
            self_2,
            "Ctl"
            if self_2 == c.Master
            else "Work"
            if self_2 in c.Workers
            else _tla.case_error("tests/codegen/fixtures/Jobs.tla:127:39"),
        )
        for self_2 in ProcSet(c)
    )
    yield State(phase=phase, retries=retries, info=info, log=log, seen=seen, pc=pc, mine=mine)


def process_ids_Ctl(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs Ctl (process ctl)."""
    return frozenset({c.Master})


def enabled_Ctl(c: Constants, s: State, self: Value) -> bool:
    """Whether Ctl can take a step from s."""
    return next(_steps_Ctl(c, s, self), None) is not None


def successors_Ctl(c: Constants, s: State, self: Value) -> list[Successor]:
    """Every successor of s by Ctl."""
    return list(dict.fromkeys(_steps_Ctl(c, s, self)))


def _steps_Ctl(c: Constants, s: State, self: Value) -> Iterator[Successor]:
    """Ctl at tests/codegen/fixtures/Jobs.tla:130."""
    # 130: Ctl == /\ pc[Master] = "Ctl"
    if apply(s.pc, c.Master) != "Ctl":
        return
    # 131: /\ IF phase \notin {"Done", "Failed"}
    if s.phase not in frozenset({"Done", "Failed"}):
        # 132: THEN /\ \/ /\ phase = "Idle"
        if s.phase == "Idle":
            # 133: /\ phase' = "Busy"
            phase_next = "Busy"
            # 138: /\ pc' = [pc EXCEPT ![Master] = "Ctl"]
            pc_next = _tla.except_value(s.pc, (c.Master,), "Ctl")
            # 141: /\ UNCHANGED << retries, info, log, seen, mine >>
            retries_next = s.retries
            info_next = s.info
            log_next = s.log
            seen_next = s.seen
            mine_next = s.mine
            yield Successor(
                State(
                    phase=phase_next,
                    retries=retries_next,
                    info=info_next,
                    log=log_next,
                    seen=seen_next,
                    pc=pc_next,
                    mine=mine_next,
                ),
                (),
            )
        # 134: \/ /\ phase = "Busy" /\ seen = Workers
        if s.phase == "Busy" and s.seen == c.Workers:
            # 135: /\ phase' = NextPhase(phase)
            phase_next = NextPhase(c, s.phase)
            # 138: /\ pc' = [pc EXCEPT ![Master] = "Ctl"]
            pc_next = _tla.except_value(s.pc, (c.Master,), "Ctl")
            # 141: /\ UNCHANGED << retries, info, log, seen, mine >>
            retries_next = s.retries
            info_next = s.info
            log_next = s.log
            seen_next = s.seen
            mine_next = s.mine
            yield Successor(
                State(
                    phase=phase_next,
                    retries=retries_next,
                    info=info_next,
                    log=log_next,
                    seen=seen_next,
                    pc=pc_next,
                    mine=mine_next,
                ),
                (),
            )
        # 136: \/ /\ \E w \in Workers : retries[w] >= MaxRetry
        if any(apply(s.retries, w) >= c.MaxRetry for w in c.Workers):
            # 137: /\ phase' = "Failed"
            phase_next = "Failed"
            # 138: /\ pc' = [pc EXCEPT ![Master] = "Ctl"]
            pc_next = _tla.except_value(s.pc, (c.Master,), "Ctl")
            # 141: /\ UNCHANGED << retries, info, log, seen, mine >>
            retries_next = s.retries
            info_next = s.info
            log_next = s.log
            seen_next = s.seen
            mine_next = s.mine
            yield Successor(
                State(
                    phase=phase_next,
                    retries=retries_next,
                    info=info_next,
                    log=log_next,
                    seen=seen_next,
                    pc=pc_next,
                    mine=mine_next,
                ),
                (),
            )
    else:
        # 139: ELSE /\ pc' = [pc EXCEPT ![Master] = "Done"]
        pc_next = _tla.except_value(s.pc, (c.Master,), "Done")
        # 140: /\ phase' = phase
        phase_next = s.phase
        # 141: /\ UNCHANGED << retries, info, log, seen, mine >>
        retries_next = s.retries
        info_next = s.info
        log_next = s.log
        seen_next = s.seen
        mine_next = s.mine
        yield Successor(
            State(
                phase=phase_next,
                retries=retries_next,
                info=info_next,
                log=log_next,
                seen=seen_next,
                pc=pc_next,
                mine=mine_next,
            ),
            (),
        )


def process_ids_Work(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs Work (process set worker)."""
    return frozenset(c.Workers)


def enabled_Work(c: Constants, s: State, self: Value) -> bool:
    """Whether Work can take a step from s."""
    return next(_steps_Work(c, s, self), None) is not None


def successors_Work(c: Constants, s: State, self: Value) -> list[Successor]:
    """Every successor of s by Work."""
    return list(dict.fromkeys(_steps_Work(c, s, self)))


def _steps_Work(c: Constants, s: State, self: Value) -> Iterator[Successor]:
    """Work(self) at tests/codegen/fixtures/Jobs.tla:145."""
    # 145: Work(self) == /\ pc[self] = "Work"
    if apply(s.pc, self) != "Work":
        return
    # 146: /\ IF phase = "Idle" \/ phase = "Busy"
    if s.phase == "Idle" or s.phase == "Busy":
        # 147: THEN /\ phase = "Busy"
        if s.phase == "Busy":
            # 148: /\ \E r \in 0..1:
            for r in _tla.enum(_tla.interval(0, 1)):
                # 149: \E tag \in {"a", "b"}:
                for tag in _tla.enum(frozenset({"a", "b"})):
                    # 150: /\ retries' = [retries EXCEPT ![self] = Min(retries[self] + r, MaxRetry)]
                    retries_next = _tla.except_value(
                        s.retries, (self,), Min(c, apply(s.retries, self) + r, c.MaxRetry)
                    )
                    # 151: /\ info' = [info EXCEPT !.count = @ + 1, !.last = tag]
                    info_next = _tla.except_value(
                        except_(s.info, ("count",), lambda at_2: at_2 + 1), ("last",), tag
                    )
                    # 152: /\ pc' = [pc EXCEPT ![self] = "Record"]
                    pc_next = _tla.except_value(s.pc, (self,), "Record")
                    # 155: /\ UNCHANGED << phase, log, seen, mine >>
                    phase_next = s.phase
                    log_next = s.log
                    seen_next = s.seen
                    mine_next = s.mine
                    yield Successor(
                        State(
                            phase=phase_next,
                            retries=retries_next,
                            info=info_next,
                            log=log_next,
                            seen=seen_next,
                            pc=pc_next,
                            mine=mine_next,
                        ),
                        (("r", r), ("tag", tag)),
                    )
    else:
        # 153: ELSE /\ pc' = [pc EXCEPT ![self] = "Done"]
        pc_next = _tla.except_value(s.pc, (self,), "Done")
        # 154: /\ UNCHANGED << retries, info >>
        retries_next = s.retries
        info_next = s.info
        # 155: /\ UNCHANGED << phase, log, seen, mine >>
        phase_next = s.phase
        log_next = s.log
        seen_next = s.seen
        mine_next = s.mine
        yield Successor(
            State(
                phase=phase_next,
                retries=retries_next,
                info=info_next,
                log=log_next,
                seen=seen_next,
                pc=pc_next,
                mine=mine_next,
            ),
            (),
        )


def process_ids_Record(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs Record (process set worker)."""
    return frozenset(c.Workers)


def enabled_Record(c: Constants, s: State, self: Value) -> bool:
    """Whether Record can take a step from s."""
    return next(_steps_Record(c, s, self), None) is not None


def successors_Record(c: Constants, s: State, self: Value) -> list[Successor]:
    """Every successor of s by Record."""
    return list(dict.fromkeys(_steps_Record(c, s, self)))


def _steps_Record(c: Constants, s: State, self: Value) -> Iterator[Successor]:
    """Record(self) at tests/codegen/fixtures/Jobs.tla:157."""
    # 157: Record(self) == /\ pc[self] = "Record"
    if apply(s.pc, self) != "Record":
        return
    # 158: /\ seen' = (seen \cup {self})
    seen_next = s.seen | frozenset({self})
    # 159: /\ log' = (IF Len(log) < 2 THEN Append(log, self) ELSE Tail(log) \o <<self>>)
    log_next = (
        _tla.append(s.log, self) if len(s.log) < 2 else _tla.concat(_tla.tail(s.log), (self,))
    )
    # 160: /\ mine' = [mine EXCEPT ![self] = (mine[self] + 1) % 2]
    mine_next = _tla.except_value(s.mine, (self,), _tla.mod(apply(s.mine, self) + 1, 2))
    # 161: /\ pc' = [pc EXCEPT ![self] = "Work"]
    pc_next = _tla.except_value(s.pc, (self,), "Work")
    # 162: /\ UNCHANGED << phase, retries, info >>
    phase_next = s.phase
    retries_next = s.retries
    info_next = s.info
    yield Successor(
        State(
            phase=phase_next,
            retries=retries_next,
            info=info_next,
            log=log_next,
            seen=seen_next,
            pc=pc_next,
            mine=mine_next,
        ),
        (),
    )


def process_ids_Terminating(c: Constants) -> frozenset[Value]:
    """The ids of the process that runs Terminating (no process: id None)."""
    return frozenset({None})


def enabled_Terminating(c: Constants, s: State, self: Value) -> bool:
    """Whether Terminating can take a step from s."""
    return next(_steps_Terminating(c, s, self), None) is not None


def successors_Terminating(c: Constants, s: State, self: Value) -> list[Successor]:
    """Every successor of s by Terminating."""
    return list(dict.fromkeys(_steps_Terminating(c, s, self)))


def _steps_Terminating(c: Constants, s: State, self: Value) -> Iterator[Successor]:
    """Terminating at tests/codegen/fixtures/Jobs.tla:167."""
    # 167: Terminating == /\ \A self \in ProcSet: pc[self] = "Done"
    if not all(apply(s.pc, self_2) == "Done" for self_2 in ProcSet(c)):
        return
    # 168: /\ UNCHANGED vars
    phase_next = s.phase
    retries_next = s.retries
    info_next = s.info
    log_next = s.log
    seen_next = s.seen
    pc_next = s.pc
    mine_next = s.mine
    yield Successor(
        State(
            phase=phase_next,
            retries=retries_next,
            info=info_next,
            log=log_next,
            seen=seen_next,
            pc=pc_next,
            mine=mine_next,
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
        source="tests/codegen/fixtures/Jobs.tla:130",
    ),
    Label.Work: ActionInfo(
        label=Label.Work,
        process="worker",
        kind="set",
        process_ids=process_ids_Work,
        enabled=enabled_Work,
        successors=successors_Work,
        source="tests/codegen/fixtures/Jobs.tla:145",
    ),
    Label.Record: ActionInfo(
        label=Label.Record,
        process="worker",
        kind="set",
        process_ids=process_ids_Record,
        enabled=enabled_Record,
        successors=successors_Record,
        source="tests/codegen/fixtures/Jobs.tla:157",
    ),
    Label.Terminating: ActionInfo(
        label=Label.Terminating,
        process=None,
        kind="none",
        process_ids=process_ids_Terminating,
        enabled=enabled_Terminating,
        successors=successors_Terminating,
        source="tests/codegen/fixtures/Jobs.tla:167",
    ),
}

# Process name (None: the uniprocess algorithm or Terminating) → its labels, as in Next.
PROCESSES: dict[str | None, tuple[Label, ...]] = {
    "ctl": (Label.Ctl,),
    "worker": (Label.Work, Label.Record),
    None: (Label.Terminating,),
}


def next_states(c: Constants, s: State) -> Iterator[tuple[Label, Value, Successor]]:
    """Every step of Next from s: (label, process id, successor)."""
    for info in ACTIONS.values():
        for pid in _tla.ordered(info.process_ids(c)):
            for succ in info.successors(c, s, pid):
                yield info.label, pid, succ
