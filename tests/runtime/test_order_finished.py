"""The order's `finished` count is kept incrementally (a site of the generated tables); after
any sequence of events it equals a count over every worker."""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st

from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.runtime.controller.core import ControllerCore, JobConfig
from aegis.values import ModelValue, apply

from ..support import MemoryStore

PODS = tuple(f"job-worker-{i}" for i in range(6))
KINDS = (MessageType.ACK, MessageType.FINISH, MessageType.FINISH, MessageType.ERROR)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(PODS), st.sampled_from(KINDS)), max_size=60))
def test_the_finished_count_equals_a_full_count(events: list[tuple[str, MessageType]]) -> None:
    core = ControllerCore(JobConfig("job", "default", PODS, 2), MemoryStore())
    for pod in PODS[:3]:  # a head start, so that some runs reach RunCommand
        core.on_ack(_msg(pod, MessageType.ACK, 0))
    for pod, kind in events:
        core.on_ack(_msg(pod, MessageType.ACK, 0)) if kind == MessageType.ACK else core.on_report(
            _msg(pod, kind, int(core.state.masterSeq))
        )
        s = core.state
        full = sum(1 for p in PODS if apply(s.finished, ModelValue(p)))
        assert core.orders._order_base().finished == full


def _msg(pod: str, kind: MessageType, seq: int) -> Message:
    data = {"incarnation": "i1", "node": f"node-{pod[-1]}"}
    return Message("job", "default", pod, kind, MessagePhase.COMMAND, data, time.time(), seq)
