# Generated from tests/codegen/fixtures/Jobs.tla by codegen — do not edit.
"""Jobs: the spec's state- and constant-level definitions, one function each."""

from __future__ import annotations

from aegis.values import Fn, Value, apply, domain, fn

from . import _tla
from .model import Constants, State

# Quantifiers kept current per state (see _tla.Site).
_S_RetriesBound_1 = _tla.Site("RetriesBound", ("retries",), (), by_value=True)


def Phases(c: Constants) -> Value:
    """Phases (tests/codegen/fixtures/Jobs.tla)."""
    return frozenset({"Idle", "Busy", "Done", "Failed"})


def Min(c: Constants, a: Value, b: Value) -> Value:
    """Min(a, b) (tests/codegen/fixtures/Jobs.tla)."""
    return a if a < b else b


def Max(c: Constants, S: Value) -> Value:
    """Max(S) (tests/codegen/fixtures/Jobs.tla)."""
    return _tla.choose(
        [x for x in S if all(x >= y for y in S)], "tests/codegen/fixtures/Jobs.tla (Max)"
    )


def NextPhase(c: Constants, p: Value) -> Value:
    """NextPhase(p) (tests/codegen/fixtures/Jobs.tla)."""
    return "Busy" if p == "Idle" else "Done" if p == "Busy" else p


def ValidPhase(c: Constants, s: State) -> Value:
    """ValidPhase (tests/codegen/fixtures/Jobs.tla)."""
    _known = _tla.known(c, s)
    if ValidPhase in _known:
        return _known[ValidPhase]
    _value = _known[ValidPhase] = s.phase in Phases(c)
    return _value


def RetriesBound(c: Constants, s: State) -> Value:
    """RetriesBound (tests/codegen/fixtures/Jobs.tla)."""
    _known = _tla.known(c, s)
    if RetriesBound in _known:
        return _known[RetriesBound]
    _value = _known[RetriesBound] = _tla.forall(
        _S_RetriesBound_1,
        c,
        s,
        c.Workers,
        lambda c, s, w: apply(s.retries, w) in _tla.interval(0, c.MaxRetry),
    )
    return _value


def TypeOK(c: Constants, s: State) -> Value:
    """TypeOK (tests/codegen/fixtures/Jobs.tla)."""
    _known = _tla.known(c, s)
    if TypeOK in _known:
        return _known[TypeOK]
    _value = _known[TypeOK] = (
        s.retries in _tla.FcnsOf(c.Workers, _tla.NAT)
        and s.info in _tla.RcdsOf({"count": _tla.NAT, "last": _tla.STRING_SET})
        and s.log in _tla.SeqOf(c.Workers)
        and s.seen in _tla.SubsetOf(c.Workers)
        and s.seen <= c.Workers
    )
    return _value


def MaxOK(c: Constants, s: State) -> Value:
    """MaxOK (tests/codegen/fixtures/Jobs.tla)."""
    _known = _tla.known(c, s)
    if MaxOK in _known:
        return _known[MaxOK]
    _value = _known[MaxOK] = Max(c, frozenset(apply(s.retries, w) for w in c.Workers)) <= c.MaxRetry
    return _value


def Snapshot(c: Constants, s: State) -> Value:
    """Snapshot (tests/codegen/fixtures/Jobs.tla)."""
    _known = _tla.known(c, s)
    if Snapshot in _known:
        return _known[Snapshot]
    _value = _known[Snapshot] = _tla.merge(
        _tla.single(c.Master, s.phase), fn((w, apply(s.retries, w)) for w in c.Workers)
    )
    return _value


def SnapshotOK(c: Constants, s: State) -> Value:
    """SnapshotOK (tests/codegen/fixtures/Jobs.tla)."""
    _known = _tla.known(c, s)
    if SnapshotOK in _known:
        return _known[SnapshotOK]
    _value = _known[SnapshotOK] = domain(Snapshot(c, s)) == frozenset({c.Master}) | c.Workers
    return _value


def Arith(c: Constants, s: State) -> Value:
    """Arith (tests/codegen/fixtures/Jobs.tla)."""
    _known = _tla.known(c, s)
    if Arith in _known:
        return _known[Arith]
    _value = _known[Arith] = (
        _tla.div(apply(s.info, "count"), 2) <= apply(s.info, "count")
        and _tla.mod(-apply(s.info, "count"), 3) in _tla.interval(0, 2)
        and 2**2 * 1 - 4 == 0
    )
    return _value


def Pairs(c: Constants) -> Value:
    """Pairs (tests/codegen/fixtures/Jobs.tla)."""
    return (
        frozenset((a, b) for (a, b) in _tla.product(c.Workers, c.Workers) if a == b)
        <= _tla.product(c.Workers, c.Workers)
        and all(a_2 == b_2 or a_2 != b_2 for (a_2, b_2) in _tla.product(c.Workers, c.Workers))
        and any(a_3 == b_3 for a_3 in c.Workers for b_3 in c.Workers)
    )


def LogOK(c: Constants, s: State) -> Value:
    """LogOK (tests/codegen/fixtures/Jobs.tla)."""
    _known = _tla.known(c, s)
    if LogOK in _known:
        return _known[LogOK]
    _value = _known[LogOK] = s.log == () or (
        _tla.head(s.log) in c.Workers and len(_tla.tail(s.log)) < len(s.log)
    )
    return _value


def Distinct(c: Constants, s: State) -> Value:
    """Distinct (tests/codegen/fixtures/Jobs.tla)."""
    _known = _tla.known(c, s)
    if Distinct in _known:
        return _known[Distinct]
    _value = _known[Distinct] = (
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
    return _value


def InfoBound(c: Constants, s: State) -> Value:
    """InfoBound (tests/codegen/fixtures/Jobs.tla)."""
    _known = _tla.known(c, s)
    if InfoBound in _known:
        return _known[InfoBound]
    _value = _known[InfoBound] = apply(s.info, "count") <= 3
    return _value


def vars_(c: Constants, s: State) -> Value:
    """vars (tests/codegen/fixtures/Jobs.tla)."""
    _known = _tla.known(c, s)
    if vars_ in _known:
        return _known[vars_]
    _value = _known[vars_] = (s.phase, s.retries, s.info, s.log, s.seen, s.pc, s.mine)
    return _value


def ProcSet(c: Constants) -> Value:
    """ProcSet (tests/codegen/fixtures/Jobs.tla)."""
    return frozenset({c.Master}) | c.Workers


def Init(c: Constants, s: State) -> Value:
    """Init (tests/codegen/fixtures/Jobs.tla)."""
    _known = _tla.known(c, s)
    if Init in _known:
        return _known[Init]
    _value = _known[Init] = (
        s.phase == "Idle"
        and s.retries == _tla.const_fn(c.Workers, lambda: 0)
        and s.info == Fn({"count": 0, "last": "none"})
        and s.log == ()
        and s.seen == frozenset()
        and s.mine == _tla.const_fn(c.Workers, lambda: 0)
        and s.pc
        == fn(
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
    )
    return _value
