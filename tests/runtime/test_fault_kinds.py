"""Faults are data: the controller decides each fault's kind and recovery level where it
handles the event, and the record carries the exit code, signal and rank it knows; nothing
downstream (metrics, timeline, `aegis ctl status`) reads them out of the message text."""

from __future__ import annotations

import json
import time
from pathlib import Path

from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.protocol.faults import FaultKind, FaultRecord, ProcessFailure, RecoveryLevel
from aegis.protocol.payloads import Report, Sender
from aegis.runtime.controller.core import ControllerCore, JobConfig
from aegis.runtime.controller.store import FileStatusStore

PODS = ("job-worker-0", "job-worker-1")


def message(
    pod: str,
    kind: MessageType,
    seq: int,
    *,
    inc: str = "i1",
    phase: MessagePhase = MessagePhase.COMMAND,
    failure: ProcessFailure | None = None,
    reason: str = "",
) -> Message:
    data = Report(Sender(inc, node=f"node-{pod[-1]}"), reason=reason, failure=failure).to_data()
    return Message("job", "default", pod, kind, phase, data, time.time(), seq)


def running(tmp: Path, faults: list[FaultRecord]) -> ControllerCore:
    """Both agents joined and bootchecked: the job is in RunCommand."""
    job = JobConfig("job", "default", PODS, 2)
    core = ControllerCore(job, FileStatusStore(tmp / "status.json"), on_fault=faults.append)
    for p in PODS:
        core.on_ack(message(p, MessageType.ACK, 0, phase=MessagePhase.BOOTCHECK))
    seq = int(core.state.masterSeq)
    for p in PODS:
        core.on_report(message(p, MessageType.FINISH, seq, phase=MessagePhase.BOOTCHECK))
    assert core.state.phase == "RunCommand"
    return core


def test_a_rank_killed_by_a_signal_is_a_level_1_error_with_its_rank_and_signal(
    tmp_path: Path,
) -> None:
    faults: list[FaultRecord] = []
    core = running(tmp_path, faults)
    failure = ProcessFailure(local_rank=1, rank=3, exit_code=-9)
    seq = int(core.state.masterSeq)
    out = core.on_report(message(PODS[1], MessageType.ERROR, seq, failure=failure, reason="x"))
    assert out.applied and core.state.phase == "Troubleshooting"
    (record,) = faults
    assert (record.kind, record.level) == (FaultKind.ERROR, RecoveryLevel.PROCESS)
    assert (record.exit_code, record.signal, record.rank) == (-9, 9, 3)
    assert record.node == "node-1" and record.message == "error: x"
    shown = core.status_view()["pods"][PODS[1]]["lastFault"]
    assert (shown["kind"], shown["level"], shown["signal"], shown["rank"]) == ("error", "1", 9, 3)


def test_a_failed_check_round_then_the_exit_it_causes_is_a_level_3_reschedule(
    tmp_path: Path,
) -> None:
    faults: list[FaultRecord] = []
    core = running(tmp_path, faults)
    core.on_report(message(PODS[0], MessageType.ERROR, int(core.state.masterSeq)))
    assert core.state.phase == "Troubleshooting"
    # the troubleshoot round finds the node bad (its reason happens to read like a command
    # error: the kind comes from the report's phase, not from its text)
    check = message(
        PODS[1],
        MessageType.ERROR,
        int(core.state.masterSeq),
        phase=MessagePhase.TROUBLESHOOT,
        reason="error: command exited 1",
    )
    assert core.on_report(check).applied
    core.on_pod_lost(PODS[1], "i1", 1, "node-1")
    kinds = [(f.pod, f.kind, f.level, f.exit_code) for f in faults]
    assert kinds == [
        (PODS[0], FaultKind.ERROR, RecoveryLevel.PROCESS, None),
        (PODS[1], FaultKind.CHECK_FAILED, None, None),
        (PODS[1], FaultKind.RESCHEDULE, RecoveryLevel.NODE, 1),
    ]
    assert [e.node for e in core.status.error_nodes] == ["node-1"]
    assert core.extras.counters["node_faults"] == 1


def test_exits_replacements_and_silences_each_have_their_kind(tmp_path: Path) -> None:
    faults: list[FaultRecord] = []
    core = running(tmp_path, faults)
    core.on_pod_lost(PODS[0], "i1", 76, "node-0")  # Level 2: the container restarts
    core.on_ack(message(PODS[0], MessageType.ACK, 0, inc="i2", phase=MessagePhase.BOOTCHECK))
    # a new incarnation joins before its old one's loss is reported
    core.on_ack(message(PODS[1], MessageType.ACK, 0, inc="i2", phase=MessagePhase.BOOTCHECK))
    core.on_heartbeat_lost(PODS[0])
    kinds = [(f.pod, f.kind, f.level, f.exit_code) for f in faults]
    assert kinds == [
        (PODS[0], FaultKind.CONTAINER_RESTART, RecoveryLevel.CONTAINER, 76),
        (PODS[1], FaultKind.POD_LOST, None, None),
        (PODS[0], FaultKind.LOST, None, None),
    ]
    assert faults[0].message == "agent exited 76" and faults[0].signal is None
    assert core.extras.counters["node_faults"] == 0


def test_a_record_round_trips_through_its_json_line() -> None:
    record = FaultRecord(
        "p", "10.0.0.1", "n", "10.0.0.2", "RunCommand", "error: x",
        kind=FaultKind.ERROR, level=RecoveryLevel.PROCESS, exit_code=-9, signal=9, rank=3,
    )  # fmt: skip
    assert FaultRecord.from_obj(json.loads(record.to_json())) == record
