"""The Aegis Controller against kmock, a real nats-server and a real gRPC server on loopback.

A CR appears: its runtime controller starts, writes the status and serves its agents. The
controller process restarts: every job resumes from its CR status. A CR is deleted: its
credentials are revoked and its controller leaves NATS. Broken CRs and an unreachable API
server are survived.
"""

from __future__ import annotations

import argparse
import os
import signal
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from aegis.cli import k8s as k8s_cli
from aegis.k8s.aegis_controller import (
    DEFAULT_NATS_URL,
    AccountError,
    AegisController,
    AegisControllerConfig,
    JobRunner,
)
from aegis.k8s.api import KubeApi
from aegis.k8s.credential_process import ApiSource, CredentialProcess
from aegis.k8s.resources import AEGIS, CONFIG_MAP
from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.runtime.errors import BusError, CredentialsRejected
from aegis.runtime.transport.auth import Operator
from aegis.runtime.transport.bus import Bus

from ..support import first_request, wait_for, wait_for_async
from .cluster import NAMESPACE, Cluster
from .harness import PODS, SUBJECTS, Nats, Running, aegis_cr, running, worker_bus, worker_pod


def status(cluster: Cluster, name: str = "train") -> dict[str, Any]:
    return dict(cluster.aegis(name).get("status") or {})


class Agents:
    """One bus per pod, each with that pod's own credential, as real agents have."""

    def __init__(self, ctl: Running, cluster: Cluster) -> None:
        self.ctl, self.cluster = ctl, cluster
        self.buses: dict[str, Bus] = {}

    def uid(self, pod: str) -> str:
        """The pod's uid: its agent's incarnation."""
        return worker_pod(self.cluster, pod)

    async def bus(self, pod: str) -> Bus:
        if pod not in self.buses:  # from the credential process serving now
            self.buses[pod] = await worker_bus(self.ctl.grpc, self.cluster, pod)
        return self.buses[pod]

    async def close(self) -> None:
        for bus in self.buses.values():
            await bus.close()


@asynccontextmanager
async def serving(cluster: Cluster, nats: Nats) -> AsyncIterator[tuple[Running, JobRunner, Agents]]:
    """The CR "train" created, the controller process running and the job's status written:
    the process, the job's runner and agents (their buses closed at the end)."""
    cluster.api.create(AEGIS, NAMESPACE, aegis_cr("train"))
    with running(cluster.url, nats) as ctl:
        await wait_for_async(lambda: status(cluster).get("podInfos"), 10, "the status")
        agents = Agents(ctl, cluster)
        try:
            yield ctl, ctl.controller.runners[(NAMESPACE, "train")], agents
        finally:
            await agents.close()


def report(pod: str, inc: str, kind: MessageType, seq: int = 0, **data: Any) -> Message:
    """An agent's ACK or report (incarnation `inc`: its pod's uid)."""
    data = {"incarnation": inc, **data}
    return Message("train", NAMESPACE, pod, kind, MessagePhase.BOOTCHECK, data, time.time(), seq)


async def send(agents: Agents, pod: str, kind: MessageType, seq: int = 0, **data: Any) -> Message:
    """An agent's ACK or report, answered by the job's controller."""
    bus, inc = await agents.bus(pod), agents.uid(pod)
    subject = SUBJECTS.join(pod, inc) if kind is MessageType.ACK else SUBJECTS.report(pod, inc)
    return await bus.request(subject, report(pod, inc, kind, seq, **data), timeout=5.0)


async def first_ack(agents: Agents, pod: str) -> Message:
    """The first ACK to a job's controller that may still be subscribing (its runner, and the
    job's credentials, exist before it subscribes): answered once it serves the job."""
    bus, inc = await agents.bus(pod), agents.uid(pod)
    return await first_request(bus, SUBJECTS.join(pod, inc), report(pod, inc, MessageType.ACK))


