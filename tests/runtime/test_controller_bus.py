"""The controller on a real nats-server: forged messages and old incarnations are dropped."""

from __future__ import annotations

import time

import pytest

from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.runtime.transport.auth import JobAccount
from aegis.runtime.transport.bus import Bus
from aegis.runtime.transport.nats_server import NatsServer
from aegis.values import ModelValue

from ..support import RunningController, first_request
from .conftest import NAMESPACE, PODS_A

pytestmark = pytest.mark.asyncio(loop_scope="module")
PODS = PODS_A
PODS_MV = tuple(ModelValue(p) for p in PODS)


def msg(job: str, pod: str, kind: MessageType, inc: str, seq: int = 0) -> Message:
    return Message(
        job, NAMESPACE, pod, kind, MessagePhase.BOOTCHECK, {"incarnation": inc}, time.time(), seq
    )


async def connect_as(nats_server: NatsServer, job: JobAccount, pod: str) -> Bus:
    """A worker bus with `pod`'s own credential (its subjects only)."""
    creds = job.account.new_user(pod, job.worker_permissions(pod))
    return await Bus.connect(nats_server.url, creds, inbox_prefix=job.subjects.inbox_prefix(pod))


async def test_forged_and_old_incarnation(
    nats_server: NatsServer, job_a: JobAccount, controller: RunningController
) -> None:
    core = controller.core
    s = job_a.subjects
    w0, w1 = [await connect_as(nats_server, job_a, p) for p in PODS]
    try:
        await first_request(w0, s.report(PODS[0]), msg("train-a", PODS[0], MessageType.ACK, "i1"))
        for w, p in ((w0, PODS[0]), (w1, PODS[1])):  # join both: BootChecking (order 1)
            reply = await w.request(s.report(p), msg("train-a", p, MessageType.ACK, "i1"), 5)
            assert reply.type is MessageType.ORDER
        assert core.state.phase == "BootChecking"
        # a message claiming another job: counted as forged, ignored
        await w0.request(s.report(PODS[0]), msg("train-b", PODS[0], MessageType.FINISH, "i1", 1), 5)
        assert core.extras.counters["forged"] == 1
        # a message on pod 0's own subject that claims to be pod 1 (or nobody): dropped
        before = core.state
        for claimed in (PODS[1], "nobody"):
            forged = msg("train-a", claimed, MessageType.FINISH, "i1", 1)
            reply = await w0.request(s.report(PODS[0]), forged, 5)
            assert reply.data["result"] == "forged" and core.state == before
        assert core.extras.counters["impersonation"] == 2
        # pod 1 restarts (new incarnation); a report of its old incarnation is dropped
        await w1.request(s.report(PODS[1]), msg("train-a", PODS[1], MessageType.ACK, "i2"), 5)
        before = core.state
        await w1.request(s.report(PODS[1]), msg("train-a", PODS[1], MessageType.FINISH, "i1", 1), 5)
        assert core.extras.counters["old_incarnation"] == 1 and core.state == before
        assert core.extras.counters["inferred_restart"] == 1
        # the new incarnation's Finish is taken
        await w1.request(s.report(PODS[1]), msg("train-a", PODS[1], MessageType.FINISH, "i2", 1), 5)
        assert core.state.finished[PODS_MV[1]], (core.extras.counters, core.state)
    finally:
        await w0.close()
        await w1.close()
