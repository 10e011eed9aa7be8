"""The Job Controller's decisions: `reconcile(job, observed) -> actions` (pure, no I/O).

The I/O layer applies the actions in order and calls `reconcile` again on the next change, so
every rule is level-triggered and a restarted controller resumes from what it observes (the
AegisJob status and the Aegis CR status); it keeps nothing in memory. The rules of time
(`spec.runPolicy`'s deadline and TTL) read the time observed; `wake_after` says when the
next one is due.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from aegis.k8s.manifests import template_problem
from aegis.k8s.model import FAILED, PENDING, RUNNING, SUCCEEDED, JobView, Observed, PodView
from aegis.k8s.resources import FINALIZER, pod_name
from aegis.k8s.run_policy import KUEUE, VOLCANO, epoch, rfc3339
from aegis.protocol.exitcodes import AgentExit

# why a job ended (its status.reason)
SUCCESS = "Succeeded"
RETRIES_EXHAUSTED = "RetriesExhausted"  # a worker's retries passed maxRetry
STOPPED = "Stopped"  # shouldQuit: `aegis ctl stop`, or the Aegis Controller
CONTROLLER_FAILED = "ControllerFailed"  # the Aegis CR's phase is Failed
RESTART_BUDGET = "RestartBudgetExceeded"  # pods recreated past (maxRetry+1)·workerNum
DEADLINE = "DeadlineExceeded"  # runPolicy.activeDeadlineSeconds
INVALID_SPEC = "InvalidSpec"
POD_REJECTED = "PodRejected"  # the API server refused a worker pod
NO_GANG_SCHEDULER = "GangSchedulerMissing"  # Volcano's PodGroups are not served
BAD_COMMAND = "CommandCannotStart"  # a worker's agent exited 78: the user's error
# verdicts only the Job Controller knows: nothing else stops the job's pods, so they are
# deleted whatever the cleanPodPolicy (aegis/k8s/run_policy.py `pods_to_end`)
OWN_VERDICTS = frozenset({RESTART_BUDGET, DEADLINE, INVALID_SPEC, POD_REJECTED, NO_GANG_SCHEDULER})


@dataclass(frozen=True)
class AddFinalizer:
    """Put our finalizer on the AegisJob before creating anything for it."""


@dataclass(frozen=True)
class RemoveFinalizer:
    """Everything the job owned is gone: let the AegisJob be deleted."""


@dataclass(frozen=True)
class CreateSecret:
    """Create the job's bootstrap-token Secret."""


@dataclass(frozen=True)
class DeleteSecret:
    """Delete the job's bootstrap-token Secret."""


@dataclass(frozen=True)
class CreateService:
    """Create the job's headless Service."""


@dataclass(frozen=True)
class DeleteService:
    """Delete the job's headless Service."""


@dataclass(frozen=True)
class CreateAegis:
    """Create the Aegis CR (spec only)."""


@dataclass(frozen=True)
class DeleteAegis:
    """Delete the Aegis CR."""


@dataclass(frozen=True)
class CreatePod:
    """Create worker pod `rank`, kept off `excluded_nodes`, told its Level 2 restarts so far."""

    rank: int
    excluded_nodes: tuple[str, ...] = ()
    container_restarts: int = 0


@dataclass(frozen=True)
class DeletePod:
    """Delete a pod, saying why."""

    name: str
    reason: str


@dataclass(frozen=True)
class CreatePodGroup:
    """Create the job's Volcano PodGroup (gang Volcano), before its pods."""


@dataclass(frozen=True)
class DeletePodGroup:
    """Delete the job's Volcano PodGroup (the job ended, or is deleted)."""


@dataclass(frozen=True)
class MarkPodFinal:
    """Tell Kueue that this ended pod's gang is over (its quota is released)."""

    name: str


@dataclass(frozen=True)
class DeleteJob:
    """Delete the AegisJob itself: its ttlSecondsAfterFinished has passed."""


@dataclass(frozen=True)
class UpdateJobStatus:
    """Patch the AegisJob status (the only status the Job Controller writes)."""

    phase: str
    message: str = ""
    aegis_ref: str = ""
    excluded_nodes: tuple[str, ...] = ()
    pod_restarts: int = 0
    container_restarts: tuple[tuple[int, int], ...] = ()  # (rank, Level 2 recreations)
    reason: str = ""  # why it ended ("" while it runs)
    start_time: str = ""  # RFC 3339 ("": not known yet)
    completion_time: str = ""