async def test_a_new_cr_gets_a_controller_that_serves_its_agents(
    cluster: Cluster, nats: Nats
) -> None:
    cluster.api.create(AEGIS, NAMESPACE, aegis_cr("broken", token_hash="not-a-sha256"))
    negative = aegis_cr("negative")
    cluster.api.create(AEGIS, NAMESPACE, {**negative, "spec": {**negative["spec"], "maxRetry": -1}})
    cluster.api.create(AEGIS, NAMESPACE, aegis_cr("corrupt"))
    cluster.api.patch(
        AEGIS, NAMESPACE, "corrupt", {"status": {"version": 1, "specState": {"variables": {}}}},
        sub="status",
    )  # fmt: skip
    with running(cluster.url, nats) as ctl:
        cluster.api.create(AEGIS, NAMESPACE, aegis_cr("train"))
        st = await wait_for_async(lambda: status(cluster).get("podInfos"), 10, "the status")
        assert status(cluster)["phase"] == "Pending" and sorted(st) == list(PODS)
        assert all(info["innerPhase"] == "Pending" for info in st.values())
        with pytest.raises(CredentialsRejected, match="PERMISSION_DENIED"):
            await worker_bus(ctl.grpc, cluster, token="guess")
        bus = Agents(ctl, cluster)
        try:
            reply = await first_ack(bus, PODS[0])
            assert reply.type is MessageType.ORDER and reply.pod_name == PODS[0]
            reply = await send(bus, PODS[1], MessageType.ACK)
            assert reply.type is MessageType.ORDER and reply.pod_name == PODS[1]
        finally:
            await bus.close()
        assert status(cluster)["phase"] == "BootChecking"
        assert status(cluster)["masterSeq"] == 1
        # one job's failure stops no other: the broken CR was never started, the corrupt one
        # keeps being retried, and both are still there
        assert not {"broken", "negative"} & {k[1] for k in ctl.controller.runners}
        # and a CR that cannot be run says why, where the Job Controller reads it (its pods
        # can get no credentials)
        for name, why in (("broken", "bootstrapTokenSHA256"), ("negative", "spec.maxRetry")):
            assert status(cluster, name)["phase"] == "Failed", name
            assert why in status(cluster, name)["message"], status(cluster, name)
        corrupt = ctl.controller.runners[(NAMESPACE, "corrupt")]
        await wait_for_async(lambda: corrupt.attempts >= 2, 10, "the corrupt job to be retried")
        assert corrupt.alive and not corrupt.finished


@pytest.mark.parametrize("where", ["cr", "configmaps"])
async def test_a_restarted_controller_resumes_every_job_from_its_cr(
    cluster: Cluster, nats: Nats, where: str
) -> None:
    """Whether its status is whole in its CR or, for a job too large for it (here: a limit
    that a 2-pod job outgrows), a snapshot and a WAL in ConfigMaps the CR names."""
    limit = {"status_limit_bytes": 4096} if where == "configmaps" else {}
    cluster.api.create(AEGIS, NAMESPACE, aegis_cr("train"))
    with running(cluster.url, nats, **limit) as ctl:
        await wait_for_async(lambda: status(cluster).get("version"), 10, "the status")
        bus = Agents(ctl, cluster)
        try:
            await first_ack(bus, PODS[0])
            await send(bus, PODS[1], MessageType.ACK)
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
    kept = [o["metadata"]["name"] for o in cluster.api.list(CONFIG_MAP, NAMESPACE)]
    if where == "configmaps":  # the CR: a summary naming the snapshot
        assert "specState" not in before and before["maxRetries"] == 1
        assert [n for n in kept if n.startswith("train-snap-")]
        assert before["pods"] == {"total": 2, "byPhase": {"RunCommand": 2}}
    else:
        assert "specState" in before and not kept

    with running(cluster.url, nats, **limit) as ctl:  # a new controller process
        # the job's credentials are registered before its runner starts
        await wait_for_async(lambda: (NAMESPACE, "train") in ctl.controller.runners, 10, "runner")
        bus = Agents(ctl, cluster)
        try:
            order = await first_ack(bus, PODS[1])  # same incarnation: a re-ACK
        finally:
            await bus.close()
        assert order.type is MessageType.ORDER and order.phase is MessagePhase.COMMAND
        assert (order.seq, order.data["retry"], order.data["specPhase"]) == (4, 1, "RunCommand")
        after = status(cluster)
        assert (after["phase"], after["recoverCount"], after["masterSeq"]) == ("RunCommand", 1, 4)
        assert [after["podInfos"][p]["retries"] for p in PODS] == [1, 1]
        assert after.get("history", [])[: len(before.get("history", []))] == before.get(
            "history", []
        )  # not reset
        assert after["podInfos"][PODS[0]]["lastFailedReason"] == "CUDA error"
        assert ("snapshot" in after) == (where == "configmaps")


async def test_a_status_another_writer_changed_restarts_the_job_from_the_cr(
    cluster: Cluster, nats: Nats
) -> None:
    """Another writer changed the CR's status: the job's next save is refused (never
    overwritten), the event is not answered, and the job's controller starts again from what
    the CR holds now, the other writer's change included."""
    async with serving(cluster, nats) as (_, runner, agents):
        await first_ack(agents, PODS[0])
        attempts = runner.attempts
        theirs = {"podInfos": {PODS[1]: {"podIP": "10.0.0.9"}}}
        cluster.api.patch(AEGIS, NAMESPACE, "train", {"status": theirs}, sub="status")
        with pytest.raises(BusError):
            await send(agents, PODS[1], MessageType.ACK)  # rolled back: never answered
        await wait_for_async(lambda: runner.attempts > attempts, 10, "a new attempt")
        order = await first_ack(agents, PODS[1])  # served by the next attempt
        assert order.type is MessageType.ORDER and order.pod_name == PODS[1]
        assert status(cluster)["podInfos"][PODS[1]]["podIP"] == "10.0.0.9"
        assert status(cluster)["phase"] == "BootChecking"


