"""A failed save never leaves the controller's memory ahead of its disk (issue 11).

The store below is the real FileStatusStore with one injected fault: its disk refuses writes
while `broken` is set (as root, a read-only directory cannot be made here). Each event that
hits the fault is rolled back in memory, logs no step, and is applied exactly once when it
comes again.
"""

from __future__ import annotations

import asyncio
import functools
import json
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aegis.checks.faultlog import FaultRecord
from aegis.generated.aegis_phase import Label, State
from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.protocol.faults import FaultKind
from aegis.retry import STATUS_SAVE
from aegis.runtime.controller.core import ControllerCore, JobConfig, PersistenceError
from aegis.runtime.controller.group_commit import GroupCommit
from aegis.runtime.controller.service import ControllerService
from aegis.runtime.controller.store import FileStatusStore, Status
from aegis.runtime.controller.wal import WriteAheadLog, encode_line
from aegis.runtime.engine import Engine, runtime_constants
from aegis.runtime.errors import CorruptStatusError
from aegis.runtime.lifetime import supervised
from aegis.runtime.steplog import StepLog, read_steplog
from aegis.runtime.transport.auth import JobAccount
from aegis.runtime.transport.bus import Bus
from aegis.runtime.transport.nats_server import NatsServer
from aegis.values import ModelValue

from ..support import wait_for_async

PODS = ("job-worker-0", "job-worker-1")
PODS3 = (*PODS, "job-worker-2")
JOB = JobConfig("job", "default", PODS, 2)
SAVE_TRIES = STATUS_SAVE.tries or 0  # a commit's write is tried this many times


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
    core.orders.mark_published()
    before, on_disk, seq_no = core.state, store.load(), core.engine.seq_no
    error = report(PODS[1], MessageType.ERROR, int(core.state.masterSeq))
    store.broken = True
    with pytest.raises(PersistenceError, match="rolled back"):
        core.on_report(error)
    assert core.state == before and core.engine.seq_no == seq_no
    assert store.load() == on_disk and not core.orders.needs_publish
    health = core.status_view()["persistence"]  # shown by `aegis ctl status`
    assert (health["ok"], health["failures"]) == (False, SAVE_TRIES)
    assert "Input/output error" in health["lastError"]
    store.broken = False
    assert core.on_report(error).reply is not None  # the agent's retry
    assert core.state.phase == "Troubleshooting" and core.state.recoverCount == 1
    assert store.load().recover_count == 1  # type: ignore[union-attr]
    assert core.status_view()["persistence"]["ok"] is True
    steplog.close()
    logged = [r["seq_no"] for r in read_steplog(tmp_path / "steps.jsonl") if "seq_no" in r]
    assert logged == sorted(set(logged)), "a rolled-back step was logged"


def test_a_pod_entry_is_stamped_when_it_changes_and_kept_when_it_does_not(
    tmp_path: Path,
) -> None:
    core, store, _ = running(tmp_path)
    stamps = {p: i.updated_timestamp for p, i in core.status.pod_infos.items()}
    kept = core.status.pod_infos[PODS[1]]
    before = time.time()
    core.on_report(report(PODS[0], MessageType.FINISH, int(core.state.masterSeq)))
    saved = store.load()
    assert saved is not None and saved.pod_infos == core.status.pod_infos
    changed = saved.pod_infos[PODS[0]]
    assert changed.inner_phase != "Pending" and changed.updated_timestamp >= before
    assert changed.updated_timestamp > stamps[PODS[0]]
    assert core.status.pod_infos[PODS[1]] is kept  # untouched: the same entry, its stamp


def test_a_save_that_fails_briefly_is_retried_and_the_event_goes_through(
    tmp_path: Path,
) -> None:
    faults: list[FaultRecord] = []
    core, store, _ = running(tmp_path)
    core.faults.sink = faults.append
    store.failing = SAVE_TRIES - 1  # one try short of giving up
    core.on_report(report(PODS[1], MessageType.ERROR, int(core.state.masterSeq)))
    assert core.state.phase == "Troubleshooting"
    assert store.load().phase == "Troubleshooting"  # type: ignore[union-attr]
    assert core.status_view()["persistence"]["failures"] == SAVE_TRIES - 1
    assert [f for f in faults if f.kind is FaultKind.SAVE_FAILED] == []  # it went through
    store.failing = SAVE_TRIES  # now it gives up: one fault record says so
    with pytest.raises(PersistenceError):
        core.on_report(report(PODS[0], MessageType.ERROR, int(core.state.masterSeq)))
    assert [f.pod for f in faults if f.kind is FaultKind.SAVE_FAILED] == ["controller"]


