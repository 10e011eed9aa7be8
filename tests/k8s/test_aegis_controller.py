"""The Aegis Controller against kmock, a real nats-server and a real gRPC server on loopback.

A CR appears: its runtime controller starts, writes the status and serves its agents. The
controller process restarts: every job resumes from its CR status. A CR is deleted: its
credentials are revoked and its controller leaves NATS. Broken CRs and an unreachable API
server are survived.
"""

from __future__ import annotations

import argparse
import asyncio
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from aegis.cli import k8s as k8s_cli
from aegis.k8s.aegis_controller import (
    DEFAULT_NATS_URL,
    AccountError,
    AegisController,
    AegisControllerConfig,
    Backoff,
    CredentialServerThread,
    load_account_dir,
)
from aegis.k8s.api import KubeApi
from aegis.k8s.keys import ACCOUNT_JWT_KEY, ACCOUNT_SEED_KEY, token_sha256
from aegis.k8s.resources import AEGIS
from aegis.runtime.errors import BusError, CredentialsRejected
from aegis.runtime.messages import Message, MessagePhase, MessageType
from aegis.runtime.transport.auth import Account, Operator
from aegis.runtime.transport.bus import Bus
from aegis.runtime.transport.grpc_credentials import CredentialService, request_credentials
from aegis.runtime.transport.nats_server import NatsServer

from .cluster import NAMESPACE, Cluster

TOKEN = "bootstrap-token-of-train"
PODS = ("train-worker-0", "train-worker-1")


@dataclass
class Nats:
    url: str
    account: Account  # plays the shared AEGIS account of `aegis k8s keys`


@pytest_asyncio.fixture
async def nats(tmp_path: Path) -> AsyncIterator[Nats]:
    """A real nats-server in operator mode; the controller loads its account from files."""
    operator = Operator()
    shared = operator.create_job_account("aegis-system", "shared")
    (tmp_path / ACCOUNT_JWT_KEY).write_text(shared.account.jwt)
    (tmp_path / ACCOUNT_SEED_KEY).write_bytes(bytes(shared.account.keypair.seed) + b"\n")
    async with NatsServer(operator, [shared]) as server:
        yield Nats(server.url, load_account_dir(tmp_path))


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
    grpc: str


@contextmanager
def running(url: str, nats: Nats) -> Iterator[Running]:
    """The controller process: credential server on loopback, CR watch in a thread."""
    config = AegisControllerConfig(
        nats_url=nats.url, resync_s=0.5, backoff_initial_s=0.05, backoff_max_s=0.5
    )
    credentials = CredentialService(nats.url)
    grpc = CredentialServerThread(credentials, "127.0.0.1", 0)
    grpc.start()
    api = KubeApi.for_url(url, timeout_s=5.0)
    controller = AegisController(api, nats.account, credentials, config)
    stop = threading.Event()
    thread = threading.Thread(target=controller.run, args=(stop,), daemon=True)
    thread.start()
    try:
        yield Running(controller, grpc.address)
    finally:
        stop.set()
        thread.join(15)
        grpc.stop()
        api.close()
    assert not thread.is_alive()
    assert not any(r.alive for r in controller.runners.values())


