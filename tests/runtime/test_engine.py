"""The spec executor: observations, settle order, rejection, invariants, codec round trip."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aegis.generated.aegis_phase import ACTIONS, next_states
from aegis.protocol.state_codec import decode, decode_state, encode, encode_state
from aegis.runtime import engine as eng
from aegis.runtime.engine import DECISION_ORDER, OBSERVATIONS, Engine, report, runtime_constants
from aegis.values import Fn, ModelValue

PODS = ("a", "b")


def joined() -> Engine:
    e = Engine(runtime_constants(PODS, 1))
    for p in PODS:
        assert e.observe("agentJoin", w=ModelValue(p)).applied
        e.settle()
    return e


def test_labels_cover_the_spec() -> None:
    assert set(DECISION_ORDER) | set(OBSERVATIONS) == set(ACTIONS)


def test_join_then_bootcheck_order() -> None:
    e = joined()
    assert (e.state.phase, e.state.masterSeq) == ("BootChecking", 1)


def test_rejected_observation_leaves_state() -> None:
    e = joined()
    before = e.state
    step = e.observe("agentJoin", w=ModelValue("a"))  # already Ready
    assert not step.applied and e.state == before and e.rejected == 1


def test_error_in_run_counts_and_troubleshoots() -> None:
    e = joined()
    for p in PODS:
        e.observe("agentWork", w=ModelValue(p), outcome="Finish")
        e.observe("receive", m=report(ModelValue(p), "Finish", 1))
    e.settle()
    assert e.state.phase == "RunCommand"
    e.observe("agentWork", w=ModelValue("b"), outcome="Error")
    e.observe("receive", m=report(ModelValue("b"), "Error", 2))
    assert (e.state.phase, e.state.recoverCount, e.state.masterSeq) == ("Troubleshooting", 1, 3)


def test_invariant_violation_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    e = Engine(runtime_constants(PODS, 1))
    asked: list[object] = []

    def broken(c: object, s: object, changed: object = None) -> list[str]:
        asked.append(changed)
        return ["ValidPhase"]

    monkeypatch.setattr(eng, "violated_invariants", broken)
    with pytest.raises(eng.InvariantViolation, match=r"step agentJoin violates .*ValidPhase"):
        e.observe("agentJoin", w=ModelValue("a"))
    # a step asks only about what it changed (the join: agent a's entries)
    (changed,) = asked
    assert isinstance(changed, dict) and "agentState" in changed and "phase" not in changed


def test_a_starting_state_that_breaks_an_invariant_is_refused() -> None:
    c = runtime_constants(PODS, 1)
    state = Engine(c).state
    broken = type(state)(**{**state.as_dict(), "recoverCount": 5})  # past MaxRetry
    with pytest.raises(eng.InvariantViolation, match="the starting state violates"):
        Engine(c, broken)
    Engine(c, broken, check_invariants=False)  # the caller's choice (conformance checks apart)
    Engine(c, broken, start_checked=True)  # the caller says it checked (a resumed controller)


def test_each_step_checks_the_invariants_reading_what_it_changed() -> None:
    # a step from a state that breaks an invariant it does not touch is not blamed for it
    # (the starting state was checked whole); one that touches it is
    c = runtime_constants(PODS, 1)
    e = Engine(c)
    state = type(e.state)(**{**e.state.as_dict(), "recoverCount": 5})
    e = Engine(c, state, check_invariants=False)
    e.check_invariants = True
    assert e.observe("agentJoin", w=ModelValue("a")).applied  # changes no variable they read
    assert "RecoverCountBound" in eng.violated_invariants(c, e.state)
    assert e.observe("agentJoin", w=ModelValue("b")).applied
    with pytest.raises(eng.InvariantViolation, match="RecoverCountBound"):
        e.settle()  # the bootcheck order changes phase, which RecoverCountBound reads


def test_codec_round_trip() -> None:
    e = joined()
    assert decode_state(encode_state(e.state)) == e.state
    v = (frozenset({ModelValue("x"), 3}), Fn({"k": (True, "s")}))
    assert decode(encode(v)) == v


_CHOICES = st.sampled_from(PODS).map(ModelValue)


@st.composite
def observation(draw: st.DrawFn) -> tuple[str, dict[str, object]]:
    label = draw(
        st.sampled_from(
            (
                "agentJoin",
                "agentWork",
                "envPodRestart",
                "reschedule",
                "envQuit",
                "receive",
                "envDuplicate",
            )
        )
    )
    if label == "envQuit":
        return label, {}
    if label == "agentWork":
        return label, {"w": draw(_CHOICES), "outcome": draw(st.sampled_from(("Finish", "Error")))}
    if label == "receive":
        return label, {}
    return label, {"w": draw(_CHOICES)}


@settings(max_examples=60, deadline=None)
@given(st.lists(observation(), max_size=40))
def test_random_observations_keep_invariants(obs: list[tuple[str, dict[str, object]]]) -> None:
    e = Engine(runtime_constants(PODS, 1, budget=6))
    for label, choices in obs:
        if label == "receive":  # take the first message in flight, if any
            msgs = sorted(e.state.msgs, key=repr)
            if not msgs:
                continue
            choices = {"m": msgs[0]}
        before = e.state
        step = e.observe(label, **choices)
        if not step.applied:
            assert e.state == before
        e.settle()
        assert not eng.violated_invariants(e.constants, e.state)
        legal = {(lab, s.state) for lab, _pid, s in next_states(e.constants, before)}
        if step.applied:
            assert (label, step.state) in legal


def test_find_then_take_is_observe_without_recomputing() -> None:
    from aegis.generated.aegis_phase import CFG_CONSTANTS

    assert CFG_CONSTANTS is not None
    w = sorted(CFG_CONSTANTS.Workers, key=repr)[0]
    a, b = Engine(CFG_CONSTANTS), Engine(CFG_CONSTANTS)
    assert a.find("agentWork", w=w, outcome="Finish") is None  # nothing to work on in Pending
    assert a.reject("agentWork", w=w).applied is False and a.rejected == 1
    found = a.find("agentJoin", w=w)
    assert found is not None
    assert a.take("agentJoin", found).state == b.observe("agentJoin", w=w).state


def test_an_observation_builds_only_the_observed_pods_successor() -> None:
    """Issue 12: binding the observed choice, not enumerating every pod's successor."""
    pods = [f"p{i:04d}" for i in range(2000)]
    e = Engine(runtime_constants(pods, 1))
    info = ACTIONS["agentJoin"]
    (pid,) = info.process_ids(e.constants)
    built = list(info.steps(e.constants, e.state, pid, {"w": ModelValue("p0007")}))
    assert [dict(s.choices)["w"] for s in built] == [ModelValue("p0007")]
    assert list(info.steps(e.constants, e.state, pid, {"w": ModelValue("nobody")})) == []
    found = e.find("agentJoin", w=ModelValue("p0007"))
    assert found is not None and found[1].state == built[0].state


def test_applied_states_keep_no_history() -> None:
    """Each applied state is committed: no link to the states before it (bounded memory)."""
    e = joined()
    for p in PODS:
        e.observe("agentWork", w=ModelValue(p), outcome="Finish")
        e.settle()
    s = e.state
    assert getattr(s, "_parent", None) is None
    assert all(f.changed_since(f) == [] for f in s.as_dict().values() if isinstance(f, Fn))
    assert all(getattr(f, "_base", None) is None for f in s.as_dict().values() if isinstance(f, Fn))
