"""The controller's heartbeat budget: a job of many pods is asked to beat less often (each
order's `beat_s`), so that its agents send at most `heartbeat_rate` beats a second together,
and a pod counts as lost only after 4 of those longer beats."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest_asyncio
from hypothesis import example, given
from hypothesis import strategies as st

from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.protocol.environment import AgentConfig
from aegis.protocol.payloads import MAX_BEAT_S, Order, Sender
from aegis.runtime.agent.core import AgentCore, Work
from aegis.runtime.agent.service import AgentService
from aegis.runtime.controller.core import ControllerCore, JobConfig
from aegis.runtime.controller.store import FileStatusStore
from aegis.runtime.transport.auth import JobAccount
from aegis.runtime.transport.nats_server import NatsServer

from ..support import wait_for_async
from ..support.agent import connected_agent, job_nats
from ..support.controller import RunningController, running_controller


def _job(pods: int, rate: float, timeout: float = 10.0) -> JobConfig:
    names = tuple(f"hb-worker-{i}" for i in range(pods))
    return JobConfig("hb", "default", names, 2, heartbeat_timeout=timeout, heartbeat_rate=rate)


def _sized(pods: int, rate: float, timeout: float) -> JobConfig:
    """A job of `pods` pods for the budget's arithmetic alone (one name repeated: cheap)."""
    pods_ = ("hb-worker-0",) * pods
    return JobConfig("hb", "default", pods_, 2, heartbeat_timeout=timeout, heartbeat_rate=rate)


@example(pods=1039, rate=5e-324, own=6.1, timeout=116.4)  # found: 10 * pods / rate overflowed
@given(
    pods=st.integers(1, 200_000),
    rate=st.floats(0, 1e5, allow_nan=False),
    own=st.floats(0.1, 30),
    timeout=st.floats(-1, 600, allow_nan=False),
)
def test_agents_that_follow_the_orders_stay_within_the_budget(
    pods: int, rate: float, own: float, timeout: float
) -> None:
    job = _sized(pods, rate, timeout)
    period = max(own, job.beat_s)  # what an agent beats at (AgentCore.heartbeat_period)
    if rate > 0 and pods / rate <= MAX_BEAT_S:
        assert pods / period <= rate * (1 + 1e-9)  # the whole job's beats a second
    elif rate > 0:  # past what an order may ask: the longest period, no longer
        assert job.beat_s == MAX_BEAT_S
    else:
        assert job.beat_s == 0 and period == own  # no budget: the agents' own period
    if timeout > 0:  # never a loss before 4 of the beats asked for, nor before the timeout
        assert job.silence_timeout >= max(timeout, 4 * job.beat_s)
        assert job.silence_timeout in (timeout, 4 * job.beat_s)
    else:
        assert job.silence_timeout == timeout  # 0: never declare a pod lost


def _ack(pod: str) -> Message:
    data = {"incarnation": "i1"}
    return Message("hb", "default", pod, MessageType.ACK, MessagePhase.BOOTCHECK, data, time.time())


def test_orders_ask_for_the_budgets_period_and_silence_is_judged_by_it(tmp_path: Path) -> None:
    """3 pods at 0.1 beats a second: 30 s beats, a pod lost after 120 s of silence (not 10)."""
    job = _job(3, 0.1)
    core = ControllerCore(job, FileStatusStore(tmp_path / "status.json"))
    replies = [core.on_ack(_ack(pod)).reply for pod in job.pods]
    orders = [Order.from_data(r.data) for r in replies if r is not None]
    assert len(orders) == 3 and all(o.beat_s == 30.0 for o in orders)
    assert Order.from_data(core.orders.order_for().data).beat_s == 30.0  # the broadcast too
    now = time.monotonic()
    core.last_seen[job.pods[1]] = now - 60.0  # past the configured 10 s, within 4 beats
    assert core.silent_pods(now) == []
    core.last_seen[job.pods[1]] = now - 121.0
    assert core.silent_pods(now) == [job.pods[1]]
    core.on_heartbeat_lost(job.pods[1])
    assert "missed heartbeats for 120 s" in core.faults.last[job.pods[1]].message


def test_a_small_job_keeps_its_configured_timeout(tmp_path: Path) -> None:
    job = _job(3, 1000.0)
    core = ControllerCore(job, FileStatusStore(tmp_path / "status.json"))
    for pod in job.pods:
        core.on_ack(_ack(pod))
    now = time.monotonic()
    core.last_seen[job.pods[0]] = now - 11.0
    assert core.silent_pods(now) == [job.pods[0]]


def _ack_reply(tmp_path: Path, rate: float) -> Message:
    """A real controller's reply to the ACK of the first of its 10 pods (the bootcheck order)."""
    job = _job(10, rate)
    core = ControllerCore(job, FileStatusStore(tmp_path / f"status-{rate}.json"))
    reply = core.on_ack(_ack(job.pods[0])).reply
    assert reply is not None
    return reply


