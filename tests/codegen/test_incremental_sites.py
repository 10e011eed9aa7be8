"""Sites (generated _tla.Site): a successor's derived set costs the keys that changed (issue 12).

Each test counts the calls of a site's per-key test: the cost that must not grow with the pod
count. The committed package's _tla is the code under test (the runtime's).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

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
    s0 = initial_states(C)[0]
    _tla.select(site, C, s0, C.Workers, counting(calls))
    calls.clear()
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
    s0 = initial_states(C)[0]
    _tla.select(site, C, s0, C.Workers, counting(calls))
    calls.clear()
    s1 = finish(s0, W[1])
    commit(s1)  # nobody asked s1 yet: its entry is carried over now, from s0's
    assert calls == [W[1]]
    assert s1._parent is None and s1.finished.changed_since(s0.finished) is None
    calls.clear()
    s2 = finish(s1, W[2])
    del s0  # the past is garbage: s2 links to s1 only
    assert _tla.select(site, C, s2, C.Workers, counting(calls)) == {W[1], W[2]}
    assert calls == [W[2]]


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
