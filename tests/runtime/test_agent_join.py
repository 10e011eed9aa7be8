"""The agent's join: one ACK, sent again with one reply subject until the controller answers;
only a controller nobody can find counts against the connect timeout (real nats-server)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.protocol.environment import AgentConfig
from aegis.runtime.agent import service as agent_module
from aegis.runtime.agent.service import AgentService
from aegis.runtime.errors import TransportError
from aegis.runtime.transport.auth import JobAccount
from aegis.runtime.transport.bus import Bus
from aegis.runtime.transport.nats_server import NatsServer

from ..support.agent import connected_agent, job_nats

POD = "join-worker-0"


@pytest_asyncio.fixture
async def setup() -> AsyncIterator[tuple[NatsServer, JobAccount]]:
    async with job_nats("team", "join") as pair:
        yield pair


async def _agent(server: NatsServer, job: JobAccount, connect_timeout: float) -> AgentService:
    """An agent connected as its pod (its own credential), not yet joined."""
    cfg = AgentConfig("join", "team", POD, 0, 1, ("true",), connect_timeout=connect_timeout)
    return await connected_agent(server, job, cfg)


async def test_a_controller_that_is_behind_is_waited_for_past_the_connect_timeout(
    setup: tuple[NatsServer, JobAccount], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each series of copies is one ACK with one reply subject; a series that got no reply
    from a controller that received it restarts the connect deadline (short series here)."""
    monkeypatch.setattr(agent_module, "join_waits", lambda: [0.3, 0.3])
    server, job = setup
    ctl = await Bus.connect(server.url, job.controller_credentials(), name="controller")
    agent = await _agent(server, job, connect_timeout=0.5)
    copies: list[tuple[str, bytes]] = []

    async def behind(msg: Any) -> None:  # answers the fifth copy only: in the third series
        copies.append((msg.reply, msg.data))
        if len(copies) == 5:
            order = Message("join", "team", POD, MessageType.ORDER, MessagePhase.BOOTCHECK)
            await ctl._nc.publish(msg.reply, order.encode())

    try:
        await ctl._nc.subscribe(agent.join_subject, cb=behind)
        await ctl.flush()
        loop = asyncio.get_running_loop()
        started = loop.time()
        await asyncio.wait_for(agent._join(started + 0.5), 30)
        assert loop.time() - started > 1.2  # past the first deadline: not given up on
        series: dict[str, set[bytes]] = {}
        for reply, data in copies:
            series.setdefault(reply, set()).add(data)
        assert len(copies) == 5 and len(series) == 3
        assert all(len(acks) == 1 for acks in series.values())  # a series: one ACK's copies
        assert all(Message.decode(d).type is MessageType.ACK for _, d in copies)
        assert agent.orders.get_nowait().type is MessageType.ORDER
    finally:
        assert agent.bus is not None
        await agent.bus.close()
        await ctl.close()


async def test_nobody_subscribed_ends_the_join_at_the_connect_deadline(
    setup: tuple[NatsServer, JobAccount],
) -> None:
    server, job = setup
    agent = await _agent(server, job, connect_timeout=0.5)
    try:
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(TransportError, match="no controller to join"):
            await asyncio.wait_for(agent._join(started + 0.5), 10)
        assert loop.time() - started < 5
    finally:
        assert agent.bus is not None
        await agent.bus.close()


async def test_a_bus_that_fails_ends_the_join_at_the_connect_deadline(
    setup: tuple[NatsServer, JobAccount],
) -> None:
    """Not a controller behind (that is only a series of copies nobody refused and nobody
    answered): a bus that fails (here closed; in a job: nats-server gone as the job ended)
    counts against the deadline, as before (an evicted agent's join hung for 150 s)."""
    server, job = setup
    agent = await _agent(server, job, connect_timeout=0.5)
    assert agent.bus is not None
    await agent.bus.close()
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(TransportError, match="no controller to join"):
        await asyncio.wait_for(agent._join(started + 0.5), 10)
    assert loop.time() - started < 5
