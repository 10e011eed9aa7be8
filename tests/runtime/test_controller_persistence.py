"""A failed save never leaves the controller's memory ahead of its disk (issue 11).

The store below is the real FileStatusStore with one injected fault: its disk refuses writes
while `broken` is set (as root, a read-only directory cannot be made here). Each event that
hits the fault is rolled back in memory, logs no step, and is applied exactly once when it
comes again.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aegis.checks.faultlog import FaultRecord
from aegis.generated.aegis_phase import Label
from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.runtime.controller import SAVE_BACKOFF_S, ControllerCore, JobConfig, PersistenceError
from aegis.runtime.controller_service import ControllerService
from aegis.runtime.engine import Engine, runtime_constants
from aegis.runtime.errors import CorruptStatusError
from aegis.runtime.lifetime import supervised
from aegis.runtime.steplog import StepLog, read_steplog
from aegis.runtime.store import FileStatusStore, Status
from aegis.runtime.transport.auth import JobAccount
from aegis.runtime.transport.bus import Bus
from aegis.runtime.transport.nats_server import NatsServer
from aegis.values import ModelValue

from ..support import wait_for_async

PODS = ("job-worker-0", "job-worker-1")
JOB = JobConfig("job", "default", PODS, 2)


class FlakyDisk(FileStatusStore):
    """FileStatusStore whose writes fail with EIO while `broken` is set, or for the next
    `failing` writes."""

    broken = False
    failing = 0

    def save(self, status: Status) -> None:
        if self.broken or self.failing > 0:
            self.failing -= 1
            raise OSError(5, "Input/output error")
        super().save(status)


def report(pod: str, kind: MessageType, seq: int, inc: str = "i1") -> Message:
    data = {"incarnation": inc, "node": "node-1"}
    return Message("job", "default", pod, kind, MessagePhase.COMMAND, data, time.time(), seq)


def running(tmp: Path) -> tuple[ControllerCore, FlakyDisk, StepLog]:
    store = FlakyDisk(tmp / "status.json")
    steplog = StepLog(tmp / "steps.jsonl")
    core = ControllerCore(JobConfig("job", "default", PODS, 2), store, steplog)
    for p in PODS:
        core.on_ack(report(p, MessageType.ACK, 0))
    for p in PODS:
        core.on_report(report(p, MessageType.FINISH, int(core.state.masterSeq)))
    assert core.state.phase == "RunCommand"
    return core, store, steplog


def test_a_failed_save_rolls_the_event_back_and_it_is_applied_once_later(tmp_path: Path) -> None:
    core, store, steplog = running(tmp_path)
    core.mark_published()
    before, on_disk, seq_no = core.state, store.load(), core.engine.seq_no
    error = report(PODS[1], MessageType.ERROR, int(core.state.masterSeq))
    store.broken = True
    with pytest.raises(PersistenceError, match="rolled back"):
        core.on_report(error)
    assert core.state == before and core.engine.seq_no == seq_no
    assert store.load() == on_disk and not core.needs_publish
    health = core.status_view()["persistence"]  # shown by `aegis ctl status`
    assert (health["ok"], health["failures"]) == (False, len(SAVE_BACKOFF_S) + 1)
    assert "Input/output error" in health["lastError"]
    store.broken = False
    assert core.on_report(error).reply is not None  # the agent's retry
    assert core.state.phase == "Troubleshooting" and core.state.recoverCount == 1
    assert store.load().recover_count == 1  # type: ignore[union-attr]
    assert core.status_view()["persistence"]["ok"] is True
    steplog.close()
    logged = [r["seq_no"] for r in read_steplog(tmp_path / "steps.jsonl") if "seq_no" in r]
    assert logged == sorted(set(logged)), "a rolled-back step was logged"


def test_a_save_that_fails_briefly_is_retried_and_the_event_goes_through(
    tmp_path: Path,
) -> None:
    faults: list[FaultRecord] = []
    core, store, _ = running(tmp_path)
    core.on_fault = faults.append
    store.failing = len(SAVE_BACKOFF_S)  # one try short of giving up
    core.on_report(report(PODS[1], MessageType.ERROR, int(core.state.masterSeq)))
    assert core.state.phase == "Troubleshooting"
    assert store.load().phase == "Troubleshooting"  # type: ignore[union-attr]
    assert core.status_view()["persistence"]["failures"] == len(SAVE_BACKOFF_S)
    assert [f for f in faults if "status save failed" in f.message] == []  # it went through
    store.failing = len(SAVE_BACKOFF_S) + 1  # now it gives up: one fault record says so
    with pytest.raises(PersistenceError):
        core.on_report(report(PODS[0], MessageType.ERROR, int(core.state.masterSeq)))
    assert [f.pod for f in faults if "status save failed" in f.message] == ["controller"]


def test_every_kind_of_event_is_rolled_back(tmp_path: Path) -> None:
    core, store, _ = running(tmp_path)
    before = core.checkpoint_memory()
    store.broken = True
    events = [
        lambda: core.on_pod_lost(PODS[0], "i1", 1, "node-1"),
        lambda: core.on_heartbeat_lost(PODS[1]),
        core.on_quit,
        lambda: core.taint("node-9", "bad"),
        lambda: core.on_ack(report(PODS[0], MessageType.ACK, 0, inc="i2")),  # a restarted pod
    ]
    for event in events:
        with pytest.raises(PersistenceError):
            event()
        assert core.state == before[0] and core.status == before[4]
        assert core.extras.to_json() == before[3].to_json()


def test_a_failing_step_hook_leaves_the_engine_unchanged() -> None:
    def broken_log(_: object) -> None:
        raise OSError(28, "No space left on device")

    engine = Engine(runtime_constants(PODS, 2), on_step=broken_log)
    state, seq = engine.state, engine.seq_no
    with pytest.raises(OSError):
        engine.observe(Label.agentJoin, w=ModelValue(PODS[0]))
    assert engine.state == state and engine.seq_no == seq


async def test_a_failed_background_task_is_reported_not_silent() -> None:
    failures: list[BaseException] = []

    async def boom() -> None:
        raise RuntimeError("heartbeat scan crashed")

    async def forever() -> None:
        await asyncio.Event().wait()

    task = supervised(boom(), "scan", failures.append)
    with pytest.raises(RuntimeError):
        await task
    await asyncio.sleep(0)  # done callbacks run on the next loop iteration
    assert [str(e) for e in failures] == ["heartbeat scan crashed"]
    quiet = supervised(forever(), "idle", failures.append)
    quiet.cancel()
    with pytest.raises(asyncio.CancelledError):
        await quiet
    await asyncio.sleep(0)
    assert len(failures) == 1  # cancelling is a normal end


def _tamper(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    status = json.loads(path.read_text())
    change(status)
    path.write_text(json.dumps(status))


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda s: s["specState"]["variables"].update(phase="Bogus"), "ValidPhase"),
        (lambda s: s["specState"]["variables"].update(recoverCount=99), "RecoverCountBound"),
        (lambda s: s["specState"]["variables"].pop("retries"), "lacks variable"),
        (lambda s: s["specState"]["variables"].update(masterSeq={"x": 1}), "not a state"),
    ],
    ids=["bad-phase", "count-out-of-bounds", "missing-variable", "bad-value"],
)
def test_a_saved_state_the_spec_does_not_allow_is_refused(
    tmp_path: Path, change: Callable[[dict[str, Any]], None], says: str
) -> None:
    _, _, steplog = running(tmp_path)
    steplog.close()
    _tamper(tmp_path / "status.json", change)
    with pytest.raises(CorruptStatusError, match=says) as err:
        ControllerCore(
            JobConfig("job", "default", PODS, 2), FileStatusStore(tmp_path / "status.json")
        )
    assert "move the status file away" in str(err.value)


def test_another_jobs_state_is_refused(tmp_path: Path) -> None:
    _, _, steplog = running(tmp_path)
    steplog.close()
    bigger = JobConfig("job", "default", (*PODS, "job-worker-2"), 2)
    with pytest.raises(CorruptStatusError, match="another job's state"):
        ControllerCore(bigger, FileStatusStore(tmp_path / "status.json"))


async def test_a_resumed_controller_gives_agents_a_full_timeout_from_when_it_serves(
    tmp_path: Path, nats_server: NatsServer, job_a: JobAccount
) -> None:
    """A restart that takes longer than the heartbeat timeout (a loaded machine) must not
    declare the job's agents lost: that counted a second retry (issue 14's test_run_resume)."""
    pods = ("train-a-worker-0", "train-a-worker-1")
    job = JobConfig("train-a", "team", pods, 2, heartbeat_timeout=10.0)
    store = FileStatusStore(tmp_path / "status.json")
    first = ControllerCore(job, store)
    for p in pods:  # both agents joined before the controller died
        ack = Message("train-a", "team", p, MessageType.ACK, MessagePhase.BOOTCHECK,
                      {"incarnation": "i1"}, time.time(), 0)  # fmt: skip
        first.on_ack(ack)
    resumed = ControllerCore(job, store)  # the restarted controller loads them
    assert set(resumed.last_seen) == set(pods)
    started = time.monotonic()
    bus = await Bus.connect(nats_server.url, job_a.controller_credentials())
    service = ControllerService(resumed, bus)
    task = asyncio.create_task(service.run())
    try:
        await wait_for_async(
            lambda: min(resumed.last_seen.values()) >= started, 5, "the agents' clocks reset"
        )
    finally:
        service.stop(0)
        await asyncio.wait_for(task, 10)
        await bus.close()
