"""Real runs for the timeline tests (module scope: each runs once).

- `level3_run`: rank 1 crashes once (a command error, Level 1), then its troubleshoot checks
  find a lost GPU on node-2 (`--simulate node-2=gpu_lost`): it exits 1 and is rescheduled
  (Level 3, node-2 blacklisted).
- `evict_run`: rank 1 is slow (`--simulate node-2=slow_allreduce`): marked hung, decided
  `hangWithQuit`, evicted at the next checkpoint (signalled once hangWithQuit is in the step
  log), rescheduled.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..support import AegisRun


def applied(state: Path, action: str) -> bool:
    path = state / "steps.jsonl"
    if not path.exists():
        return False
    for line in path.read_text().splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if rec.get("action") == action and "rejected" not in rec:
            return True
    return False


@pytest.fixture(scope="module")
def level3_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AegisRun]:
    tmp = tmp_path_factory.mktemp("level3")
    env = {"CRASH_ONCE_RANK": "1", "CRASH_DIR": str(tmp / "crash")}
    run = AegisRun(tmp, 2, "--simulate", "node-2=gpu_lost", env=env)
    try:
        assert run.finish(150) == 0, run.stderr[-3000:]
        yield run
    finally:
        run.stop()


@pytest.fixture(scope="module")
def evict_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AegisRun]:
    tmp = tmp_path_factory.mktemp("evict")
    go = tmp / "checkpoint-go"
    env = {"TRAIN_UNTIL_STOPPED": "1", "STEP_S": "0.05", "CHECKPOINT_WHEN": str(go)}
    run = AegisRun(tmp, 2, "--simulate", "node-2=slow_allreduce", env=env)
    try:
        run.wait_until(lambda: applied(run.state, "hangWithQuit"), 120, "hangWithQuit")
        go.touch()
        assert run.finish(150) == 0, run.stderr[-3000:]
        yield run
    finally:
        run.stop()
