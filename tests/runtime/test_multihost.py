"""A job across three hosts (network namespaces on a bridge, each with its own address):
`aegis run --nnodes 3 --node-rank R --rdzv-endpoint 10.77.0.1:29400` in each, real gloo DDP.

The fault cases are in test_multihost_faults.py; what crosses the wire in
test_multihost_wire.py. Needs root and iproute2 (skipped otherwise, saying why).
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

from aegis.runtime.engine import runtime_constants

from ..support import AEGIS, wait_for
from ..support.multihost import start_job
from ..support.netns import Hosts, hosts3  # noqa: F401 - the fixture
from ..support.steplog import steplog_ok

JOB_S = 240.0  # the whole job on a loaded 2-core machine


def _ctl_status(hosts: Hosts, state: Path) -> dict[str, Any] | None:
    """`aegis ctl status --json` in host 0 (None until every pod runs the command)."""
    done = subprocess.run(
        [
            "ip",
            "netns",
            "exec",
            hosts[0].ns,
            *AEGIS,
            "ctl",
            "--state-dir",
            str(state),
            "status",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if done.returncode != 0:
        return None
    status: dict[str, Any] = json.loads(done.stdout)["result"]
    return status if status.get("phase") == "RunCommand" else None


def test_ddp_across_three_hosts_succeeds(hosts3: Hosts, tmp_path: Path) -> None:  # noqa: F811
    hold = tmp_path / "go"  # every rank waits for it: the job is up, not yet training
    job = start_job(hosts3, tmp_path, "3", "--nproc-per-node", "2", env={"HOLD_FILE": str(hold)})
    # `aegis ctl` on node 0 reaches the job over nats-server's TLS (the CA is in ctl.json)
    status = wait_for(lambda: _ctl_status(hosts3, job.state), 180, "aegis ctl status on node 0")
    nodes = {pod: info["node"] for pod, info in status["pods"].items()}
    assert len(set(nodes.values())) == 3, nodes  # three hosts, one pod each
    hold.touch()
    codes = [n.finish(JOB_S) for n in job.nodes]
    assert codes == [0, 0, 0], job.outputs()
    out0, out1, out2 = (n.output for n in job.nodes)
    assert "Succeed: max retries 3, restarted 0 times" in out0, out0[-3000:]
    # world 3 x 2: ranks 0-1 on node 0, 2-3 on node 1, 4-5 on node 2
    assert "[rank0]:rank 0 done" in out0 and "[rank1]:rank 1 done" in out0
    assert "[rank2]:rank 2 done" in out1 and "[rank3]:rank 3 done" in out1
    assert "[rank4]:rank 4 done" in out2 and "[rank5]:rank 5 done" in out2
    # each node joined from its own address, and was told the job ended
    for i in (1, 2):
        out = job.nodes[i].output
        assert f"this node's address {hosts3[i].address}" in out, out
        assert "the job ended Succeed" in out, out
    pods = [f"local-worker-{i}" for i in range(3)]
    steplog_ok(job.state / "steps.jsonl", runtime_constants(pods, 3))
    assert job.history()[-1] == ("Succeed", (0, 0, 0), 0)
    hosts3.wait_empty(10.0)


def test_rank_crash_restarts_in_place_across_hosts(hosts3: Hosts, tmp_path: Path) -> None:  # noqa: F811
    """Level 1: rank 1 (node 1) exits 1 once; every rank restarts in place, on its host."""
    env = {"CRASH_ONCE_RANK": "1", "CRASH_DIR": str(tmp_path / "crash")}
    started = time.monotonic()
    job = start_job(hosts3, tmp_path, "3", env=env)
    codes = [n.finish(JOB_S) for n in job.nodes]
    assert codes == [0, 0, 0], job.outputs()
    assert "[rank1]:rank 1 done (restart 1)" in job.nodes[1].output, job.outputs()
    assert "[rank2]:rank 2 done (restart 1)" in job.nodes[2].output, job.outputs()
    assert job.status()["recoverCount"] == 1
    assert ("Troubleshooting", (0, 1, 0), 1) in job.history()
    assert job.history()[-1] == ("Succeed", (1, 1, 1), 1)
    out0 = job.nodes[0].output
    assert "rescheduled to" not in out0 and "hardware faults rescheduled 0" in out0
    print(f"crash -> Succeed across 3 hosts in {time.monotonic() - started:.1f} s")
    hosts3.wait_empty(10.0)
