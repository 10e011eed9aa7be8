"""`aegis run` end to end: real nats-server, gRPC, controller and agent processes, gloo DDP."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from aegis.runtime.engine import runtime_constants
from aegis.runtime.launcher.local import free_port

from ..support import AEGIS, AegisRun, Launch
from ..support.steplog import steplog_ok


def history(run: AegisRun) -> list[tuple[str, tuple[int, ...], int]]:
    return [(h["phase"], tuple(h["retries"]), h["recoverCount"]) for h in run.status()["history"]]


def trace_ok(run: AegisRun, n: int, max_retry: int) -> None:
    pods = [f"local-worker-{i}" for i in range(n)]
    steplog_ok(run.state / "steps.jsonl", runtime_constants(pods, max_retry))


def test_ddp_succeeds(aegis_run: Launch) -> None:
    r = aegis_run(2)
    assert r.finish(150) == 0, r.stderr[-3000:]
    assert "[rank0]:step 2" in r.stdout and "[rank1]:rank 1 done" in r.stdout
    assert "Succeed: max retries 3, restarted 0 times, hardware faults rescheduled 0" in r.stderr
    trace_ok(r, 2, 3)


def test_crash_once_restarts_in_place(tmp_path: Path, aegis_run: Launch) -> None:
    env = {"CRASH_ONCE_RANK": "1", "CRASH_DIR": str(tmp_path / "crash")}
    r = aegis_run(2, env=env)
    assert r.finish(150) == 0, r.stderr[-3000:]
    assert "rank 1 done (restart 1)" in r.stdout
    assert r.status()["recoverCount"] == 1
    assert ("Troubleshooting", (0, 1), 1) in history(r)
    assert history(r)[-1] == ("Succeed", (1, 1), 1)
    trace_ok(r, 2, 3)


def test_counting_example(tmp_path: Path, aegis_run: Launch) -> None:
    """Design §5: 3 workers, MaxRetry 2; late gloo errors of the peers are not counted."""
    env = {"CRASH_SCHEDULE": "0,1,2", "CRASH_DIR": str(tmp_path / "crash")}
    r = aegis_run(3, "--max-retry", "2", env=env)
    assert r.finish(120) != 0
    assert "Failed: max retries 2, restarted 2 times" in r.stderr
    counts = [
        (ret, rc)
        for phase, ret, rc in history(r)
        if phase == "Troubleshooting" or phase == "RunCommand"
    ]
    want = [(1, 0, 0), (1, 1, 1), (1, 2, 1), (2, 2, 2), (2, 2, 3)]
    seen = [ret for ret, _ in counts if ret != (0, 0, 0)]
    assert seen == want
    assert history(r)[-1] == ("Failed", (2, 2, 3), 3)
    trace_ok(r, 3, 2)


def test_fallback_passes_exit_code(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "AEGIS_JOB": "j",
        "AEGIS_POD": "j-worker-0",
        "AEGIS_RANK": "0",
        "AEGIS_WORLD_SIZE": "1",
        "AEGIS_COMMAND": json.dumps(["sh", "-c", "exit 3"]),
        "AEGIS_GRPC": f"127.0.0.1:{free_port()}",
        "AEGIS_CONNECT_TIMEOUT": "1",
    }
    r = subprocess.run([*AEGIS, "agent"], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 3, r.stderr[-2000:]
    assert "running the command independently" in r.stdout


@pytest.mark.parametrize("args", [["-n", "2"], ["-n", "2", "--"], ["--bogus", "--", "true"]])
def test_usage_errors(args: list[str]) -> None:
    r = subprocess.run([*AEGIS, "run", *args], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "usage" in r.stderr
