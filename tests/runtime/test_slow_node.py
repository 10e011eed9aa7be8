"""The slow-node path end to end: mark (hang), hangWithQuit, eviction only at a checkpoint.

Rank 1 runs on node-2, whose allreduce-performance check is told to be slow
(`--simulate node-2=slow_allreduce`): its agent passes the bootcheck but reports Hang once the
command runs. The master decides hangWithQuit; rank 1 keeps training (nothing is killed) until
a checkpoint every rank saved completes (`aegis.checkpoint_done` in each rank, released by the
test; the ranks do not use aegis.checkpoint here); only then does rank 1's agent leave (exit
1): node-2 goes to ErrorNodes, rank 1 restarts on node-3, and the job finishes. A second test
checks that a silent rank (asleep outside any collective) is found as the culprit within the
hang timeout and restarted in place: its pod charged, no node blacklisted, nothing evicted.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from aegis.checks.progress import DEFAULT_PROGRESS_INTERVAL_S
from aegis.runtime.engine import runtime_constants

from ..support import AEGIS, Launch
from ..support.steplog import steplog_ok

PODS = ["local-worker-0", "local-worker-1"]


def _steps(state: Path) -> list[dict[str, Any]]:
    path = state / "steps.jsonl"
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            rec = json.loads(line)
        except ValueError:  # a line being written
            continue
        if "action" in rec and "rejected" not in rec:
            out.append(rec)
    return out


def _pod(rec: dict[str, Any]) -> str | None:
    """The pod a step was taken for (its choice `w`, a model value in the step log)."""
    for name, value in rec.get("choices") or []:
        if name == "w" and isinstance(value, dict):
            return str(value.get("mv"))
    return None


def _applied(state: Path, action: str, pod: str | None = None) -> list[dict[str, Any]]:
    return [r for r in _steps(state) if r["action"] == action and (pod is None or _pod(r) == pod)]


def _times(path: Path, kind: str, rank: int) -> list[float]:
    if not path.exists():
        return []
    rows = [line.split() for line in path.read_text().splitlines()]
    return [float(t) for k, r, t in rows if k == kind and int(r) == rank]


def test_slow_rank_is_evicted_only_after_the_next_checkpoint(
    tmp_path: Path, aegis_run: Launch
) -> None:
    go, times = tmp_path / "checkpoint-go", tmp_path / "times"
    env = {
        "TRAIN_UNTIL_STOPPED": "1",
        "STEP_S": "0.05",
        "CHECKPOINT_WHEN": str(go),
        "TIMES_FILE": str(times),
        "SAVE_EVERY": "0",
    }
    run = aegis_run(2, "--simulate", "node-2=slow_allreduce", env=env)
    state = run.state
    run.wait_until(
        lambda: bool(_applied(state, "hangWithQuit", PODS[1])),
        120,
        "hangWithQuit of the slow rank",
    )
    seen = run.output.count("rank 1 step")
    # marked for eviction, the slow rank keeps training: nothing is killed before a
    # checkpoint (wait for 20 more of its steps)
    run.wait_until(
        lambda: run.output.count("rank 1 step") >= seen + 20,
        60,
        "rank 1 training on while marked",
    )
    assert not _applied(state, "agentEvict") and not _applied(state, "evictSlow")
    assert run.status()["errorNodes"] == []
    go.touch()
    assert run.finish(150) == 0, run.output[-3000:]
    text = run.output
    steps = _steps(state)
    actions = [(r["action"], _pod(r)) for r in steps]
    hang = actions.index(("agentHang", PODS[1]))
    decide = actions.index(("hangWithQuit", PODS[1]))
    # the safe point is the report that made a step every pod saved: one of the two
    (checkpoint,) = [i for i, (a, _) in enumerate(actions) if a == "agentCheckpoint"]
    evict = actions.index(("agentEvict", PODS[1]))
    assert hang < decide < checkpoint < evict
    assert actions[evict + 1] == ("evictSlow", PODS[1])
    # the eviction came after every rank reported its checkpoint
    (ckpt_time,) = _times(times, "checkpoint", 0)
    (ckpt_time_1,) = _times(times, "checkpoint", 1)
    assert float(steps[evict]["t"]) > max(ckpt_time, ckpt_time_1)
    s = run.status()
    assert s["phase"] == "Succeed"
    assert [e["node"] for e in s["errorNodes"]] == ["node-2"]
    assert "slow node evicted" in s["errorNodes"][0]["reason"]
    assert "rank 1 done (restart 1)" in text
    assert "hardware faults rescheduled 0, slow nodes evicted 1" in text
    steplog_ok(state / "steps.jsonl", runtime_constants(PODS, 3))


def test_a_silent_rank_is_found_within_the_hang_timeout_and_restarted_in_place(
    tmp_path: Path, aegis_run: Launch
) -> None:
    release, times = tmp_path / "release", tmp_path / "times"
    timeout = 2.0
    env = {
        "STEP_S": "0.05",
        "STEPS": "8",
        "HANG_RANK": "1",
        "HANG_AFTER": "3",
        "HANG_RELEASE": str(release),
        "TIMES_FILE": str(times),
    }
    run = aegis_run(2, "--hang-timeout", str(timeout), env=env)
    state = run.state
    # never released: the agent finds the culprit (asleep outside any collective) and stops it
    assert run.finish(240) == 0, run.output[-3000:]
    (went_silent,) = _times(times, "hang", 1)
    errors = [r for r in _applied(state, "agentWork") if ["outcome", "Error"] in r["choices"]]
    (error,) = errors
    assert _pod(error) == PODS[1]
    detected_after = float(error["t"]) - went_silent
    print(f"silent rank stopped after {detected_after:.3f} s (hang timeout {timeout:g} s)")
    # not early (the progress file is written at most every DEFAULT_PROGRESS_INTERVAL_S, so
    # its last write may precede the last step by that much), and not late: a poll, the look
    # at the ranks (a 0.5 s CPU sample and a stack sample each) and the report
    early = timeout - DEFAULT_PROGRESS_INTERVAL_S
    assert early <= detected_after <= timeout + 4.0, detected_after
    assert "not in a collective" in run.stdout, run.stdout[-3000:]
    assert "rank 1 done (restart 1)" in run.output
    assert not _applied(state, "agentHang") and not _applied(state, "agentEvict")
    assert run.status()["errorNodes"] == []
    steplog_ok(state / "steps.jsonl", runtime_constants(PODS, 3))


def test_hang_timeout_flag_is_validated() -> None:
    for bad in ("-1", "soon", "nan"):
        r = subprocess.run(
            [*AEGIS, "run", "-n", "1", "--hang-timeout", bad, "--", "true"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert r.returncode == 2 and "--hang-timeout" in r.stderr, r.stderr
