"""A controller too far behind to read every message: its client drops them (nats-py's pending
limit), counts them, and the heartbeat watch does not take the silence it caused for deaths."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.runtime.transport.auth import JobAccount, Operator
from aegis.runtime.transport.bus import Bus
from aegis.runtime.transport.nats_server import NatsServer

from ..support import wait_for_async
from ..support.controller import RunningController, running_controller


def beat(job: str, pod: str, seq: int, inc: str = "i1") -> Message:
    data = {"incarnation": inc}
    return Message(job, "team", pod, MessageType.HEARTBEAT, MessagePhase.BOOTCHECK, data, 1.0, seq)


async def test_messages_past_the_pending_limit_are_dropped_counted_and_timed() -> None:
    operator = Operator()
    job = operator.create_job_account("team", "slow")
    async with NatsServer(operator, [job]) as server:
        ctl = await Bus.connect(server.url, job.controller_credentials(), name="controller")
        sender = await Bus.connect(server.url, job.controller_credentials(), name="sender")
        handled: list[int] = []
        release = asyncio.Event()

        async def slow(_subject: str, m: Message) -> None:
            handled.append(m.seq)
            await release.wait()

        try:
            await ctl.subscribe_each(job.subjects.heartbeats, slow, pending_msgs_limit=4)
            await ctl.flush()
            for seq in range(1, 41):
                await sender.publish(
                    job.subjects.heartbeat("slow-worker-0", "i1"),
                    beat("slow", "slow-worker-0", seq),
                )
            await sender.flush()
            await wait_for_async(lambda: ctl.stats.dropped, 10, "a dropped message")
            assert ctl.dropped_at is not None and ctl.dropped_at <= time.monotonic()
            release.set()
            # every message was either handled, in order, or dropped and counted
            await wait_for_async(
                lambda: len(handled) + ctl.stats.dropped == 40, 10, "each handled or dropped"
            )
            assert 0 < len(handled) < 40 and handled == sorted(handled)
        finally:
            await sender.close()
            await ctl.close()


@asynccontextmanager
async def joined(
    tmp_path: Path, name: str, timeout: float
) -> AsyncIterator[tuple[NatsServer, JobAccount, str, RunningController]]:
    """A controller (heartbeat timeout `timeout`) of a one-pod job whose agent joined."""
    operator = Operator()
    job = operator.create_job_account("team", name)
    pod = f"{name}-worker-0"
    async with (
        NatsServer(operator, [job]) as server,
        running_controller(
            server.url, job, tmp_path / "status.json", [pod], heartbeat_timeout=timeout
        ) as rc,
    ):
        ack = Message(name, "team", pod, MessageType.ACK, MessagePhase.BOOTCHECK,
                      {"incarnation": "i1"}, 1.0, 0)  # fmt: skip
        async with rc.service.lock:
            rc.core.on_ack(ack)
        yield server, job, pod, rc


def lost(rc: RunningController) -> int:
    return rc.core.extras.counters.get("heartbeat_lost", 0)


async def test_no_pod_is_declared_lost_while_the_controller_drops_messages(tmp_path: Path) -> None:
    """A silent agent is lost one timeout after its last beat, but not while the controller's
    own client is dropping messages (it may be its heartbeats that were dropped); once the
    drops stop it gets a full timeout from then."""
    timeout = 1.0
    async with joined(tmp_path, "drops", timeout) as (_, _, _, rc):  # then never heard again
        dropping_until = time.monotonic() + 3 * timeout
        while time.monotonic() < dropping_until:
            rc.bus.dropped_at = time.monotonic()  # what a SlowConsumerError records
            await asyncio.sleep(0.05)
            assert lost(rc) == 0
        stopped = time.monotonic()
        await wait_for_async(lambda: lost(rc) == 1, 10, "the loss")
        assert time.monotonic() - stopped >= timeout / 2  # a full timeout from the last drop


async def test_no_pod_is_declared_lost_while_its_heartbeats_wait_in_our_queue(
    tmp_path: Path,
) -> None:
    """Events hold the lock (here: the test, for 3 timeouts) while an agent beats on: its
    heartbeats wait, unread, behind the lock; the watch, waiting for the lock too (and
    first), must not then take the agent for silent."""
    timeout = 1.0
    async with joined(tmp_path, "queue", timeout) as (server, job, pod, rc):
        sender = await Bus.connect(server.url, job.controller_credentials(), name="agent")

        async def beating() -> None:
            for seq in range(1, 1000):
                await sender.publish(job.subjects.heartbeat(pod, "i1"), beat("queue", pod, seq))
                await asyncio.sleep(0.1)

        beats: asyncio.Task[None] | None = None
        try:
            async with rc.service.lock:  # events holding the lock: the scenario's 3.5 s
                await asyncio.sleep(timeout / 2)  # the watch's next scan now waits for it...
                beats = asyncio.create_task(beating())  # ...before the first beat's handler
                await asyncio.sleep(3 * timeout)
            released = time.monotonic()
            # the watch took the lock first; once a queued beat is read, its turn has passed
            await wait_for_async(lambda: rc.core.last_seen.get(pod, 0) > released, 10, "a beat")
            assert lost(rc) == 0
        finally:
            if beats is not None:
                beats.cancel()
            await sender.close()
