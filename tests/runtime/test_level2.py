"""Level 2 end to end: a broken runtime on a healthy node restarts the agent's container.

Rank 1 crashes once (a troubleshoot round); `--simulate node-2=runtime_error` breaks the
runtime check of agents on node-2. The agent does not report: it exits AgentExit.RESTART_CONTAINER
and the launcher restarts it in place on node-2 (Level 2), the controller seeing a pod restart.
The fault persists on node-2, so after MAX_CONTAINER_RESTARTS container restarts the agent
escalates to Level 3 (Error, exit 1): node-2 goes to ErrorNodes and rank 1 finishes on node-3.
"""

from __future__ import annotations

import json
from pathlib import Path

from aegis.runtime.agent.core import MAX_CONTAINER_RESTARTS
from aegis.runtime.engine import runtime_constants

from ..support import Launch
from ..support.steplog import steplog_ok


def test_runtime_error_restarts_the_container_then_isolates_the_node(
    tmp_path: Path, aegis_run: Launch
) -> None:
    env = {"CRASH_ONCE_RANK": "1", "CRASH_DIR": str(tmp_path / "crash")}
    r = aegis_run(2, "--simulate", "node-2=runtime_error", env=env)
    assert r.finish(240) == 0, r.stderr[-3000:]
    # the controller says each recovery as it applies it (what the launcher told it)
    for k in range(1, MAX_CONTAINER_RESTARTS + 1):
        assert (
            "aegis: local-worker-1 (node rank 1, node-2) restarts its container: agent exited "
            f"76 -> its container restarts on node-2 (Level 2, {k} of {MAX_CONTAINER_RESTARTS})"
            in r.stderr
        )
    assert "restart the container (Level 2), exit 76" in r.stdout
    assert (
        "aegis: local-worker-1 (node rank 1, node-2) left its node: agent exited 1 -> node-2 "
        "blacklisted, the pod restarts on node-3 (Level 3)" in r.stderr
    )
    s = r.status()
    assert s["phase"] == "Succeed"
    assert [e["node"] for e in s["errorNodes"]] == ["node-2"]
    reason = s["podInfos"]["local-worker-1"]["lastFailedReason"]
    assert f"after {MAX_CONTAINER_RESTARTS} container restarts" in reason
    assert "runtime" in reason
    steps = [json.loads(line) for line in (tmp_path / "state" / "steps.jsonl").open()]
    applied = [rec["action"] for rec in steps if "action" in rec and "rejected" not in rec]
    # each container restart is a pod restart seen by the controller, not a counted retry
    assert applied.count("envPodRestart") == MAX_CONTAINER_RESTARTS
    assert s["recoverCount"] == 1
    assert "rank 1 done (restart 1)" in r.stdout
    pods = ["local-worker-0", "local-worker-1"]
    steplog_ok(tmp_path / "state" / "steps.jsonl", runtime_constants(pods, 3))
