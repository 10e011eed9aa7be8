"""After a bus outage every agent gets a full heartbeat timeout from when it can be back.

An agent retries its connection every RECONNECT_WAIT_S on its own schedule, so it may be back
up to one wait after the controller. With a heartbeat timeout shorter than that, the
controller used to declare such an agent lost the moment its timeout ran out after the
controller's own reconnect: a bus outage counted as a pod loss (a retry), seen as a flaky
tests/runtime/test_bus_outage.py under load."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

import pytest

from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.runtime.controller.core import ControllerCore, JobConfig
from aegis.runtime.controller.service import RECONNECT_GRACE_S, ControllerService
from aegis.runtime.transport.auth import JobAccount, Operator
from aegis.runtime.transport.bus import RECONNECT_WAIT_S, Bus
from aegis.runtime.transport.nats_server import NatsServer

from ..support import MemoryStore
from ..support.wait import wait_for_async
from .conftest import NAMESPACE

pytestmark = pytest.mark.asyncio(loop_scope="module")
PODS = ("train-r-worker-0", "train-r-worker-1")
TIMEOUT_S = 1.0  # shorter than one reconnect wait plus the agent's lateness below
LATE_S = 1.5  # how long after the controller the late agent is back


def message(pod: str, kind: MessageType, seq: int) -> Message:
    data = {"incarnation": f"{pod}-i1"}
    return Message("train-r", NAMESPACE, pod, kind, MessagePhase.BOOTCHECK, data, time.time(), seq)


async def connect_as(server: NatsServer, job: JobAccount, pod: str) -> Bus:
    creds = job.account.new_user(pod, job.worker_permissions(pod, f"{pod}-i1"))
    return await Bus.connect(
        server.url, creds, inbox_prefix=job.subjects.inbox_prefix(pod), reconnect_attempts=-1
    )


async def heartbeats(bus: Bus, job: JobAccount, pod: str) -> None:
    """Every TIMEOUT_S / 4, as an agent does (nats-py buffers them while reconnecting)."""
    while True:
        with contextlib.suppress(Exception):
            beat = message(pod, MessageType.HEARTBEAT, 0)
            await bus.publish(job.subjects.heartbeat(pod, f"{pod}-i1"), beat)
        await asyncio.sleep(TIMEOUT_S / 4)


async def test_an_agent_back_later_than_the_controller_is_not_lost(tmp_path: Path) -> None:
    assert LATE_S > TIMEOUT_S and TIMEOUT_S + RECONNECT_GRACE_S > LATE_S + TIMEOUT_S / 2
    operator = Operator()
    job = operator.create_job_account(NAMESPACE, "train-r")
    async with NatsServer(operator, [job]) as server:
        core = ControllerCore(
            JobConfig("train-r", NAMESPACE, PODS, 2, heartbeat_timeout=TIMEOUT_S), MemoryStore()
        )
        cbus = await Bus.connect(server.url, job.controller_credentials(), reconnect_attempts=-1)
        service = ControllerService(core, cbus)
        served = asyncio.create_task(service.run())
        w0, w1 = [await connect_as(server, job, p) for p in PODS]
        beats = [
            asyncio.create_task(heartbeats(w, job, p)) for w, p in zip((w0, w1), PODS, strict=True)
        ]
        try:
            for w, p in zip((w0, w1), PODS, strict=True):
                await w.request(job.subjects.join(p, f"{p}-i1"), message(p, MessageType.ACK, 0), 5)
            assert core.state.phase == "BootChecking"
            # the outage: worker 1's connection goes with it and comes back LATE_S after the
            # controller's (worker 0 reconnects by itself, like the controller)
            beats[1].cancel()
            await w1.close()
            await server.restart()
            await wait_for_async(lambda: not cbus.connected, 5, "the controller to see it")
            await wait_for_async(lambda: cbus.connected, 10, "the controller to reconnect")
            await asyncio.sleep(LATE_S)
            w1 = await connect_as(server, job, PODS[1])
            beats[1] = asyncio.create_task(heartbeats(w1, job, PODS[1]))
            # until the grace is over and worker 1 has been heard again
            await asyncio.sleep(RECONNECT_GRACE_S + TIMEOUT_S - LATE_S + RECONNECT_WAIT_S)
            assert core.extras.counters["heartbeat_lost"] == 0, dict(core.extras.counters)
            assert core.state.recoverCount == 0 and core.state.phase == "BootChecking"
            assert time.monotonic() - core.last_seen[PODS[1]] < TIMEOUT_S
        finally:
            for b in beats:
                b.cancel()
            service.stop(0)
            await asyncio.wait_for(served, 10)
            for bus in (w0, w1, cbus):
                await bus.close()
