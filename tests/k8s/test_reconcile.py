"""The Job Controller's decisions, table-driven: (job, observed) -> actions."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from aegis.k8s.model import MAX_WORKERS, AegisView, JobView, Observed, PodView
from aegis.k8s.reconcile import (
    Action,
    AddFinalizer,
    CreateAegis,
    CreatePod,
    CreateSecret,
    CreateService,
    DeleteAegis,
    DeletePod,
    DeleteSecret,
    DeleteService,
    RemoveFinalizer,
    UpdateJobStatus,
    reconcile,
    restart_budget,
)
from aegis.k8s.resources import FINALIZER

TEMPLATE = {"spec": {"containers": [{"name": "t", "image": "i", "command": ["python", "t.py"]}]}}


def job(**changes: Any) -> JobView:
    base = JobView("team", "train", "uid-1", 3, 2, TEMPLATE, (FINALIZER,), aegis_ref="train")
    return dataclasses.replace(base, **changes)


def pod(rank: int, phase: str = "Running", code: int | None = None, node: str = "n0") -> PodView:
    return PodView(f"train-worker-{rank}", rank, phase, code, node)


RUNNING = tuple(pod(r) for r in range(3))
CR = AegisView(phase="RunCommand")
ALL = {"secret": True, "service": True, "aegis": CR}


def seen(pods: tuple[PodView, ...] = RUNNING, **changes: Any) -> Observed:
    return Observed(**{"pods": pods, **ALL, **changes})


def status(
    phase: str, message: str, nodes: tuple[str, ...] = (), restarts: int = 0, reason: str = ""
) -> Action:
    return UpdateJobStatus(phase, message, "train", nodes, restarts, reason=reason)


BAD_COMMAND = (
    "worker 1's command cannot start (agent exit 78, the user's error; no node blamed): "
    "the command cannot start: 'trian.py': no such file"
)
CASES: list[tuple[str, JobView, Observed, list[Action]]] = [
    (
        "new job: finalizer first, then secret, service, CR, pods",
        job(finalizers=(), phase="", aegis_ref=""),
        Observed(),
        [
            AddFinalizer(),
            CreateSecret(),
            CreateService(),
            CreateAegis(),
            status("Pending", "0/3 workers running"),
            *(CreatePod(r) for r in range(3)),
        ],
    ),
    (
        "steady state: nothing to do",
        job(phase="Running", message="3/3 workers running"),
        seen(),
        [],
    ),
    (
        "node fault (exit 1): record the node, then delete; keep it and CR nodes off",
        job(phase="Running", message="3/3 workers running"),
        seen(
            (pod(0), pod(1, "Failed", 1, "bad-2"), pod(2)), aegis=AegisView(error_nodes=("bad-1",))
        ),
        [
            status("Pending", "2/3 workers running", ("bad-2",), 1),
            DeletePod("train-worker-1", "node fault on bad-2: reschedule elsewhere"),
        ],
    ),
    (
        "missing pod: recreated away from the CR's and the job's faulty nodes",
        job(phase="Pending", message="2/3 workers running", excluded_nodes=("bad-2",)),
        seen((pod(0), pod(2)), aegis=AegisView(error_nodes=("bad-1",))),
        [CreatePod(1, ("bad-1", "bad-2"))],
    ),
    (
        "Level 2 (exit 76): counted per rank, then recreated without excluding the node",
        job(phase="Running", message="3/3 workers running", container_restarts=((2, 1),)),
        seen((pod(0), pod(1), pod(2, "Failed", 76))),
        [
            UpdateJobStatus("Pending", "2/3 workers running", "train", (), 1, ((2, 2),)),
            DeletePod(
                "train-worker-2", "runtime or storage broken on a healthy node: recreate (Level 2)"
            ),
        ],
    ),
    (
        "Level 2 recreation: the new pod is told its rank's Level 2 count",
        job(phase="Pending", message="2/3 workers running", container_restarts=((2, 2),)),
        seen((pod(0), pod(1))),
        [CreatePod(2, (), 2)],
    ),
    (
        "other failure: recreate in place, no node excluded",
        job(phase="Running", message="3/3 workers running"),
        seen((pod(0), pod(1), pod(2, "Failed", 137))),
        [
            status("Pending", "2/3 workers running", (), 1),
            DeletePod("train-worker-2", "agent exited with 137: recreate"),
        ],
    ),
    (
        "the command cannot start (exit 78): the job fails at once, no node excluded or retried",
        job(phase="Running", message="3/3 workers running"),
        seen(
            (
                pod(0),
                dataclasses.replace(
                    pod(1, "Failed", 78, "n1"),
                    message="the command cannot start: 'trian.py': no such file",
                ),
                pod(2),
            )
        ),
        [  # the failed pod is kept for its logs (cleanPodPolicy Running, the default)
            status("Failed", BAD_COMMAND, reason="CommandCannotStart"),
            *(DeletePod(f"train-worker-{r}", BAD_COMMAND) for r in (0, 2)),
        ],
    ),
    (
        "a terminating pod is waited for, not recreated",
        job(phase="Pending", message="2/3 workers running"),
        seen((pod(0), dataclasses.replace(pod(1, "Failed", 1), deleting=True), pod(2))),
        [],
    ),
    (
        "retries exhausted (max over pods > maxRetry): Failed, every running pod deleted",
        job(phase="Running"),
        seen(aegis=AegisView(max_retries=3)),
        [
            status(
                "Failed",
                "retries exhausted: a worker restarted 3 times, maxRetry is 2",
                reason="RetriesExhausted",
            ),
            *(
                DeletePod(
                    f"train-worker-{r}",
                    "retries exhausted: a worker restarted 3 times, maxRetry is 2",
                )
                for r in range(3)
            ),
        ],
    ),
    (
        "retries == maxRetry is still allowed",
        job(phase="Running", message="3/3 workers running"),
        seen(aegis=AegisView(max_retries=2)),
        [],
    ),
    (
        "shouldQuit: Failed, every pod deleted",
        job(phase="Running"),
        seen((pod(0),), aegis=AegisView(should_quit=True)),
        [
            status("Failed", "the Aegis Controller set shouldQuit", reason="Stopped"),
            DeletePod("train-worker-0", "the Aegis Controller set shouldQuit"),
        ],
    ),
    (
        "already Failed: leftover pods are deleted, nothing else",
        job(phase="Failed"),
        seen((pod(1),)),
        [DeletePod("train-worker-1", "job failed")],
    ),
    (
        "all workers succeeded: Succeeded, pods kept for their logs",
        job(phase="Running"),
        seen(tuple(pod(r, "Succeeded", 0) for r in range(3))),
        [status("Succeeded", "all 3 workers succeeded", reason="Succeeded")],
    ),
    (
        "pods of another shape are removed",
        job(phase="Running", message="3/3 workers running"),
        seen((*RUNNING, PodView("train-worker-7", 7))),
        [DeletePod("train-worker-7", "not a worker of this job")],
    ),
    (
        "deleted job: delete everything, finalizer stays until it is gone",
        job(deleting=True),
        seen((pod(0),)),
        [
            DeletePod("train-worker-0", "job deleted"),
            DeleteAegis(),
            DeleteSecret(),
            DeleteService(),
        ],
    ),
    (
        "deleted job, everything gone: remove the finalizer",
        job(deleting=True),
        Observed(),
        [RemoveFinalizer()],
    ),
    (
        "template without a command: Failed with the reason",
        job(template={"spec": {"containers": [{"name": "t", "image": "i"}]}}, phase=""),
        Observed(),
        [
            status(
                "Failed",
                "spec.template.spec.containers[0].command is required: the agent runs it",
                reason="InvalidSpec",
            )
        ],
    ),
    (
        # a cluster without the CRD's maximum lets it through; the plan of every missing pod
        # was built before the template was checked, and at 10**9 workers took all the memory
        "more workers than any cluster has nodes: Failed, no pod planned",
        job(worker_num=MAX_WORKERS + 1, phase=""),
        Observed(),
        [
            status(
                "Failed",
                f"spec.workerNum must be 1 to {MAX_WORKERS}, got {MAX_WORKERS + 1}",
                reason="InvalidSpec",
            )
        ],
    ),
]


@pytest.mark.parametrize(
    ("name", "job_view", "observed", "expected"), CASES, ids=[c[0] for c in CASES]
)
def test_reconcile(
    name: str, job_view: JobView, observed: Observed, expected: list[Action]
) -> None:
    assert reconcile(job_view, observed) == expected


def test_crash_looping_pods_fail_the_job_within_the_budget() -> None:
    budget = restart_budget(job())
    assert budget == 9  # (maxRetry + 1) * workerNum
    actions = reconcile(
        job(pod_restarts=budget, phase="Running"), seen((pod(0, "Failed", 2), pod(1), pod(2)))
    )
    assert isinstance(actions[0], UpdateJobStatus) and actions[0].phase == "Failed"
    assert "recreated 10 times (budget 9)" in actions[0].message
    assert actions[0].reason == "RestartBudgetExceeded"
    # the pods still running are deleted; the failed one is kept for its logs
    assert {a.name for a in actions[1:] if isinstance(a, DeletePod)} == {
        f"train-worker-{r}" for r in (1, 2)
    }


def test_reconcile_is_idempotent_once_applied() -> None:
    """Applying the new job's actions (as the cluster would) leaves nothing to do."""
    first = reconcile(job(finalizers=(), phase="", aegis_ref=""), Observed())
    update = next(a for a in first if isinstance(a, UpdateJobStatus))
    after = job(phase=update.phase, message=update.message)
    pods = tuple(pod(a.rank, "Pending") for a in first if isinstance(a, CreatePod))
    assert reconcile(after, seen(pods)) == []
