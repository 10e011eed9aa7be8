"""The Aegis Controller as its process runs it, for the Kubernetes tests: the credential and
metrics servers on loopback, the CR watch in a thread; and a worker's way to its credential
(its pod in the API, the job's bootstrap token, gRPC)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from aegis.k8s.aegis_controller import (
    AegisController,
    AegisControllerConfig,
    MetricsServerThread,
)
from aegis.k8s.api import KubeApi
from aegis.k8s.credential_process import ApiSource, CredentialProcess
from aegis.k8s.errors import ApiError
from aegis.k8s.keys import token_sha256
from aegis.k8s.resources import AEGIS, LABEL_JOB, POD
from aegis.protocol.subjects import JobSubjects
from aegis.runtime.transport.auth import Account
from aegis.runtime.transport.bus import Bus
from aegis.runtime.transport.grpc_credentials import request_credentials

from .cluster import NAMESPACE, Cluster

TOKEN = "bootstrap-token-of-train"
PODS = ("train-worker-0", "train-worker-1")
SUBJECTS = JobSubjects(NAMESPACE, "train")  # each agent ACKs and reports on its own subject


@dataclass
class Nats:
    url: str
    account: Account  # plays the shared AEGIS account of `aegis k8s keys`


def aegis_cr(name: str = "train", workers: int = 2, token_hash: str = "") -> dict[str, Any]:
    """An Aegis CR as the Job Controller creates it."""
    return {
        "apiVersion": AEGIS.api_version,
        "kind": AEGIS.kind,
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "jobName": name,
            "namespace": NAMESPACE,
            "workerNum": workers,
            "maxRetry": 2,
            "bootstrapTokenSHA256": token_hash or token_sha256(TOKEN),
        },
    }


@dataclass
class Running:
    controller: AegisController
    metrics_url: str
    credentials: CredentialProcess

    @property
    def grpc(self) -> str:
        """Where agents ask for credentials (the current credential process's address)."""
        return self.credentials.address


@contextmanager
def running(url: str, nats: Nats, **config: Any) -> Iterator[Running]:
    """The controller process as `aegis k8s controller` runs it: gRPC, /metrics, CR watch
    (`config`: more AegisControllerConfig fields)."""
    settings = AegisControllerConfig(
        nats_url=nats.url, resync_s=0.5, backoff_initial_s=0.05, backoff_max_s=0.5, **config
    )
    credentials = CredentialProcess(nats.account, nats.url, ApiSource(url=url), "127.0.0.1", 0)
    credentials.start()
    api = KubeApi.for_url(url, timeout_s=5.0)
    controller = AegisController(api, nats.account, credentials, settings)
    metrics = MetricsServerThread(controller.metrics, "127.0.0.1", 0)
    metrics.start()
    stop = threading.Event()
    thread = threading.Thread(target=controller.run, args=(stop,), daemon=True)
    thread.start()
    try:
        yield Running(controller, metrics.url, credentials)
    finally:
        stop.set()
        thread.join(15)
        metrics.stop()
        credentials.stop()
        api.close()
    assert not thread.is_alive()


def worker_pod(cluster: Cluster, pod: str, job: str = "train") -> str:
    """The pod (made as the Job Controller makes it, labelled with its job); its uid."""
    try:
        obj = cluster.api.get(POD, NAMESPACE, pod)
    except ApiError:
        meta = {"name": pod, "namespace": NAMESPACE, "labels": {LABEL_JOB: job}}
        obj = cluster.api.create(
            POD, NAMESPACE, {"apiVersion": "v1", "kind": "Pod", "metadata": meta}
        )
    return str(obj["metadata"]["uid"])


async def worker_bus(
    grpc: str, cluster: Cluster, pod: str = PODS[0], token: str | None = None, uid: str = ""
) -> Bus:
    """An agent's way in: credentials from gRPC (its pod's name and uid, and the pod's own
    service-account token unless `token` is given), then NATS."""
    incarnation = uid or worker_pod(cluster, pod)
    issued = await request_credentials(
        grpc,
        namespace=NAMESPACE,
        job="train",
        pod_name=pod,
        proof=cluster.pod_token(pod) if token is None else token,
        incarnation=incarnation,
        attempts=1,
    )
    return await Bus.connect(
        issued.nats_url,
        issued.credentials,
        reconnect_attempts=1,
        inbox_prefix=SUBJECTS.inbox_prefix(pod),
    )
