"""One job's runtime controller in the Aegis Controller: `JobRunner`, and what it reads of
its Aegis CR (`AegisSpec`).

A runner is the same `ControllerCore` + `ControllerService` as local mode, with
its journal in the CR (or, for a job whose status could outgrow its CR, in ConfigMaps:
aegis.k8s.journal, docs/persistence.md) and its own NATS connection
made with the controller's credentials. Each runner is a thread with its own event loop,
because the CR store blocks on the API server: a slow or failing API call holds up only that
job. A runner is crash-only: any failure (API error, status conflict, NATS unreachable, a
failed status save mid-event) ends the current attempt, and the next attempt, after a capped
exponential backoff, rebuilds the core from the CR status (so a restarted controller process
resumes every job the same way). A runner ends for good when its job terminates
(Succeed/Failed) or when it is stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aegis.checks.faultlog import FaultLogWriter
from aegis.k8s.api import KubeApi
from aegis.k8s.cm_wal import Deleter
from aegis.k8s.errors import ApiError, StatusTooLargeError
from aegis.k8s.journal import CrashOnFailedSave, kube_journal
from aegis.k8s.manifests import DEFAULT_MASTER_PORT
from aegis.k8s.resources import AEGIS, pod_name, service_name
from aegis.k8s.status_size import LEAST_BUDGET, MAX_STATUS_BYTES, status_budget
from aegis.k8s.workqueue import RETRY_INITIAL_S, RETRY_MAX_S, Backoff
from aegis.protocol.exitcodes import CONTROLLER_EXIT_BY_PHASE, TERMINATED, ControllerExit
from aegis.protocol.job_settings import CR_FIELDS, JobSettings
from aegis.runtime.controller.core import ControllerCore, JobConfig
from aegis.runtime.controller.observability import JobObserver, ObserverMetrics
from aegis.runtime.controller.service import ControllerService
from aegis.runtime.controller.status_budget import StatusBudget
from aegis.runtime.transport.auth import UserCredentials
from aegis.runtime.transport.bus import Bus

log = logging.getLogger(__name__)

JobKey = tuple[str, str]  # (namespace, Aegis CR name == job name)
DEFAULT_NATS_URL = "nats://aegis-nats.aegis-system.svc:4222"
RESTART_EXIT = 75  # a runner attempt ended on a failure: rebuild the core from the CR
REMOVED_EXIT = TERMINATED  # the runner was stopped (CR deleted, or the process is shutting down)
MAX_ENGINE_STOPS = 5  # like local mode: an engine that keeps stopping the job is given up
MAX_MESSAGE = 1024  # characters of the reason a runner that gave up writes into the CR
ENDED = ("Failed", "Succeed")  # the CR phases of a job that terminated


@dataclass(frozen=True)
class AegisControllerConfig:
    """Where the controller looks, how it reaches NATS, and how it retries."""

    nats_url: str = DEFAULT_NATS_URL
    namespace: str | None = None  # None: every namespace
    resync_s: float = 30.0
    watch_timeout_s: int = 300
    backoff_initial_s: float = RETRY_INITIAL_S  # a runner's attempts, a CR's failed start
    backoff_max_s: float = RETRY_MAX_S
    master_port: int = DEFAULT_MASTER_PORT
    stop_wait_s: float = 5.0  # how long shutdown waits for each runner
    # the largest object the API server keeps (etcd's --max-request-bytes): a job whose status
    # could outgrow it keeps it in ConfigMaps
    status_limit_bytes: int = MAX_STATUS_BYTES


def _mapping(value: Any) -> Mapping[str, Any]:
    """`value` if it is a JSON object, else an empty one."""
    return value if isinstance(value, Mapping) else {}


@dataclass(frozen=True)
class AegisSpec:
    """What the controller needs from an Aegis CR (metadata and spec; of the status only
    whether a controller saved one, `resumed`, whether in ConfigMaps, `chunked`, and whether
    the job ended, `ended`)."""

    namespace: str
    name: str
    uid: str
    worker_num: int
    max_retry: int
    token_sha256: str
    deleting: bool = False
    resumed: bool = False
    chunked: bool = False
    ended: bool = False

    @property
    def key(self) -> JobKey:
        """(namespace, name)."""
        return (self.namespace, self.name)

    @classmethod
    def from_obj(cls, obj: Mapping[str, Any]) -> AegisSpec:
        """Parse an Aegis CR as the API returns it."""
        meta, spec = _mapping(obj.get("metadata")), _mapping(obj.get("spec"))
        status = _mapping(obj.get("status"))  # a CR's status: saved by a controller before
        namespace, name = str(meta.get("namespace") or "default"), str(meta.get("name") or "")
        settings = JobSettings.from_cr(name, namespace, spec)
        return cls(
            namespace=namespace,
            name=name,
            uid=str(meta.get("uid") or ""),
            worker_num=settings.workers,
            max_retry=settings.max_retry,
            token_sha256=str(spec.get("bootstrapTokenSHA256") or ""),
            deleting=bool(meta.get("deletionTimestamp")),
            resumed="version" in status,
            chunked="snapshot" in status,
            ended=status.get("phase") in ENDED,
        )

    def problem(self) -> str | None:
        """Why this CR cannot be run (None if it can)."""
        settings = JobSettings(self.name, self.namespace, self.worker_num, self.max_retry)
        problem = settings.problem(CR_FIELDS)  # the one check of each setting
        if problem is not None:
            return problem
        if len(self.token_sha256) != 64:
            return "spec.bootstrapTokenSHA256 is missing or not a hex SHA-256"
        return None

    def in_configmaps(self, limit: int = MAX_STATUS_BYTES) -> bool:
        """Whether the job's status and WAL are kept in ConfigMaps (aegis.k8s.chunked_store),
        not whole in the CR: a job whose status could outgrow the CR (objects of at most
        `limit` bytes), unless a controller already saved it whole there (admitted under an
        earlier rule, it goes on so)."""
        if self.chunked:
            return True
        if self.resumed:
            return False
        return status_budget(self.name, self.worker_num, self.max_retry, limit) is None

    def job_config(self, master_port: int, limit: int = MAX_STATUS_BYTES) -> JobConfig:
        """The runtime controller's view: pods by rank, rendezvous on worker 0's DNS name."""
        pods = tuple(pod_name(self.name, rank) for rank in range(self.worker_num))
        host = f"{pod_name(self.name, 0)}.{service_name(self.name)}.{self.namespace}.svc"
        # the room its reasons and history may take in the CR; in ConfigMaps the defaults;
        # the least for a job saved whole in its CR under an earlier rule (up to 2,518 workers
        # for `train`) that has no room
        budget = status_budget(self.name, self.worker_num, self.max_retry, limit)
        if budget is None:
            budget = StatusBudget() if self.in_configmaps(limit) else LEAST_BUDGET
        return JobConfig(
            self.name, self.namespace, pods, self.max_retry, host, master_port, status_budget=budget
        )


class JobRunner:
    """One job's runtime controller, on its own thread and event loop, restarted on failure."""

    def __init__(
        self,
        spec: AegisSpec,
        api: KubeApi,
        credentials: UserCredentials,
        config: AegisControllerConfig,
        metrics: ObserverMetrics | None = None,
    ) -> None:
        self.spec = spec
        self.api = api
        self.credentials = credentials
        self.config = config
        self.metrics = metrics
        self.exit_code: int | None = None  # set when the job terminated or the runner gave up
        self.attempts = 0
        self._store: CrashOnFailedSave | None = None  # the last attempt's store
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._service: ControllerService | None = None
        self._thread = threading.Thread(
            target=self._main, name=f"aegis-job-{spec.namespace}/{spec.name}", daemon=True
        )

    @property
    def alive(self) -> bool:
        """True while the runner's thread runs."""
        return self._thread.is_alive()

    @property
    def finished(self) -> bool:
        """True once the job terminated (or the runner gave up): it is not restarted."""
        return self.exit_code is not None

    def start(self) -> None:
        """Start the thread."""
        self._thread.start()

    def stop(self, wait: float = 0.0) -> bool:
        """Stop the runner (from any thread); True if it ended within `wait` seconds."""
        with self._lock:
            self._stopping.set()
            loop, service = self._loop, self._service
        if loop is not None and service is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(service.stop, REMOVED_EXIT)
        if wait > 0:
            self._thread.join(wait)
        return not self._thread.is_alive()

    def _main(self) -> None:
        key = "{}/{}".format(*self.spec.key)
        backoff = Backoff(self.config.backoff_initial_s, self.config.backoff_max_s)  # aegis.retry
        engine_stops = 0
        while not self._stopping.is_set():
            self.attempts += 1
            started = time.monotonic()
            try:
                code = asyncio.run(self._attempt())
            except Exception as exc:  # one job's failure never reaches the others
                code = RESTART_EXIT
                log.warning("aegis %s: controller attempt %d failed: %s", key, self.attempts, exc)
            if code in CONTROLLER_EXIT_BY_PHASE.values():
                log.info("aegis %s: job terminated (controller exit %d)", key, code)
                self.exit_code = code
                return
            store = self._store
            if store is not None and store.too_large is not None:
                self._fail(store.too_large)  # no attempt can save it: the job fails
                return
            if self._stopping.is_set():
                return
            if code == ControllerExit.STOPPED:
                engine_stops += 1
                if engine_stops >= MAX_ENGINE_STOPS:
                    log.error("aegis %s: the engine keeps stopping the job; giving up", key)
                    self.exit_code = code
                    return
            if time.monotonic() - started > self.config.backoff_max_s:
                backoff.reset()  # it ran a while: this is a new failure, not a repeated one
            delay = backoff.next()
            log.info("aegis %s: restarting its controller from the CR in %.1fs", key, delay)
            self._stopping.wait(delay)

    def _fail(self, why: StatusTooLargeError) -> None:
        """End the job as Failed, saying why, in a patch of two fields (the whole status no
        longer fits); a failure to write it is logged and the job still ends here."""
        log.error("aegis %s/%s: %s", *self.spec.key, why)
        self.exit_code = ControllerExit.FAILED
        body = {"status": {"phase": "Failed", "message": str(why)[:MAX_MESSAGE]}}
        try:
            self.api.patch(AEGIS, self.spec.namespace, self.spec.name, body, sub="status")
        except (ApiError, OSError) as exc:
            log.error("aegis %s/%s: cannot mark it Failed: %s", *self.spec.key, exc)

    async def _attempt(self) -> int:
        spec = self.spec
        deleter = Deleter(self.api, spec.namespace)
        try:
            return await self._attempt_with(deleter)
        finally:
            deleter.close()

    async def _attempt_with(self, deleter: Deleter) -> int:
        spec = self.spec
        limit = self.config.status_limit_bytes
        store, journal = kube_journal(self.api, spec.key, deleter, spec.in_configmaps(limit))
        self._store = store  # its too_large is read after the attempt
        # the structured fault log goes to the controller's stdout (the pod's log), one JSON line
        # per fault
        faults = FaultLogWriter(sys.stdout)
        job = spec.job_config(self.config.master_port, limit)
        observer = JobObserver(spec.worker_num, shared=self.metrics)
        core = ControllerCore(job, journal=journal, on_fault=observer.fault_sink(faults.write))
        bus = await Bus.connect(
            self.config.nats_url,
            self.credentials,
            name=f"aegis-controller {spec.namespace}/{spec.name}",
            reconnect_attempts=-1,
        )
        service = ControllerService(core, bus, observer)
        try:
            loop = asyncio.get_running_loop()

            def on_failed_save(exc: BaseException) -> None:
                # in the commit's worker thread (GroupCommit): the service lives on the loop
                log.warning("aegis %s/%s: status save failed: %s", *spec.key, exc)
                loop.call_soon_threadsafe(service.stop, RESTART_EXIT)

            store.on_failure = on_failed_save
            with self._lock:
                if self._stopping.is_set():
                    return REMOVED_EXIT
                self._loop, self._service = asyncio.get_running_loop(), service
            try:
                return await service.run()
            finally:
                with self._lock:
                    self._loop, self._service = None, None
        finally:
            await bus.close()
            await service.close()
