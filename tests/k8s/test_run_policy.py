"""`spec.runPolicy` against kmock's emulated API server: which pods an ended job keeps
(cleanPodPolicy), its deadline and TTL (a clock the test moves), and gang scheduling with Kueue
(plain-pod groups) and Volcano (a PodGroup)."""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Any

import kmock
import pytest

from aegis.k8s.cr_store import CrStatusStore
from aegis.k8s.job_controller import JobController
from aegis.k8s.resources import AEGIS, AEGIS_JOB, POD, SECRET, SERVICE
from aegis.k8s.run_policy import POD_GROUP, epoch
from aegis.runtime.controller.store import PodInfo, Status

from ..support import wait_for
from .cluster import NAMESPACE, Cluster, aegis_job
from .schemas import all_errors
from .test_job_controller import CONFIG, WORKERS


class _Clock:
    """The Job Controller's clock for the rules of time, moved by the test."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def _start(
    cluster: Cluster, clock: _Clock, policy: dict[str, Any], labels: dict[str, str] | None = None
) -> JobController:
    body = aegis_job(workers=3)
    body["spec"]["runPolicy"] = policy
    body["metadata"]["labels"] = labels or {}
    assert all_errors(body) == []
    cluster.api.create(AEGIS_JOB, NAMESPACE, body)
    controller = JobController(
        cluster.api, dataclasses.replace(CONFIG, clock=clock), new_token=lambda: "tok"
    )
    controller.reconcile_job(NAMESPACE, "train")
    return controller


def _retries_exhausted(cluster: Cluster) -> None:
    """Play the Aegis Controller: worker 2 retried past maxRetry (2)."""
    infos = {p: PodInfo(retries=3 if p == WORKERS[2] else 0) for p in WORKERS}
    CrStatusStore(cluster.api, NAMESPACE, "train").save(
        Status(phase="Troubleshooting", pod_infos=infos)
    )


def _status(cluster: Cluster) -> dict[str, Any]:
    return dict(cluster.job("train")["status"])


@pytest.mark.parametrize(
    ("policy", "kept"),
    [
        ("Running", {"train-worker-2"}),  # the default: the ended pod stays for its logs
        ("All", set()),
        ("None", set(WORKERS)),  # the Aegis Controller's verdict: its agents end by themselves
    ],
)
def test_a_failed_job_keeps_the_pods_its_clean_pod_policy_keeps(
    cluster: Cluster, policy: str, kept: set[str]
) -> None:
    clock = _Clock()
    controller = _start(cluster, clock, {"cleanPodPolicy": policy})
    for name in WORKERS[:2]:
        cluster.run_pod(name)
    cluster.finish_pod(WORKERS[2], exit_code=2, node="n2")  # its last failure
    _retries_exhausted(cluster)
    clock.now += 5
    controller.reconcile_job(NAMESPACE, "train")
    status = _status(cluster)
    assert (status["phase"], status["reason"]) == ("Failed", "RetriesExhausted")
    assert set(cluster.pods()) == kept
    started, ended = epoch(status["startTime"]), epoch(status["completionTime"])
    assert started is not None and ended is not None and 4 <= ended - started <= 6
    assert all_errors(cluster.job("train")) == []
    assert controller.reconcile_job(NAMESPACE, "train") == []  # kept, not deleted later
    assert set(cluster.pods()) == kept


def test_a_deadline_fails_the_job_and_ends_its_running_pods_whatever_the_policy(
    cluster: Cluster,
) -> None:
    clock = _Clock()
    controller = _start(cluster, clock, {"activeDeadlineSeconds": 60, "cleanPodPolicy": "None"})
    for name in WORKERS:
        cluster.run_pod(name)
    clock.now += 59
    controller.reconcile_job(NAMESPACE, "train")
    assert _status(cluster)["phase"] == "Running"
    clock.now += 2
    controller.reconcile_job(NAMESPACE, "train")
    status = _status(cluster)
    assert (status["phase"], status["reason"]) == ("Failed", "DeadlineExceeded")
    assert "activeDeadlineSeconds (60 s)" in status["message"]
    # nothing else would stop them: the Aegis Controller does not know of the deadline
    assert cluster.pods() == {}


def test_the_ttl_deletes_the_ended_job_and_everything_it_owned(cluster: Cluster) -> None:
    clock = _Clock()
    controller = _start(cluster, clock, {"ttlSecondsAfterFinished": 30})
    for name in WORKERS:
        cluster.finish_pod(name, exit_code=0)
    controller.reconcile_job(NAMESPACE, "train")
    assert (_status(cluster)["phase"], _status(cluster)["reason"]) == ("Succeeded", "Succeeded")
    assert len(cluster.pods()) == 3  # kept for their logs, until the TTL
    clock.now += 29
    assert controller.reconcile_job(NAMESPACE, "train") == []
    clock.now += 2
    controller.reconcile_job(NAMESPACE, "train")
    assert cluster.api.list(AEGIS_JOB, NAMESPACE) == []  # its finalizer cleaned up first
    assert cluster.pods() == {} and cluster.api.list(AEGIS, NAMESPACE) == []
    assert cluster.api.list(SECRET, NAMESPACE) == cluster.api.list(SERVICE, NAMESPACE) == []


def test_kueue_gang_pods_form_one_group_and_a_failed_gang_is_told_over(cluster: Cluster) -> None:
    """The queue label on the AegisJob, as on a Kubeflow job: every worker pod in one
    Kueue pod group of 3; when the job fails, Kueue is told the group is over on each pod
    kept (else it keeps the group admitted, and its quota, for replacements)."""
    clock = _Clock()
    controller = _start(
        cluster, clock, {"schedulingPolicy": {"priorityClass": "high"}},
        labels={"kueue.x-k8s.io/queue-name": "team-a"},
    )  # fmt: skip
    pods = cluster.pods()
    assert sorted(pods) == WORKERS
    for pod in pods.values():
        assert all_errors(pod) == []
        labels, notes = pod["metadata"]["labels"], pod["metadata"]["annotations"]
        assert labels["kueue.x-k8s.io/queue-name"] == "team-a"
        assert labels["kueue.x-k8s.io/pod-group-name"] == "train"
        assert notes["kueue.x-k8s.io/pod-group-total-count"] == "3"
        assert pod["spec"]["priorityClassName"] == "high"
    cluster.run_pod(WORKERS[0])
    cluster.finish_pod(WORKERS[1], exit_code=0)
    cluster.finish_pod(WORKERS[2], exit_code=2)
    _retries_exhausted(cluster)
    controller.reconcile_job(NAMESPACE, "train")
    pods = cluster.pods()
    assert sorted(pods) == WORKERS[1:]  # the running one deleted, the ended ones kept
    for pod in pods.values():
        assert pod["metadata"]["annotations"]["kueue.x-k8s.io/retriable-in-group"] == "false"
    assert controller.reconcile_job(NAMESPACE, "train") == []


def test_volcano_gang_has_a_pod_group_from_before_its_pods_until_its_end(
    cluster: Cluster,
) -> None:
    clock = _Clock()
    policy = {"schedulingPolicy": {"gang": "Volcano", "queue": "research", "priorityClass": "p"}}
    controller = _start(cluster, clock, policy)
    group = cluster.api.get(POD_GROUP, NAMESPACE, "train")
    assert all_errors(group) == []
    assert group["spec"] == {"minMember": 3, "queue": "research", "priorityClassName": "p"}
    owner = group["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["uid"]) == ("AegisJob", cluster.job("train")["metadata"]["uid"])
    made = {p["metadata"]["name"]: p["metadata"]["resourceVersion"] for p in _listed(cluster)}
    assert int(group["metadata"]["resourceVersion"]) < min(int(v) for v in made.values())
    for pod in cluster.pods().values():
        assert pod["spec"]["schedulerName"] == "volcano"
        assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "train"
    _retries_exhausted(cluster)
    controller.reconcile_job(NAMESPACE, "train")
    assert _status(cluster)["phase"] == "Failed"
    assert cluster.api.list(POD_GROUP, NAMESPACE) == []


def _listed(cluster: Cluster) -> list[dict[str, Any]]:
    return cluster.api.list(POD, NAMESPACE)


def test_volcano_gang_without_volcano_fails_the_job_saying_so(cluster: Cluster) -> None:
    cluster.emulator.unserved.add("scheduling.volcano.sh/v1beta1/podgroups")
    _start(cluster, _Clock(), {"schedulingPolicy": {"gang": "Volcano"}})
    status = _status(cluster)
    assert (status["phase"], status["reason"]) == ("Failed", "GangSchedulerMissing")
    assert "is Volcano installed?" in status["message"]
    made = [r for r in cluster.emulator if r.action is kmock.action.CREATE and _is_pod(r)]
    assert made == []  # no pod made for a gang that cannot be scheduled


def _is_pod(request: kmock.Request) -> bool:
    return request.resource is not None and request.resource.plural == "pods"


def test_run_wakes_up_for_the_deadline_without_any_change(cluster: Cluster) -> None:
    """Nothing changes after the pods are made (the emulator runs none): only the work
    queue's timer, set from status.startTime + activeDeadlineSeconds, reconciles it."""
    body = aegis_job(workers=2)
    body["spec"]["runPolicy"] = {"activeDeadlineSeconds": 1}
    controller = JobController(cluster.api, dataclasses.replace(CONFIG, resync_s=3600))
    stop = threading.Event()
    thread = threading.Thread(target=controller.run, args=(stop,), daemon=True)
    thread.start()
    try:
        cluster.api.create(AEGIS_JOB, NAMESPACE, body)
        wait_for(
            lambda: cluster.job("train").get("status", {}).get("reason") == "DeadlineExceeded",
            15,
            "the job failed at its deadline",
        )
    finally:
        stop.set()
        thread.join(10)
    assert not thread.is_alive()
    assert cluster.pods() == {}
