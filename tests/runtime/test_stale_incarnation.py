"""An incarnation declared lost cannot take its pod back from its replacement (issue 14): agents
now send their ACK again when they heard no order for a while, so a frozen agent that wakes up
after its replacement joined must be told to leave, not rejoined."""

from __future__ import annotations

import time
from pathlib import Path

from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.protocol.payloads import Eviction, Sender, parse_order
from aegis.runtime.controller.core import ControllerCore, JobConfig
from aegis.runtime.controller.store import FileStatusStore

PODS = ("job-worker-0", "job-worker-1")


def ack(pod: str, incarnation: str) -> Message:
    sender = Sender(incarnation, "node", "127.0.0.1", "127.0.0.1")
    return Message(
        "job", "ns", pod, MessageType.ACK, MessagePhase.BOOTCHECK, sender.to_data(), time.time(), 0
    )


def test_a_lost_incarnation_asking_again_is_evicted_not_rejoined(tmp_path: Path) -> None:
    core = ControllerCore(JobConfig("job", "ns", PODS, 2), FileStatusStore(tmp_path / "s.json"))
    core.on_ack(ack(PODS[0], "a0"))
    core.on_ack(ack(PODS[1], "b0"))
    assert str(core.state.phase) == "BootChecking"
    core.on_heartbeat_lost(PODS[1])  # b0 was frozen past the timeout
    assert core.extras.evicted[PODS[1]] == "b0"
    core.on_ack(ack(PODS[1], "b1"))  # its replacement joins
    assert core.extras.incarnations[PODS[1]] == "b1"
    steps = core.engine.seq_no
    reply = core.on_ack(ack(PODS[1], "b0")).reply  # b0 wakes up and asks again
    assert reply is not None and reply.type is MessageType.ORDER
    assert parse_order(reply.data) == Eviction("b0")
    assert core.extras.incarnations[PODS[1]] == "b1"  # the replacement keeps the pod
    assert core.engine.seq_no == steps  # no spec step taken
    # the replacement's own ACK sent again is answered with the current order
    again = core.on_ack(ack(PODS[1], "b1")).reply
    assert again is not None and not isinstance(parse_order(again.data), Eviction)


def test_a_lost_incarnation_asking_before_its_replacement_joined_is_evicted(
    tmp_path: Path,
) -> None:
    # the fault campaign's seeds 580 and 912 (agent frozen 5 s, heartbeat timeout 2 s):
    # on waking, its ACK sent again reached the controller before the replacement existed; it was
    # taken as a join, so the pod came back as the lost incarnation, whose exit (it learned it
    # was evicted) then counted a second failure: recoverCount 2 for one fault
    core = ControllerCore(JobConfig("job", "ns", PODS, 2), FileStatusStore(tmp_path / "s.json"))
    core.on_ack(ack(PODS[0], "a0"))
    core.on_ack(ack(PODS[1], "b0"))
    core.on_heartbeat_lost(PODS[1])  # b0 frozen past the timeout
    assert core.extras.incarnations[PODS[1]] is None
    steps = core.engine.seq_no
    reply = core.on_ack(ack(PODS[1], "b0")).reply  # b0 wakes up and asks again at once
    assert reply is not None and parse_order(reply.data) == Eviction("b0")
    assert core.extras.incarnations[PODS[1]] is None  # the pod waits for a new incarnation
    assert core.engine.seq_no == steps  # no spec step taken
    # the launcher then sees b0 exit: not a second loss
    recover = core.state.recoverCount
    core.on_pod_lost(PODS[1], "b0", 75, "node")
    assert core.state.recoverCount == recover
    core.on_ack(ack(PODS[1], "b1"))  # the replacement joins
    assert core.extras.incarnations[PODS[1]] == "b1"