Action = (
    AddFinalizer
    | RemoveFinalizer
    | CreateSecret
    | DeleteSecret
    | CreateService
    | DeleteService
    | CreateAegis
    | DeleteAegis
    | CreatePod
    | DeletePod
    | CreatePodGroup
    | DeletePodGroup
    | MarkPodFinal
    | DeleteJob
    | UpdateJobStatus
)


# (excluded nodes, pod recreations, (rank, Level 2 recreations) pairs)
Counters = tuple[tuple[str, ...], int, tuple[tuple[int, int], ...]]


def restart_budget(job: JobView) -> int:
    """Pod recreations allowed before the job fails even if the CR never counts a retry."""
    return (job.max_retry + 1) * max(job.worker_num, 1)


def reconcile(job: JobView, seen: Observed) -> list[Action]:
    """The actions that move the cluster towards what the AegisJob asks for."""
    if job.deleting:
        return _cleanup(job, seen)
    head: list[Action] = [] if FINALIZER in job.finalizers else [AddFinalizer()]
    if job.phase in (FAILED, SUCCEEDED):
        return head + _ended(job, seen)
    problem = template_problem(job)  # before any plan: its workerNum may be absurd
    if problem is not None:
        failed = _status(job, FAILED, problem, reason=INVALID_SPEC, now=seen.now)
        return [*head, failed, *_end(job, seen, INVALID_SPEC, problem)]
    plan = _plan_pods(job, seen.pods)
    verdict = plan.user_error or _failure(job, seen, plan)
    if verdict is not None:
        reason, message = verdict
        failed = _status(job, FAILED, message, plan.counters(job), reason=reason, now=seen.now)
        return [*head, failed, *_end(job, seen, reason, message)]
    if _all_succeeded(job, seen.pods):
        message = f"all {job.worker_num} workers succeeded"
        done = _status(job, SUCCEEDED, message, reason=SUCCESS, now=seen.now)
        return [*head, done, *_end(job, seen, SUCCESS, "job succeeded")]
    return head + _run(job, seen, plan)


def wake_after(job: JobView, now: float) -> float | None:
    """Seconds until a rule of time is due for this job (its activeDeadlineSeconds while it
    runs, its ttlSecondsAfterFinished once it ended), or None."""
    policy = job.run_policy
    if job.deleting:
        return None
    if job.phase in (FAILED, SUCCEEDED):
        ended, ttl = epoch(job.completion_time), policy.ttl_after_finished_s
        return None if ended is None or ttl is None else max(0.0, ended + ttl - now)
    started, deadline = epoch(job.start_time), policy.active_deadline_s
    return None if started is None or deadline is None else max(0.0, started + deadline - now)


def _status(
    job: JobView,
    phase: str,
    message: str,
    counters: Counters | None = None,
    aegis_ref: str | None = None,
    reason: str = "",
    now: float | None = None,
) -> UpdateJobStatus:
    """The status to write; `now` stamps a start (and, for an end, a completion) time not
    written yet (None: the times as they are)."""
    if counters is None:
        counters = (job.excluded_nodes, job.pod_restarts, job.container_restarts)
    nodes, restarts, level2 = counters
    ref = job.name if aegis_ref is None else aegis_ref
    stamp = rfc3339(now) if now is not None else ""
    start = job.start_time or stamp
    ended = job.completion_time or (stamp if phase in (FAILED, SUCCEEDED) else "")
    reason = reason or job.reason
    return UpdateJobStatus(phase, message, ref, nodes, restarts, level2, reason, start, ended)


def _end(job: JobView, seen: Observed, reason: str, why: str) -> list[Action]:
    """What the job's end removes: its pods as its cleanPodPolicy says, its PodGroup."""
    doomed = job.run_policy.pods_to_end(seen.pods, reason in OWN_VERDICTS)
    actions: list[Action] = [DeletePod(p.name, why) for p in doomed]
    return actions + ([DeletePodGroup()] if seen.pod_group else [])


