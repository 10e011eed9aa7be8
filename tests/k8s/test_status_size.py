"""A job whose status would not fit in its Aegis CR (etcd keeps objects of at most its
--max-request-bytes) is refused when it is submitted, and one whose status outgrows it while
running fails, saying why, instead of restarting its controller forever."""

from __future__ import annotations

import json
from typing import Any

import pytest

from aegis.k8s.cr_store import CrStatusStore
from aegis.k8s.errors import ApiError, StatusTooLargeError
from aegis.k8s.manifests import template_problem
from aegis.k8s.model import AegisView, JobView, Observed
from aegis.k8s.reconcile import UpdateJobStatus, reconcile
from aegis.k8s.resources import AEGIS, Resource
from aegis.k8s.status_size import (
    ADMIT_SHARE,
    MAX_STATUS_BYTES,
    estimated_status_bytes,
    max_workers,
    status_size_problem,
)
from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.protocol.exitcodes import ControllerExit
from aegis.runtime.controller import ControllerCore, JobConfig, PersistenceError
from bench.persistence import MemoryCrApi

from ..support import wait_for
from .cluster import NAMESPACE, Cluster, aegis_job
from .harness import Nats, aegis_cr, running


def joined_status_bytes(job: str, workers: int) -> int:
    """The CR status the store writes once every pod has joined (a real core and store)."""
    pods = tuple(f"{job}-worker-{r}" for r in range(workers))
    api = MemoryCrApi()
    core = ControllerCore(JobConfig(job, NAMESPACE, pods, 3), CrStatusStore(api, NAMESPACE, job))
    core.autocommit = False
    for pod in pods:
        data = {"incarnation": f"inc-{pod}", "podIP": "10.123.145.167", "node": f"node-{pod}",
                "nodeIP": "10.123.145.1"}  # fmt: skip
        ack = Message(job, NAMESPACE, pod, MessageType.ACK, MessagePhase.BOOTCHECK, data, 1.0, 0)
        core.on_ack(ack)
    core.commit()  # Pending -> BootChecking: the snapshot's save
    return len(json.dumps(api.obj["status"], separators=(",", ":")))


@pytest.mark.parametrize("job", ["j", "train", "a-job-name-of-forty-characters-exactly1"])
@pytest.mark.parametrize("workers", [3, 150, 1200])
def test_the_estimate_bounds_the_status_the_store_writes(job: str, workers: int) -> None:
    real = joined_status_bytes(job, workers)
    estimate = estimated_status_bytes(job, workers)
    assert real <= estimate <= 1.3 * real + 5000, (real, estimate)


def test_the_largest_job_admitted_is_the_last_within_the_share_of_the_limit() -> None:
    for job in ("j", "train", "a-job-name-of-forty-characters-exactly1"):
        most = max_workers(job)
        assert status_size_problem(job, most) is None
        why = status_size_problem(job, most + 1)
        assert why is not None and f"at most {most} workers" in why and "etcd" in why
        assert estimated_status_bytes(job, most) <= ADMIT_SHARE * MAX_STATUS_BYTES
    assert 2000 < max_workers("train") < 3000  # ~2,400: a default cluster's ceiling
    assert status_size_problem("train", 1000) is None
    assert status_size_problem("train", 12500) is not None


def test_an_aegisjob_too_large_for_its_status_fails_at_once_saying_why() -> None:
    job = JobView.from_obj(aegis_job("train", workers=12500))
    why = template_problem(job)
    assert why is not None and "spec.workerNum 12500" in why and "MiB" in why
    actions = reconcile(job, Observed(pods=[], aegis=None, secret=False, service=False))
    failed = [a for a in actions if isinstance(a, UpdateJobStatus)]
    assert failed and failed[0].phase == "Failed" and failed[0].message == why
    assert template_problem(JobView.from_obj(aegis_job("train", workers=1000))) is None


def test_the_api_refusing_a_status_as_too_large_is_told_apart() -> None:
    assert ApiError(413, "RequestEntityTooLarge", "request entity too large").too_large
    assert ApiError(500, "InternalError", "etcdserver: request is too large").too_large
    assert not ApiError(409, "Conflict", "the object has been modified").too_large
    assert not ApiError(500, "InternalError", "etcdserver: leader changed").too_large


class _RefusingLarge(MemoryCrApi):
    """An API that refuses every status patch as etcd refuses an object past its limit."""

    def patch(
        self, res: Resource, namespace: str | None, name: str, patch: Any, sub: str = ""
    ) -> dict[str, Any]:
        raise ApiError(500, "InternalError", "etcdserver: request is too large")


def test_a_status_the_api_refuses_as_too_large_is_a_status_too_large_error() -> None:
    """Not an ApiError the runner would take for a passing failure: the core's first save
    (in its constructor) fails, caused by StatusTooLargeError, which the runner looks for."""
    store = CrStatusStore(_RefusingLarge(), NAMESPACE, "train")
    pods = tuple(f"train-worker-{r}" for r in range(2))
    with pytest.raises(PersistenceError) as err:
        ControllerCore(JobConfig("train", NAMESPACE, pods, 3), store)
    cause = err.value.__cause__
    assert isinstance(cause, StatusTooLargeError), cause
    assert "refused its status of 2 pods as too large" in str(cause)


async def test_a_job_whose_status_outgrows_the_cr_fails_saying_why_and_is_not_restarted(
    cluster: Cluster, nats: Nats
) -> None:
    """The API refuses the status as etcd would (the emulator's limit stands in for a job
    larger than the cluster allows): the job's runner gives up at once, the CR says Failed
    and why, and the Job Controller's verdict carries that reason."""
    cluster.emulator.max_status_body = 2000  # a 20-pod status is ~8 KB
    cluster.api.create(AEGIS, NAMESPACE, aegis_cr("train", workers=20))
    with running(cluster.url, nats) as ctl:

        def failed() -> bool:
            status = cluster.aegis("train").get("status") or {}
            return status.get("phase") == "Failed"

        wait_for(failed, 20, "the CR marked Failed")
        runner = ctl.controller.runners[(NAMESPACE, "train")]
        wait_for(lambda: runner.finished, 10, "the runner ended")
        assert runner.exit_code == ControllerExit.FAILED and runner.attempts == 1
        status = cluster.aegis("train")["status"]
        assert "too large" in status["message"] and "Job size" in status["message"]
    view = AegisView.from_obj(cluster.aegis("train"))
    assert view.phase == "Failed" and "too large" in view.message


def test_the_job_controllers_verdict_carries_the_reason_the_cr_gives() -> None:
    job = JobView.from_obj(aegis_job("train", workers=2))
    cr = AegisView(phase="Failed", message="the status outgrew the CR")
    actions = reconcile(job, Observed(pods=[], aegis=cr, secret=False, service=False))
    failed = [a for a in actions if isinstance(a, UpdateJobStatus)]
    assert [a.message for a in failed] == [
        "the Aegis Controller reported phase Failed: the status outgrew the CR"
    ]