async def wait_for(cond: Callable[[], object], what: str, timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def status(cluster: Cluster, name: str = "train") -> dict[str, Any]:
    return dict(cluster.aegis(name).get("status") or {})


async def worker_bus(grpc: str, pod: str = PODS[0], token: str = TOKEN) -> Bus:
    """An agent's way in: credentials from gRPC, then NATS with them."""
    issued = await request_credentials(
        grpc, namespace=NAMESPACE, job="train", pod_name=pod, bootstrap_token=token, attempts=1
    )
    return await Bus.connect(issued.nats_url, issued.credentials, reconnect_attempts=1)


async def send(bus: Bus, pod: str, kind: MessageType, seq: int = 0, **data: Any) -> Message:
    """An agent's ACK or report, answered by the job's controller."""
    msg = Message(
        "train",
        NAMESPACE,
        pod,
        kind,
        MessagePhase.BOOTCHECK,
        {"incarnation": "i1", **data},
        time.time(),
        seq,
    )
    return await bus.request(f"aegis.{NAMESPACE}.train.worker", msg, timeout=5.0)


async def test_a_new_cr_gets_a_controller_that_serves_its_agents(
    cluster: Cluster, nats: Nats
) -> None:
    cluster.api.create(AEGIS, NAMESPACE, aegis_cr("broken", token_hash="not-a-sha256"))
    cluster.api.create(AEGIS, NAMESPACE, aegis_cr("corrupt"))
    cluster.api.patch(
        AEGIS, NAMESPACE, "corrupt", {"status": {"version": 1, "specState": {"variables": {}}}},
        sub="status",
    )  # fmt: skip
    with running(cluster.url, nats) as ctl:
        cluster.api.create(AEGIS, NAMESPACE, aegis_cr("train"))
        st = await wait_for(lambda: status(cluster).get("podInfos"), "the status")
        assert status(cluster)["phase"] == "Pending" and sorted(st) == list(PODS)
        assert all(info["innerPhase"] == "Pending" for info in st.values())
        with pytest.raises(CredentialsRejected, match="PERMISSION_DENIED"):
            await worker_bus(ctl.grpc, token="guess")
        bus = await worker_bus(ctl.grpc)
        try:
            for pod in PODS:
                reply = await send(bus, pod, MessageType.ACK)
                assert reply.type is MessageType.ORDER and reply.pod_name == pod
        finally:
            await bus.close()
        assert status(cluster)["phase"] == "BootChecking"
        assert status(cluster)["masterSeq"] == 1
        # one job's failure stops no other: the broken CR was never started, the corrupt one
        # keeps being retried, and both are still there
        assert "broken" not in {k[1] for k in ctl.controller.runners}
        corrupt = ctl.controller.runners[(NAMESPACE, "corrupt")]
        await wait_for(lambda: corrupt.attempts >= 2, "the corrupt job to be retried")
        assert corrupt.alive and not corrupt.finished


async def test_a_restarted_controller_resumes_every_job_from_its_cr(
    cluster: Cluster, nats: Nats
) -> None:
    cluster.api.create(AEGIS, NAMESPACE, aegis_cr("train"))
    with running(cluster.url, nats) as ctl:
        await wait_for(lambda: status(cluster).get("podInfos"), "the status")
        bus = await worker_bus(ctl.grpc)
        try:
            for pod in PODS:
                await send(bus, pod, MessageType.ACK)
            for pod in PODS:  # bootcheck passed
                await send(bus, pod, MessageType.FINISH, 1)
            reply = await send(bus, PODS[0], MessageType.ERROR, 2, reason="CUDA error")
            assert reply.data["result"] == "applied"
            for pod in PODS:  # troubleshooting done: the command is ordered again
                await send(bus, pod, MessageType.FINISH, 3)
        finally:
            await bus.close()
    before = status(cluster)
    assert (before["phase"], before["recoverCount"], before["masterSeq"]) == ("RunCommand", 1, 4)
    assert [before["podInfos"][p]["retries"] for p in PODS] == [1, 1]

    with running(cluster.url, nats) as ctl:  # a new controller process
        await wait_for(lambda: (NAMESPACE, "train") in ctl.controller.runners, "the runner")
        bus = await worker_bus(ctl.grpc)
        try:
            order = await send(bus, PODS[1], MessageType.ACK)  # same incarnation: a re-ACK
        finally:
            await bus.close()
        assert order.type is MessageType.ORDER and order.phase is MessagePhase.COMMAND
        assert (order.seq, order.data["retry"], order.data["specPhase"]) == (4, 1, "RunCommand")
        after = status(cluster)
        assert (after["phase"], after["recoverCount"], after["masterSeq"]) == ("RunCommand", 1, 4)
        assert [after["podInfos"][p]["retries"] for p in PODS] == [1, 1]
        assert after["history"][: len(before["history"])] == before["history"]  # not reset
        assert after["podInfos"][PODS[0]]["lastFailedReason"] == "CUDA error"


async def test_deleting_the_cr_stops_its_controller_and_revokes_credentials(
    cluster: Cluster, nats: Nats
) -> None:
    cluster.api.create(AEGIS, NAMESPACE, aegis_cr("train"))
    with running(cluster.url, nats) as ctl:
        await wait_for(lambda: status(cluster).get("podInfos"), "the status")
        runner = ctl.controller.runners[(NAMESPACE, "train")]
        bus = await worker_bus(ctl.grpc)  # credentials issued while the CR exists
        try:
            await send(bus, PODS[0], MessageType.ACK)
            cluster.api.delete(AEGIS, NAMESPACE, "train")
            await wait_for(lambda: not runner.alive, "the job's controller to stop")
            assert (NAMESPACE, "train") not in ctl.controller.runners
            with pytest.raises(CredentialsRejected, match="PERMISSION_DENIED"):
                await worker_bus(ctl.grpc)
            with pytest.raises(BusError, match="nobody is subscribed"):
                await send(bus, PODS[0], MessageType.ACK)  # it left NATS too
        finally:
            await bus.close()


def test_an_unreachable_api_server_is_retried_not_fatal(tmp_path: Path) -> None:
    account = Operator().create_job_account("aegis-system", "shared").account
    api = KubeApi.for_url("http://127.0.0.1:9", timeout_s=0.5)  # discard port: refused
    config = AegisControllerConfig(backoff_initial_s=0.05, backoff_max_s=0.2)
    lists = 0
    real_list = api.list

    def counting_list(*args: Any, **kwargs: Any) -> Any:
        nonlocal lists
        lists += 1
        return real_list(*args, **kwargs)  # the real call: refused every time

    api.list = counting_list  # type: ignore[method-assign]
    controller = AegisController(api, account, CredentialService("nats://x:4222"), config)
    stop = threading.Event()
    thread = threading.Thread(target=controller.run, args=(stop,), daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while lists < 3 and time.monotonic() < deadline:  # several failed lists, retried
        time.sleep(0.01)
    assert lists >= 3
    assert thread.is_alive() and controller.runners == {}
    stop.set()
    thread.join(5)
    assert not thread.is_alive()


def test_backoff_is_bounded() -> None:
    backoff = Backoff(0.5, 4.0)
    delays = [backoff.next() for _ in range(50)]
    assert delays[0] <= 0.5 and max(delays) <= 4.0 and min(delays[5:]) >= 2.0
    backoff.reset()
    assert backoff.next() <= 0.5


def test_the_cli_says_where_the_account_comes_from(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser(prog="aegis")
    k8s_cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["k8s", "controller", "--nats-account-dir", str(tmp_path)])
    assert (args.grpc_port, args.nats_url) == (50051, DEFAULT_NATS_URL)
    with pytest.raises(AccountError, match="aegis k8s keys"):
        args.func(args)
