"""The agent's re-ask (an ACK sent again when no order came for 4 heartbeat intervals) waits
while a report of its own is unanswered: at 12,500 pods re-asks piled onto the controller's
backlog (docs/scale.md). A receipt restarts the clock. A report's own re-sends back off."""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from collections.abc import Iterable

from hypothesis import given
from hypothesis import strategies as st

from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.protocol.environment import AgentConfig
from aegis.protocol.payloads import Receipt, ReceiptResult
from aegis.runtime.agent import MIN_REASK_S, REPORT_JITTER, AgentService, report_waits
from aegis.runtime.errors import BusError

from ..support import wait_for_async

POD = "job-worker-0"


class _SlowController:
    """A bus whose report requests are answered only when `answer` is set; ACKs fail."""

    connected = True

    def __init__(self) -> None:
        self.answer = asyncio.Event()
        self.acks: list[float] = []  # loop times of the re-asks

    async def request(self, subject: str, msg: Message, timeout: float = 2.0) -> Message:
        if msg.type is MessageType.ACK:
            self.acks.append(asyncio.get_running_loop().time())
            raise BusError("no controller here")
        await self.answer.wait()
        data = Receipt(ReceiptResult.APPLIED).to_data()
        return Message("job", "default", POD, MessageType.ACK, MessagePhase.COMMAND, data,
                       time.time(), 0)  # fmt: skip

    async def request_patiently(
        self, subject: str, msg: Message, waits: Iterable[float]
    ) -> Message:
        return await self.request(subject, msg)


async def test_no_reask_while_a_report_waits_for_its_receipt() -> None:
    cfg = AgentConfig("job", "default", POD, 0, 1, ("true",), heartbeat_s=0.05)
    agent = AgentService(cfg)
    bus = _SlowController()
    agent.bus = bus  # type: ignore[assignment]
    loop = asyncio.get_running_loop()
    assert agent.reask_s == MIN_REASK_S
    agent.heard = loop.time() - 10 * agent.reask_s  # no order for long: a re-ask is due
    finish = Message("job", "default", POD, MessageType.FINISH, MessagePhase.COMMAND,
                     {"incarnation": "i1", "node": "n"}, time.time(), 1)  # fmt: skip
    report = asyncio.create_task(agent._send_report(finish))
    reask = asyncio.create_task(agent._reask())
    try:
        started = loop.time()
        while loop.time() - started < 2.5 * agent.reask_s:  # the clock passes twice
            await asyncio.sleep(0.1)
        assert agent.reporting == 1 and bus.acks == []  # the report is unanswered: no re-ask
        bus.answer.set()
        await asyncio.wait_for(report, 5)
        answered = loop.time()
        assert agent.reporting == 0
        await wait_for_async(lambda: bus.acks, 5 * agent.reask_s, "the re-ask after the receipt")
        # the receipt restarted the clock: the next re-ask is one interval after it
        assert bus.acks[0] - answered >= agent.reask_s - 0.05
    finally:
        agent.stopped.set()
        for task in (report, reask):
            task.cancel()
        await asyncio.gather(report, reask, return_exceptions=True)


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
