"""The Job Controller's I/O: observe one AegisJob, `reconcile` it, apply the actions.

`run` follows AegisJobs, their pods and Aegis CRs on the control loop (aegis/k8s/
control_loop.py: a reflector per resource, a keyed work queue, a periodic resync) and
reconciles every job whose objects changed, up to `reconcile_workers` jobs at once and never
one job twice at once (a job changed while it is reconciled is reconciled again after; one
whose reconcile failed again after its backoff). While it runs, a reconcile reads the job's
pods from its pod cache (aegis/k8s/pod_cache.py, kept by a list and a watch), not from a
list of its own. Each applied action is logged as one JSON line. It creates and deletes the
Aegis CR but never writes its status (the Aegis Controller does).
"""

from __future__ import annotations

import itertools
import json
import logging
import secrets
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from typing import Any

from aegis.k8s.api import POOL_SIZE, KubeApi
from aegis.k8s.control_loop import ControlLoop, LoopSettings
from aegis.k8s.errors import ApiError
from aegis.k8s.informer import KeyedStore, Source
from aegis.k8s.keys import token_sha256
from aegis.k8s.manifests import (
    PodSettings,
    aegis_cr,
    bootstrap_secret,
    pod_group,
    secret_token,
    worker_pod,
    workers_service,
)
from aegis.k8s.model import FAILED, AegisView, JobView, Observed, PodView, job_selector, owned_by
from aegis.k8s.pod_cache import PodCache
from aegis.k8s.reconcile import (
    NO_GANG_SCHEDULER,
    POD_REJECTED,
    Action,
    AddFinalizer,
    CreateAegis,
    CreatePod,
    CreatePodGroup,
    CreateSecret,
    CreateService,
    DeleteAegis,
    DeleteJob,
    DeletePod,
    DeletePodGroup,
    DeleteSecret,
    DeleteService,
    MarkPodFinal,
    RemoveFinalizer,
    UpdateJobStatus,
    reconcile,
    wake_after,
)
from aegis.k8s.resources import (
    AEGIS,
    AEGIS_JOB,
    FINALIZER,
    LABEL_JOB,
    POD,
    SECRET,
    SERVICE,
    Resource,
    secret_name,
    service_name,
)
from aegis.k8s.run_policy import KUEUE_FINAL, POD_GROUP, VOLCANO, rfc3339
from aegis.k8s.workqueue import WorkQueue

log = logging.getLogger(__name__)

# pod creations (or deletions) in flight at once when a reconcile has many: a 12,500-pod job's
# pods one call after another would take minutes of the API server's ~10 ms a create
POD_CALLS = 32
# jobs reconciled at once: a large job's pod creations (seconds) do not hold up the others
# (Kubernetes' Job controller syncs 5 at once); their pod calls share the client's POOL_SIZE
# pooled connections
RECONCILE_WORKERS = 4
WAKE_MARGIN_S = 0.5

JobKey = tuple[str, str]  # (namespace, AegisJob name)


@dataclass(frozen=True)
class JobControllerConfig:
    """Where the controller looks and how often it re-checks everything."""

    namespace: str | None = None  # None: every namespace
    pod: PodSettings = field(default_factory=PodSettings)
    resync_s: float = 30.0
    watch_timeout_s: int = 300
    max_passes: int = 5
    pod_calls: int = POD_CALLS
    reconcile_workers: int = RECONCILE_WORKERS
    # while `run` runs, reconciles read pods from the watch-fed cache (False: a list each,
    # as before it: bench/pod_reads.py measures the two side by side)
    cache_pods: bool = True
    clock: Callable[[], float] = time.time  # the rules of time: deadlines, TTLs


def _new_token() -> str:
    return secrets.token_urlsafe(32)


