"""The Aegis Controller on Kubernetes: one runtime controller per Aegis CR.

`AegisController` watches Aegis CRs (plus a periodic full resync). For each CR it registers the
job with the gRPC credential service (a child process, `credential_process.py`: agents of
that job get user JWTs limited to the job's subjects, checked against
`spec.bootstrapTokenSHA256` and the API's pods) and starts a `JobRunner`:
the same `ControllerCore` + `ControllerService` as local mode, with its journal in the CR (or,
for a job whose status could outgrow its CR, in ConfigMaps: aegis.k8s.journal,
docs/persistence.md) and its own NATS connection made with the controller's credentials. A
deleted CR has its credentials revoked first, then its runner stopped.

Each runner is a thread with its own event loop, because the CR store blocks on the API server:
a slow or failing API call holds up only that job. A runner is crash-only: any failure
(API error, status conflict, NATS unreachable, a failed status save mid-event) ends the current
attempt, and the next attempt, after a capped exponential backoff, rebuilds the core from the
CR status (so a restarted controller process resumes every job the same way). A runner ends
for good when its job terminates (Succeed/Failed) or when it is stopped. API errors in the
watch or the resync are retried with the same bounded backoff and never stop the process.

Operations: every job's observer shares one `ObserverMetrics`, served on `GET /metrics`
(`--metrics-port`, default 9400; `MetricsServerThread`). For each job the controller creates
(create only: it cannot read Secrets) the ctl Secret `<job>-aegis-ctl` (`ctl_secret`): a NATS
user allowed only the job's ctl subjects, for `aegis ctl --kube`; only the `aegis-operator`
ClusterRole can read it. A missing Secret is created again at the next resync.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import queue
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aegis import retry
from aegis.checks.faultlog import FaultLogWriter
from aegis.errors import AegisError
from aegis.k8s.api import KubeApi
from aegis.k8s.cm_wal import Deleter
from aegis.k8s.credential_process import ApiSource, CredentialProcess
from aegis.k8s.errors import ApiError, K8sError, StatusTooLargeError
from aegis.k8s.journal import CrashOnFailedSave, kube_journal
from aegis.k8s.keys import ACCOUNT_JWT_KEY, ACCOUNT_SEED_KEY, job_account, load_account
from aegis.k8s.manifests import DEFAULT_MASTER_PORT, ctl_secret
from aegis.k8s.resources import AEGIS, SECRET, pod_name, service_name
from aegis.k8s.server_thread import MetricsServerThread
from aegis.k8s.status_size import LEAST_BUDGET, MAX_STATUS_BYTES, status_budget
from aegis.protocol.exitcodes import CONTROLLER_EXIT_BY_PHASE, TERMINATED, ControllerExit
from aegis.protocol.job_settings import CR_FIELDS, JobSettings
from aegis.retry import Backoff
from aegis.runtime.controller.core import ControllerCore, JobConfig
from aegis.runtime.controller.observability import JobObserver, ObserverMetrics
from aegis.runtime.controller.service import ControllerService
from aegis.runtime.controller.status_budget import StatusBudget
from aegis.runtime.transport.auth import Account, UserCredentials
from aegis.runtime.transport.bus import Bus

log = logging.getLogger(__name__)

JobKey = tuple[str, str]  # (namespace, Aegis CR name == job name)
DEFAULT_NATS_URL = "nats://aegis-nats.aegis-system.svc:4222"
DEFAULT_ACCOUNT_DIR = "/etc/aegis/nats"
DEFAULT_GRPC_PORT = 50051
DEFAULT_METRICS_PORT = 9400
RESTART_EXIT = 75  # a runner attempt ended on a failure: rebuild the core from the CR
REMOVED_EXIT = TERMINATED  # the runner was stopped (CR deleted, or the process is shutting down)
MAX_ENGINE_STOPS = 5  # like local mode: an engine that keeps stopping the job is given up
MAX_MESSAGE = 1024  # characters of the reason a runner that gave up writes into the CR


class AccountError(K8sError):
    """The shared NATS account could not be loaded from the mounted Secret."""


@dataclass(frozen=True)
class AegisControllerConfig:
    """Where the controller looks, how it reaches NATS, and how it retries."""

    nats_url: str = DEFAULT_NATS_URL
    namespace: str | None = None  # None: every namespace
    resync_s: float = 30.0
    watch_timeout_s: int = 300
    backoff_initial_s: float = retry.KUBE_CONTROLLER.first_s
    backoff_max_s: float = retry.KUBE_CONTROLLER.max_s
    master_port: int = DEFAULT_MASTER_PORT
    stop_wait_s: float = 5.0  # how long shutdown waits for each runner
    # the largest object the API server keeps (etcd's --max-request-bytes): a job whose status
    # could outgrow it keeps it in ConfigMaps
    status_limit_bytes: int = MAX_STATUS_BYTES

    def backoff(self) -> Backoff:
        """The pauses of a retry loop (a runner's restarts, the CR list, the CR watch)."""
        policy = dataclasses.replace(
            retry.KUBE_CONTROLLER, first_s=self.backoff_initial_s, max_s=self.backoff_max_s
        )
        return Backoff(policy)


@dataclass(frozen=True)
class AegisSpec:
    """What the controller needs from an Aegis CR (metadata and spec; of the status only
    whether a controller saved one, `resumed`, and whether in ConfigMaps, `chunked`)."""

    namespace: str
    name: str
    uid: str
    worker_num: int
    max_retry: int
    token_sha256: str
    deleting: bool = False
    resumed: bool = False
    chunked: bool = False

    @property
    def key(self) -> JobKey:
        """(namespace, name)."""
        return (self.namespace, self.name)

    @classmethod
    def from_obj(cls, obj: Mapping[str, Any]) -> AegisSpec:
        """Parse an Aegis CR as the API returns it."""
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
        spec = obj.get("spec") if isinstance(obj.get("spec"), Mapping) else {}
        assert isinstance(meta, Mapping) and isinstance(spec, Mapping)
        status = obj.get("status")
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
            resumed=isinstance(status, Mapping) and "version" in status,
            chunked=isinstance(status, Mapping) and "snapshot" in status,
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


def load_account_dir(directory: str | Path) -> Account:
    """The shared NATS account from the mounted Secret `aegis-nats-account`."""
    d = Path(directory)
    try:
        jwt = (d / ACCOUNT_JWT_KEY).read_text()
        seed = (d / ACCOUNT_SEED_KEY).read_bytes()
    except OSError as exc:
        raise AccountError(
            f"cannot read the NATS account from {d}: {exc}; create it with "
            "`aegis k8s keys | kubectl apply -f -` and mount the Secret aegis-nats-account"
        ) from None
    try:
        return load_account(jwt, seed)
    except Exception as exc:  # nkeys raises assorted errors for a bad seed
        raise AccountError(f"{d / ACCOUNT_SEED_KEY} is not an account seed: {exc!r}") from None


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
        backoff = self.config.backoff()
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


class AegisController:
    """Watches Aegis CRs; one JobRunner and one credential registration per CR."""

    def __init__(
        self,
        api: KubeApi,
        account: Account,
        credentials: CredentialProcess,
        config: AegisControllerConfig,
        metrics: ObserverMetrics | None = None,
    ) -> None:
        self.api = api
        self.account = account
        self.credentials = credentials
        self.config = config
        self.metrics = metrics or ObserverMetrics()
        self._ctl_checked: dict[JobKey, tuple[str, float]] = {}  # uid, when (monotonic)
        self.controller_credentials = account.new_user("aegis-controller")
        self.runners: dict[JobKey, JobRunner] = {}
        self._rejected: dict[JobKey, str] = {}  # uid of CRs already logged as invalid

    # ---------------- one CR ----------------

    def observe(self, obj: Mapping[str, Any]) -> None:
        """A CR was seen (list or watch): start its runner unless it has one."""
        spec = AegisSpec.from_obj(obj)
        if spec.deleting:
            self.remove(spec.key, spec.uid)
            return
        runner = self.runners.get(spec.key)
        if runner is not None and runner.spec.uid == spec.uid:
            self._ensure_ctl_secret(spec)
            if runner.alive or runner.finished:
                return
            log.warning("aegis %s/%s: its runner died; starting a new one", *spec.key)
        if runner is not None:
            self.remove(spec.key)  # recreated under the same name: a different job
        problem = spec.problem()
        if problem is not None:
            if self._rejected.get(spec.key) != spec.uid:
                log.error("aegis %s/%s cannot be run: %s", *spec.key, problem)
                self._rejected[spec.key] = spec.uid
                self._refuse(spec, obj, problem)
            return
        # its agents' credentials from now on, for the pods the API has (name, uid, label)
        self.credentials.register(spec.namespace, spec.name, spec.token_sha256)
        runner = JobRunner(spec, self.api, self.controller_credentials, self.config, self.metrics)
        self.runners[spec.key] = runner
        runner.start()
        self._ensure_ctl_secret(spec)
        log.info("aegis %s/%s: controller started (%d workers)", *spec.key, spec.worker_num)

    def _refuse(self, spec: AegisSpec, obj: Mapping[str, Any], problem: str) -> None:
        """Mark a CR that cannot be run Failed, saying why (the Job Controller's verdict then
        carries it; the job's pods can get no credentials), unless it already ended. A
        failure to write it is logged; the next resync does not retry it."""
        status = obj.get("status")
        if isinstance(status, Mapping) and status.get("phase") in ("Failed", "Succeed"):
            return
        body = {"status": {"phase": "Failed", "message": f"cannot be run: {problem}"[:MAX_MESSAGE]}}
        try:
            self.api.patch(AEGIS, spec.namespace, spec.name, body, sub="status")
        except (ApiError, OSError) as exc:
            log.error("aegis %s/%s: cannot mark it Failed: %s", *spec.key, exc)

    def _ensure_ctl_secret(self, spec: AegisSpec) -> None:
        """Create the job's ctl Secret unless it exists (checked at most once per resync period
        per job; the controller may create Secrets but never read them, so one that exists is
        left as it is). Never raises: a failure is retried at the next check."""
        checked = self._ctl_checked.get(spec.key)
        now = time.monotonic()
        if (
            checked is not None
            and checked[0] == spec.uid
            and now - checked[1] < self.config.resync_s
        ):
            return
        self._ctl_checked[spec.key] = (spec.uid, now)
        creds = job_account(
            self.account, spec.namespace, spec.name, spec.token_sha256
        ).ctl_credentials(f"ctl-{spec.namespace}-{spec.name}")
        body = ctl_secret(
            spec.namespace,
            spec.name,
            spec.uid,
            spec.job_config(self.config.master_port).pods,
            self.config.nats_url,
            creds.user_jwt,
            creds.seed.decode("ascii"),
        )
        try:
            self.api.create(SECRET, spec.namespace, body)
        except ApiError as exc:
            if not exc.conflict:
                self._ctl_checked.pop(spec.key, None)
                log.warning("aegis %s/%s: cannot create its ctl Secret: %s", *spec.key, exc)
            return
        log.info("aegis %s/%s: ctl Secret %s created", *spec.key, body["metadata"]["name"])

    def remove(self, key: JobKey, uid: str = "", wait: float = 0.0) -> None:
        """The CR is gone (or going): revoke its credentials, then stop its runner."""
        self._rejected.pop(key, None)
        self._ctl_checked.pop(key, None)
        runner = self.runners.get(key)
        if runner is None or (uid and runner.spec.uid and runner.spec.uid != uid):
            return
        try:
            self.credentials.revoke(*key)
        except AegisError as exc:  # no credential process: none is issued for anyone
            log.warning("aegis %s/%s: %s", *key, exc)
        del self.runners[key]
        runner.stop(wait)
        log.info("aegis %s/%s: credentials revoked, controller stopped", *key)

    # ---------------- all CRs ----------------

    def resync(self) -> None:
        """List every CR: start what is missing, stop what is gone (ApiError if listing fails)."""
        objs = self.api.list(AEGIS, self.config.namespace)
        seen: set[JobKey] = set()
        for obj in objs:
            spec = AegisSpec.from_obj(obj)
            seen.add(spec.key)
            self._safe(functools.partial(self.observe, obj), spec.key)
        for key in set(self.runners) - seen:
            self.remove(key)

    def run(self, stop: threading.Event) -> None:
        """Watch and resync until `stop` is set; then stop every runner (statuses stay)."""
        events: queue.Queue[tuple[str, dict[str, Any]]] = queue.Queue()
        watcher = threading.Thread(
            target=self._watch, args=(events, stop), name="watch-aegises", daemon=True
        )
        watcher.start()
        backoff = self.config.backoff()
        next_resync = 0.0
        try:
            while not stop.is_set():
                try:  # checked every turn (0.2 s): agents starting meanwhile retry ~25 s
                    self.credentials.ensure_running()
                except AegisError as exc:
                    log.warning("credential service: %s", exc)
                if time.monotonic() >= next_resync:
                    try:
                        self.resync()
                    except ApiError as exc:
                        delay = backoff.next()
                        log.warning("listing Aegis CRs failed, retry in %.1fs: %s", delay, exc)
                        next_resync = time.monotonic() + delay
                    else:
                        backoff.reset()
                        next_resync = time.monotonic() + self.config.resync_s
                for kind, obj in _drain(events, 0.2):
                    self._on_event(kind, obj)
        finally:
            stop.set()
            try:
                # KubeApi.close_watches can race a watch the server just ended (EBADF)
                with contextlib.suppress(OSError):
                    self.api.close_watches()
            finally:
                self.shutdown()

    def shutdown(self) -> None:
        """Stop every runner (their CR statuses stay: a new controller resumes them)."""
        runners = list(self.runners.values())
        for runner in runners:
            runner.stop()
        for runner in runners:
            if not runner.stop(self.config.stop_wait_s):
                log.warning("aegis %s/%s: runner did not stop in time", *runner.spec.key)

    def _on_event(self, kind: str, obj: dict[str, Any]) -> None:
        spec = AegisSpec.from_obj(obj)
        if kind == "DELETED":
            self.remove(spec.key, spec.uid)
        elif kind in ("ADDED", "MODIFIED"):
            self._safe(functools.partial(self.observe, obj), spec.key)

    def _safe(self, fn: Callable[[], None], key: JobKey) -> None:
        try:
            fn()
        except AegisError as exc:
            log.warning("aegis %s/%s: %s", *key, exc)

    def _watch(self, out: queue.Queue[tuple[str, dict[str, Any]]], stop: threading.Event) -> None:
        backoff = self.config.backoff()
        while not stop.is_set():
            try:
                for kind, obj in self.api.watch(
                    AEGIS, self.config.namespace, timeout_s=self.config.watch_timeout_s
                ):
                    backoff.reset()
                    out.put((kind, obj))
                    if stop.is_set():
                        return
            except ApiError as exc:
                delay = backoff.next()
                log.warning("watching Aegis CRs failed, retry in %.1fs: %s", delay, exc)
                stop.wait(delay)
            else:
                stop.wait(0.1)  # the server ended the watch: start a new one


def _drain(
    q: queue.Queue[tuple[str, dict[str, Any]]], timeout: float
) -> Iterable[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    try:
        out.append(q.get(timeout=timeout))
        while True:
            out.append(q.get_nowait())
    except queue.Empty:
        return out


def serve(
    api: KubeApi,
    account: Account,
    config: AegisControllerConfig,
    stop: threading.Event,
    *,
    api_source: ApiSource,
    grpc_host: str = "0.0.0.0",
    grpc_port: int = DEFAULT_GRPC_PORT,
    metrics_port: int = DEFAULT_METRICS_PORT,
) -> None:
    """`aegis k8s controller`: the credential server (a child process reaching the API as
    `api_source` says), `/metrics` (unless `metrics_port` is 0) and the CR watch, until
    `stop` is set."""
    credentials = CredentialProcess(
        account, config.nats_url, api_source, grpc_host, grpc_port, namespace=config.namespace
    )
    credentials.start()
    log.info("gRPC credential server on %s; NATS at %s", credentials.address, config.nats_url)
    metrics = ObserverMetrics()
    metrics_server = None
    if metrics_port:
        metrics_server = MetricsServerThread(metrics, grpc_host, metrics_port)
        metrics_server.start()
        log.info("metrics at %s", metrics_server.url)
    try:
        AegisController(api, account, credentials, config, metrics).run(stop)
    finally:
        if metrics_server is not None:
            metrics_server.stop()
        credentials.stop()
