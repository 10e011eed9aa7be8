"""`aegis run` end to end: real nats-server, gRPC, controller and agent processes, gloo DDP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from aegis.runtime.engine import runtime_constants
from aegis.runtime.local import free_port
from aegis.runtime.trace_check import check_steplog

ROOT = Path(__file__).resolve().parents[2]
TRAIN = str(ROOT / "examples" / "train_ddp.py")
AEGIS = [sys.executable, "-m", "aegis.cli"]


def aegis_run(
    tmp: Path,
    n: int,
    *opts: str,
    env: dict[str, str] | None = None,
    cmd: list[str] | None = None,
    timeout: float = 150,
) -> subprocess.CompletedProcess[str]:
    argv = [
        *AEGIS,
        "run",
        "-n",
        str(n),
        "--state-dir",
        str(tmp / "state"),
        *opts,
        "--",
        *(cmd or [sys.executable, TRAIN]),
    ]
    return run_bounded(argv, {**os.environ, **(env or {})}, timeout)


def run_bounded(
    argv: list[str], env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """Run to the end; past `timeout` SIGTERM it (the launcher then stops its children)."""
    proc = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.terminate()
        out, err = proc.communicate(timeout=30)
        raise AssertionError(f"timed out after {timeout}s; stderr ends {err[-3000:]}") from None
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def status(tmp: Path) -> dict[str, Any]:
    return json.loads((tmp / "state" / "status.json").read_text())


def history(tmp: Path) -> list[tuple[str, tuple[int, ...], int]]:
    return [(h["phase"], tuple(h["retries"]), h["recoverCount"]) for h in status(tmp)["history"]]


def trace_ok(tmp: Path, n: int, max_retry: int) -> None:
    pods = [f"local-worker-{i}" for i in range(n)]
    assert check_steplog(runtime_constants(pods, max_retry), tmp / "state" / "steps.jsonl") > 0


def test_ddp_succeeds(tmp_path: Path) -> None:
    r = aegis_run(tmp_path, 2)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "[rank0]:step 2" in r.stdout and "[rank1]:rank 1 done" in r.stdout
    assert "Succeed: max retries 3, restarted 0 times, hardware faults rescheduled 0" in r.stderr
    trace_ok(tmp_path, 2, 3)


def test_crash_once_restarts_in_place(tmp_path: Path) -> None:
    env = {"CRASH_ONCE_RANK": "1", "CRASH_DIR": str(tmp_path / "crash")}
    r = aegis_run(tmp_path, 2, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "rank 1 done (restart 1)" in r.stdout
    assert status(tmp_path)["recoverCount"] == 1
    assert ("Troubleshooting", (0, 1), 1) in history(tmp_path)
    assert history(tmp_path)[-1] == ("Succeed", (1, 1), 1)
    trace_ok(tmp_path, 2, 3)


def test_counting_example(tmp_path: Path) -> None:
    """Design §5: 3 workers, MaxRetry 2; late gloo errors of the peers are not counted."""
    env = {"CRASH_SCHEDULE": "0,1,2", "CRASH_DIR": str(tmp_path / "crash")}
    r = aegis_run(tmp_path, 3, "--max-retry", "2", env=env, timeout=120)
    assert r.returncode != 0
    assert "Failed: max retries 2, restarted 2 times" in r.stderr
    counts = [
        (ret, rc)
        for phase, ret, rc in history(tmp_path)
        if phase == "Troubleshooting" or phase == "RunCommand"
    ]
    want = [(1, 0, 0), (1, 1, 1), (1, 2, 1), (2, 2, 2), (2, 2, 3)]
    seen = [ret for ret, _ in counts if ret != (0, 0, 0)]
    assert seen == want
    assert history(tmp_path)[-1] == ("Failed", (2, 2, 3), 3)
    trace_ok(tmp_path, 3, 2)


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
