"""A job whose status would not fit in its Aegis CR (etcd keeps objects of at most its
--max-request-bytes) keeps it in ConfigMaps (tests/k8s/test_configmap_store.py); one kept in
its CR has a budget that holds its status within the limit whatever its faults leave, and
one whose status outgrows it anyway fails, saying why, instead of restarting its controller
forever."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from aegis.k8s.aegis_controller import AegisSpec
from aegis.k8s.cr_store import CrStatusStore
from aegis.k8s.errors import ApiError, StatusTooLargeError
from aegis.k8s.manifests import template_problem
from aegis.k8s.model import MAX_WORKERS, AegisView, JobView, Observed
from aegis.k8s.reconcile import UpdateJobStatus, reconcile
from aegis.k8s.resources import AEGIS, Resource
from aegis.k8s.status_size import (
    LEAST_BUDGET,
    MAX_REASON_BYTES,
    MIN_HISTORY,
    MIN_REASON_BYTES,
    SAVE_SHARE,
    JobShape,
    estimated_status_bytes,
    max_workers,
    status_budget,
)
from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.protocol.exitcodes import ControllerExit
from aegis.protocol.payloads import Report, Sender
from aegis.runtime.agent.core import AgentCore, Work
from aegis.runtime.controller.core import ControllerCore, JobConfig, PersistenceError
from aegis.runtime.controller.status_budget import StatusBudget
from aegis.runtime.controller.store import HISTORY_LIMIT
from aegis.testing.memory_api import MemoryCrApi

from ..support import wait_for
from .cluster import NAMESPACE, Cluster, aegis_job
from .harness import Nats, aegis_cr, running


def pod_uid(pod: str) -> str:
    """A pod's uid as Kubernetes writes it (the agent's incarnation in a cluster)."""
    return str(uuid.uuid5(uuid.NAMESPACE_DNS, pod))


def joined_status_bytes(job: str, workers: int) -> int:
    """The CR status the store writes once every pod has joined (a real core and store)."""
    pods = tuple(f"{job}-worker-{r}" for r in range(workers))
    api = MemoryCrApi()
    core = ControllerCore(JobConfig(job, NAMESPACE, pods, 3), CrStatusStore(api, NAMESPACE, job))
    core.autocommit = False
    for pod in pods:
        data = {"incarnation": pod_uid(pod), "podIP": "10.123.145.167", "node": f"node-{pod}",
                "nodeIP": "10.123.145.1"}  # fmt: skip
        ack = Message(job, NAMESPACE, pod, MessageType.ACK, MessagePhase.BOOTCHECK, data, 1.0, 0)
        core.on_ack(ack)
    core.journal.commit()  # Pending -> BootChecking: the snapshot's save
    return len(json.dumps(api.obj["status"], separators=(",", ":")))


@pytest.mark.parametrize("job", ["j", "train", "a-job-name-of-forty-characters-exactly1"])
@pytest.mark.parametrize("workers", [3, 150, 1200])
def test_the_estimate_bounds_the_status_the_store_writes(job: str, workers: int) -> None:
    real = joined_status_bytes(job, workers)
    estimate = estimated_status_bytes(job, workers)
    assert real <= estimate <= 1.3 * real + 5000, (real, estimate)


def test_the_largest_job_kept_in_its_cr_is_the_last_with_a_budget() -> None:
    for job in ("j", "train", "a-job-name-of-forty-characters-exactly1"):
        for retries in (0, 3, 100):
            most = max_workers(job, retries)
            assert status_budget(job, most, retries) is not None
            assert status_budget(job, most + 1, retries) is None
    assert 1500 < max_workers("train", 3) < 2500  # ~1,500: a default cluster's ceiling
    assert status_budget("train", 12500, 3) is None


def test_a_smaller_job_gets_more_room_up_to_whole_reasons_and_history() -> None:
    budgets = [status_budget("train", w, 3) for w in (10, 500, 1000, 1300, 1500)]
    assert budgets[0] == budgets[1] == StatusBudget(MAX_REASON_BYTES, HISTORY_LIMIT)
    sizes = [(b.reason_bytes or 0, b.history) for b in budgets if b is not None]
    assert len(sizes) == 5 and sizes == sorted(sizes, reverse=True)
    assert sizes[-1] >= (MIN_REASON_BYTES, MIN_HISTORY)


def test_an_aegisjob_too_large_for_its_cr_is_run_all_the_same() -> None:
    """Its status goes to ConfigMaps (the Aegis Controller decides; the Job Controller makes
    the CR as for any job)."""
    job = JobView.from_obj(aegis_job("train", workers=12500))
    assert template_problem(job) is None
    actions = reconcile(job, Observed(pods=[], aegis=None, secret=False, service=False))
    assert not [a for a in actions if isinstance(a, UpdateJobStatus) and a.phase == "Failed"]


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


class _MeasuringApi(MemoryCrApi):
    """The store's API, noting the largest status it kept, measured as the API server writes
    JSON (Go's encoding/json: UTF-8, HTML characters escaped)."""

    largest = 0

    def patch(
        self, res: Resource, namespace: str | None, name: str, patch: Any, sub: str = ""
    ) -> dict[str, Any]:
        obj = super().patch(res, namespace, name, patch, sub)
        text = json.dumps(obj["status"], ensure_ascii=False, separators=(",", ":"))
        size = len(text.encode()) + 5 * sum(text.count(c) for c in "<>&")
        self.largest = max(self.largest, size)
        return obj


def fault_storm(config: JobConfig, error_nodes: int) -> tuple[_MeasuringApi, ControllerCore]:
    """Run a job in a real core whose status goes to the CR store, where every round of
    RunCommand ends with every pod reporting Error with a reason of the most a report may
    carry, each the worst to store (500 characters of '<'), a pod of its own first (its
    report is applied; that pod is then lost and comes back as a new pod, its old incarnation
    kept), and error nodes with names of the most Kubernetes allows join the blacklist, until
    the retries are spent and the job fails."""
    api = _MeasuringApi()
    pods = config.pods
    core = ControllerCore(config, CrStatusStore(api, NAMESPACE, config.name))
    agents = {p: AgentCore(config.name, NAMESPACE, p, Sender(pod_uid(p))) for p in pods}
    work: dict[str, Work] = {}
    worst = "<" * 500
    tainted = rounds = 0
    for agent in agents.values():
        reply = core.on_ack(agent.ack()).reply
        assert reply is not None
        agent.on_order(reply, working=False)
    while core.terminal is None:
        if core.orders.needs_publish:
            orders = [*core.orders.pod_orders(), core.orders.order_for()]
            core.orders.mark_published()
            for msg in orders:
                for pod, agent in agents.items():
                    if msg.pod_name in ("master", pod):
                        decision = agent.on_order(msg, working=pod in work)
                        if isinstance(decision, Work):
                            work[pod] = decision
        assert work, f"stuck in {core.state.phase}"
        failing = str(core.state.phase) == "RunCommand"
        if failing:
            for _ in range(error_nodes // (config.max_retry + 1) + 1):
                if tainted < error_nodes:
                    node = f"{tainted:03d}" + "n" * 250
                    assert core.taint(node, worst)
                    tainted += 1
        order = list(work)
        if failing:  # a pod of its own each round reports first (the others' are stale)
            first = pods[rounds % len(pods)]
            order.sort(key=lambda p: p != first)
            rounds += 1
        for pod in order:
            agent, w = agents[pod], work[pod]
            outcome = "Error" if failing else "Finish"
            report = Report(agent.sender, reason=worst if failing else "")
            sent = agent.finish_work(w.seq, w.order.spec_phase, outcome, report)
            del work[pod]
            if sent is not None:
                core.on_report(sent)
        if failing:  # and the pod that failed first is lost, and comes back as a new pod
            lost = order[0]
            core.on_heartbeat_lost(lost)
            if core.extras.evicted.get(lost) == agents[lost].sender.incarnation:
                uid = str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{lost}-{rounds}"))
                agents[lost] = AgentCore(config.name, NAMESPACE, lost, Sender(uid))
                work.pop(lost, None)
                reply = core.on_ack(agents[lost].ack()).reply
                if reply is not None:
                    decision = agents[lost].on_order(reply, working=False)
                    if isinstance(decision, Work):
                        work[lost] = decision
    return api, core


def test_an_admitted_jobs_status_stays_within_the_limit_whatever_its_faults_leave() -> None:
    """The largest job admitted under a small limit (the same arithmetic as etcd's 1.5 MiB,
    at a size a test runs in seconds) fails every round with the worst reasons to store and
    gains error nodes, until every pod has a reason and a lost incarnation, its history is
    full and the job fails: the status the API keeps stays within SAVE_SHARE of the limit;
    without the budget it outgrows the limit."""
    limit, retries = 48 << 10, 60  # a round per pod: every pod fails once
    workers = max_workers("train", retries, limit)
    assert workers <= retries + 1
    budget = status_budget("train", workers, retries, limit)
    assert budget is not None
    pods = tuple(f"train-worker-{r}" for r in range(workers))
    config = JobConfig("train", NAMESPACE, pods, retries, status_budget=budget)
    nodes = JobShape("train", workers, retries).error_nodes
    api, core = fault_storm(config, nodes)
    status = api.obj["status"]
    assert core.terminal == "Failed" and len(status["errorNodes"]) == nodes
    assert len(status["history"]) == budget.history  # full
    assert all(info["lastFailedReason"] for info in status["podInfos"].values())
    assert sorted(status["runtime"]["evicted"]) == sorted(pods)  # every pod lost once
    assert api.largest <= SAVE_SHARE * limit, (api.largest, limit)
    unbounded, _ = fault_storm(JobConfig("train", NAMESPACE, pods, retries), nodes)
    assert unbounded.largest > limit


def test_the_aegis_controller_runs_a_job_with_its_budget() -> None:
    cr = aegis_cr("train", workers=1500)
    spec = AegisSpec.from_obj({**cr, "metadata": {**cr["metadata"], "uid": "u1"}})
    assert spec.problem() is None and not spec.in_configmaps()
    budget = spec.job_config(29500).status_budget
    assert budget == status_budget("train", 1500, spec.max_retry)
    assert budget.reason_bytes is not None and budget.reason_bytes < MAX_REASON_BYTES
    large = AegisSpec.from_obj({**cr, "spec": {**cr["spec"], "workerNum": 12500}})
    assert large.problem() is None and large.in_configmaps()
    assert large.job_config(29500).status_budget == StatusBudget()  # whole reasons, history
    assert spec.in_configmaps(limit=64 << 10)  # a cluster whose etcd keeps less
    # past the CRD's maximum (a cluster without the CRDs): refused, not a billion-pod core
    absurd = AegisSpec.from_obj({**cr, "spec": {**cr["spec"], "workerNum": MAX_WORKERS + 1}})
    assert absurd.problem() == f"spec.workerNum must be 1 to {MAX_WORKERS}, got {MAX_WORKERS + 1}"


def test_a_cr_a_controller_already_ran_goes_on_as_it_was_saved() -> None:
    """A job admitted under an earlier rule (up to 2,518 workers for 'train'), saved whole in
    its CR and running when the Aegis Controller is upgraded, goes on so, with the least
    budget; a job saved in ConfigMaps goes on there whatever the limit says."""
    cr = aegis_cr("train", workers=2400)
    fresh = AegisSpec.from_obj({**cr, "metadata": {**cr["metadata"], "uid": "u1"}})
    assert fresh.problem() is None and fresh.in_configmaps()
    saved = {**cr, "metadata": {**cr["metadata"], "uid": "u1"}, "status": {"version": 1}}
    resumed = AegisSpec.from_obj(saved)
    assert resumed.resumed and resumed.problem() is None and not resumed.in_configmaps()
    assert resumed.job_config(29500).status_budget == LEAST_BUDGET
    small = aegis_cr("train", workers=10)
    chunked = {**small, "status": {"version": 1, "snapshot": {"generation": 3}}}
    assert AegisSpec.from_obj(chunked).in_configmaps()