def test_every_kind_of_event_is_rolled_back(tmp_path: Path) -> None:
    core, store, _ = running(tmp_path)
    before = core.journal.begin()
    store.broken = True
    events = [
        lambda: core.on_pod_lost(PODS[0], "i1", 1, "node-1"),
        lambda: core.on_heartbeat_lost(PODS[1]),
        core.on_quit,
        lambda: core.taint("node-9", "bad"),
        lambda: core.on_ack(report(PODS[0], MessageType.ACK, 0, inc="i2")),  # a restarted pod
    ]
    extras, reasons = core.extras.to_json(), dict(core.extras.reasons)
    for event in events:
        with pytest.raises(PersistenceError):
            event()
        assert core.state == before.state and core.status is before.status
        assert core.extras.to_json() == extras and core.extras.reasons == reasons
        assert not core.journal.dirty and core.extras.undo.mark() == 0


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


# ---------------- issue 14: the status's own fields are checked on load ----------------


def _pods(s: dict[str, Any]) -> dict[str, Any]:
    return dict(s["podInfos"])


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda s: s.update(phase="Bogus"), "field phase is 'Bogus'"),
        (lambda s: s.update(recoverCount=2), "field recoverCount is 2"),
        (lambda s: s.update(shouldQuit=True), "field shouldQuit is True"),
        (lambda s: s.update(masterSeq=99), "field masterSeq is 99"),
        (lambda s: s["podInfos"].pop(PODS[1]), "field podInfos lists pods"),
        (lambda s: s["podInfos"].update(x=s["podInfos"][PODS[0]]), "field podInfos lists pods"),
        (
            lambda s: s["podInfos"][PODS[0]].update(retries=3),
            r"podInfos\['job-worker-0'\]\.retries",
        ),
        (
            lambda s: s["podInfos"][PODS[1]].update(innerPhase="Failed"),
            r"podInfos\['job-worker-1'\]\.innerPhase",
        ),
        (lambda s: s["workerSeqs"].update({PODS[0]: 7}), r"workerSeqs\['job-worker-0'\] is 7"),
        (
            lambda s: s["runtime"]["incarnations"].update({"job-worker-9": "i1"}),
            "runtime.incarnations names pods this job does not have",
        ),
    ],
    ids=[
        "phase",
        "recoverCount",
        "shouldQuit",
        "masterSeq",
        "pod-missing",
        "pod-extra",
        "retries",
        "innerPhase",
        "workerSeq",
        "incarnation",
    ],
)
def test_a_status_whose_own_fields_disagree_with_its_state_is_refused(
    tmp_path: Path, change: Callable[[dict[str, Any]], None], says: str
) -> None:
    """Valid JSON, a valid spec state, but a top-level field edited: named, never loaded."""
    _, _, steplog = running(tmp_path)
    steplog.close()
    path = tmp_path / "status.json"
    _tamper(path, change)
    text = path.read_text()
    with pytest.raises(CorruptStatusError, match=says) as err:
        ControllerCore(JOB, FileStatusStore(path))
    assert "move the status file away" in str(err.value)
    assert path.read_text() == text  # refused, not overwritten


# ---------------- the write-ahead log (issue 12) ----------------


class FlakyWal(WriteAheadLog):
    """A WAL whose appends fail with EROFS while `broken` is set (the state dir turned
    read-only: as root a real read-only directory cannot be made here)."""

    broken = False

    def append(self, number: int, body: Any) -> None:
        if self.broken:
            with open(self.path, "ab") as f:  # a partial line reaches the file first
                f.write(b'0badc0de {"n":')
            raise OSError(30, "Read-only file system")
        super().append(number, body)


