"""The step log encodes a step's changes from the engine's delta (the keys EXCEPT changed) in
O(those keys); decoded, they give exactly the state the step reached, as the full comparison
of every variable does."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aegis.generated.aegis_phase import CFG_CONSTANTS, next_states
from aegis.runtime.engine import Engine, StepResult
from aegis.runtime.steplog import (
    LoggedStep,
    StepLog,
    apply_changes,
    changes_between,
    decode_change,
    open_steplog,
    step_record,
)

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


class FailingOnce:
    """A file whose next write fails (a full disk), then works again."""

    def __init__(self, f: Any) -> None:
        self.f, self.fail = f, True

    def write(self, text: str) -> int:
        if self.fail:
            self.fail = False
            raise OSError(28, "No space left on device")
        return int(self.f.write(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.f, name)


def test_a_commit_whose_steps_were_not_written_does_not_shift_the_next_changes(
    tmp_path: Path,
) -> None:
    """A commit's steps go out in one write; when it fails, the next commit's changes are
    still counted from the last state in the file, so its records replay to its states."""
    c = CFG_CONSTANTS
    assert c is not None
    steps: list[StepResult] = []
    engine = Engine(c, on_step=steps.append)
    log = StepLog(tmp_path / "steps.jsonl")
    log.write_initial(c, engine.state)

    def walk(n: int) -> list[StepResult]:
        start = len(steps)
        rng = random.Random(n)
        for _ in range(n):
            succ = [x for x in next_states(c, engine.state) if x[0] not in ENDINGS]
            label, _pid, nxt = rng.choice(succ)
            engine.observe(label, **dict(nxt.choices))
        return steps[start:]

    written = walk(3)
    log.write_all(written)
    log._f = FailingOnce(log._f)  # type: ignore[assignment]
    with pytest.raises(OSError):
        log.write_all(walk(2))  # lost: the log misses these steps
    after = walk(3)
    log.write_all(after)
    log.close()
    header, events = open_steplog(tmp_path / "steps.jsonl")
    logged = list(events)
    assert [e.seq_no for e in logged if isinstance(e, LoggedStep)] == [
        s.seq_no for s in (*written, *after)
    ]
    state, replayed = header.init, []
    for event in logged:
        assert isinstance(event, LoggedStep)
        # after the gap each record's changes count from the last state in the file
        state = apply_changes(written[-1].state if event is logged[3] else state, event.changes)
        replayed.append(state)
    assert replayed == [s.state for s in (*written, *after)]


def test_an_except_change_of_a_key_outside_the_domain_is_refused_naming_it() -> None:
    from aegis.runtime.steplog import StepLogError
    from aegis.values import Fn, ModelValue

    before = Fn({ModelValue("w1"): "Ready", ModelValue("w2"): "Ready"})
    change = decode_change({"except": [[{"mv": "w2"}, "Exited"], [{"mv": "w9"}, "Exited"]]})
    with pytest.raises(StepLogError, match="w9 outside the domain"):
        change.apply(before)
    assert dict(before.items())[ModelValue("w2")] == "Ready"  # left as it was
    after = decode_change({"except": [[{"mv": "w2"}, "Exited"]]}).apply(before)
    assert after == Fn({ModelValue("w1"): "Ready", ModelValue("w2"): "Exited"})


def test_a_step_record_missing_a_field_is_refused_naming_it(tmp_path: Path) -> None:
    from aegis.runtime.steplog import StepLogError

    c = CFG_CONSTANTS
    assert c is not None
    path = tmp_path / "steps.jsonl"
    log = StepLog(path)
    log.write_initial(c, Engine(c).state)
    log.close()
    good = path.read_text(encoding="utf-8")
    step = '{"seq_no": 1, "action": "envQuit", "process": "env", "choices": []}\n'
    path.write_text(good + step, encoding="utf-8")
    _, events = open_steplog(path)
    with pytest.raises(StepLogError, match=r":2: malformed step record \(no 'changed'\)"):
        list(events)
