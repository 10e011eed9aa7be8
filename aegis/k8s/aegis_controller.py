"""The Aegis Controller on Kubernetes: one runtime controller per Aegis CR.

`AegisController` follows Aegis CRs on the control loop (aegis/k8s/control_loop.py: a list
and a watch into a store of what it reads of each CR, a keyed work queue, a periodic resync).
For each CR it registers the job with the gRPC credential service (a child process,
`credential_process.py`: agents of that job get user JWTs limited to the job's subjects,
checked against `spec.bootstrapTokenSHA256` and the API's pods) and starts a `JobRunner`
(aegis/k8s/job_runner.py: the same controller as local mode, on a thread of its own). A CR
gone or being deleted has its credentials revoked first, then its runner stopped. A failure
to start one CR (the credential service down) is retried after that CR's backoff; list and
watch failures are retried by the loop's reflector; neither stops the process.

Operations: every job's observer shares one `ObserverMetrics`, served on `GET /metrics`
(`--metrics-port`, default 9400; `MetricsServerThread`). For each job the controller creates
(create only: it cannot read Secrets) the ctl Secret `<job>-aegis-ctl` (`ctl_secret`): a NATS
user allowed only the job's ctl subjects, for `aegis ctl --kube`; only the `aegis-operator`
ClusterRole can read it. A missing Secret is created again at the next resync.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from aegis.errors import AegisError
from aegis.k8s.api import KubeApi
from aegis.k8s.control_loop import ControlLoop, LoopSettings
from aegis.k8s.credential_process import ApiSource, CredentialProcess
from aegis.k8s.errors import ApiError, K8sError
from aegis.k8s.informer import KeyedStore, Source
from aegis.k8s.job_runner import (
    DEFAULT_NATS_URL,
    MAX_MESSAGE,
    AegisControllerConfig,
    AegisSpec,
    JobKey,
    JobRunner,
)
from aegis.k8s.keys import ACCOUNT_JWT_KEY, ACCOUNT_SEED_KEY, job_account, load_account
from aegis.k8s.manifests import ctl_secret
from aegis.k8s.resources import AEGIS, SECRET
from aegis.k8s.workqueue import WorkQueue
from aegis.runtime.controller.observability import MetricsServer, ObserverMetrics
from aegis.runtime.transport.auth import Account

__all__ = [  # the runner's names, for those who import them from here
    "DEFAULT_NATS_URL",
    "AegisControllerConfig",
    "AegisSpec",
    "JobRunner",
]

log = logging.getLogger(__name__)

DEFAULT_ACCOUNT_DIR = "/etc/aegis/nats"
DEFAULT_GRPC_PORT = 50051
DEFAULT_METRICS_PORT = 9400


class AccountError(K8sError):
    """The shared NATS account could not be loaded from the mounted Secret."""


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
        # what it reads of each CR, as its list and watch last showed it; the jobs to sync
        self.crs: KeyedStore[JobKey, AegisSpec] = KeyedStore(AegisSpec.from_obj, _cr_key)
        self.queue: WorkQueue[JobKey] = WorkQueue(config.backoff_initial_s, config.backoff_max_s)

    # ---------------- one CR ----------------

    def sync(self, key: JobKey) -> None:
        """Bring one job in line with its CR as the store holds it: a runner for a CR that
        can run, none for one gone or being deleted (level-triggered: what happened to the
        CR between two syncs does not matter)."""
        spec = self.crs.get(*key)
        if spec is None or spec.deleting:
            self.remove(key, spec.uid if spec is not None else "")
        else:
            self.observe(spec)

    def observe(self, spec: AegisSpec) -> None:
        """A CR that exists: start its runner unless it has one (AegisError if its job cannot
        be registered with the credential service: retried)."""
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
                self._refuse(spec, problem)
            return
        # its agents' credentials from now on, for the pods the API has (name, uid, label)
        self.credentials.register(spec.namespace, spec.name, spec.token_sha256)
        runner = JobRunner(spec, self.api, self.controller_credentials, self.config, self.metrics)
        self.runners[spec.key] = runner
        runner.start()
        self._ensure_ctl_secret(spec)
        log.info("aegis %s/%s: controller started (%d workers)", *spec.key, spec.worker_num)

    def _refuse(self, spec: AegisSpec, problem: str) -> None:
        """Mark a CR that cannot be run Failed, saying why (the Job Controller's verdict then
        carries it; the job's pods can get no credentials), unless it already ended. A
        failure to write it is logged; the next resync does not retry it."""
        if spec.ended:
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

    def run(self, stop: threading.Event) -> None:
        """Follow the CRs and sync each job until `stop` is set; then stop every runner
        (their statuses stay). The credential service is checked every turn (0.2 s): agents
        starting meanwhile retry for ~25 s."""
        settings = LoopSettings(
            namespace=self.config.namespace,
            resync_s=self.config.resync_s,
            workers=1,
            watch_timeout_s=self.config.watch_timeout_s,
            retry_on=(AegisError,),
            backoff=(self.config.backoff_initial_s, self.config.backoff_max_s),
            name="aegis-controller",
        )
        sources: list[Source[JobKey]] = [Source(AEGIS, self.crs)]
        loop = ControlLoop(
            self.api, sources, self._sync, self._resync_keys, settings, self.queue, self._tick
        )
        try:
            loop.run(stop)
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

    def _sync(self, key: JobKey) -> None:
        self.sync(key)

    def _resync_keys(self) -> set[JobKey]:
        """Every CR held and every job with a runner (one whose CR is gone is stopped)."""
        return self.crs.keys() | set(list(self.runners))

    def _tick(self) -> None:
        try:
            self.credentials.ensure_running()
        except AegisError as exc:
            log.warning("credential service: %s", exc)


def _cr_key(obj: Mapping[str, Any]) -> JobKey | None:
    spec = AegisSpec.from_obj(obj)
    return spec.key if spec.name else None


class ServerThread:
    """An asyncio server (`start()` and `stop()` coroutines) on an event loop and a thread of
    its own (the controller is threaded)."""

    def __init__(
        self, name: str, start: Callable[[], Awaitable[None]], stop: Callable[[], Awaitable[None]]
    ) -> None:
        self.name = name
        self._start_server, self._stop_server = start, stop
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)

    def start(self, timeout: float = 10.0) -> None:
        """Bind and serve; raises what binding raised (OSError for a taken port)."""
        self._thread.start()
        if not self._ready.wait(timeout):
            raise K8sError(f"the {self.name} server did not start within {timeout}s")
        if self._error is not None:
            raise self._error

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving and end the thread."""
        loop, ev = self._loop, self._stop
        if loop is not None and ev is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(ev.set)
        self._thread.join(timeout)

    def _main(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        try:
            await self._start_server()
        except BaseException as exc:
            self._error = exc
            self._ready.set()
            return
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        self._ready.set()
        try:
            await self._stop.wait()
        finally:
            await self._stop_server()


class MetricsServerThread(ServerThread):
    """`GET /metrics` of every job (one shared ObserverMetrics) on a thread of its own."""

    def __init__(self, metrics: ObserverMetrics, host: str = "0.0.0.0", port: int = 0) -> None:
        self.server = MetricsServer(metrics, host, port)
        super().__init__("metrics", self.server.start, self.server.close)

    @property
    def url(self) -> str:
        """Where the metrics are."""
        return self.server.url


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
