"""The Job Controller against kmock's emulated API server (see conftest for what it emulates).

The Aegis Controller's part is played through CrStatusStore, the store it uses in a cluster;
kubelet and scheduler are played by Cluster.run_pod / finish_pod.
"""

from __future__ import annotations

import collections
import threading
import time
from typing import Any

from aegis.k8s.api import KubeApi
from aegis.k8s.cr_store import CrStatusStore
from aegis.k8s.informer import reflect
from aegis.k8s.job_controller import JobController, JobControllerConfig, JobKey
from aegis.k8s.keys import token_sha256
from aegis.k8s.manifests import PodSettings, secret_token
from aegis.k8s.reconcile import CreatePod
from aegis.k8s.resources import (
    AEGIS,
    AEGIS_JOB,
    FINALIZER,
    LABEL_JOB,
    POD,
    SECRET,
    SERVICE,
    Resource,
)
from aegis.k8s.run_policy import epoch
from aegis.runtime.controller.store import ErrorNode, PodInfo, Status

from ..support import wait_for
from .cluster import NAMESPACE, Cluster, aegis_job
from .schemas import all_errors

WORKERS = [f"train-worker-{r}" for r in range(3)]
CONFIG = JobControllerConfig(pod=PodSettings(controller_address="ctl:50051"), resync_s=0.2)


def _start(cluster: Cluster, workers: int = 3) -> JobController:
    cluster.api.create(AEGIS_JOB, NAMESPACE, aegis_job(workers=workers))
    controller = JobController(cluster.api, CONFIG, new_token=lambda: "tok")
    controller.reconcile_job(NAMESPACE, "train")
    return controller


def _master_writes(cluster: Cluster, **changes: Any) -> None:
    """Play the Aegis Controller: save a status into the CR the way it does."""
    store = CrStatusStore(cluster.api, NAMESPACE, "train")
    infos = {p: PodInfo(inner_phase="RunCommand") for p in WORKERS}
    store.save(Status(phase="RunCommand", pod_infos=infos, **changes))


