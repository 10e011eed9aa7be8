"""The Aegis Controller's credential service in its own process: jobs registered and revoked
over its pipe, pods checked against the (emulated) API, a dead child started again with every
job, no child left behind, the account's seed never on its command line."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from aegis.k8s.credential_process import ApiSource, CredentialProcess
from aegis.k8s.errors import K8sError
from aegis.k8s.keys import token_sha256
from aegis.k8s.resources import LABEL_JOB, POD
from aegis.runtime.errors import CredentialsRejected, TransportError
from aegis.runtime.transport.auth import Operator
from aegis.runtime.transport.grpc_credentials import request_credentials

from ..support import wait_for
from .cluster import NAMESPACE, Cluster
from .harness import TOKEN, worker_pod

NATS_URL = "nats://127.0.0.1:4222"  # handed to agents; nothing here connects to it


@pytest.fixture
def creds(cluster: Cluster) -> Iterator[CredentialProcess]:
    account = Operator().create_job_account("aegis-system", "shared").account
    process = CredentialProcess(account, NATS_URL, ApiSource(url=cluster.url), "127.0.0.1", 0)
    process.start()
    try:
        yield process
    finally:
        process.stop()


async def _ask(creds: CredentialProcess, cluster: Cluster, job: str, pod: str) -> str:
    """A credential for `pod` of `job` (its uid from the API, its own service-account token
    as the proof); the NATS URL it names."""
    uid = worker_pod(cluster, pod, job)
    issued = await request_credentials(
        creds.address, namespace=NAMESPACE, job=job, pod_name=pod,
        proof=cluster.pod_token(pod), incarnation=uid, attempts=1,
    )  # fmt: skip
    return issued.nats_url


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


async def test_a_registered_jobs_pods_get_credentials_until_it_is_revoked(
    creds: CredentialProcess, cluster: Cluster
) -> None:
    with pytest.raises(CredentialsRejected, match="PERMISSION_DENIED"):
        await _ask(creds, cluster, "train", "train-worker-0")  # not registered yet
    creds.register(NAMESPACE, "train", token_sha256(TOKEN))
    assert await _ask(creds, cluster, "train", "train-worker-0") == NATS_URL
    worker_pod(cluster, "train-worker-1")
    with pytest.raises(CredentialsRejected, match="no proof"):  # its token names its uid
        await request_credentials(
            creds.address, namespace=NAMESPACE, job="train", pod_name="train-worker-1",
            proof=cluster.pod_token("train-worker-1"), incarnation="not-its-uid", attempts=1,
        )  # fmt: skip
    with pytest.raises(CredentialsRejected, match="no proof"):  # the shared token is no proof
        await request_credentials(
            creds.address, namespace=NAMESPACE, job="train", pod_name="train-worker-1",
            proof=TOKEN, incarnation=worker_pod(cluster, "train-worker-1"), attempts=1,
        )  # fmt: skip
    creds.revoke(NAMESPACE, "train")
    with pytest.raises(CredentialsRejected, match="PERMISSION_DENIED"):
        await _ask(creds, cluster, "train", "train-worker-1")


async def test_an_agent_proves_its_pod_with_that_pods_own_token_and_nothing_else(
    creds: CredentialProcess, cluster: Cluster
) -> None:
    """TokenReview (issue 42): the pod's projected token for the `aegis` audience proves that
    pod and uid only; another pod's token, another audience's, an unknown one or none does
    not; a flood of wrong proofs for one identity costs a bounded number of reviews."""
    creds.register(NAMESPACE, "train", token_sha256(TOKEN))
    uid0, uid1 = worker_pod(cluster, "train-worker-0"), worker_pod(cluster, "train-worker-1")

    async def ask(pod: str, uid: str, proof: str) -> str:
        try:
            await request_credentials(
                creds.address, namespace=NAMESPACE, job="train", pod_name=pod, proof=proof,
                incarnation=uid, attempts=1,
            )  # fmt: skip
        except TransportError as exc:
            return str(exc)
        return "GRANTED"

    for proof in (
        cluster.pod_token("train-worker-1"),  # another pod's
        cluster.pod_token("train-worker-0", audience="vault"),  # another audience's
        "made-up",
        "",
    ):
        assert "no proof of train-worker-0" in await ask("train-worker-0", uid0, proof)
    assert await ask("train-worker-0", uid0, cluster.pod_token("train-worker-0")) == "GRANTED"
    reviews, started = cluster.emulator.reviews, time.monotonic()
    answers = [await ask("train-worker-1", uid1, f"guess-{i}") for i in range(60)]
    # the refused burst (20), then 2 a second (Throttle): the rest never reach the API
    allowed = 20 + 2 * (time.monotonic() - started) + 1
    assert cluster.emulator.reviews - reviews <= allowed
    assert sum("too often" in a for a in answers) >= 60 - allowed
    # the same caller (here every request is 127.0.0.1's; on Kubernetes each pod has its
    # own address, and another pod's flood never touches a pod's own agent) is served again
    # once its refusals have refilled (2 a second)
    token, deadline = cluster.pod_token("train-worker-1"), time.monotonic() + 10
    while (answer := await ask("train-worker-1", uid1, token)) != "GRANTED":
        assert "too often" in answer and time.monotonic() < deadline, answer
        await asyncio.sleep(0.1)


async def test_a_dead_child_is_started_again_with_every_job(
    creds: CredentialProcess, cluster: Cluster
) -> None:
    creds.register(NAMESPACE, "train", token_sha256(TOKEN))
    first = creds.pid
    assert first is not None
    os.kill(first, signal.SIGKILL)
    creds.register(NAMESPACE, "other", token_sha256(TOKEN))  # finds it dead: starts another
    assert creds.starts == 2 and creds.pid != first
    assert await _ask(creds, cluster, "train", "train-worker-0") == NATS_URL  # registered again
    assert await _ask(creds, cluster, "other", "other-worker-0") == NATS_URL
    second = creds.pid
    assert second is not None
    os.kill(second, signal.SIGKILL)
    wait_for(lambda: not creds.running, 10, "the child to die")
    creds.ensure_running()  # the controller's resync
    assert creds.starts == 3
    assert await _ask(creds, cluster, "other", "other-worker-1") == NATS_URL


@pytest.mark.parametrize("cache", [True, False])
async def test_the_child_accepts_the_pods_its_watch_shows_without_asking_the_api(
    cluster: Cluster, cache: bool
) -> None:
    """Pod GETs refused: with its pod cache the child accepts the pods its list and watch
    showed (12,500 agents asking at once were 12,500 GETs); without it, it cannot."""
    uids = {}
    for pod in ("train-worker-0", "train-worker-1", "other-worker-0"):
        meta = {"name": pod, "namespace": NAMESPACE, "labels": {LABEL_JOB: pod.split("-")[0]}}
        made = cluster.api.create(POD, NAMESPACE, {"kind": "Pod", "metadata": meta})
        uids[pod] = made["metadata"]["uid"]
    cluster.emulator.refuse_pod_gets = True
    account = Operator().create_job_account("aegis-system", "shared").account
    source = ApiSource(url=cluster.url)
    process = CredentialProcess(account, NATS_URL, source, "127.0.0.1", 0, cache_pods=cache)
    process.start()
    try:
        process.register(NAMESPACE, "train", token_sha256(TOKEN))
        if cache:  # the cache holds the list's pods before its watch asks
            wait_for(lambda: _pod_requests(cluster, "WATCH"), 10, "the child's pod watch")

        async def ask(pod: str, incarnation: str) -> str:
            issued = await request_credentials(
                process.address, namespace=NAMESPACE, job="train", pod_name=pod,
                proof=cluster.pod_token(pod, uid=uids[pod]), incarnation=incarnation,
                attempts=1,
            )  # fmt: skip
            return issued.nats_url

        if cache:
            assert await ask("train-worker-0", uids["train-worker-0"]) == NATS_URL
            assert await ask("train-worker-1", uids["train-worker-1"]) == NATS_URL
            assert _pod_requests(cluster, "FETCH") == 0
        # never from the cache: another job's pod (proven by its own token, then asked of
        # the API)
        for pod, incarnation in [
            ("other-worker-0", uids["other-worker-0"]),
            *([] if cache else [("train-worker-1", uids["train-worker-1"])]),
        ]:
            with pytest.raises(CredentialsRejected, match="not one this job expects"):
                await ask(pod, incarnation)
        assert _pod_requests(cluster, "FETCH") == (1 if cache else 2)
    finally:
        process.stop()


def _pod_requests(cluster: Cluster, action: str) -> int:
    return sum(
        1
        for r in cluster.emulator  # kmock iterates the requests it has served
        if r.action is not None
        and r.action.name == action
        and r.resource is not None
        and r.resource.plural == "pods"
    )


def test_stop_leaves_no_child_and_the_seed_is_not_on_its_command_line(cluster: Cluster) -> None:
    account = Operator().create_job_account("aegis-system", "shared").account
    process = CredentialProcess(account, NATS_URL, ApiSource(url=cluster.url), "127.0.0.1", 0)
    process.start()
    pid = process.pid
    assert pid is not None
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    environ = Path(f"/proc/{pid}/environ").read_bytes()
    seed = bytes(account.keypair.seed)
    assert seed not in cmdline and seed not in environ
    assert process.stop() == 0  # it ended by itself, its stdin closed
    assert not _alive(pid) and process.pid is None and process.stop() is None


def test_a_child_that_cannot_start_says_why(tmp_path: Path) -> None:
    account = Operator().create_job_account("aegis-system", "shared").account
    source = ApiSource(kubeconfig=str(tmp_path / "missing-kubeconfig"))
    process = CredentialProcess(account, NATS_URL, source, "127.0.0.1", 0)
    with pytest.raises(K8sError, match="no usable Kubernetes configuration"):
        process.start()
    assert process.pid is None
    # the controller's loop tries again, but not at every turn (each start costs a second)
    with pytest.raises(K8sError, match="no usable Kubernetes configuration"):
        process.ensure_running()
    process.ensure_running()  # within the pause after a failed start: no try
    assert process.starts == 2 and process.pid is None


def test_a_child_that_stalls_mid_line_does_not_hold_the_controller() -> None:
    # half an answer, then nothing: the read ends at its timeout (a buffered readline after
    # `select` waited for the rest of the line as long as the child lived)
    process = _unstarted()
    with _child("print('{\"ok\"', end=''); sys.stdout.flush(); time.sleep(60)") as child:
        started = time.monotonic()
        assert process._read_line(child, 0.5) is None
        assert time.monotonic() - started < 10


def test_lines_that_come_together_are_read_one_by_one() -> None:
    process = _unstarted()
    with _child('print(\'{"a": 1}\\n{"b": 2}\'); sys.stdout.flush(); time.sleep(60)') as child:
        assert process._read_line(child, 30) == '{"a": 1}'
        assert process._read_line(child, 30) == '{"b": 2}'  # already read, not in the pipe


def _unstarted() -> CredentialProcess:
    account = Operator().create_job_account("aegis-system", "shared").account
    return CredentialProcess(account, NATS_URL, ApiSource(url="http://127.0.0.1:9"), "h", 0)


@contextlib.contextmanager
def _child(code: str) -> Iterator[subprocess.Popen[str]]:
    """A process running `code` (after importing sys and time), killed at the end."""
    argv = [sys.executable, "-c", f"import sys, time; {code}"]
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        yield child
    finally:
        child.kill()
        child.wait()
