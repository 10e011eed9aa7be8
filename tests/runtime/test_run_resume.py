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


def ranks_started(times: Path, attempt_lines: int) -> bool:
    try:
        return times.read_text().count("start ") >= attempt_lines
    except OSError:
        return False


def test_resume_after_ctrl_c_counts_no_retry(tmp_path: Path, aegis_run: Launch) -> None:
    """Ctrl-C in RunCommand, then `aegis run` again on the same state dir: the new agents
    continue their pods (no "agent replaced" fault, recoverCount 0, "restarted 0 times"), and
    none trips over its warming diagnosis worker (the RunCommand order comes at once)."""
    hold, times = tmp_path / "hold", tmp_path / "times"
    env = {"HOLD_FILE": str(hold), "TIMES_FILE": str(times)}
    first = aegis_run(2, env=env)
    first.wait_until(lambda: ranks_started(times, 2), 120, "both ranks of the first run")
    first.send_signal(signal.SIGINT)
    assert first.finish(60) == 130
    assert "run the same command again to resume the job" in first.stderr
    assert first.status()["phase"] == "RunCommand"
    second = aegis_run(2, env=env)
    second.wait_until(lambda: ranks_started(times, 4), 120, "both ranks of the resumed run")
    hold.touch()
    assert second.finish(90) == 0, second.output[-3000:]
    assert "resuming the job saved in" in second.stderr
    assert "restarted 0 times" in second.stderr
    assert "readuntil" not in second.output and "node fault" not in second.output
    s = second.status()
    assert (s["phase"], s["recoverCount"], s["errorNodes"]) == ("Succeed", 0, [])
    assert not (first.state / "faults.jsonl").exists()
    pods = ["local-worker-0", "local-worker-1"]
    steplog_ok(first.state / "steps.jsonl", runtime_constants(pods, 3))
