"""The Job Controller's I/O: observe one AegisJob, `reconcile` it, apply the actions.

`run` watches AegisJobs, their pods and Aegis CRs, and reconciles every job whose objects
changed (plus a periodic full resync), up to `reconcile_workers` jobs at once and never one
job twice at once (a job changed while it is reconciled is reconciled again after). While it
runs, a reconcile reads the job's pods from its pod cache (aegis/k8s/pod_cache.py, kept by a
list and a watch), not from a list of its own. Each applied action is logged as one JSON
line. It creates and deletes the Aegis CR but never writes its status (the Aegis Controller
does).
"""

from __future__ import annotations

import itertools
import json
import logging
import queue
import secrets
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from typing import Any

from aegis import retry
from aegis.k8s.api import POOL_SIZE, KubeApi
from aegis.k8s.errors import ApiError
from aegis.k8s.informer import inform_pods
from aegis.k8s.keys import token_sha256
from aegis.k8s.manifests import (
    PodSettings,
    aegis_cr,
    bootstrap_secret,
    secret_token,
    worker_pod,
    workers_service,
)
from aegis.k8s.model import FAILED, AegisView, JobView, Observed, PodView, job_selector, owned_by
from aegis.k8s.pod_cache import PodCache
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

log = logging.getLogger(__name__)