async def test_deleting_the_cr_stops_its_controller_and_revokes_credentials(
    cluster: Cluster, nats: Nats
) -> None:
    async with serving(cluster, nats) as (ctl, runner, agents):
        await first_ack(agents, PODS[0])  # credentials issued while the CR exists
        cluster.api.delete(AEGIS, NAMESPACE, "train")
        await wait_for_async(lambda: not runner.alive, 10, "the job's controller to stop")
        assert (NAMESPACE, "train") not in ctl.controller.runners
        with pytest.raises(CredentialsRejected, match="PERMISSION_DENIED"):
            await worker_bus(ctl.grpc, cluster)
        with pytest.raises(BusError, match="nobody is subscribed"):
            await send(agents, PODS[0], MessageType.ACK)  # it left NATS too


async def test_credentials_only_for_a_pod_of_the_job_with_its_uid(
    cluster: Cluster, nats: Nats
) -> None:
    async with serving(cluster, nats) as (ctl, _, _):
        uid = worker_pod(cluster, PODS[0])
        stranger = worker_pod(cluster, "stranger", job="another-job")
        refused = [
            # a token holder posing as the pod: its token names the pod's real uid
            (PODS[0], "not-its-uid", cluster.pod_token(PODS[0]), "no proof"),
            # another pod's token for this pod
            (PODS[0], uid, cluster.pod_token("stranger"), "no proof"),
            # a pod the API does not have (a token the "kubelet" made for it)
            (
                PODS[1],
                "no-such-pod",
                cluster.pod_token(PODS[1], uid="no-such-pod"),
                "not one this job expects",
            ),
            # another job's pod, proven by its own token: not this job's
            ("stranger", stranger, cluster.pod_token("stranger"), "not one this job expects"),
        ]
        for pod, incarnation, token, says in refused:
            with pytest.raises(CredentialsRejected, match=says):
                await worker_bus(ctl.grpc, cluster, pod=pod, uid=incarnation, token=token)
        bus = await worker_bus(ctl.grpc, cluster, pod=PODS[0], uid=uid)  # the pod itself
        await bus.close()


def test_an_unreachable_api_server_is_retried_not_fatal(tmp_path: Path) -> None:
    account = Operator().create_job_account("aegis-system", "shared").account
    api = KubeApi.for_url("http://127.0.0.1:9", timeout_s=0.5)  # discard port: refused
    config = AegisControllerConfig(backoff_initial_s=0.05, backoff_max_s=0.2)
    lists = 0
    real_list = api.list_versioned

    def counting_list(*args: Any, **kwargs: Any) -> Any:
        nonlocal lists
        lists += 1
        return real_list(*args, **kwargs)  # the real call: refused every time

    api.list_versioned = counting_list  # type: ignore[method-assign]
    credentials = CredentialProcess(
        account, "nats://127.0.0.1:9", ApiSource(url=api.host), "127.0.0.1", 0
    )
    credentials.start()
    try:
        controller = AegisController(api, account, credentials, config)
        stop = threading.Event()
        thread = threading.Thread(target=controller.run, args=(stop,), daemon=True)
        thread.start()
        wait_for(lambda: lists >= 3, 10, "several failed lists, retried", poll_s=0.01)
        assert thread.is_alive() and controller.runners == {}
        stop.set()
        thread.join(5)
        assert not thread.is_alive()
    finally:
        credentials.stop()


def test_the_cli_says_where_the_account_comes_from(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser(prog="aegis")
    k8s_cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["k8s", "controller", "--nats-account-dir", str(tmp_path)])
    assert (args.grpc_port, args.nats_url) == (50051, DEFAULT_NATS_URL)
    with pytest.raises(AccountError, match="aegis k8s keys"):
        args.func(args)


async def test_a_dead_credential_process_is_started_again_with_the_job(
    cluster: Cluster, nats: Nats
) -> None:
    async with serving(cluster, nats) as (ctl, _, agents):
        first = ctl.credentials.pid
        assert first is not None
        os.kill(first, signal.SIGKILL)
        # the controller's loop finds it dead and starts another, the job registered again
        await wait_for_async(
            lambda: ctl.credentials.running and ctl.credentials.pid != first,
            30,
            "a new credential process",
        )
        await agents.bus(PODS[1])