class JobController:
    """Reconciles AegisJobs into worker pods, a Secret, a headless Service and an Aegis CR."""

    def __init__(
        self,
        api: KubeApi,
        config: JobControllerConfig | None = None,
        new_token: Callable[[], str] = _new_token,
    ) -> None:
        self.api = api
        self.config = config or JobControllerConfig()
        self._new_token = new_token
        # filled while `run` runs: the AegisJobs, what a reconcile reads of each Aegis CR,
        # and the worker pods, as the lists and watches last showed them
        self.jobs: KeyedStore[JobKey, JobView] = KeyedStore(JobView.from_obj, _own_key)
        self.aegises: KeyedStore[JobKey, _CrReading] = KeyedStore(_cr_reading, _label_key)
        self.pods = PodCache()
        self.queue: WorkQueue[JobKey] = WorkQueue()  # the jobs to reconcile
        # the pod calls in flight, of every reconcile at once: the client's pooled connections
        self._calls = threading.BoundedSemaphore(POOL_SIZE)

    def observe(self, namespace: str, name: str) -> tuple[JobView, Observed] | None:
        """The job and what it owns now, or None if the AegisJob is gone."""
        obj = self._get(AEGIS_JOB, namespace, name)
        if obj is None:
            return None
        job = JobView.from_obj(obj)
        if self.pods.synced and self.config.cache_pods:
            pods = self.pods.pods(namespace, name, job.uid)
        else:
            pods = [
                PodView.from_obj(p)
                for p in self.api.list(POD, namespace, job_selector(name))
                if _label(p, LABEL_JOB) == name and owned_by(p, job.uid)
            ]
        cr = self._owned(AEGIS, job, name)
        gang_volcano = job.run_policy.gang == VOLCANO
        return job, Observed(
            pods=sorted(pods, key=lambda p: p.name),
            aegis=AegisView.from_obj(cr) if cr is not None else None,
            secret=self._owned(SECRET, job, secret_name(name)) is not None,
            service=self._owned(SERVICE, job, service_name(name)) is not None,
            pod_group=gang_volcano and self._owned(POD_GROUP, job, name) is not None,
            now=self.config.clock(),
        )

    def reconcile_job(self, namespace: str, name: str) -> list[Action]:
        """Observe, decide and apply until nothing is left to do (bounded); the actions taken."""
        taken: list[Action] = []
        for _ in range(self.config.max_passes):
            seen = self.observe(namespace, name)
            if seen is None:
                break
            actions = reconcile(*seen)
            if not actions:
                break
            self.apply_all(seen[0], actions)
            taken += actions
        return taken

    def sync_all(self) -> list[JobKey]:
        """Reconcile every AegisJob in scope; the keys it visited."""
        keys = self._all_keys()
        for key in keys:
            try:
                self.reconcile_job(*key)
            except ApiError as exc:  # one job's failure is not the others'
                log.warning("reconciling AegisJob %s/%s failed: %s", *key, exc)
        return keys

    def sources(self) -> list[Source[JobKey]]:
        """What `run` follows: AegisJobs, Aegis CRs and worker pods (the last two labelled
        with their job), each into its store; a change queues its job."""
        return [
            Source(AEGIS_JOB, self.jobs),
            Source(AEGIS, self.aegises, LABEL_JOB),
            Source(POD, self.pods, LABEL_JOB),
        ]

    def run(self, stop: threading.Event) -> None:
        """Follow and reconcile until `stop` is set (the reconciles under way end first); an
        error other than an ApiError ends it (raised)."""
        settings = LoopSettings(
            namespace=self.config.namespace,
            resync_s=self.config.resync_s,
            workers=self.config.reconcile_workers,
            watch_timeout_s=self.config.watch_timeout_s,
            retry_on=(ApiError,),
            name="job-controller",
        )
        loop = ControlLoop(
            self.api, self.sources(), self._sync, self.jobs.keys, settings, self.queue
        )
        loop.run(stop)

    def _sync(self, key: JobKey) -> float | None:
        """Reconcile the job; when a rule of time is due for it (a deadline, a TTL), the
        seconds until then (a little after: the times are written in whole seconds), as the
        AegisJob's watch last showed it (a status written since is a change: synced again)."""
        self.reconcile_job(*key)
        job = self.jobs.get(*key)
        wake = wake_after(job, self.config.clock()) if job is not None else None
        return None if wake is None else wake + WAKE_MARGIN_S

    def apply_all(self, job: JobView, actions: Sequence[Action]) -> None:
        """Carry out `actions` in order; a run of pod creations or deletions goes out in
        slow-start batches (1, 2, 4, ... up to `pod_calls` calls at once, as Kubernetes' own
        Job controller does), so a refusal that every call would get (a quota, a webhook)
        costs one call, not one per pod. The first error ends the run, raised once its
        batch is done; an action that failed the job (a pod refused as invalid, a PodGroup
        the cluster does not serve) ends it too: the next pass acts on the failed job."""
        for kind, same in itertools.groupby(actions, key=type):
            run = list(same)
            if len(run) > 1 and kind in (CreatePod, DeletePod):
                if not self._apply_batches(job, run):
                    return
            elif not all(self.apply(job, action) for action in run):
                return

    def _apply_batches(self, job: JobView, run: Sequence[Action]) -> bool:
        workers = max(1, min(self.config.pod_calls, len(run)))
        with ThreadPoolExecutor(workers, thread_name_prefix="pod-calls") as pool:
            done, size = 0, 1
            while done < len(run):
                batch = [pool.submit(self._apply_pooled, job, a) for a in run[done : done + size]]
                wait(batch)
                if not all([call.result() for call in batch]):  # the first error is raised
                    return False
                done += len(batch)
                size = min(2 * size, workers)
        return True

    def _apply_pooled(self, job: JobView, action: Action) -> bool:
        with self._calls:  # one of the client's pooled connections, whichever job's
            return self.apply(job, action)

    def apply(self, job: JobView, action: Action) -> bool:
        """Carry out one action; tolerate 'already exists' and 'already gone'. False when a
        pod was refused as invalid (and the job failed for it)."""
        _log_action(job, action)
        match action:
            case CreateSecret() | CreateService() | CreateAegis() | CreatePod() | CreatePodGroup():
                return self._make(job, action)
            case _:
                self._change(job, action)
                return True

    def _make(self, job: JobView, action: Action) -> bool:
        """A creation; False when the API server refused a pod as invalid (the job failed)."""
        ns = job.namespace
        match action:
            case CreateSecret():
                self._create(SECRET, ns, bootstrap_secret(job, self._new_token()))
            case CreateService():
                self._create(SERVICE, ns, workers_service(job, self.config.pod))
            case CreateAegis():
                self._create_aegis(job)
            case CreatePod(rank=rank, excluded_nodes=nodes, container_restarts=level2):
                body = worker_pod(job, rank, nodes, self.config.pod, container_restarts=level2)
                return self._create_pod(job, body)
            case CreatePodGroup():
                return self._create_pod_group(job)
        return True

    def _change(self, job: JobView, action: Action) -> None:
        """A finalizer, a deletion, a pod's annotation or the job's status."""
        ns, name = job.namespace, job.name
        match action:
            case AddFinalizer():
                self._set_finalizers(job, [*job.finalizers, FINALIZER])
            case RemoveFinalizer():
                self._set_finalizers(job, [f for f in job.finalizers if f != FINALIZER])
            case DeletePod(name=pod):
                self._delete(POD, ns, pod)
                self.pods.deleted(ns, pod)
            case DeleteAegis() | DeleteSecret() | DeleteService() | DeletePodGroup() | DeleteJob():
                res, named = _DELETED[type(action)]
                self._delete(res, ns, named(name))
            case MarkPodFinal(name=pod):
                self._patch_pod(ns, pod, {"metadata": {"annotations": {KUEUE_FINAL: "false"}}})
            case UpdateJobStatus():
                self.api.patch(AEGIS_JOB, ns, name, {"status": _status_body(action)}, sub="status")

    def _create_aegis(self, job: JobView) -> None:
        secret = self._get(SECRET, job.namespace, secret_name(job.name))
        if secret is None:
            return  # the next pass creates the Secret first
        body = aegis_cr(job, token_sha256(secret_token(secret)))
        self._create(AEGIS, job.namespace, body)

    def _create_pod(self, job: JobView, body: Mapping[str, Any]) -> bool:
        try:
            made = self._create(POD, job.namespace, body)
            if made is not None:
                self.pods.created(made)
            return True
        except ApiError as exc:
            if not exc.invalid:
                raise
            message = f"pod {body['metadata']['name']} rejected by the API server: {exc}"
            self._fail(job, POD_REJECTED, message)
            return False

    def _create_pod_group(self, job: JobView) -> bool:
        try:
            self._create(POD_GROUP, job.namespace, pod_group(job))
            return True
        except ApiError as exc:
            if not exc.not_found:
                raise
            message = (
                "runPolicy.schedulingPolicy.gang is Volcano, but the API server serves no "
                f"{POD_GROUP.api_version} PodGroups (is Volcano installed?): {exc}"
            )
            self._fail(job, NO_GANG_SCHEDULER, message)
            return False

    def _fail(self, job: JobView, reason: str, message: str) -> None:
        """Fail the job at once (the next reconcile ends its pods)."""
        stamp = rfc3339(self.config.clock())
        failed = UpdateJobStatus(
            FAILED,
            message,
            job.name,
            job.excluded_nodes,
            job.pod_restarts,
            job.container_restarts,
            reason,
            job.start_time or stamp,
            stamp,
        )
        self.apply(job, failed)

    def _patch_pod(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        try:
            self.api.patch(POD, namespace, name, patch)
        except ApiError as exc:
            if not exc.not_found:
                raise

    def _set_finalizers(self, job: JobView, finalizers: list[str]) -> None:
        meta: dict[str, Any] = {"finalizers": finalizers}
        if job.resource_version:
            meta["resourceVersion"] = job.resource_version
        try:
            self.api.patch(AEGIS_JOB, job.namespace, job.name, {"metadata": meta})
        except ApiError as exc:
            if not (exc.conflict or exc.not_found):
                raise  # on a conflict the next pass sees the new finalizers

    def _create(
        self, res: Resource, namespace: str, body: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        """The object created, or None when one of that name exists already."""
        try:
            return self.api.create(res, namespace, body)
        except ApiError as exc:
            if not exc.conflict:
                raise
            return None

    def _delete(self, res: Resource, namespace: str, name: str) -> None:
        try:
            self.api.delete(res, namespace, name)
        except ApiError as exc:
            if not exc.not_found:
                raise

    def _get(self, res: Resource, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return self.api.get(res, namespace, name)
        except ApiError as exc:
            if exc.not_found:
                return None
            raise

    def _owned(self, res: Resource, job: JobView, name: str) -> dict[str, Any] | None:
        obj = self._get(res, job.namespace, name)
        return obj if obj is not None and owned_by(obj, job.uid) else None

    def _all_keys(self) -> list[JobKey]:
        jobs = self.api.list(AEGIS_JOB, self.config.namespace)
        return sorted(k for k in (_job_key(AEGIS_JOB, j) for j in jobs) if k is not None)


def _same(name: str) -> str:
    return name


# what each deletion of the job's own objects deletes: the resource, the object's name
_DELETED: dict[type, tuple[Resource, Callable[[str], str]]] = {
    DeleteAegis: (AEGIS, _same),
    DeleteSecret: (SECRET, secret_name),
    DeleteService: (SERVICE, service_name),
    DeletePodGroup: (POD_GROUP, _same),
    DeleteJob: (AEGIS_JOB, _same),
}


def _label(obj: Mapping[str, Any], key: str) -> str:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return str(labels.get(key) or "")


def _job_key(res: Resource, obj: Mapping[str, Any]) -> JobKey | None:
    meta = obj.get("metadata") or {}
    name = meta.get("name") if res is AEGIS_JOB else _label(obj, LABEL_JOB)
    return (str(meta.get("namespace") or "default"), str(name)) if name else None


def _own_key(obj: Mapping[str, Any]) -> JobKey | None:
    return _job_key(AEGIS_JOB, obj)


def _label_key(obj: Mapping[str, Any]) -> JobKey | None:
    return _job_key(AEGIS, obj)


# what a reconcile reads of an Aegis CR: its view, uid, deletion, job label and owners' uids
_CrReading = tuple[AegisView, str, bool, str, tuple[str, ...]]


def _cr_reading(obj: Mapping[str, Any]) -> _CrReading:
    """Only these changes of an Aegis CR are reconciled: the Aegis Controller patches its
    status at every group commit, tens of times a second while a large job's pods report
    (the resync still reconciles every job)."""
    meta = obj.get("metadata") or {}
    owners = meta.get("ownerReferences")
    return (
        AegisView.from_obj(obj),
        str(meta.get("uid") or ""),
        bool(meta.get("deletionTimestamp")),
        _label(obj, LABEL_JOB),
        tuple(str(o.get("uid")) for o in owners if isinstance(o, Mapping))
        if isinstance(owners, list)
        else (),
    )


def _status_body(action: UpdateJobStatus) -> dict[str, Any]:
    body = {
        "phase": action.phase,
        "message": action.message,
        "aegisRef": action.aegis_ref,
        "excludedNodes": list(action.excluded_nodes),
        "podRestarts": action.pod_restarts,
        "containerRestarts": {str(rank): n for rank, n in action.container_restarts},
    }
    times = {"startTime": action.start_time, "completionTime": action.completion_time}
    return body | {k: v for k, v in (("reason", action.reason), *times.items()) if v}


def _log_action(job: JobView, action: Action) -> None:
    line = {"event": "k8s.action", "job": f"{job.namespace}/{job.name}"}
    line["action"] = type(action).__name__
    log.info(json.dumps({**line, **asdict(action)}, sort_keys=True, default=str))