# pod creations (or deletions) in flight at once when a reconcile has many: a 12,500-pod job's
# pods one call after another would take minutes of the API server's ~10 ms a create
POD_CALLS = 32
# jobs reconciled at once: a large job's pod creations (seconds) do not hold up the others
# (Kubernetes' Job controller syncs 5 at once); their pod calls share the client's POOL_SIZE
# pooled connections
RECONCILE_WORKERS = 4

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
        # what a reconcile reads of each Aegis CR, as the watch last showed it
        self._seen: dict[tuple[str, str, str], tuple[object, ...]] = {}
        self.pods = PodCache()  # filled while `run` runs
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
        return job, Observed(
            pods=sorted(pods, key=lambda p: p.name),
            aegis=AegisView.from_obj(cr) if cr is not None else None,
            secret=self._owned(SECRET, job, secret_name(name)) is not None,
            service=self._owned(SERVICE, job, service_name(name)) is not None,
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
            self._safe_reconcile(key)
        return keys

    def run(self, stop: threading.Event) -> None:
        """Watch and reconcile until `stop` is set."""
        pending: queue.Queue[JobKey] = queue.Queue()
        for res in (AEGIS_JOB, AEGIS):
            threading.Thread(
                target=self._watch,
                args=(res, pending, stop),
                name=f"watch-{res.plural}",
                daemon=True,
            ).start()
        threading.Thread(
            target=self._inform, args=(pending, stop), name="watch-pods", daemon=True
        ).start()
        next_resync = 0.0
        dirty: set[JobKey] = set()  # to reconcile
        busy: dict[JobKey, Future[None]] = {}  # being reconciled
        workers = max(1, self.config.reconcile_workers)
        try:
            with ThreadPoolExecutor(workers, thread_name_prefix="reconcile") as pool:
                while not stop.is_set():
                    if time.monotonic() >= next_resync:
                        dirty.update(self._safe_all_keys())
                        next_resync = time.monotonic() + self.config.resync_s
                    idle = not dirty and not busy
                    dirty.update(_drain(pending, timeout=0.5 if idle else 0.05))
                    for key, call in list(busy.items()):
                        if call.done():
                            del busy[key]
                            call.result()  # anything but an ApiError ends the controller
                    for key in sorted(dirty - busy.keys())[: workers - len(busy)]:
                        dirty.discard(key)
                        busy[key] = pool.submit(self._safe_reconcile, key)
        finally:  # the pool has waited for the reconciles under way
            stop.set()
            self.api.close_watches()

    def apply_all(self, job: JobView, actions: Sequence[Action]) -> None:
        """Carry out `actions` in order; a run of pod creations or deletions goes out in
        slow-start batches (1, 2, 4, ... up to `pod_calls` calls at once, as Kubernetes' own
        Job controller does), so a refusal that every call would get (a quota, a webhook)
        costs one call, not one per pod. The first error ends the run, raised once its
        batch is done; a pod refused as invalid (the job is failed) ends it too."""
        for kind, same in itertools.groupby(actions, key=type):
            run = list(same)
            if len(run) > 1 and kind in (CreatePod, DeletePod):
                self._apply_batches(job, run)
            else:
                for action in run:
                    self.apply(job, action)

    def _apply_batches(self, job: JobView, run: Sequence[Action]) -> None:
        workers = max(1, min(self.config.pod_calls, len(run)))
        with ThreadPoolExecutor(workers, thread_name_prefix="pod-calls") as pool:
            done, size = 0, 1
            while done < len(run):
                batch = [pool.submit(self._apply_pooled, job, a) for a in run[done : done + size]]
                wait(batch)
                if not all([call.result() for call in batch]):  # the first error is raised
                    return
                done += len(batch)
                size = min(2 * size, workers)

    def _apply_pooled(self, job: JobView, action: Action) -> bool:
        with self._calls:  # one of the client's pooled connections, whichever job's
            return self.apply(job, action)

    def apply(self, job: JobView, action: Action) -> bool:
        """Carry out one action; tolerate 'already exists' and 'already gone'. False when a
        pod was refused as invalid (and the job failed for it)."""
        _log_action(job, action)
        ns, name = job.namespace, job.name
        match action:
            case AddFinalizer():
                self._set_finalizers(job, [*job.finalizers, FINALIZER])
            case RemoveFinalizer():
                self._set_finalizers(job, [f for f in job.finalizers if f != FINALIZER])
            case CreateSecret():
                self._create(SECRET, ns, bootstrap_secret(job, self._new_token()))
            case CreateService():
                self._create(SERVICE, ns, workers_service(job, self.config.pod))
            case CreateAegis():
                self._create_aegis(job)
            case CreatePod(rank=rank, excluded_nodes=nodes, container_restarts=level2):
                body = worker_pod(job, rank, nodes, self.config.pod, container_restarts=level2)
                return self._create_pod(job, body)
            case DeletePod(name=pod):
                self._delete(POD, ns, pod)
                self.pods.deleted(ns, pod)
            case DeleteAegis():
                self._delete(AEGIS, ns, name)
            case DeleteSecret():
                self._delete(SECRET, ns, secret_name(name))
            case DeleteService():
                self._delete(SERVICE, ns, service_name(name))
            case UpdateJobStatus():
                self.api.patch(AEGIS_JOB, ns, name, {"status": _status_body(action)}, sub="status")
        return True

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
            failed = UpdateJobStatus(
                FAILED,
                message,
                job.name,
                job.excluded_nodes,
                job.pod_restarts,
                job.container_restarts,
            )
            self.apply(job, failed)
            return False

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

    def _safe_all_keys(self) -> list[JobKey]:
        try:
            return self._all_keys()
        except ApiError as exc:
            log.warning("listing AegisJobs failed: %s", exc)
            return []

    def _safe_reconcile(self, key: JobKey) -> None:
        try:
            self.reconcile_job(*key)
        except ApiError as exc:
            log.warning("reconciling AegisJob %s/%s failed, retried later: %s", *key, exc)

    def _watch(self, res: Resource, out: queue.Queue[JobKey], stop: threading.Event) -> None:
        selector = "" if res is AEGIS_JOB else LABEL_JOB
        while not stop.is_set():
            try:
                events = self.api.watch(
                    res, self.config.namespace, selector, self.config.watch_timeout_s
                )
                for kind, obj in events:
                    key = _job_key(res, obj)
                    if key is not None and (res is AEGIS_JOB or self._moved(res, kind, obj)):
                        out.put(key)
                    if stop.is_set():
                        return
            except ApiError as exc:
                log.warning("watching %s failed, retrying: %s", res.plural, exc)
                stop.wait(retry.KUBE_WATCH.pause(1))

    def _inform(self, out: queue.Queue[JobKey], stop: threading.Event) -> None:
        """Keep the pod cache (aegis/k8s/informer.py); the jobs whose pods changed go to `out`."""
        inform_pods(
            self.api, self.pods, self.config.namespace, stop, out.put, self.config.watch_timeout_s
        )

    def _moved(self, res: Resource, kind: str, obj: Mapping[str, Any]) -> bool:
        """Whether an Aegis CR's watch event changes what a reconcile reads of it (its
        AegisView, identity and owners), or deletes it. The Aegis Controller patches its CR's
        status at every group commit, tens of times a second while a large job's pods report:
        the other events are not reconciled (the resync still reconciles every job)."""
        meta = obj.get("metadata") or {}
        name = (res.plural, str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        if kind == "DELETED":
            self._seen.pop(name, None)
            return True
        owners = meta.get("ownerReferences") or []
        view = AegisView.from_obj(obj)
        seen = (
            view,
            meta.get("uid"),
            bool(meta.get("deletionTimestamp")),
            _label(obj, LABEL_JOB),
            tuple(str(o.get("uid")) for o in owners if isinstance(o, Mapping))
            if isinstance(owners, list)
            else (),
        )
        if self._seen.get(name) == seen:
            return False
        self._seen[name] = seen
        return True


def _label(obj: Mapping[str, Any], key: str) -> str:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return str(labels.get(key) or "")


def _job_key(res: Resource, obj: Mapping[str, Any]) -> JobKey | None:
    meta = obj.get("metadata") or {}
    name = meta.get("name") if res is AEGIS_JOB else _label(obj, LABEL_JOB)
    return (str(meta.get("namespace") or "default"), str(name)) if name else None


def _drain(q: queue.Queue[JobKey], timeout: float) -> set[JobKey]:
    keys: set[JobKey] = set()
    try:
        keys.add(q.get(timeout=timeout) if timeout else q.get_nowait())
        while True:
            keys.add(q.get_nowait())
    except queue.Empty:
        return keys


def _status_body(action: UpdateJobStatus) -> dict[str, Any]:
    return {
        "phase": action.phase,
        "message": action.message,
        "aegisRef": action.aegis_ref,
        "excludedNodes": list(action.excluded_nodes),
        "podRestarts": action.pod_restarts,
        "containerRestarts": {str(rank): n for rank, n in action.container_restarts},
    }


def _log_action(job: JobView, action: Action) -> None:
    line = {"event": "k8s.action", "job": f"{job.namespace}/{job.name}"}
    line["action"] = type(action).__name__
    log.info(json.dumps({**line, **asdict(action)}, sort_keys=True, default=str))