def with_wal(tmp: Path, pods: tuple[str, ...] = PODS) -> tuple[ControllerCore, FlakyDisk, FlakyWal]:
    store = FlakyDisk(tmp / "status.json")
    wal = FlakyWal(tmp / "wal.jsonl")
    core = ControllerCore(JobConfig("job", "default", pods, 2), store, wal=wal)
    return core, store, wal


def join_and_run(core: ControllerCore) -> None:
    for p in core.job.pods:
        core.on_ack(report(p, MessageType.ACK, 0))
    for p in core.job.pods:
        core.on_report(report(p, MessageType.FINISH, int(core.state.masterSeq)))
    assert core.state.phase == "RunCommand"


def resume(tmp: Path, pods: tuple[str, ...] = PODS) -> ControllerCore:
    job = JobConfig("job", "default", pods, 2)
    return ControllerCore(
        job, FileStatusStore(tmp / "status.json"), wal=WriteAheadLog(tmp / "wal.jsonl")
    )


def test_a_failed_wal_append_rolls_back_and_leaves_no_partial_record(tmp_path: Path) -> None:
    core, _, wal = with_wal(tmp_path)
    join_and_run(core)
    before, records = core.state, len(WriteAheadLog(wal.path).read())
    error = report(PODS[1], MessageType.ERROR, int(core.state.masterSeq))
    wal.broken = True
    with pytest.raises(PersistenceError, match="rolled back"):
        core.on_report(error)
    assert core.state == before
    health = core.status_view()["persistence"]
    assert (health["ok"], health["failures"]) == (False, SAVE_TRIES)
    assert "Read-only file system" in health["lastError"]
    assert len(WriteAheadLog(wal.path).read()) == records  # the partial lines were cut off
    assert resume(tmp_path).state == before  # disk = memory
    wal.broken = False
    core.on_report(error)  # the agent's retry: applied once
    assert (core.state.phase, core.state.recoverCount) == ("Troubleshooting", 1)
    again = resume(tmp_path)
    assert again.state == core.state and again.extras.reasons == {PODS[1]: "error reported"}


def test_a_failed_snapshot_loses_nothing_the_wal_holds(tmp_path: Path) -> None:
    core, store, _ = with_wal(tmp_path)
    store.broken = True  # the status file cannot be replaced; the WAL still works
    join_and_run(core)  # phase changes: snapshots due, all failing
    core.on_report(report(PODS[0], MessageType.ERROR, int(core.state.masterSeq)))
    assert core.status_view()["persistence"]["ok"] is False  # shown, not raised
    on_disk = json.loads((tmp_path / "status.json").read_text())
    assert on_disk["phase"] == "Pending"  # the first snapshot: stale, but the WAL has the rest
    again = resume(tmp_path)
    assert again.state == core.state and again.state.recoverCount == 1
    store.broken = False
    core.on_report(report(PODS[1], MessageType.FINISH, int(core.state.masterSeq)))
    assert json.loads((tmp_path / "status.json").read_text())["recoverCount"] == 1


def test_the_status_file_is_rewritten_at_phase_changes_not_per_event(tmp_path: Path) -> None:
    saves: list[str] = []

    class Counting(FileStatusStore):
        def save(self, status: Status) -> None:
            saves.append(status.phase)
            super().save(status)

    pods = tuple(f"job-worker-{i}" for i in range(6))
    job = JobConfig("job", "default", pods, 2)
    wal = WriteAheadLog(tmp_path / "wal.jsonl")
    core = ControllerCore(job, Counting(tmp_path / "status.json"), wal=wal)
    join_and_run(core)  # 12 events, 3 phases
    assert saves == ["Pending", "BootChecking", "RunCommand"]
    assert WriteAheadLog(wal.path).read() == []  # emptied at the last snapshot
    core.on_report(report(pods[0], MessageType.FINISH, int(core.state.masterSeq)))
    assert len(saves) == 3 and [r.number for r in WriteAheadLog(wal.path).read()] == [13]
    s = json.loads((tmp_path / "status.json").read_text())
    assert (s["phase"], s["runtime"]["walRecord"]) == ("RunCommand", 12)


