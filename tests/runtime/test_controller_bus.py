"""The controller on a real nats-server: forged messages and old incarnations are dropped."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from aegis.runtime.controller import ControllerCore, JobConfig
from aegis.runtime.controller_service import ControllerService
from aegis.runtime.messages import Message, MessagePhase, MessageType
from aegis.runtime.store import FileStatusStore
from aegis.runtime.transport.auth import JobAccount
from aegis.runtime.transport.bus import Bus
from aegis.runtime.transport.nats_server import NatsServer
from aegis.values import ModelValue

from .conftest import NAMESPACE, first_request

pytestmark = pytest.mark.asyncio(loop_scope="module")
PODS = ("train-a-worker-0", "train-a-worker-1")
PODS_MV = tuple(ModelValue(p) for p in PODS)


def msg(job: str, pod: str, kind: MessageType, inc: str, seq: int = 0) -> Message:
    return Message(
        job, NAMESPACE, pod, kind, MessagePhase.BOOTCHECK, {"incarnation": inc}, time.time(), seq
    )


async def test_forged_and_old_incarnation(
    nats_server: NatsServer, job_a: JobAccount, tmp_path: Path
) -> None:
    core = ControllerCore(
        JobConfig("train-a", NAMESPACE, PODS, 2), FileStatusStore(tmp_path / "status.json")
    )
    ctl_bus = await Bus.connect(nats_server.url, job_a.controller_credentials())
    service = ControllerService(core, ctl_bus)
    task = asyncio.create_task(service.run())
    worker = await Bus.connect(nats_server.url, job_a.account.new_user("w", job_a.worker_allow))
    subject = job_a.subjects.worker
    try:
        await first_request(worker, subject, msg("train-a", PODS[0], MessageType.ACK, "i1"))
        for p in PODS:  # join both: the job moves to BootChecking (order 1)
            reply = await worker.request(subject, msg("train-a", p, MessageType.ACK, "i1"), 5)
            assert reply.type is MessageType.ORDER
        assert core.state.phase == "BootChecking"
        # a message claiming another job, and one from an unknown pod: counted, ignored
        await worker.request(subject, msg("train-b", PODS[0], MessageType.FINISH, "i1", 1), 5)
        await worker.request(subject, msg("train-a", "nobody", MessageType.FINISH, "i1", 1), 5)
        assert core.extras.counters["forged"] == 2
        # pod 1 restarts (new incarnation); a report of its old incarnation is dropped
        await worker.request(subject, msg("train-a", PODS[1], MessageType.ACK, "i2"), 5)
        before = core.state
        await worker.request(subject, msg("train-a", PODS[1], MessageType.FINISH, "i1", 1), 5)
        assert core.extras.counters["old_incarnation"] == 1 and core.state == before
        assert core.extras.counters["inferred_restart"] == 1
        # the new incarnation's Finish is taken
        await worker.request(subject, msg("train-a", PODS[1], MessageType.FINISH, "i2", 1), 5)
        assert core.state.finished[PODS_MV[1]], (core.extras.counters, core.state)
    finally:
        service.stop(0)
        await task
        await worker.close()
        await ctl_bus.close()
