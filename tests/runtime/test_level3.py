"""Level 3 end to end: a hardware fault found while troubleshooting isolates the node.

Rank 1 crashes once (so there is a troubleshoot round); `--simulate node-2=gpu_lost` makes
the checks of agents on rank 1's first node report a lost GPU. That agent reports Error in
Troubleshooting and exits 1; the launcher blacklists node-2 (ErrorNodes), starts rank 1 on a
fresh node slot (reschedule), and the job completes there.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from aegis.runtime.engine import runtime_constants

from ..support import AEGIS, Launch
from ..support.steplog import steplog_ok


def test_gpu_lost_in_troubleshooting_reschedules_to_a_fresh_node(
    tmp_path: Path, aegis_run: Launch
) -> None:
    env = {"CRASH_ONCE_RANK": "1", "CRASH_DIR": str(tmp_path / "crash")}
    r = aegis_run(2, "--simulate", "node-2=gpu_lost", env=env)
    assert r.finish(150) == 0, r.stderr[-3000:]
    assert (
        "aegis: local-worker-1 (node rank 1, node-2) left its node: agent exited 1 -> node-2 "
        "blacklisted, the pod restarts on node-3 (Level 3)" in r.stderr
    )
    assert "hardware faults rescheduled 1" in r.stderr
    s = r.status()
    assert s["phase"] == "Succeed"
    assert [e["node"] for e in s["errorNodes"]] == ["node-2"]
    (entry,) = s["errorNodes"]
    assert "exited 1" in entry["reason"] and entry["time"] > 0
    assert "GPU lost" in s["podInfos"]["local-worker-1"]["lastFailedReason"]
    # the replacement ran rank 1 to the end on node-3; node-2 never came back
    assert "rank 1 done (restart 1)" in r.stdout
    steps = [json.loads(line) for line in (tmp_path / "state" / "steps.jsonl").open()]
    applied = [rec["action"] for rec in steps if "action" in rec and "rejected" not in rec]
    assert "reschedule" in applied
    pods = ["local-worker-0", "local-worker-1"]
    steplog_ok(tmp_path / "state" / "steps.jsonl", runtime_constants(pods, 3))


def test_simulate_flag_is_validated() -> None:
    for bad in ("gpu_lost", "node-2=", "node-2=no_such_fault"):
        r = subprocess.run(
            [*AEGIS, "run", "-n", "1", "--simulate", bad, "--", "true"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert r.returncode == 2 and "--simulate" in r.stderr, r.stderr