def test_a_wal_record_does_not_grow_with_the_pods(tmp_path: Path) -> None:
    """The per-event write is O(what the event changed), not O(pods)."""
    sizes = []
    for n in (4, 400):
        pods = tuple(f"job-worker-{i}" for i in range(n))
        (tmp_path / str(n)).mkdir()
        core, _, wal = with_wal(tmp_path / str(n), pods)
        join_and_run(core)
        before = wal.size
        core.on_report(report(pods[1], MessageType.ERROR, int(core.state.masterSeq)))
        sizes.append(wal.size - before)
    assert sizes[1] <= sizes[0] + 16, sizes  # pod names are as long; nothing per pod


def _rewrite_record(path: Path, index: int, change: Callable[[dict[str, Any]], None]) -> None:
    records = WriteAheadLog(path).read()
    lines = []
    for i, rec in enumerate(records):
        body = dict(rec.body)
        if i == index:
            change(body)
        lines.append(encode_line(rec.number, body))
    path.write_bytes(b"".join(lines))


def two_records(tmp: Path) -> tuple[ControllerCore, FlakyWal, State]:
    """A 3-pod job in BootChecking (snapshot: records 1-3) whose WAL holds records 4 and 5
    (two pods finished); also the state after record 4."""
    core, _, wal = with_wal(tmp, PODS3)
    for p in PODS3:
        core.on_ack(report(p, MessageType.ACK, 0))
    core.on_report(report(PODS3[0], MessageType.FINISH, int(core.state.masterSeq)))
    at_four = core.state
    core.on_report(report(PODS3[1], MessageType.FINISH, int(core.state.masterSeq)))
    wal.close()
    assert [r.number for r in WriteAheadLog(wal.path).read()] == [4, 5]
    return core, wal, at_four


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda b: b["steps"][0].__setitem__(1, "agentHang"), "record 4.*is not enabled"),
        (lambda b: b["steps"][0].__setitem__(2, {"mv": "nobody"}), "record 4.*is not enabled"),
        (lambda b: b["steps"][0].__setitem__(0, 99), "record 4.*seq_no 99"),
        (lambda b: b.pop("extras"), "record 4 does not replay"),
        (lambda b: b["extras"].update(counters={"set": {"x": "y"}, "del": []}), "record 4 does"),
    ],
    ids=["other-action", "other-pod", "seq-gap", "no-extras", "bad-counter"],
)
def test_a_record_that_does_not_replay_is_named(
    tmp_path: Path, change: Callable[[dict[str, Any]], None], says: str
) -> None:
    _, wal, _ = two_records(tmp_path)
    _rewrite_record(wal.path, 0, change)
    with pytest.raises(CorruptStatusError, match=says) as err:
        resume(tmp_path, PODS3)
    assert "wal.jsonl:1: record 4" in str(err.value)
    assert "move the status file and wal.jsonl away" in str(err.value)


def test_missing_records_are_named(tmp_path: Path) -> None:
    _, wal, _ = two_records(tmp_path)
    lines = wal.path.read_bytes().splitlines(keepends=True)
    wal.path.write_bytes(lines[1])  # record 4 lost
    with pytest.raises(CorruptStatusError, match="record 5 follows record 3: records are missing"):
        resume(tmp_path, PODS3)


def test_a_torn_last_record_is_dropped_and_cut_at_the_next_append(tmp_path: Path) -> None:
    _, wal, at_four = two_records(tmp_path)
    data = wal.path.read_bytes()
    wal.path.write_bytes(data[:-7])  # the last append died in the middle (never acknowledged)
    again = resume(tmp_path, PODS3)
    assert again.state == at_four
    again.on_report(report(PODS3[1], MessageType.FINISH, int(again.state.masterSeq)))
    assert resume(tmp_path, PODS3).state == again.state
    again.on_report(report(PODS3[2], MessageType.FINISH, int(again.state.masterSeq)))
    assert again.state.phase == "RunCommand" == resume(tmp_path, PODS3).state.phase


# ---------------- group commit ----------------