def test_the_agent_beats_at_the_longer_of_its_own_period_and_the_orders(tmp_path: Path) -> None:
    core = AgentCore("hb", "default", "hb-worker-0", Sender("i1"))
    assert core.heartbeat_period(5.0) == 5.0  # no order yet: its own
    core.on_order(_ack_reply(tmp_path, 0.8), working=False)  # Pending: no work, but heard
    assert core.malformed == 0
    assert core.heartbeat_period(5.0) == 12.5  # 10 pods at 0.8 beats a second
    assert core.heartbeat_period(20.0) == 20.0  # an agent told to beat slower keeps it
    core.on_order(_ack_reply(tmp_path, 0.0), working=False)  # the newest order's holds
    assert core.heartbeat_period(5.0) == 5.0


@pytest_asyncio.fixture
async def nats() -> AsyncIterator[tuple[NatsServer, JobAccount]]:
    async with job_nats("team", "budget") as pair:
        yield pair


@dataclass
class Beating:
    """A real controller and a real agent of its one pod, joined (the ACK's reply, not yet
    taken, is `first`); `beats`: the loop times of the pod's heartbeats on the bus."""

    ctl: RunningController
    agent: AgentService
    first: Message
    beats: list[float]
    beating: asyncio.Task[None]  # the agent's heartbeat loop

    def waiting_s(self) -> float:
        """How long the heartbeat loop's current wait is (0 while it is not waiting)."""
        frame = self.beating.get_coro().cr_frame  # type: ignore[union-attr]
        return float(frame.f_locals.get("wait", 0.0)) if frame is not None else 0.0


@contextlib.asynccontextmanager
async def joined_agent(
    nats: tuple[NatsServer, JobAccount], tmp_path: Path, rate: float
) -> AsyncIterator[Beating]:
    """The agent's own period is 0.1 s; the controller's budget is `rate` beats a second. The
    agent's heartbeat loop runs from the block's start; it and the agent end with it."""
    server, job = nats
    pod = "budget-worker-0"
    async with running_controller(
        server.url, job, tmp_path / "status.json", [pod], heartbeat_rate=rate
    ) as ctl:
        cfg = AgentConfig("budget", "team", pod, 0, 1, ("true",), incarnation="i1", heartbeat_s=0.1)
        agent = await connected_agent(server, job, cfg)
        beats: list[float] = []
        loop = asyncio.get_running_loop()

        async def heard(msg: object) -> None:
            beats.append(loop.time())

        await ctl.bus._nc.subscribe(job.subjects.heartbeat(pod, "i1"), cb=heard)
        await ctl.bus.flush()
        beat = None
        try:
            await asyncio.wait_for(agent._join(loop.time() + 10), 20)
            first = agent.orders.get_nowait()  # the ACK's reply: the bootcheck order
            beat = asyncio.create_task(agent._heartbeat())
            yield Beating(ctl, agent, first, beats, beat)
        finally:
            if beat is not None:
                beat.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await beat
            await agent._stop_work()
            assert agent.bus is not None
            await agent.bus.close()


async def test_an_agent_beats_as_slowly_as_its_controllers_budget_asks(
    nats: tuple[NatsServer, JobAccount], tmp_path: Path
) -> None:
    """Real controller and agent: 1 pod at 1 beat a second asks for 1 s beats; the agent's
    own 0.1 s period would send ~10 a second."""
    async with joined_agent(nats, tmp_path, rate=1.0) as run:
        assert isinstance(run.agent.core.on_order(run.first, working=False), Work)
        await wait_for_async(lambda: len(run.beats) >= 3, 30, "three heartbeats")
        gaps = [b - a for a, b in itertools.pairwise(run.beats)]
        assert min(gaps) > 0.8, gaps
        assert run.ctl.core.silent_pods() == []


async def test_an_order_that_shortens_the_period_wakes_a_sleeping_heartbeat(
    nats: tuple[NatsServer, JobAccount], tmp_path: Path
) -> None:
    """A controller restarted with a larger budget asks for a shorter period (and judges
    silence by it): the agent must not sleep out the 10 s beat the first controller asked for
    (1 pod at 0.1 beats a second). Its own period is 0.1 s, so once the order without a
    budget comes it beats at once."""
    async with joined_agent(nats, tmp_path, rate=0.1) as run:
        first = run.first
        assert first.data["beatS"] == 10.0
        await run.agent._take(first)  # the agent's own path: it works on the bootcheck
        await wait_for_async(lambda: run.waiting_s() > 5, 5, "the 10 s wait to begin")
        no_budget = Message(
            first.aegis_name,
            first.aegis_namespace,
            first.pod_name,
            first.type,
            first.phase,
            {**first.data, "beatS": 0.0},
            first.timestamp,
            first.seq,
        )
        sent = asyncio.get_running_loop().time()
        await run.agent._take(no_budget)  # the same order from a controller with no budget
        await wait_for_async(lambda: len(run.beats) >= 2, 5, "beats at the shorter period")
        assert run.beats[0] - sent < 5, run.beats  # not the 10 s the first order asked for
