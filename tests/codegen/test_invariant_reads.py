"""The variables the generator says each invariant reads are all it reads (issue 12).

The engine re-checks after a step only the invariants that read a variable the step changed
(`violated_invariants(c, s, changed)`): sound only if `INVARIANT_READS` leaves out no variable
an invariant depends on. Checked on random states: any mix of the variables of reachable
states (so that invariants are both true and false), then every variable an invariant does
not read replaced by another state's: its value must not move; and, traced, evaluating an
invariant reads no variable outside its set.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from aegis.generated.aegis_phase import VARIABLES, State
from aegis.generated.aegis_phase.invariants import INVARIANT_READS, INVARIANTS
from aegis.generated.aegis_phase.invariants import violated_invariants as violated
from aegis.runtime.engine import Engine, runtime_constants
from aegis.values import Fn, ModelValue, Value

PODS = ("a", "b", "c")
C = runtime_constants(PODS, 1, budget=6)
OBSERVED: tuple[str, ...] = ("agentJoin", "agentWork", "agentHang", "agentCheckpoint", "agentEvict")
OBSERVED += ("envPodRestart", "envDuplicate", "reschedule", "receive", "receive", "envQuit")


def fresh(v: Value) -> Value:
    """The value without the cached entries or EXCEPT provenance of the state it came from."""
    return Fn(dict(v.items())) if isinstance(v, Fn) else v


@st.composite
def reachable(draw: st.DrawFn) -> State:
    """A state the engine reaches by random observations, each then settled."""
    e = Engine(C)
    for _ in range(draw(st.integers(0, 30))):
        label = draw(st.sampled_from(OBSERVED))
        if label == "receive":
            if e.state.msgs:
                e.observe("receive", m=draw(st.sampled_from(sorted(e.state.msgs, key=repr))))
        elif label == "agentWork":
            outcome = draw(st.sampled_from(("Finish", "Error")))
            e.observe(label, w=ModelValue(draw(st.sampled_from(PODS))), outcome=outcome)
        elif label == "envQuit":
            e.observe(label)
        else:
            e.observe(label, w=ModelValue(draw(st.sampled_from(PODS))))
        e.settle()
    return e.state


def mix(states: list[State], pick: dict[str, int], cls: type[State] = State) -> State:
    """The state whose variable v is `states[pick[v]]`'s."""
    return cls(**{v: fresh(getattr(states[pick[v]], v)) for v in VARIABLES})


THREE_STATES = st.lists(reachable(), min_size=3, max_size=3)
# which of the three states each variable comes from: invariants true and false, every branch
PICKS = st.fixed_dictionaries({v: st.integers(0, 2) for v in VARIABLES})


class Traced(State):
    """A State that notes every variable read of it."""

    __slots__ = ()
    read: set[str] = set()

    def __getattribute__(self, name: str) -> object:
        if name in VARIABLE_SET:
            Traced.read.add(name)
        return super().__getattribute__(name)


VARIABLE_SET = frozenset(VARIABLES)


@settings(max_examples=60, deadline=None)
@given(THREE_STATES, PICKS)
def test_an_invariant_reads_no_variable_outside_its_read_set(
    states: list[State], pick: dict[str, int]
) -> None:
    for name, holds in INVARIANTS.items():
        Traced.read = set()
        holds(C, mix(states, pick, Traced))
        reads = INVARIANT_READS[name]
        assert reads is None or Traced.read <= reads, (name, sorted(Traced.read - reads))


@settings(max_examples=40, deadline=None)
@given(THREE_STATES, PICKS)
def test_an_invariant_does_not_move_with_a_variable_it_does_not_read(
    states: list[State], pick: dict[str, int]
) -> None:
    base = mix(states, pick)
    for name, holds in INVARIANTS.items():
        reads = INVARIANT_READS[name]
        if reads is None:
            continue
        other = {v: (pick[v] if v in reads else (pick[v] + 1) % 3) for v in VARIABLES}
        assert holds(C, mix(states, other)) == holds(C, base), (name, sorted(reads))


def test_the_read_sets_are_not_empty_guesses() -> None:
    # every invariant of AegisPhase reads state, and none is left unknown (which would be
    # re-checked after every step: correct, but the cost the sets exist to avoid)
    assert set(INVARIANT_READS) == set(INVARIANTS)
    assert all(reads and reads <= set(VARIABLES) for reads in INVARIANT_READS.values())


@settings(max_examples=40, deadline=None)
@given(reachable(), reachable(), st.sets(st.sampled_from(VARIABLES)))
def test_the_frame_check_finds_what_the_full_check_finds_among_what_changed(
    before: State, after: State, touched: set[str]
) -> None:
    # a "step" from `before` (every invariant holds) to the state that takes the variables in
    # `touched` from `after`: whatever breaks is found by the check of what changed
    assert not violated(C, before)
    picks = {v: 1 if v in touched else 0 for v in VARIABLES}
    succ = mix([before, after], picks)
    assert violated(C, succ, touched) == violated(C, succ)