async def test_events_of_one_loop_iteration_share_one_commit_then_publish(
    tmp_path: Path,
) -> None:
    core, _, wal = with_wal(tmp_path)
    core.autocommit = False
    lock = asyncio.Lock()
    published: list[tuple[str, int]] = []

    async def publish() -> None:  # as the service's: only an order that is due
        if not core.orders.needs_publish:
            return
        # persist-before-publish: what goes out is what a restart would resume
        assert resume_copy(tmp_path).state == core.state
        published.append((str(core.state.phase), int(core.state.masterSeq)))
        core.orders.mark_published()

    commits = GroupCommit(core.journal, lock, publish)

    async def agent(pod: str) -> None:
        async with lock:
            core.on_ack(report(pod, MessageType.ACK, 0))
        await commits.durable()

    records = len(WriteAheadLog(wal.path).read())
    await asyncio.gather(*(agent(p) for p in PODS))
    assert commits.commits == 1 and published == [("BootChecking", 1)]
    assert core.state.phase == "BootChecking" and not core.journal.dirty
    assert resume_copy(tmp_path).state == core.state
    assert records in (0, 1)


async def test_a_failed_group_commit_answers_nobody_and_publishes_nothing(
    tmp_path: Path,
) -> None:
    core, _, wal = with_wal(tmp_path)
    core.autocommit = False
    lock = asyncio.Lock()
    published: list[int] = []

    async def publish() -> None:  # as the service's: only an order that is due
        if not core.orders.needs_publish:
            return
        published.append(1)

    commits = GroupCommit(core.journal, lock, publish)
    before = core.state

    async def agent(pod: str) -> str:
        async with lock:
            core.on_ack(report(pod, MessageType.ACK, 0))
        try:
            await commits.durable()
        except PersistenceError:
            return "refused"
        return "answered"

    wal.broken = True
    assert await asyncio.gather(*(agent(p) for p in PODS)) == ["refused", "refused"]
    assert published == [] and core.state == before and core.extras.incarnations == {}
    wal.broken = False
    assert await asyncio.gather(*(agent(p) for p in PODS)) == ["answered", "answered"]
    assert published == [1] and core.state.phase == "BootChecking"