def _ended(job: JobView, seen: Observed) -> list[Action]:
    """An ended job, at each reconcile: its end's removals (a pod made meanwhile, a deletion
    that failed), Kueue told its gang is over, the completion time of a job that ended
    before it was written, and the AegisJob deleted once its TTL has passed."""
    now = seen.now
    if _ttl_passed(job, now):
        return [DeleteJob()]
    why = "job failed" if job.phase == FAILED else "job succeeded"
    actions = _end(job, seen, job.reason, why)
    if job.phase == FAILED and job.run_policy.gang == KUEUE:
        actions += _gang_over(seen.pods, actions)
    if not job.completion_time and now is not None:
        actions.insert(0, _status(job, job.phase, job.message, aegis_ref=job.aegis_ref, now=now))
    return actions


def _ttl_passed(job: JobView, now: float | None) -> bool:
    """Whether the ended job's ttlSecondsAfterFinished has passed."""
    ttl = job.run_policy.ttl_after_finished_s
    if now is None or ttl is None:
        return False
    ended = epoch(job.completion_time)
    return ended is not None and now >= ended + ttl


def _gang_over(pods: Sequence[PodView], actions: list[Action]) -> list[Action]:
    """Kueue: each ended pod the end does not delete is marked final (its gang is over)."""
    doomed = {a.name for a in actions if isinstance(a, DeletePod)}
    return [
        MarkPodFinal(p.name)
        for p in pods
        if p.phase in ("Succeeded", "Failed") and not p.group_final and p.name not in doomed
    ]


def _cleanup(job: JobView, seen: Observed) -> list[Action]:
    """A deleted job: its pods and owned objects deleted, then its finalizer removed."""
    owned: list[tuple[bool, Action]] = [
        (seen.aegis is not None, DeleteAegis()),
        (bool(seen.secret), DeleteSecret()),
        (bool(seen.service), DeleteService()),
        (bool(seen.pod_group), DeletePodGroup()),
    ]
    actions: list[Action] = _delete_all(seen.pods, "job deleted")
    actions += [delete for present, delete in owned if present]
    gone = not seen.pods and not any(present for present, _ in owned)
    if gone and FINALIZER in job.finalizers:
        actions.append(RemoveFinalizer())
    return actions


def _delete_all(pods: Sequence[PodView], reason: str) -> list[Action]:
    return [DeletePod(p.name, reason) for p in pods if not p.deleting]


def _failure(job: JobView, seen: Observed, plan: _PodPlan) -> tuple[str, str] | None:
    """(reason, message) of a verdict that fails the job, or None."""
    cr = seen.aegis
    if cr is not None and cr.should_quit:
        return STOPPED, "the Aegis Controller set shouldQuit"
    if cr is not None and cr.phase == "Failed":
        said = f": {cr.message}" if cr.message else ""
        return CONTROLLER_FAILED, f"the Aegis Controller reported phase Failed{said}"
    if cr is not None and cr.max_retries > job.max_retry:
        return RETRIES_EXHAUSTED, (
            f"retries exhausted: a worker restarted {cr.max_retries} times, "
            f"maxRetry is {job.max_retry}"
        )
    restarts, budget = job.pod_restarts + plan.restarts, restart_budget(job)
    if restarts > budget:
        return RESTART_BUDGET, (
            f"worker pods were recreated {restarts} times (budget {budget}) "
            "without the Aegis Controller counting a retry"
        )
    if _past_deadline(job, seen.now):
        return DEADLINE, (
            f"ran past runPolicy.activeDeadlineSeconds ({job.run_policy.active_deadline_s} s)"
        )
    return None


def _past_deadline(job: JobView, now: float | None) -> bool:
    wake = wake_after(job, now) if now is not None else None
    return wake is not None and wake <= 0


def _all_succeeded(job: JobView, pods: Sequence[PodView]) -> bool:
    done = {p.name for p in pods if p.phase == "Succeeded"}  # the pod phase
    return all(pod_name(job.name, r) in done for r in range(job.worker_num))


