"""Sites (generated _tla.Site): a successor's derived set costs the keys that changed (issue 12).

Each test counts the calls of a site's per-key test: the cost that must not grow with the pod
count. The committed package's _tla is the code under test (the runtime's).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from aegis.generated.aegis_phase import State, _tla, commit, initial_states
from aegis.runtime.engine import runtime_constants
from aegis.values import Fn, ModelValue, Value, except_

N = 500
C = runtime_constants([f"w{i:03d}" for i in range(N)], max_retry=2)
W = sorted(C.Workers, key=repr)


def counting(calls: list[Value]) -> Callable[[Any, Any, Value], bool]:
    def test(c: Any, s: Any, x: Value) -> bool:
        calls.append(x)
        return bool(s.finished[x]) or s.phase == "Done"

    return test


def finish(s: State, w: ModelValue) -> State:
    new = dataclasses.replace(s, finished=except_(s.finished, (w,), lambda _old: True))
    return _tla.child(s, new)


def asked_initial(site: _tla.Site, calls: list[Value]) -> State:
    """The initial state, `site`'s entry computed in it by a test counting into `calls` (a
    carried entry re-tests with the test it was made with); those first tests not kept."""
    s0 = initial_states(C)[0]
    _tla.select(site, C, s0, C.Workers, counting(calls))
    calls.clear()
    return s0


def test_a_successor_retests_only_the_changed_key() -> None:
    site = _tla.Site("t", ("finished",), ("phase",))
    calls: list[Value] = []
    s0 = initial_states(C)[0]
    assert _tla.select(site, C, s0, C.Workers, counting(calls)) == frozenset()
    assert len(calls) == N  # the first state: computed in full
    calls.clear()
    s1 = finish(s0, W[7])
    assert _tla.select(site, C, s1, C.Workers, counting(calls)) == {W[7]}
    assert calls == [W[7]]
    calls.clear()
    s2 = finish(finish(s1, W[3]), W[9])  # two steps, s2's parent never asked
    assert _tla.exists(site, C, s2, C.Workers, counting(calls))
    assert not _tla.forall(site, C, s2, C.Workers, counting(calls))
    assert sorted(calls, key=repr) == [W[3], W[9]]
    assert _tla.select(site, C, s1, C.Workers, counting(calls)) == {W[7]}  # s1 kept its own


def test_a_changed_global_or_unknown_provenance_recomputes_in_full() -> None:
    site = _tla.Site("t", ("finished",), ("phase",))
    calls: list[Value] = []
    s0 = asked_initial(site, calls)
    done = _tla.child(s0, dataclasses.replace(s0, phase="Done"))
    assert _tla.forall(site, C, done, C.Workers, counting(calls))
    assert len(calls) == N
    calls.clear()
    rebuilt = _tla.child(s0, dataclasses.replace(s0, finished=Fn(dict(s0.finished.items()))))
    assert not _tla.exists(site, C, rebuilt, C.Workers, counting(calls))
    assert len(calls) == N  # equal, but not made from s0's by EXCEPT: no shortcut


def test_commit_carries_entries_over_and_cuts_the_past() -> None:
    site = _tla.Site("t", ("finished",), ("phase",))
    calls: list[Value] = []
    s0 = asked_initial(site, calls)
    s1 = finish(s0, W[1])
    commit(s1)  # nobody asked s1 yet: its entry is carried over now, from s0's
    assert calls == [W[1]]
    assert s1._parent is None and s1.finished.changed_since(s0.finished) is None
    calls.clear()
    s2 = finish(s1, W[2])
    del s0  # the past is garbage: s2 links to s1 only
    assert _tla.select(site, C, s2, C.Workers, counting(calls)) == {W[1], W[2]}
    assert calls == [W[2]]


def test_commit_carries_an_untouched_entry_and_recomputes_one_whose_global_changed() -> None:
    site = _tla.Site("t", ("finished",), ("phase",))
    calls: list[Value] = []
    s0 = asked_initial(site, calls)
    other = _tla.child(s0, dataclasses.replace(s0, masterSeq=s0.masterSeq + 1))
    commit(other)  # the site reads neither masterSeq nor anything else that changed
    assert calls == [] and other._memo[site] is s0._memo[site]
    done = _tla.child(other, dataclasses.replace(other, phase="Done"))
    commit(done)  # phase is read whole: the entry is not carried
    assert _tla.select(site, C, done, C.Workers, counting(calls)) == C.Workers
    assert len(calls) == N


def test_a_cached_entry_is_no_part_of_the_state_value() -> None:
    s0 = initial_states(C)[0]
    asked = initial_states(C)[0]
    _tla.select(_tla.Site("t", ("finished",), ()), C, asked, C.Workers, counting([]))
    assert asked == s0 and hash(asked) == hash(s0) and repr(asked) == repr(s0)
    assert [f.name for f in dataclasses.fields(State)] == list(s0.as_dict())


def test_other_constants_never_reuse_an_entry() -> None:
    site = _tla.Site("t", ("finished",), ())
    s0 = initial_states(C)[0]
    other = dataclasses.replace(C, MaxRetry=5)  # equal Workers, another Constants object
    calls: list[Value] = []
    _tla.select(site, C, s0, C.Workers, counting(calls))
    _tla.select(site, other, s0, C.Workers, counting(calls))
    assert len(calls) == 2 * N


# ---- by_value sites and constant functions (a phase change's cost) -------------------------

VALUES = st.sampled_from([True, False, 0, 1, 2, "a", "b", ModelValue("m")])


def state_with(f: Fn, g: Fn) -> State:
    s0 = initial_states(C)[0]
    return dataclasses.replace(s0, finished=f, retries=g)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(VALUES, VALUES), min_size=N, max_size=N),
    st.sets(st.integers(0, N - 1), max_size=3),
    st.sets(st.tuples(VALUES, VALUES), max_size=6),
)
def test_a_by_value_site_in_full_holds_where_a_key_by_key_test_does(
    pairs: list[tuple[Value, Value]], missing: set[int], chosen: set[tuple[Value, Value]]
) -> None:
    """Random values (booleans beside integers, keys outside the domain): the grouped
    evaluation keeps exactly the keys the body holds at, testing at most every key."""
    f = Fn((w, a) for i, (w, (a, _)) in enumerate(zip(W, pairs, strict=True)) if i not in missing)
    g = Fn((w, b) for w, (_, b) in zip(W, pairs, strict=True))
    picked = {(a, type(a), b, type(b)) for a, b in chosen}

    def body(c: Any, s: Any, x: Value) -> bool:
        calls.append(x)
        if x not in s.finished:
            return False
        a, b = s.finished[x], s.retries[x]
        return (a, type(a), b, type(b)) in picked

    calls: list[Value] = []
    site = _tla.Site("t", ("finished", "retries"), (), by_value=True)
    got = _tla.select(site, C, state_with(f, g), C.Workers, body)
    calls_grouped = len(calls)
    want = {x for x in C.Workers if body(C, state_with(f, g), x)}
    assert got == want
    assert calls_grouped <= N


def test_a_by_value_site_tests_each_combination_once() -> None:
    f = Fn((w, i % 3 == 0) for i, w in enumerate(W))
    g = Fn((w, 0) for w in W)
    calls: list[Value] = []
    site = _tla.Site("t", ("finished", "retries"), (), by_value=True)

    def body(c: Any, s: Any, x: Value) -> bool:
        calls.append(x)
        return s.finished[x] is True and s.retries[x] == 0  # TRUE, not 1

    got = _tla.select(site, C, state_with(f, g), C.Workers, body)
    assert got == {w for i, w in enumerate(W) if i % 3 == 0}
    assert len(calls) == 2  # (TRUE, 0) and (FALSE, 0)
    calls.clear()
    ones = Fn((w, 1 if i == 5 else True) for i, w in enumerate(W))  # TRUE beside 1
    got = _tla.select(site, C, state_with(ones, g), C.Workers, body)
    assert got == {w for i, w in enumerate(W) if i != 5} and len(calls) == N


def test_a_constant_function_is_built_once_and_is_the_comprehension() -> None:
    made: list[int] = []

    def value() -> Value:
        made.append(1)
        return False

    f = _tla.const_fn(C.Workers, value)
    assert f == Fn((w, False) for w in W)
    assert _tla.const_fn(C.Workers, value) is f
    assert _tla.const_fn(C.Workers, lambda: 0) is not f  # FALSE and 0: two functions
    assert _tla.const_fn(C.Workers, lambda: 0)[W[0]] is not False
    assert _tla.const_fn(frozenset(), lambda: 1 // 0) == ()  # an empty domain: never evaluated
    assert _tla.const_fn(frozenset({1, 2}), lambda: "x") == ("x", "x")  # 1..2: a sequence
    _tla.const_fn(C.Workers, lambda: (True,))
    assert type(_tla.const_fn(C.Workers, lambda: (1,))[W[0]][0]) is int  # <<1>>, not <<TRUE>>
    assert len(made) == 2
