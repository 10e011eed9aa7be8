"""Goodput end to end (`aegis run`, real gloo ranks of examples/train_ddp.py): a crashed rank
resumes from its agent's memory losing at most a step; a hung (SIGSTOPped) rank is found and
restarted within the hang timeout + 10 s, only its pod blamed and no node blacklisted."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from aegis.runtime.engine import runtime_constants

from ..support import AEGIS, Launch
from ..support.steplog import steplog_ok

PODS = ["local-worker-0", "local-worker-1"]


def _times(path: Path, kind: str) -> list[tuple[int, float]]:
    rows = [line.split() for line in path.read_text().splitlines()] if path.exists() else []
    return [(int(r), float(t)) for k, r, t in rows if k == kind]


def _faults(state: Path) -> list[dict[str, Any]]:
    path = state / "faults.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ctl(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [*AEGIS, "ctl", "--state-dir", str(state), *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


def _held_by_both(state: Path) -> dict[str, Any] | None:
    answer = _ctl(state, "--json", "status")
    if answer.returncode != 0:  # e.g. the request timed out on a loaded machine: ask again
        return None
    view = json.loads(answer.stdout)["result"]["checkpoints"]
    pods = view["pods"]
    return view if set(pods) == set(PODS) and all(p["held"] for p in pods.values()) else None


def _steps_done(output: str, rank: int) -> list[int]:
    return [int(m) for m in re.findall(rf"rank {rank} step (\d+)\n", output)]


def test_a_crashed_rank_resumes_from_memory_and_loses_at_most_a_step(
    tmp_path: Path, aegis_run: Launch
) -> None:
    env = {"STEPS": "300", "STEP_S": "0.05"}
    run = aegis_run(
        2, "--checkpoint-dir", str(tmp_path / "ckpt"), "--metrics-port", str(_port()), env=env
    )
    run.wait_until(lambda: len(_steps_done(run.stdout, 1)) >= 15, 180, "rank 1 at step 15")
    # what the agents hold, in `aegis ctl status` (their heartbeats: one beat at most)
    view = run.wait_until(lambda: _held_by_both(run.state), 30, "both pods' checkpoints in status")
    assert all(p["shmBytes"] > 0 for p in view["pods"].values()), view
    assert "checkpoints: complete step" in _ctl(run.state, "status").stdout
    (pid,) = run.rank_pids(1)
    signal_time_steps = max(max(_steps_done(run.stdout, r), default=-1) for r in (0, 1))
    os.kill(pid, signal.SIGKILL)
    assert run.finish(240) == 0, run.output[-3000:]
    text = run.stdout
    restored = [int(m) for m in re.findall(r"rank \d restored step (\d+) from memory", text)]
    assert len(restored) == 2 and len(set(restored)) == 1, text[-3000:]
    # what both ranks had done when rank 1 died (its print comes after the step's save)
    done_before = max(max(_steps_done(text, r)) for r in (0, 1))
    assert done_before >= signal_time_steps
    assert done_before - restored[0] <= 1, (done_before, restored)
    assert "rank 0 done (restart 1)" in text and "rank 1 done (restart 1)" in text
    status = json.loads((run.state / "status.json").read_text())
    assert status["phase"] == "Succeed"
    metrics = (run.state / "metrics.prom").read_text()
    assert re.search(
        r'aegis_checkpoint_shm_bytes\{job="local",pod="local-worker-1"\} [1-9]', metrics
    )


def test_a_stopped_rank_is_restarted_within_the_hang_timeout_and_only_its_pod_is_blamed(
    tmp_path: Path, aegis_run: Launch
) -> None:
    times, timeout = tmp_path / "times", 3.0
    env = {"STEPS": "150", "STEP_S": "0.05", "TIMES_FILE": str(times)}
    run = aegis_run(2, "--hang-timeout", str(timeout), env=env)
    run.wait_until(lambda: len(_steps_done(run.stdout, 1)) >= 10, 180, "rank 1 at step 10")
    (pid,) = run.rank_pids(1)
    stopped = time.time()
    os.kill(pid, signal.SIGSTOP)  # never continued
    run.wait_until(lambda: len(_times(times, "step1")) >= 4, 180, "a step of the next attempt")
    restarted = max(t for _, t in _times(times, "start")[2:])
    again = max(t for _, t in _times(times, "step1")[2:])
    # starting a rank (interpreter, torch, the process group) costs what it cost the first
    # attempt, whoever restarts it: seconds on a quiet machine, tens on a loaded one
    cold = max(t for _, t in _times(times, "step1")[:2]) - max(
        t for _, t in _times(times, "start")[:2]
    )
    print(
        f"after the SIGSTOP: ranks restarted in {restarted - stopped:.2f} s, training again in "
        f"{again - stopped:.2f} s (hang timeout {timeout:g} s; a cold start took {cold:.2f} s)"
    )
    assert restarted - stopped <= timeout + 10.0
    assert again - restarted <= max(10.0, 1.5 * cold)
    assert run.finish(240) == 0, run.output[-3000:]
    faults = _faults(run.state)
    blamed = {f["pod"] for f in faults}
    assert blamed == {PODS[1]}, faults
    (error,) = [f for f in faults if "error" in f["message"]]
    assert "stopped" in error["message"] and "hang" in error["message"], error
    status = json.loads((run.state / "status.json").read_text())
    assert status["phase"] == "Succeed" and status["errorNodes"] == []
    steps = [json.loads(x) for x in (run.state / "steps.jsonl").read_text().splitlines()]
    assert not [s for s in steps if s.get("action") in ("agentHang", "hangWithQuit", "agentEvict")]
    steplog_ok(run.state / "steps.jsonl", runtime_constants(PODS, 3))


OMP = "import os\nprint('OMP=' + os.environ.get('OMP_NUM_THREADS', 'unset'))\n"


def test_several_ranks_on_one_host_get_one_openmp_thread(aegis_run: Launch) -> None:
    run = aegis_run(2, cmd=[sys.executable, "-c", OMP])
    assert run.finish(180) == 0, run.output[-2000:]
    assert run.stdout.count("OMP=1") == 2, run.stdout
    assert "OMP_NUM_THREADS=1 for each rank" in run.stderr


def test_a_users_openmp_setting_is_kept(aegis_run: Launch) -> None:
    run = aegis_run(2, cmd=[sys.executable, "-c", OMP], env={"OMP_NUM_THREADS": "2"})
    assert run.finish(180) == 0, run.output[-2000:]
    assert run.stdout.count("OMP=2") == 2, run.stdout