class SlowWal(WriteAheadLog):
    """A WAL on a slow disk: each append waits (at most 10 s) until the test lets it finish,
    and notes the thread it ran in."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.started, self.release = threading.Event(), threading.Event()
        self.threads: list[int] = []

    def append(self, number: int, body: Any) -> None:
        self.threads.append(threading.get_ident())
        self.started.set()
        if not self.release.wait(10):
            raise OSError(5, "the test never released the append: the event loop was blocked")
        super().append(number, body)


async def test_the_event_loop_goes_on_while_a_commit_is_written(tmp_path: Path) -> None:
    """The WAL's write and fsync run in a worker thread: the loop serves others meanwhile (it
    must go on reading the bus), while the lock keeps every event out of memory until the
    commit is on disk. With the append on the loop, nothing could release it here."""
    wal = SlowWal(tmp_path / "wal.jsonl")
    store = FlakyDisk(tmp_path / "status.json")
    core = ControllerCore(JobConfig("job", "default", PODS, 2), store, wal=wal)
    core.autocommit = False
    lock = asyncio.Lock()

    async def publish() -> None:  # as the service's: only an order that is due
        if not core.orders.needs_publish:
            return
        core.orders.mark_published()

    commits = GroupCommit(core.journal, lock, publish)
    async with lock:
        core.on_ack(report(PODS[0], MessageType.ACK, 0))
    first = asyncio.ensure_future(commits.durable())
    assert await asyncio.to_thread(wal.started.wait, 10)  # the append is under way

    async def second_agent() -> None:  # an event that comes meanwhile waits for the lock
        async with lock:
            core.on_ack(report(PODS[1], MessageType.ACK, 0))
        await commits.durable()

    second = asyncio.ensure_future(second_agent())
    await asyncio.sleep(0)
    assert not first.done() and lock.locked() and core.extras.incarnations.keys() == {PODS[0]}
    wal.release.set()  # the loop ran: it can let the disk finish
    await asyncio.wait_for(asyncio.gather(first, second), 10)
    assert threading.get_ident() not in wal.threads
    assert resume_copy(tmp_path).state == core.state and core.state.phase == "BootChecking"
    await asyncio.wait_for(commits.close(), 10)  # its worker thread has an end
    assert not {t.ident for t in threading.enumerate()} & set(wal.threads)


def resume_copy(tmp: Path) -> ControllerCore:
    """Resume from a copy of the state dir (the original stays untouched)."""
    copy = tmp / "copy"
    shutil.rmtree(copy, ignore_errors=True)
    copy.mkdir()
    for name in ("status.json", "wal.jsonl"):
        if (tmp / name).exists():
            shutil.copy(tmp / name, copy / name)
    return resume(copy)


def test_a_status_moved_away_starts_afresh_and_drops_its_wal(tmp_path: Path) -> None:
    """What the CorruptStatusError tells the operator to do: the WAL left beside it goes."""
    _, wal, _ = two_records(tmp_path)
    (tmp_path / "status.json").rename(tmp_path / "status.json.bad")
    core = resume(tmp_path, PODS3)
    assert core.journal.fresh and core.state.phase == "Pending" and core.extras.incarnations == {}
    assert WriteAheadLog(wal.path).read() == []


def test_a_taint_is_in_the_status_file_at_once(tmp_path: Path) -> None:
    """`aegis ctl taint` promises the node is saved in status.json: a change of the error
    nodes takes a snapshot (the per-pod details may wait for the next one)."""
    core, _, _ = with_wal(tmp_path)
    join_and_run(core)
    assert core.taint("node-9", "bad fan")
    saved = json.loads((tmp_path / "status.json").read_text())["errorNodes"]
    assert [(e["node"], e["reason"]) for e in saved] == [("node-9", "bad fan")]
    assert core.untaint("node-9")
    assert json.loads((tmp_path / "status.json").read_text())["errorNodes"] == []
    assert [e.node for e in resume(tmp_path).status.error_nodes] == []


def _crash_once(core: ControllerCore, commit: Callable[[], None]) -> None:
    """Join, run, one pod fails, a diagnosis round, the job runs again to the end; `commit`
    after each event."""

    def each(kind: MessageType, pods: tuple[str, ...], then: str) -> None:
        for p in pods:
            if kind is MessageType.ACK:
                core.on_ack(report(p, kind, 0))
            else:
                core.on_report(report(p, kind, int(core.state.masterSeq)))
            commit()
        assert core.state.phase == then

    each(MessageType.ACK, core.job.pods, "BootChecking")
    each(MessageType.FINISH, core.job.pods, "RunCommand")
    each(MessageType.ERROR, PODS[:1], "Troubleshooting")
    each(MessageType.FINISH, core.job.pods, "RunCommand")
    each(MessageType.FINISH, core.job.pods, "Succeed")


def _history(tmp: Path) -> list[tuple[str, list[int], int]]:
    saved = json.loads((tmp / "status.json").read_text())["history"]
    return [(h["phase"], h["retries"], h["recoverCount"]) for h in saved]


def test_the_history_keeps_every_phase_a_commit_reached_however_late_the_snapshot(
    tmp_path: Path,
) -> None:
    """A snapshot deferred past several commits (the group commit's hold) still records each
    phase they went through, and so does a resume that replays them from the WAL."""
    runs = {}
    for name in ("each", "deferred", "replayed"):
        (tmp_path / name).mkdir()
        core, _, _ = with_wal(tmp_path / name)
        core.autocommit = False
        _crash_once(core, functools.partial(core.journal.commit, compact=name == "each"))
        if name == "deferred":
            core.journal.compact()
        elif name == "replayed":
            assert _history(tmp_path / name) == [("Pending", [0, 0], 0)]  # no snapshot since
            resume(tmp_path / name)
        runs[name] = _history(tmp_path / name)
    phases = [h[0] for h in runs["each"]]
    assert phases == [
        "Pending",
        "BootChecking",
        "RunCommand",
        "Troubleshooting",
        "RunCommand",
        "Succeed",
    ]
    assert runs["deferred"] == runs["each"] and runs["replayed"] == runs["each"]
