# Generated from tests/codegen/fixtures/Jobs.tla by codegen — do not edit.
"""Jobs: the spec's state- and constant-level definitions, one function each."""

from __future__ import annotations

from aegis.values import Fn, Value, apply, domain, fn

from . import _tla
from .model import Constants, State


# tests/codegen/fixtures/Jobs.tla:8
def Phases(c: Constants) -> Value:
    """Phases at line 8."""
    return frozenset({"Idle", "Busy", "Done", "Failed"})


# tests/codegen/fixtures/Jobs.tla:9
def Min(c: Constants, a: Value, b: Value) -> Value:
    """Min(a, b) at line 9."""
    return a if a < b else b


# tests/codegen/fixtures/Jobs.tla:10
def Max(c: Constants, S: Value) -> Value:
    """Max(S) at line 10."""
    return _tla.choose(
        [x for x in S if all(x >= y for y in S)], "tests/codegen/fixtures/Jobs.tla:10:11"
    )


# tests/codegen/fixtures/Jobs.tla:11
def NextPhase(c: Constants, p: Value) -> Value:
    """NextPhase(p) at line 11."""
    return "Busy" if p == "Idle" else "Done" if p == "Busy" else p


# tests/codegen/fixtures/Jobs.tla:88
def ValidPhase(c: Constants, s: State) -> Value:
    """ValidPhase at line 88."""
    return s.phase in Phases(c)


# tests/codegen/fixtures/Jobs.tla:89
def RetriesBound(c: Constants, s: State) -> Value:
    """RetriesBound at line 89."""
    return all(apply(s.retries, w) in _tla.interval(0, c.MaxRetry) for w in c.Workers)


# tests/codegen/fixtures/Jobs.tla:90
def TypeOK(c: Constants, s: State) -> Value:
    """TypeOK at line 90."""
    return (
        s.retries in _tla.FcnsOf(c.Workers, _tla.NAT)
        and s.info in _tla.RcdsOf({"count": _tla.NAT, "last": _tla.STRING_SET})
        and s.log in _tla.SeqOf(c.Workers)
        and s.seen in _tla.SubsetOf(c.Workers)
        and s.seen <= c.Workers
    )


# tests/codegen/fixtures/Jobs.tla:95
def MaxOK(c: Constants, s: State) -> Value:
    """MaxOK at line 95."""
    return Max(c, frozenset(apply(s.retries, w) for w in c.Workers)) <= c.MaxRetry


# tests/codegen/fixtures/Jobs.tla:96
def Snapshot(c: Constants, s: State) -> Value:
    """Snapshot at line 96."""
    return _tla.merge(
        _tla.single(c.Master, s.phase), fn((w, apply(s.retries, w)) for w in c.Workers)
    )


# tests/codegen/fixtures/Jobs.tla:97
def SnapshotOK(c: Constants, s: State) -> Value:
    """SnapshotOK at line 97."""
    return domain(Snapshot(c, s)) == frozenset({c.Master}) | c.Workers


# tests/codegen/fixtures/Jobs.tla:98
def Arith(c: Constants, s: State) -> Value:
    """Arith at line 98."""
    return (
        _tla.div(apply(s.info, "count"), 2) <= apply(s.info, "count")
        and _tla.mod(-apply(s.info, "count"), 3) in _tla.interval(0, 2)
        and 2**2 * 1 - 4 == 0
    )


# tests/codegen/fixtures/Jobs.tla:101
def Pairs(c: Constants) -> Value:
    """Pairs at line 101."""
    return (
        frozenset((a, b) for (a, b) in _tla.product(c.Workers, c.Workers) if a == b)
        <= _tla.product(c.Workers, c.Workers)
        and all(a_2 == b_2 or a_2 != b_2 for (a_2, b_2) in _tla.product(c.Workers, c.Workers))
        and any(a_3 == b_3 for a_3 in c.Workers for b_3 in c.Workers)
    )


# tests/codegen/fixtures/Jobs.tla:104
def LogOK(c: Constants, s: State) -> Value:
    """LogOK at line 104."""
    return s.log == () or (_tla.head(s.log) in c.Workers and len(_tla.tail(s.log)) < len(s.log))


# tests/codegen/fixtures/Jobs.tla:105
def Distinct(c: Constants, s: State) -> Value:
    """Distinct at line 105."""
    return (
        len(frozenset(apply(s.retries, w) for w in c.Workers)) <= len(c.Workers)
        and all(v <= c.MaxRetry for v in frozenset(apply(s.retries, w_2) for w_2 in c.Workers))
        and _tla.union(
            frozenset(
                frozenset({v_2}) for v_2 in frozenset(apply(s.retries, w_3) for w_3 in c.Workers)
            )
        )
        == frozenset(apply(s.retries, w_4) for w_4 in c.Workers)
        and frozenset(apply(s.retries, w_6) for w_6 in c.Workers) - frozenset({0})
        <= frozenset(apply(s.retries, w_5) for w_5 in c.Workers) & _tla.interval(0, c.MaxRetry)
    )


# tests/codegen/fixtures/Jobs.tla:111
def InfoBound(c: Constants, s: State) -> Value:
    """InfoBound at line 111."""
    return apply(s.info, "count") <= 3


# tests/codegen/fixtures/Jobs.tla:115
def vars_(c: Constants, s: State) -> Value:
    """vars at line 115."""
    return (s.phase, s.retries, s.info, s.log, s.seen, s.pc, s.mine)


# tests/codegen/fixtures/Jobs.tla:117
def ProcSet(c: Constants) -> Value:
    """ProcSet at line 117."""
    return frozenset({c.Master}) | c.Workers


# tests/codegen/fixtures/Jobs.tla:119
def Init(c: Constants, s: State) -> Value:
    """Init at line 119."""
    return (
        s.phase == "Idle"
        and s.retries == fn((w, 0) for w in c.Workers)
        and s.info == Fn({"count": 0, "last": "none"})
        and s.log == ()
        and s.seen == frozenset()
        and s.mine == fn((self, 0) for self in c.Workers)
        and s.pc
        == fn(
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
    )