@dataclass
class _PodPlan:
    deletes: list[DeletePod] = field(default_factory=list)
    missing: list[int] = field(default_factory=list)
    faults: set[str] = field(default_factory=set)
    restarts: int = 0
    running: int = 0
    level2: dict[int, int] = field(default_factory=dict)  # rank -> Level 2 exits seen now
    # (reason, message): a worker's command cannot start, the job fails at once
    user_error: tuple[str, str] | None = None

    def add(self, rank: int, pod: PodView) -> None:
        """Count worker `rank`'s live pod: running, the user's error, or failed (recreate)."""
        if pod.phase in ("Running", "Succeeded"):  # pod phases
            self.running += 1
        elif pod.phase == "Failed" and pod.exit_code == AgentExit.BAD_COMMAND:
            self.user_error = self.user_error or _bad_command(rank, pod)
        elif pod.phase == "Failed":
            self._recreate(rank, pod)

    def _recreate(self, rank: int, pod: PodView) -> None:
        """A failed pod is deleted (and made again); a node fault blames its node."""
        self.deletes.append(DeletePod(pod.name, _why(pod)))
        self.restarts += 1
        if pod.exit_code == AgentExit.NODE_FAULT and pod.node:
            self.faults.add(pod.node)
        if pod.exit_code == AgentExit.RESTART_CONTAINER:
            self.level2[rank] = self.level2.get(rank, 0) + 1

    def counters(self, job: JobView) -> Counters:
        """(faulty nodes seen, pod recreations, Level 2 recreations per rank) after this plan."""
        level2 = dict(job.container_restarts)
        for rank, n in self.level2.items():
            level2[rank] = level2.get(rank, 0) + n
        nodes = tuple(sorted({*job.excluded_nodes, *self.faults}))
        return nodes, job.pod_restarts + self.restarts, tuple(sorted(level2.items()))


def _plan_pods(job: JobView, pods: Sequence[PodView]) -> _PodPlan:
    plan = _PodPlan()
    wanted = {pod_name(job.name, r): r for r in range(job.worker_num)}
    live = {p.name: p for p in pods if not p.deleting}  # a deleting pod is waited for
    plan.deletes += [DeletePod(n, "not a worker of this job") for n in live if n not in wanted]
    present = {p.name for p in pods}
    plan.missing += [rank for name, rank in wanted.items() if name not in present]
    for name in wanted.keys() & live.keys():
        plan.add(wanted[name], live[name])
    plan.deletes.sort(key=lambda a: a.name)
    return plan


def _bad_command(rank: int, pod: PodView) -> tuple[str, str]:
    """The user's error: no retry or other node would change it; no node excluded."""
    said = f": {pod.message}" if pod.message else ""
    return (
        BAD_COMMAND,
        f"worker {rank}'s command cannot start (agent exit "
        f"{AgentExit.BAD_COMMAND}, the user's error; no node blamed){said}",
    )


def _why(pod: PodView) -> str:
    if pod.exit_code == AgentExit.NODE_FAULT:
        return f"node fault on {pod.node or 'an unknown node'}: reschedule elsewhere"
    if pod.exit_code == AgentExit.RESTART_CONTAINER:
        return "runtime or storage broken on a healthy node: recreate (Level 2)"
    if pod.exit_code is not None:
        return f"agent exited with {pod.exit_code}: recreate"
    return f"pod failed ({pod.reason or 'no reason given'}): recreate"


def _run(job: JobView, seen: Observed, plan: _PodPlan) -> list[Action]:
    actions: list[Action] = []
    if not seen.secret:
        actions.append(CreateSecret())
    if not seen.service:
        actions.append(CreateService())
    if seen.aegis is None:
        actions.append(CreateAegis())
    if job.run_policy.gang == VOLCANO and not seen.pod_group:
        actions.append(CreatePodGroup())  # before the pods that name it
    counters = plan.counters(job)
    cr_nodes = seen.aegis.error_nodes if seen.aegis else ()
    excluded = tuple(sorted({*job.excluded_nodes, *plan.faults, *cr_nodes}))
    phase = RUNNING if plan.running == job.worker_num else PENDING
    message = f"{plan.running}/{job.worker_num} workers running"
    status = _status(job, phase, message, counters, now=seen.now)
    if status != _status(job, job.phase, job.message, aegis_ref=job.aegis_ref):
        actions.append(status)  # before the deletions: the faulty nodes are recorded first
    actions += plan.deletes
    actions += [CreatePod(rank, excluded, job.container_restarts_of(rank)) for rank in plan.missing]
    return actions
