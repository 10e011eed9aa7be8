"""The controller SIGKILLed mid-job, restarted by the launcher: the job goes on, counts intact."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from aegis.runtime.engine import runtime_constants

from ..support import Launch, wait_for
from ..support.steplog import steplog_ok


def controller_pid(launcher: int) -> int | None:
    """The controller `launcher` runs (its state dir is handed to it, named nowhere)."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmd = Path("/proc", entry, "cmdline").read_bytes().split(b"\0")
                stat = Path("/proc", entry, "stat").read_bytes().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if b"controller" in cmd and int(stat[1]) == launcher:
                return int(entry)
    return None


def in_second_attempt(state: Path) -> bool:
    try:
        s = json.loads((state / "status.json").read_text())
    except (OSError, ValueError):
        return False
    return s["phase"] == "RunCommand" and s["recoverCount"] == 1


def test_controller_killed_and_resumed(tmp_path: Path, aegis_run: Launch) -> None:
    hold = tmp_path / "hold"
    env = {"CRASH_ONCE_RANK": "1", "CRASH_DIR": str(tmp_path / "c"), "HOLD_FILE": str(hold)}
    run = aegis_run(2, env=env)
    state = run.state
    wait_for(lambda: in_second_attempt(state), 90, "the second attempt")
    first = controller_pid(run.pid)
    assert first is not None
    os.kill(first, signal.SIGKILL)
    wait_for(lambda: controller_pid(run.pid) not in (None, first), 30, "a new controller")
    hold.touch()
    assert run.finish(90) == 0, run.stderr[-3000:]
    assert "restarting it" in run.stderr
    s = json.loads((state / "status.json").read_text())
    assert (s["phase"], s["recoverCount"]) == ("Succeed", 1)
    assert s["history"][-1] == {"phase": "Succeed", "retries": [1, 1], "recoverCount": 1}
    pods = ["local-worker-0", "local-worker-1"]
    steplog_ok(state / "steps.jsonl", runtime_constants(pods, 3))
