"""Replay spec behaviours through the controller core: same state after every step.

Behaviours are random walks over the generated `next_states` with the cfg's constants (the
conformance suite's TLC behaviours can be fed in the same way). Each step is applied by the
controller's engine with the behaviour's choices, persisted, and the controller restored
from the store must hold the very same state.
"""

from __future__ import annotations

import random
from pathlib import Path

from aegis.generated.aegis_phase import CFG_CONSTANTS, next_states
from aegis.runtime.controller.core import ControllerCore, JobConfig
from aegis.runtime.controller.store import FileStatusStore
from aegis.runtime.engine import initial_state


def behaviour(seed: int, length: int) -> list[tuple[str, tuple[tuple[str, object], ...], object]]:
    assert CFG_CONSTANTS is not None
    rng = random.Random(seed)
    s = initial_state(CFG_CONSTANTS)
    steps: list[tuple[str, tuple[tuple[str, object], ...], object]] = []
    for _ in range(length):
        succ = list(next_states(CFG_CONSTANTS, s))
        if not succ:
            break
        label, _pid, nxt = rng.choice(succ)
        steps.append((label, nxt.choices, nxt.state))
        s = nxt.state
    return steps


def test_replay_random_behaviours(tmp_path: Path) -> None:
    assert CFG_CONSTANTS is not None
    pods = tuple(sorted(w.name for w in CFG_CONSTANTS.Workers))
    job = JobConfig("replay", "default", pods, CFG_CONSTANTS.MaxRetry)
    for seed in range(20):
        store = FileStatusStore(tmp_path / f"status-{seed}.json")
        core = ControllerCore(job, store, constants=CFG_CONSTANTS)
        for i, (label, choices, after) in enumerate(behaviour(seed, 40)):
            step = core.engine.observe(label, **dict(choices))
            assert step.applied and core.state == after, (seed, i, label)
            core.journal.touch()  # this event must be made durable: marks it dirty
            core.journal.commit()
            if i % 10 == 9:
                restored = ControllerCore(job, FileStatusStore(store.path))
                assert restored.state == after
