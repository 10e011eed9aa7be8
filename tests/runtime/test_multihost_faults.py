"""Faults of a job across three namespaced hosts, each ending in recovery or a clear failure
within its bound (docs/multihost.md, "Host loss", has the bounds these tests measure):

| fault | expected end |
|---|---|
| a host killed (launcher, agent, ranks), a spare joined | its pod moves to the spare, Succeed |
| node 0's host killed | every other node exits 1 at once, saying node 0 is lost |
| node 0's host cut off for good | the others exit 1 within --host-timeout; node 0 fails the job |
| a host's link down for 10 s | the job goes on or recovers; Succeed |
| a host's link at 200 ms delay, 5% loss | Succeed |

Slow-marked: each runs a real gloo job on three hosts of a loaded 2-core machine.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ..support.multihost import Job, start_job
from ..support.netns import Hosts, hosts3  # noqa: F401 - the fixture

pytestmark = pytest.mark.slow
JOB_S = 300.0
# the first attempt trains until it is stopped, 0.2 s a step (every rank prints each step);
# a restarted one trains 3 steps and ends
UNTIL_STOPPED = {"TRAIN_UNTIL_STOPPED": "1", "STEP_S": "0.2"}
# node launcher -> agent -> ranks stopped: SIGTERM, SIGKILL after 10 s (local.py _GRACE_S)
STOP_GRACE_S = 10.0


def training(job: Job, rank: int, node: int, timeout: float = 180.0) -> float:
    """Wait until global rank `rank` (on node `node`) trains its third step."""
    return job.nodes[node].wait_output(f"[rank{rank}]:rank {rank} step 2", timeout)


def test_killed_host_moves_its_pod_to_a_spare(hosts3: Hosts, tmp_path: Path) -> None:  # noqa: F811
    """--nnodes 2:3: nodes 0 and 1 train, node 2 waits as a spare. Host 1 dies (every
    process in it killed at once): pod 1 is lost and restarts on host 2 (Level 3)."""
    job = start_job(hosts3, tmp_path, "2:3", env=UNTIL_STOPPED)
    training(job, 1, 1)
    assert "a spare" in job.nodes[2].output
    killed = time.monotonic()
    hosts3.kill_host(1)
    moved = job.nodes[0].wait_output("rescheduled to", 30.0)
    codes = (job.nodes[0].finish(JOB_S), job.nodes[2].finish(60.0))
    ended = time.monotonic()
    assert codes == (0, 0), job.outputs()
    assert "[rank1]:rank 1 done (restart 1)" in job.nodes[2].output, job.outputs()
    assert "local-worker-1 lost with its host" in job.nodes[0].output
    status = job.status()
    assert status["phase"] == "Succeed" and status["recoverCount"] == 1, status
    print(
        f"host killed -> pod rescheduled {moved - killed:.1f} s, -> Succeed {ended - killed:.1f} s"
    )
    assert moved - killed < 5.0  # its connection closed: seen at once
    hosts3.wait_empty(10.0)


def test_node0_killed_ends_the_job_on_every_node(hosts3: Hosts, tmp_path: Path) -> None:  # noqa: F811
    job = start_job(hosts3, tmp_path, "3", env=UNTIL_STOPPED)
    training(job, 2, 2)
    killed = time.monotonic()
    hosts3.kill_host(0)
    codes = [job.nodes[i].finish(60.0) for i in (1, 2)]
    ended = time.monotonic() - killed
    assert codes == [1, 1], job.outputs()
    for i in (1, 2):
        assert "lost node 0 at 10.77.0.1:29400" in job.nodes[i].output, job.outputs()
    print(f"node 0 killed -> every other node ended in {ended:.1f} s")
    assert ended < 2.0 + STOP_GRACE_S  # a closed connection: at once, then the stop grace
    hosts3.wait_empty(10.0)


def test_node0_cut_off_ends_the_job_within_the_host_timeout(
    hosts3: Hosts,  # noqa: F811
    tmp_path: Path,
) -> None:
    """Node 0's cable pulled for good: nothing closes, everything falls silent."""
    timeout = 6.0
    job = start_job(hosts3, tmp_path, "3", "--host-timeout", str(timeout), env=UNTIL_STOPPED)
    training(job, 2, 2)
    cut = time.monotonic()
    hosts3.link(0, up=False)
    codes = [job.nodes[i].finish(60.0) for i in (1, 2)]
    ended = time.monotonic() - cut
    assert codes == [1, 1], job.outputs()
    assert all("lost node 0" in job.nodes[i].output for i in (1, 2)), job.outputs()
    # node 0 sees both nodes silent: their pods are lost, no spare: the job fails, saying so
    assert job.nodes[0].finish(60.0) == 1, job.outputs()
    assert "no spare node" in job.nodes[0].output, job.outputs()
    print(f"node 0 cut off -> the other nodes ended in {ended:.1f} s (host timeout {timeout:g} s)")
    assert ended < timeout + 2.0 + STOP_GRACE_S
    hosts3.wait_empty(10.0)


def test_link_down_for_10_s(hosts3: Hosts, tmp_path: Path) -> None:  # noqa: F811
    """Host 1's cable out for 10 s mid-training, then back: shorter than the host timeout
    (30 s), so no host is lost; the job trains on or recovers, and succeeds."""
    env = {"STEPS": "60", "STEP_S": "0.25"}
    job = start_job(hosts3, tmp_path, "3", env=env)
    training(job, 1, 1)
    hosts3.link(1, up=False)
    time.sleep(10.0)  # the fault itself lasts 10 s: this is its length, not a wait for state
    hosts3.link(1, up=True)
    back = time.monotonic()
    codes = [n.finish(JOB_S) for n in job.nodes]
    assert codes == [0, 0, 0], job.outputs()
    status = job.status()
    assert status["phase"] == "Succeed", status
    assert "lost node" not in job.outputs()
    print(
        f"link back -> Succeed in {time.monotonic() - back:.1f} s, "
        f"recoverCount {status['recoverCount']}"
    )
    hosts3.wait_empty(10.0)


def test_slow_lossy_link(hosts3: Hosts, tmp_path: Path) -> None:  # noqa: F811
    """Everything host 1 sends is delayed 200 ms and 5% of it lost, from the start."""
    how = hosts3.impair(1, delay_ms=200, loss_pct=5.0)
    started = time.monotonic()
    job = start_job(hosts3, tmp_path, "3")
    codes = [n.finish(JOB_S) for n in job.nodes]
    assert codes == [0, 0, 0], job.outputs()
    assert job.status()["phase"] == "Succeed"
    print(
        f"200 ms / 5% loss ({how}): Succeed in {time.monotonic() - started:.1f} s, "
        f"recoverCount {job.status()['recoverCount']}"
    )
    hosts3.wait_empty(10.0)
