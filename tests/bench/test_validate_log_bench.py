"""bench/validate_log.py at a tiny size: both logs are written by the controller's core, replayed
by the fast check and matched by TLC, and the figures say so."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(120)
def test_both_logs_are_checked_step_for_step() -> None:
    bench = str(ROOT / "bench" / "validate_log.py")
    done = subprocess.run(
        [sys.executable, bench, "--pods", "20", "--small-steps", "100"],
        capture_output=True,
        text=True,
        timeout=110,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    small, large = out["small"], out["large"]
    assert (small["pods"], large["pods"]) == (10, 20) and small["resumes"] == 1
    assert large["steps"] == 5 * 20 + 3  # a join and two reports (agentWork, receive) each
    for log in (small, large):
        assert log["matched"] is True and log["tlc_runs"] == 1
        assert log["fast_check_steps"] == log["steps"] and log["log_bytes"] > 0
