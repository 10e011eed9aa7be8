"""The agent's re-ask (an ACK sent again when no order came for 4 heartbeat intervals) waits
while a report of its own is unanswered: at 12,500 pods re-asks piled onto the controller's
backlog (docs/scale.md). A receipt restarts the clock. A report's own re-sends back off."""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from hypothesis import given
from hypothesis import strategies as st

from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.protocol.environment import AgentConfig
from aegis.protocol.payloads import Receipt, ReceiptResult
from aegis.runtime.agent import MIN_REASK_S, REPORT_JITTER, AgentService, report_waits
from aegis.runtime.transport.auth import JobAccount, UserCredentials, new_user_keypair
from aegis.runtime.transport.bus import Bus
from aegis.runtime.transport.nats_server import NatsServer

from ..support import wait_for_async

POD = "train-a-worker-0"


@pytest_asyncio.fixture(loop_scope="module")
async def agent_bus(nats_server: NatsServer, job_a: JobAccount) -> AsyncIterator[Bus]:
    """The bus of the agent of POD, with that pod's own credential."""
    kp = new_user_keypair()
    creds = UserCredentials(job_a.worker_jwt(kp.public_key.decode(), POD), bytes(kp.seed))
    bus = await Bus.connect(
        nats_server.url, creds, name=POD, inbox_prefix=job_a.subjects.inbox_prefix(POD)
    )
    yield bus
    await bus.close()


@pytest.mark.asyncio(loop_scope="module")
async def test_no_reask_while_a_report_waits_for_its_receipt(
    nats_server: NatsServer, job_a: JobAccount, agent_bus: Bus
) -> None:
    """A real nats-server between the agent and a controller that answers the report only
    when told to (every copy of it then) and never answers an ACK."""
    answer = asyncio.Event()
    acks: list[float] = []  # loop times of the re-asks
    loop = asyncio.get_running_loop()
    ns, job = job_a.key

    async def behind(subject: str, msg: Message) -> Message | None:
        if msg.type is MessageType.ACK:
            acks.append(loop.time())
            return None
        await answer.wait()
        data = Receipt(ReceiptResult.APPLIED).to_data()
        return Message(job, ns, POD, MessageType.ACK, MessagePhase.COMMAND, data, time.time(), 0)

    master = await Bus.connect(nats_server.url, job_a.controller_credentials())
    await master.subscribe_each(job_a.subjects.reports, behind, concurrent=True)
    await master.flush()
    cfg = AgentConfig(job, ns, POD, 0, 1, ("true",), heartbeat_s=0.05)
    agent = AgentService(cfg)
    agent.bus = agent_bus
    assert agent.reask_s == MIN_REASK_S
    agent.heard = loop.time() - 10 * agent.reask_s  # no order for long: a re-ask is due
    finish = Message(job, ns, POD, MessageType.FINISH, MessagePhase.COMMAND,
                     {"incarnation": "i1", "node": "n"}, time.time(), 1)  # fmt: skip
    report = asyncio.create_task(agent._send_report(finish))
    reask = asyncio.create_task(agent._reask())
    try:
        started = loop.time()
        while loop.time() - started < 2.5 * agent.reask_s:  # the clock passes twice
            await asyncio.sleep(0.1)
        assert agent.reporting == 1 and acks == []  # the report is unanswered: no re-ask
        answer.set()
        await asyncio.wait_for(report, 5)
        answered = loop.time()
        assert agent.reporting == 0
        await wait_for_async(lambda: acks, 5 * agent.reask_s, "the re-ask after the receipt")
        # the receipt restarted the clock: the next re-ask is one interval after it
        assert acks[0] - answered >= agent.reask_s - 0.05
    finally:
        agent.stopped.set()
        for task in (report, reask):
            task.cancel()
        await asyncio.gather(report, reask, return_exceptions=True)
        await master.close()


@given(st.integers(min_value=0, max_value=2**32))
def test_report_waits_back_off_and_spread_the_fleet(seed: int) -> None:
    """The first two re-sends after 2 s (as before), then each wait at least the one before it
    less the jitter, never above 8 s plus the jitter; two agents do not wait in step."""
    waits = report_waits(random.Random(seed))
    assert all(2.0 <= w <= 2.0 * (1 + REPORT_JITTER) for w in waits[:2])
    assert all(w <= 8.0 * (1 + REPORT_JITTER) for w in waits)
    assert all(b >= a / (1 + REPORT_JITTER) for a, b in itertools.pairwise(waits))
    assert sum(waits) >= 50.0  # a series lasts long enough for a backlog of 12,500 reports
    assert waits != report_waits(random.Random(seed + 1))
