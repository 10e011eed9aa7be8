"""The service on a real nats-server with the WAL: a reply or an order is only ever seen once
the state it comes from is on disk (group commit, issue 12)."""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path

import pytest

from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.runtime.controller.core import ControllerCore, JobConfig
from aegis.runtime.controller.service import ControllerService
from aegis.runtime.controller.store import FileStatusStore
from aegis.runtime.controller.wal import WriteAheadLog
from aegis.runtime.transport.auth import JobAccount
from aegis.runtime.transport.bus import Bus
from aegis.runtime.transport.nats_server import NatsServer

from ..support import first_request
from .conftest import NAMESPACE, PODS_A

pytestmark = pytest.mark.asyncio(loop_scope="module")
JOB = JobConfig("train-a", NAMESPACE, PODS_A, 2, heartbeat_timeout=0)


def msg(pod: str, kind: MessageType, seq: int = 0) -> Message:
    data = {"incarnation": "i1"}
    return Message("train-a", NAMESPACE, pod, kind, MessagePhase.BOOTCHECK, data, time.time(), seq)


def on_disk(state: Path, into: Path) -> ControllerCore:
    """The controller a restart would get now (resumed from a copy of the state dir)."""
    shutil.rmtree(into, ignore_errors=True)
    into.mkdir()
    for name in ("status.json", "wal.jsonl"):
        shutil.copy(state / name, into / name)
    return ControllerCore(
        JOB, FileStatusStore(into / "status.json"), wal=WriteAheadLog(into / "wal.jsonl")
    )


async def test_every_reply_and_order_follows_its_state_to_disk(
    nats_server: NatsServer, job_a: JobAccount, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    wal = WriteAheadLog(state / "wal.jsonl")
    core = ControllerCore(JOB, FileStatusStore(state / "status.json"), wal=wal)
    bus = await Bus.connect(nats_server.url, job_a.controller_credentials())
    service = ControllerService(core, bus)
    task = asyncio.create_task(service.run())
    s = job_a.subjects
    agents = []
    for pod in PODS_A:
        creds = job_a.account.new_user(pod, job_a.worker_permissions(pod, "i1"))
        agents.append(await Bus.connect(nats_server.url, creds, inbox_prefix=s.inbox_prefix(pod)))
    orders: list[Message] = []
    seen_on_disk: list[int] = []

    async def on_order(order: Message) -> None:
        orders.append(order)
        seen_on_disk.append(int(on_disk(state, tmp_path / f"o{len(orders)}").state.masterSeq))

    await agents[0].subscribe(s.master, on_order)

    async def send(i: int, kind: MessageType) -> None:
        pod = PODS_A[i]
        seq = int(core.state.masterSeq)
        subject = s.join(pod, "i1") if kind is MessageType.ACK else s.report(pod, "i1")
        reply = await first_request(agents[i], subject, msg(pod, kind, seq))
        assert reply is not None
        resumed = on_disk(state, tmp_path / f"r{pod}{kind.value}")
        assert resumed.extras.incarnations.get(pod) == "i1"  # its own event is durable
        assert int(resumed.state.masterSeq) >= reply.seq  # and what the reply says

    try:
        await asyncio.gather(*(send(i, MessageType.ACK) for i in range(2)))
        assert core.state.phase == "BootChecking"
        await asyncio.gather(*(send(i, MessageType.FINISH) for i in range(2)))
        assert core.state.phase == "RunCommand"
        deadline = time.monotonic() + 10
        while not any(o.seq == 2 for o in orders):
            assert time.monotonic() < deadline, "the RunCommand order never came"
            await asyncio.sleep(0.02)
        assert all(disk >= o.seq for o, disk in zip(orders, seen_on_disk, strict=True))
        assert 1 <= service.commits.commits <= 4  # 4 events, fewer commits when batched
    finally:
        service.stop(0)
        await asyncio.wait_for(task, 10)
        for agent in agents:
            await agent.close()
        await bus.close()
        wal.close()
