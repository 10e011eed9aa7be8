"""The agent's projection (generated agent_view) is equivalent to the spec on the whole job.

For random reachable states of the spec, every worker's agent actions on its one-worker view
(GLOBALS, its OWN and PER_POD entries, DERIVED evaluated on the whole state) are enabled
exactly when they are on the full state, with the same successors as far as the agent can see
them. And an order built from that projection stays small however many pods the job has.
"""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from aegis.generated.aegis_phase import ACTIONS, Constants, State, agent_view, next_states
from aegis.runtime.controller.core import ControllerCore, JobConfig
from aegis.runtime.controller.store import FileStatusStore
from aegis.runtime.engine import initial_state
from aegis.values import Fn, ModelValue, Value, apply

ORDER_LIMIT = 64 * 1024  # bytes of one order message at 12,500 pods (issue 12)


def _constants(workers: int, max_retry: int, budget: int) -> Constants:
    return Constants(
        Workers=frozenset(ModelValue(f"w{i}") for i in range(workers)),
        MaxRetry=max_retry,
        InitSeqNum=0,
        FaultBudget=budget,
        MaxSeqGap=8,
    )


ENV_FAULTS = ("envQuit", "envPodRestart", "envDuplicate")


def _walk(c: Constants, picks: list[int], avoid: frozenset[str] = frozenset()) -> list[State]:
    """The states of a random behaviour: at each step a label of Next, then one of its
    successors, by the pick (label first, so that rare actions are taken as often as common
    ones: a hang, a checkpoint, an eviction); labels in `avoid` only when nothing else is
    enabled (a walk without quits or crashes gets further)."""
    s = initial_state(c)
    seen = [s]
    for pick in picks:
        by_label: dict[str, list[State]] = {}
        for label, _, succ in next_states(c, s):
            by_label.setdefault(label, []).append(succ.state)
        if not by_label:
            break
        labels = sorted(by_label.keys() - avoid) or sorted(by_label)
        succs = by_label[labels[pick % len(labels)]]
        s = succs[(pick // len(labels)) % len(succs)]
        seen.append(s)
    return seen


def _project(c: Constants, s: State, w: ModelValue) -> tuple[Constants, State]:
    """The one-worker view of worker `w` of the full state `s`."""
    one = Constants(
        Workers=frozenset({w}),
        MaxRetry=c.MaxRetry,
        InitSeqNum=c.InitSeqNum,
        FaultBudget=c.FaultBudget,
        MaxSeqGap=c.MaxSeqGap,
    )
    view = initial_state(one).as_dict()
    for name in agent_view.GLOBALS:
        view[name] = getattr(s, name)
    for name in (*agent_view.OWN, *agent_view.PER_POD):
        view[name] = Fn({w: apply(getattr(s, name), w)})
    return one, State.from_dict(view)


def _seen_by(s: State, w: ModelValue) -> tuple[Value, ...]:
    """What the agent of `w` sees of a state: the globals and its own entries."""
    mine = (apply(getattr(s, n), w) for n in (*agent_view.OWN, *agent_view.PER_POD))
    return (*(getattr(s, n) for n in agent_view.GLOBALS), *mine)


def _directed(c: Constants, priority: tuple[str, ...], steps: int) -> list[State]:
    """A behaviour that always takes the first enabled label of `priority` (its first
    successor, no Error): one that reaches the rare agent actions for sure."""
    s = initial_state(c)
    seen = [s]
    for _ in range(steps):
        by_label: dict[str, State] = {}
        for lbl, _, succ in next_states(c, s):
            if ("outcome", "Error") not in succ.choices:  # work ends well: faults are spent
                by_label.setdefault(lbl, succ.state)  # on the slow path
        chosen = next((x for x in priority if x in by_label), None)
        if chosen is None:
            break
        s = by_label[chosen]
        seen.append(s)
    return seen


def _assert_equivalent(c: Constants, s: State) -> set[str]:
    """The projection and the full state agree at every worker; the agent labels enabled."""
    enabled = set()
    derived = agent_view.derive(c, s)
    for w in sorted(c.Workers, key=repr):
        one, view = _project(c, s, w)
        for label in agent_view.AGENT_ACTIONS:
            pid = next(iter(ACTIONS[label].process_ids(c)))
            full = {
                (succ.choices, _seen_by(succ.state, w))
                for succ in ACTIONS[label].successors(c, s, pid)
                if dict(succ.choices)[agent_view.ACTOR] == w
            }
            projected = {
                (succ.choices, _seen_by(succ.state, w))
                for succ in agent_view.AGENT_STEPS[label](one, view, derived, pid)
            }
            assert projected == full, (label, w, s)
            if full:
                enabled.add(str(label))
    return enabled


# controller decisions first, then the slow-node path's agent steps before plain work
SLOW_PATH_FIRST = (
    "receive", "failedWrapUp", "quitRequested", "retriesExhausted", "restartInRun", "evictSlow",
    "restartOutsideRun", "restartDone", "alignRetries", "hangWithQuit", "advance",
    "agentEvict", "agentCheckpoint", "agentHang", "agentJoin", "reschedule", "agentWork",
)  # fmt: skip


def test_every_agent_action_is_compared_on_a_slow_node_behaviour() -> None:
    c = _constants(3, 2, 3)
    enabled: set[str] = set()
    for s in _directed(c, SLOW_PATH_FIRST, 60):
        enabled |= _assert_equivalent(c, s)
    assert enabled == {str(x) for x in agent_view.AGENT_ACTIONS}


@settings(max_examples=60, deadline=None)
@given(
    workers=st.integers(1, 3),
    max_retry=st.integers(0, 2),
    budget=st.integers(0, 4),
    picks=st.lists(st.integers(0, 10**6), max_size=80),
    avoid=st.frozensets(st.sampled_from(ENV_FAULTS)),
)
def test_agent_actions_on_the_view_equal_those_on_the_full_state(
    workers: int, max_retry: int, budget: int, picks: list[int], avoid: frozenset[str]
) -> None:
    c = _constants(workers, max_retry, budget)
    for s in _walk(c, picks, avoid | {"jobDone"}):
        _assert_equivalent(c, s)


def test_the_projection_is_what_the_agent_actions_read() -> None:
    # what the generator found in spec/AegisPhase.tla (a change here is a protocol change)
    assert agent_view.GLOBALS == ("phase", "masterSeq", "msgs", "checkpointed", "faults")
    assert agent_view.OWN == ("agentSeq", "agentState")
    assert agent_view.PER_POD == ("slow", "evict")
    assert agent_view.DERIVED == ("Evicting", "Quiescent")


def test_an_order_at_12500_pods_is_small(tmp_path: Path) -> None:
    pods = tuple(f"job-worker-{i}" for i in range(12_500))
    core = ControllerCore(
        JobConfig("job", "default", pods, 3), FileStatusStore(tmp_path / "status.json")
    )
    broadcast = core.orders.order_for().encode()
    reply = core.orders.order_for(pods[-1]).encode()
    assert len(broadcast) < ORDER_LIMIT and len(reply) < ORDER_LIMIT, (len(broadcast), len(reply))
    # and it does not grow with the job: the same Data as at 2 pods
    small = ControllerCore(
        JobConfig("job", "default", pods[:2], 3), FileStatusStore(tmp_path / "small.json")
    )
    # (the envelope's timestamp varies, and the heartbeat period asked for: a number <= 60 s)
    data = json.dumps({**core.orders.order_for().data, "beatS": 0})
    assert len(json.dumps({**small.orders.order_for().data, "beatS": 0})) == len(data)