def _node_exclusion(pod: dict) -> list[str]:
    required = pod["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    (term,) = required["nodeSelectorTerms"]
    (rule,) = term["matchFields"]
    assert (rule["key"], rule["operator"]) == ("metadata.name", "NotIn")
    return list(rule["values"])


def test_job_creates_pods_cr_secret_and_service(cluster: Cluster) -> None:
    _start(cluster)
    pods = cluster.pods()
    assert sorted(pods) == WORKERS
    job = cluster.job("train")
    assert job["metadata"]["finalizers"] == [FINALIZER]
    started = epoch(job["status"].pop("startTime"))  # when it was first seen
    assert started is not None and abs(started - time.time()) < 60
    assert job["status"] == {
        "phase": "Pending",
        "message": "0/3 workers running",
        "aegisRef": "train",
        "excludedNodes": [],
        "podRestarts": 0,
        "containerRestarts": {},
    }
    owner = [
        {
            "apiVersion": "aegis.dev/v1alpha1",
            "kind": "AegisJob",
            "name": "train",
            "uid": job["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    cr = cluster.aegis("train")
    secret = cluster.api.get(SECRET, NAMESPACE, "train-aegis-bootstrap")
    service = cluster.api.get(SERVICE, NAMESPACE, "train-workers")
    for obj in (*pods.values(), cr, secret, service):
        assert obj["metadata"]["ownerReferences"] == owner
        assert all_errors(obj) == [], obj["metadata"]["name"]
    assert cr["spec"]["workerNum"] == 3 and cr["spec"]["maxRetry"] == 2
    assert (
        cr["spec"]["bootstrapTokenSHA256"]
        == token_sha256(secret_token(secret))
        == token_sha256("tok")
    )
    assert "status" not in cr  # the Aegis Controller's to write
    env = {e["name"]: e for e in pods["train-worker-1"]["spec"]["containers"][0]["env"]}
    assert env["AEGIS_RANK"]["value"] == "1" and env["AEGIS_GRPC"]["value"] == "ctl:50051"


def test_running_pods_make_the_job_running(cluster: Cluster) -> None:
    controller = _start(cluster)
    for name in WORKERS:
        cluster.run_pod(name)
    controller.reconcile_job(NAMESPACE, "train")
    assert cluster.job("train")["status"]["phase"] == "Running"


def test_node_fault_recreates_the_pod_away_from_error_nodes(cluster: Cluster) -> None:
    controller = _start(cluster)
    before = {n: p["metadata"]["uid"] for n, p in cluster.pods().items()}
    _master_writes(cluster, error_nodes=(ErrorNode("bad-1", "gpu lost", 1.0),))
    cluster.finish_pod("train-worker-1", exit_code=1, node="bad-2")
    controller.reconcile_job(NAMESPACE, "train")
    pods = cluster.pods()
    assert sorted(pods) == WORKERS
    assert pods["train-worker-1"]["metadata"]["uid"] != before["train-worker-1"]
    assert _node_exclusion(pods["train-worker-1"]) == ["bad-1", "bad-2"]
    for other in ("train-worker-0", "train-worker-2"):  # untouched
        assert pods[other]["metadata"]["uid"] == before[other]
        assert "affinity" not in pods[other]["spec"]
    status = cluster.job("train")["status"]
    assert status["excludedNodes"] == ["bad-2"] and status["podRestarts"] == 1
    assert all_errors(pods["train-worker-1"]) == []


def test_retries_exhausted_deletes_every_pod_and_fails_the_job(cluster: Cluster) -> None:
    controller = _start(cluster)
    store = CrStatusStore(cluster.api, NAMESPACE, "train")
    infos = {p: PodInfo(retries=r) for p, r in zip(WORKERS, (2, 2, 3), strict=True)}
    store.save(Status(phase="Troubleshooting", recover_count=2, pod_infos=infos))
    controller.reconcile_job(NAMESPACE, "train")
    assert cluster.pods() == {}
    status = cluster.job("train")["status"]
    assert status["phase"] == "Failed"
    assert status["message"] == "retries exhausted: a worker restarted 3 times, maxRetry is 2"
    assert controller.reconcile_job(NAMESPACE, "train") == []  # terminal, nothing recreated


def test_should_quit_fails_the_job(cluster: Cluster) -> None:
    controller = _start(cluster)
    _master_writes(cluster, should_quit=True)
    controller.reconcile_job(NAMESPACE, "train")
    assert cluster.pods() == {}
    assert cluster.job("train")["status"]["phase"] == "Failed"


def test_restarted_controller_resumes_from_the_cluster(cluster: Cluster) -> None:
    _start(cluster)
    _master_writes(cluster, error_nodes=(ErrorNode("bad-1", "gpu lost", 1.0),))
    uids = {n: p["metadata"]["uid"] for n, p in cluster.pods().items()}
    fresh = JobController(cluster.api, CONFIG, new_token=lambda: "other")
    assert fresh.reconcile_job(NAMESPACE, "train") == []  # no duplicate pods, CR or secret
    assert {n: p["metadata"]["uid"] for n, p in cluster.pods().items()} == uids
    cluster.api.delete(POD, NAMESPACE, "train-worker-0")
    actions = JobController(cluster.api, CONFIG).reconcile_job(NAMESPACE, "train")
    assert [a for a in actions if isinstance(a, CreatePod)] == [CreatePod(0, ("bad-1",))]
    assert _node_exclusion(cluster.pods()["train-worker-0"]) == ["bad-1"]
    secret = cluster.api.get(SECRET, NAMESPACE, "train-aegis-bootstrap")
    assert secret_token(secret) == "tok"  # the token was not replaced


def test_all_workers_succeeded(cluster: Cluster) -> None:
    controller = _start(cluster, workers=2)
    for name in ("train-worker-0", "train-worker-1"):
        cluster.finish_pod(name, exit_code=0)
    controller.reconcile_job(NAMESPACE, "train")
    assert cluster.job("train")["status"]["phase"] == "Succeeded"
    assert len(cluster.pods()) == 2  # kept for their logs


def test_deleting_the_job_cleans_everything_up(cluster: Cluster) -> None:
    controller = _start(cluster)
    cluster.api.delete(AEGIS_JOB, NAMESPACE, "train")
    assert cluster.job("train")["metadata"]["deletionTimestamp"]  # held by the finalizer
    controller.reconcile_job(NAMESPACE, "train")
    assert cluster.pods() == {}
    assert cluster.api.list(AEGIS, NAMESPACE) == []
    assert cluster.api.list(SECRET, NAMESPACE) == []
    assert cluster.api.list(SERVICE, NAMESPACE) == []
    assert cluster.api.list(AEGIS_JOB, NAMESPACE) == []  # finalizer removed, object gone


def test_run_watches_and_reconciles(cluster: Cluster) -> None:
    stop = threading.Event()
    controller = JobController(cluster.api, CONFIG)
    thread = threading.Thread(target=controller.run, args=(stop,), daemon=True)
    thread.start()
    try:
        cluster.api.create(AEGIS_JOB, NAMESPACE, aegis_job(workers=2))
        wait_for(lambda: len(cluster.pods()) == 2, 10, "both pods")
        cluster.finish_pod("train-worker-0", exit_code=1, node="bad-9")
        wait_for(
            lambda: "affinity" in cluster.pods().get("train-worker-0", {}).get("spec", {}),
            10,
            "worker 0 recreated with an anti-affinity",
        )
        assert _node_exclusion(cluster.pods()["train-worker-0"]) == ["bad-9"]
    finally:
        stop.set()
        thread.join(5)
    assert not thread.is_alive()


def test_run_reads_pods_from_its_watch_not_a_list_per_reconcile(cluster: Cluster) -> None:
    """Six pods start, run, one fails and is made again on another node: each of those
    changes is a reconcile, and each reconcile read the pods from the cache that one list
    and its watch keep, not from a list of its own (before: a list per reconcile)."""
    stop = threading.Event()
    api = KubeApi.for_url(cluster.url, timeout_s=5.0)
    api._client.user_agent = "job-controller"  # its requests apart from the test's
    controller = JobController(api, JobControllerConfig(pod=CONFIG.pod, resync_s=60))
    thread = threading.Thread(target=controller.run, args=(stop,), daemon=True)
    thread.start()
    workers = [f"train-worker-{r}" for r in range(6)]
    try:
        wait_for(lambda: controller.pods.synced, 10, "the pods listed")  # (none yet)
        cluster.api.create(AEGIS_JOB, NAMESPACE, aegis_job(workers=6))
        wait_for(lambda: sorted(cluster.pods()) == workers, 10, "six pods")
        for name in workers:
            cluster.run_pod(name)
        wait_for(lambda: cluster.job("train")["status"]["phase"] == "Running", 10, "running")
        cluster.finish_pod("train-worker-3", exit_code=1, node="bad-3")
        wait_for(
            lambda: (
                cluster.job("train")["status"]["podRestarts"] == 1
                and "affinity" in cluster.pods().get("train-worker-3", {}).get("spec", {})
            ),
            10,
            "worker 3 made again",
        )
    finally:
        stop.set()
        thread.join(5)
        api.close()
    assert not thread.is_alive()
    assert _node_exclusion(cluster.pods()["train-worker-3"]) == ["bad-3"]
    assert cluster.job("train")["status"]["podRestarts"] == 1  # the failure counted once
    # one list for every reconcile; 6 pods, failed worker 3 deleted once and made again
    served = _pod_requests(cluster, "job-controller")
    assert served == {"LIST": 1, "WATCH": 1, "CREATE": 7, "DELETE": 1}


def test_a_watch_from_a_version_gone_lists_again(cluster: Cluster) -> None:
    """etcd compacted the list's version before the watch began (410): the pods are listed
    again and watched from the new list's version; a change after it reaches the cache."""
    _start(cluster, workers=2)
    cluster.emulator.expire_watches = 1
    stop = threading.Event()
    api = KubeApi.for_url(cluster.url, timeout_s=5.0)
    api._client.user_agent = "job-controller"
    controller = JobController(api, CONFIG)
    (pods,) = [s for s in controller.sources() if s.resource is POD]
    thread = threading.Thread(target=reflect, args=(api, pods, None, stop), daemon=True)
    thread.start()
    try:
        wait_for(lambda: controller.pods.synced, 10, "the first list")
        cluster.run_pod("train-worker-1")
        wait_for(
            lambda: (
                [p.phase for p in controller.pods.pods(NAMESPACE, "train", _uid(cluster))]
                == ["Pending", "Running"]
            ),
            10,
            "worker 1 running, through the second watch",
        )
    finally:
        stop.set()
        api.close()
        thread.join(5)
    assert not thread.is_alive()
    assert _pod_requests(cluster, "job-controller") == {"LIST": 2, "WATCH": 2}


def _uid(cluster: Cluster) -> str:
    return str(cluster.job("train")["metadata"]["uid"])


def _pod_requests(cluster: Cluster, agent: str) -> dict[str, int]:
    """How many pod requests of each kind the emulator served to clients of that User-Agent."""
    return dict(
        collections.Counter(
            r.action.name
            for r in cluster.emulator  # kmock iterates the requests it has served
            if r.headers.get("User-Agent") == agent
            and r.resource is not None
            and r.resource.plural == "pods"
            and r.action is not None
        )
    )


class _Events:
    """An API whose list is empty and whose watch replays `events` once, then stops the
    watch loop."""

    def __init__(self, events: list[tuple[str, dict[str, Any]]], stop: threading.Event):
        self.events, self.stop = events, stop

    def list_versioned(self, res: Any, namespace: Any, selector: str) -> Any:
        return [], "1"

    def watch(self, res: Any, namespace: Any, selector: str, timeout_s: int, **_: Any) -> Any:
        yield from self.events
        self.stop.set()  # the watch loop ends once it has taken them all


def queued_by_watch(res: Resource, events: list[tuple[str, dict[str, Any]]]) -> list[JobKey]:
    """The job keys a fresh Job Controller's reflector of `res` (into its store for them: the
    pod cache, for pods) queues for these events."""
    stop = threading.Event()
    api = _Events(events, stop)
    controller = JobController(api, CONFIG)  # type: ignore[arg-type]
    (source,) = [s for s in controller.sources() if s.resource is res]
    queued: list[JobKey] = []
    reflect(api, source, NAMESPACE, stop, queued.append)  # type: ignore[arg-type]
    return queued


def test_a_status_patch_that_changes_nothing_the_job_controller_reads_reconciles_nothing() -> None:
    """The Aegis Controller patches its CR's status at every group commit (tens a second
    while a large job's pods report), and each reconcile lists every pod of the job: only an
    event that changes what a reconcile reads of the CR (phase, shouldQuit, the most retries,
    error nodes, message, ownership) or deletes it is queued."""

    def cr(seq: int, phase: str = "RunCommand", retries: int = 0, **meta: Any) -> dict[str, Any]:
        infos = {p: {"retries": retries, "innerPhase": phase} for p in WORKERS}
        return {
            "metadata": {"name": "train", "namespace": NAMESPACE, "uid": "u1",
                         "labels": {LABEL_JOB: "train"}, **meta},
            "status": {"phase": phase, "masterSeq": seq, "podInfos": infos},
        }  # fmt: skip

    events = [("ADDED", cr(1))]
    events += [("MODIFIED", cr(seq)) for seq in range(2, 22)]  # commits: masterSeq only
    events += [("MODIFIED", cr(22, retries=1)), ("MODIFIED", cr(23, retries=1))]
    events += [("MODIFIED", cr(24, phase="Failed", retries=1))]
    events += [("MODIFIED", cr(25, phase="Failed", retries=1, deletionTimestamp="now"))]
    events += [("DELETED", cr(25, phase="Failed", retries=1)), ("ADDED", cr(1))]
    # the first sight, the retries, the phase, the deletion begun, gone, and back
    assert queued_by_watch(AEGIS, events) == [(NAMESPACE, "train")] * 6


def test_a_pod_event_that_changes_nothing_a_reconcile_reads_reconciles_nothing() -> None:
    """The kubelet updates a starting pod's conditions several times; a reconcile reads its
    phase, node, exit code, reason, deletion and owner: only those changes are queued."""

    def pod(phase: str = "Pending", ready: str = "False", **status: Any) -> dict[str, Any]:
        return {
            "metadata": {"name": WORKERS[0], "namespace": NAMESPACE, "uid": "p1",
                         "labels": {LABEL_JOB: "train"}, "ownerReferences": [{"uid": "j1"}]},
            "spec": {"nodeName": "node-a", "containers": [{"name": "trainer"}]},
            "status": {"phase": phase, "conditions": [{"type": "Ready", "status": ready}],
                       **status},
        }  # fmt: skip

    events = [("ADDED", pod())]
    events += [("MODIFIED", pod(ready=r)) for r in ("False", "Unknown", "False")]
    events += [("MODIFIED", pod("Running")), ("MODIFIED", pod("Running", ready="True"))]
    ended: dict[str, Any] = {
        "containerStatuses": [{"name": "trainer", "state": {"terminated": {"exitCode": 1}}}]
    }
    events += [("MODIFIED", pod("Failed", "False", **ended))]
    events += [("DELETED", pod("Failed", "False", **ended))]
    # seen, running, failed (exit 1), gone
    assert queued_by_watch(POD, events) == [(NAMESPACE, "train")] * 4


def test_a_larger_job_gets_its_pods_over_concurrent_requests(cluster: Cluster) -> None:
    """40 workers: batches of 1, 2, 4, 8, 16 and 9 creates, up to 16 at once through the
    client's connection pool (threads sharing one KubeApi) to the emulated API server."""
    controller = _start(cluster, workers=40)
    pods = cluster.pods()
    assert sorted(pods) == sorted(f"train-worker-{r}" for r in range(40))
    for name, pod in pods.items():
        env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
        assert name == f"train-worker-{env['AEGIS_RANK']}"  # each body went with its own name
    assert controller.reconcile_job(NAMESPACE, "train") == []  # nothing missing, nothing twice
