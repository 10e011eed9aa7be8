"""The step log encodes a step's changes from the engine's delta (the keys EXCEPT changed) in
O(those keys); decoded, they give exactly the state the step reached, as the full comparison
of every variable does."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from aegis.generated.aegis_phase import CFG_CONSTANTS, next_states
from aegis.runtime.engine import Engine, StepResult
from aegis.runtime.steplog import apply_changes, changes_between, decode_change, step_record

ENDINGS = ("envQuit", "jobDone")  # a walk that quits at once changes no function by EXCEPT


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_delta_encoded_changes_replay_to_the_same_state(seed: int) -> None:
    c = CFG_CONSTANTS
    assert c is not None
    rng = random.Random(seed)
    steps: list[StepResult] = []
    engine = Engine(c, on_step=steps.append)
    used_delta = 0
    for _ in range(60):
        succ = [x for x in next_states(c, engine.state) if x[0] not in ENDINGS]
        if not succ:
            break
        before = engine.state
        label, _pid, nxt = rng.choice(succ)
        engine.observe(label, **dict(nxt.choices))
        step = steps[-1]
        assert step.state == nxt.state and step.delta is not None and step.delta[0] is before
        rec = step_record(step, before)
        changes = {k: decode_change(v) for k, v in rec["changed"].items()}
        assert apply_changes(before, changes) == step.state
        full = changes_between(before, step.state)  # no delta: every variable compared
        assert set(rec["changed"]) == set(full)  # the same variables changed
        used_delta += any("except" in v for v in rec["changed"].values() if isinstance(v, dict))
    assert used_delta or len(steps) < 3
