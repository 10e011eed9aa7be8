"""The controller SIGKILLed mid-job, restarted by the launcher: the job goes on, counts intact."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from aegis.runtime.engine import runtime_constants
from aegis.runtime.trace_check import check_steplog

TRAIN = str(Path(__file__).resolve().parents[2] / "examples" / "train_ddp.py")


def wait_for(cond: Callable[[], object], timeout: float, what: str) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def controller_pid(state: Path) -> int | None:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmd = Path("/proc", entry, "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"controller" in cmd and str(state).encode() in cmd:
                return int(entry)
    return None


def in_second_attempt(state: Path) -> bool:
    try:
        s = json.loads((state / "status.json").read_text())
    except (OSError, ValueError):
        return False
    return s["phase"] == "RunCommand" and s["recoverCount"] == 1


def test_controller_killed_and_resumed(tmp_path: Path) -> None:
    state, hold = tmp_path / "state", tmp_path / "hold"
    env = {
        **os.environ,
        "CRASH_ONCE_RANK": "1",
        "CRASH_DIR": str(tmp_path / "c"),
        "HOLD_FILE": str(hold),
    }
    argv = [
        sys.executable,
        "-m",
        "aegis.cli",
        "run",
        "-n",
        "2",
        "--state-dir",
        str(state),
        "--",
        sys.executable,
        TRAIN,
    ]
    proc = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        wait_for(lambda: in_second_attempt(state), 90, "the second attempt")
        first = controller_pid(state)
        assert first is not None
        os.kill(first, signal.SIGKILL)
        wait_for(lambda: controller_pid(state) not in (None, first), 30, "a new controller")
        hold.touch()
        _out, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.communicate(timeout=30)
    assert proc.returncode == 0, err[-3000:]
    assert "restarting it" in err
    s = json.loads((state / "status.json").read_text())
    assert (s["phase"], s["recoverCount"]) == ("Succeed", 1)
    assert s["history"][-1] == {"phase": "Succeed", "retries": [1, 1], "recoverCount": 1}
    pods = ["local-worker-0", "local-worker-1"]
    assert check_steplog(runtime_constants(pods, 3), state / "steps.jsonl") > 0
