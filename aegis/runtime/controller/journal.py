"""Everything the controller core knows of persistence: a `Journal` (docs/persistence.md).

The core handles an event between `begin()` and `commit()`, calling `touch()` when the event
changed something that must be durable; a failed event is undone with `rollback(mark)` in
O(what it changed), and a failed commit rolls back every event since the last one
(`PersistenceError`: memory equals disk again). `snapshot()` saves the whole status; it is
never needed for durability where every commit is a log record. The core never sees a
store, a file or a retry: this is the shape of kopf's `ProgressStorage`.

Two implementations, over the stores of aegis.runtime.controller.store/wal and aegis.k8s:
- `StatusJournal`: each commit saves the whole status (the Aegis CR of a job that fits in it);
- `WalJournal`: each commit appends one record of what changed to a write-ahead log, and a
  snapshot of the whole status is saved now and then (a state dir's `status.json` and
  `wal.jsonl`; on Kubernetes a job's ConfigMaps).

A commit's write is retried by `aegis.retry.STATUS_SAVE` (slept by `commit`, awaited by
`commit_async`, which runs the write in the service's worker thread).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from aegis import retry
from aegis.errors import AegisError
from aegis.generated.aegis_phase import Constants, State
from aegis.protocol.state_codec import encode, encode_choices
from aegis.runtime.controller.bookkeeping import Extras
from aegis.runtime.controller.job import JobConfig
from aegis.runtime.controller.restore import restore
from aegis.runtime.controller.store import ErrorNode, Status, StatusStore
from aegis.runtime.controller.wal import Log
from aegis.runtime.engine import Engine, StepResult, initial_state
from aegis.runtime.steplog import StepLog

log = logging.getLogger(__name__)

# a snapshot (the status file) is taken at a change of phase, recoverCount or shouldQuit, and
# after max(SNAPSHOT_MIN_RECORDS, pods) WAL records: O(pods) once per O(pods) events
SNAPSHOT_MIN_RECORDS = 256
SAVE_ERRORS = (OSError, AegisError)  # a write that failed and may work when tried again
Run = Callable[[Callable[[], None]], Awaitable[None]]  # runs a write off the event loop


class PersistenceError(AegisError):
    """The status could not be saved: the event was rolled back (memory equals disk)."""


@dataclass
class SaveHealth:
    """How the status saves fare: failures so far, the last one, and whether the last save
    went through (shown by `aegis ctl status`)."""

    failures: int = 0
    last_error: str = ""
    last_failed: float = 0.0
    ok: bool = True

    def failed(self, exc: BaseException) -> None:
        """One failed save."""
        self.failures += 1
        self.last_error, self.last_failed, self.ok = str(exc)[:300], time.time(), False
        log.error("status save failed (%d so far): %s", self.failures, exc)

    def saved(self) -> None:
        """A save went through."""
        if not self.ok:
            log.warning("status saved again after %d failed saves", self.failures)
        self.ok = True

    def to_json(self) -> dict[str, Any]:
        """The JSON object in `status_view`."""
        return {
            "ok": self.ok,
            "failures": self.failures,
            "lastError": self.last_error,
            "lastFailed": self.last_failed,
        }


class Mark(NamedTuple):
    """What an event may change in memory, as `begin` keeps it (O(1) to take)."""

    state: State
    seq_no: int
    rejected: int
    scalars: tuple[int, int, int]
    undo_mark: int
    status: Status
    unlogged: int
    dirty: bool


class Journal(Protocol):
    """What ControllerCore needs of persistence."""

    status: Status  # as last saved, with the error nodes as the events left them
    extras: Extras  # the bookkeeping (restored by `open`)
    health: SaveHealth
    fresh: bool  # no status was saved before `open`
    resumed: bool  # `open` restored a saved job's state
    wal: Log | None  # the write-ahead log, if the journal has one
    snapshot_every: int  # WAL records at most between two snapshots
    on_gave_up: Callable[[str], None] | None  # told why a commit failed for good

    def open(self, job: JobConfig, constants: Constants) -> State | None:
        """Load the saved job (None: nothing saved); CorruptStatusError if it does not fit."""
        ...

    def start(self, engine: Engine, render: Render, steplog: StepLog | None) -> None:
        """Bind the engine and make the starting state durable."""
        ...

    def begin(self) -> Mark:
        """A mark of memory before an event."""
        ...

    def rollback(self, mark: Mark) -> None:
        """Undo everything since `mark`."""
        ...

    def touch(self) -> None:
        """The event changed something that must be durable before its effects are seen."""
        ...

    def on_step(self, step: StepResult) -> None:
        """A step was taken (it goes to the step log once committed)."""
        ...

    def set_error_nodes(self, nodes: tuple[ErrorNode, ...]) -> None:
        """The blacklist as an event changed it."""
        ...

    def commit(self, *, compact: bool = True) -> None:
        """Make the events since the last commit durable (PersistenceError: rolled back)."""
        ...

    async def commit_async(self, run: Run) -> None:
        """`commit(compact=False)` with the write run by `run` and the pauses awaited."""
        ...

    def compact(self) -> None:
        """Save a snapshot if one is due."""
        ...

    def snapshot(self) -> None:
        """Save the whole status now (a failure is shown, and tried again later)."""
        ...

    @property
    def dirty(self) -> bool:
        """Whether events since the last commit must still be made durable."""
        ...

    @property
    def snapshot_due(self) -> bool:
        """Whether `compact()` would save a snapshot now."""
        ...


class Render(Protocol):
    """How a journal gets the whole status of the current state (StatusView.snapshot)."""

    def snapshot(
        self, saved: Status, extras: Extras, history: list[tuple[str, Any, int]], wal_record: int
    ) -> Status:
        """The status to save."""
        ...


class StatusJournal:
    """A journal that saves the whole status at each commit (see the module's docstring)."""

    def __init__(self, store: StatusStore) -> None:
        self.store = store
        self.wal: Log | None = None
        self.on_gave_up: Callable[[str], None] | None = None  # a commit failed for good
        self.status = Status()
        self.extras = Extras()
        self.health = SaveHealth()  # failed status saves (kept across rollbacks)
        self.fresh = True  # False: this controller found a saved status
        self.resumed = False  # True: it resumes the saved job's state
        self.snapshot_every = SNAPSHOT_MIN_RECORDS
        self._dirty = False  # an event since the last commit must be made durable
        self._unlogged: list[StepResult] = []  # steps of the events not yet committed
        self._next_record = 1  # the number of the next WAL record
        self._since_snapshot = 0  # WAL records since the last snapshot
        # (phase, recoverCount) last committed, and the history entries committed since the
        # last snapshot: the history keeps every phase a commit reached, even one that ended
        # before the (deferred) snapshot was taken
        self._history_key: tuple[str, int] = ("", 0)
        self._unsaved_history: list[tuple[str, Any, int]] = []
        self._engine: Engine | None = None
        self._render: Render | None = None
        self._steplog: StepLog | None = None

    # ---------------- opening ----------------

    def open(self, job: JobConfig, constants: Constants) -> State | None:
        """Load the saved status (and replay the log after it); None: a fresh job."""
        loaded = self.store.load()
        self.fresh = loaded is None
        self.status = loaded or Status()
        self.snapshot_every = max(SNAPSHOT_MIN_RECORDS, len(job.pods))
        self._history_key = (self.status.phase, self.status.recover_count)
        restored = restore(self.status, self.wal, job, constants, self._note_history)
        if restored is None:
            return None
        self.resumed = True
        self.extras, self.status = restored.extras, restored.status
        self._next_record, self._since_snapshot = restored.next_record, restored.replayed
        return restored.state

    def start(self, engine: Engine, render: Render, steplog: StepLog | None) -> None:
        """Bind the engine; a fresh job's first status is saved before it is logged (a log
        never runs ahead of the disk), a resumed one's log goes on from the restored state
        (with a snapshot if records were replayed: the status is current, the log empty)."""
        self._engine, self._render, self._steplog = engine, render, steplog
        self._base = self.begin()  # memory as last committed (= disk)
        self._snapped = self._snapshot_key()
        constants, state = engine.constants, engine.state
        if not self.resumed:
            retry.call(self._save_snapshot, retry.STATUS_SAVE, SAVE_ERRORS, self._failed_try)
            self.health.saved()
            if steplog is not None:
                steplog.write_initial(constants, state)
            return
        if steplog is not None:
            if steplog.empty:  # the first start died between its first save and its log
                steplog.write_initial(constants, initial_state(constants))
            steplog.write_resume(engine.seq_no, state)
        if self._since_snapshot:
            self.snapshot()

    # ---------------- one event ----------------

    def begin(self) -> Mark:
        """What an event may change in memory, in O(1): the spec state and status (immutable
        values), the bookkeeping's scalars and a mark in its undo log."""
        e = self.engine
        return Mark(
            e.state,
            e.seq_no,
            e.rejected,
            self.extras.scalars(),
            self.extras.undo.mark(),
            self.status,
            len(self._unlogged),
            self._dirty,
        )

    def rollback(self, mark: Mark) -> None:
        """Undo a failed event: memory goes back to `begin`'s (O(the changes))."""
        e = self.engine
        e.state, e.seq_no, e.rejected = mark.state, mark.seq_no, mark.rejected
        self.extras.set_scalars(mark.scalars)
        self.extras.undo.undo_to(mark.undo_mark)
        self.status, self._dirty = mark.status, mark.dirty
        del self._unlogged[mark.unlogged :]

    def touch(self) -> None:
        """This event's changes must be durable before anything it causes is seen: the next
        commit makes them so."""
        self._dirty = True

    def on_step(self, step: StepResult) -> None:
        """A step of the current event (logged once its commit is on disk)."""
        self._unlogged.append(step)

    def set_error_nodes(self, nodes: tuple[ErrorNode, ...]) -> None:
        """The blacklist as an event changed it (saved with the event)."""
        self.status = dataclasses.replace(self.status, error_nodes=nodes)

    @property
    def engine(self) -> Engine:
        """The engine bound by `start`."""
        assert self._engine is not None, "Journal.start() binds the engine"
        return self._engine

    @property
    def dirty(self) -> bool:
        """Whether events were handled since the last commit whose changes must be durable."""
        return self._dirty

    # ---------------- commits ----------------

    def commit(self, *, compact: bool = True) -> None:
        """Make the events handled since the last commit durable, then the step log, then
        (with `compact`) a snapshot if one is due. PersistenceError: they were all rolled
        back (memory equals disk)."""
        if not self._dirty:
            return
        write, written = self._commit_write()
        retry.call(write, retry.STATUS_SAVE, SAVE_ERRORS, self._failed_try)
        self._committed(written)
        if compact:
            self.compact()

    async def commit_async(self, run: Run) -> None:
        """`commit(compact=False)` for the event loop: the write (a WAL append and its fsync,
        or without a WAL the status save: the CR's patch on Kubernetes) runs as `await
        run(write)` (in a worker thread: the loop reads the bus meanwhile; the caller holds the
        service's lock, so no event changes memory until it returns; the record or status is
        built before, on the loop), and the pauses between tries are awaited."""
        if not self._dirty:
            return
        write, written = self._commit_write()
        await retry.call_async(lambda: run(write), retry.STATUS_SAVE, SAVE_ERRORS, self._failed_try)
        self._committed(written)

    def _commit_write(self) -> tuple[Callable[[], None], Status | None]:
        """What this commit writes, built now from memory: the whole status."""
        self.extras.step_no = self.engine.seq_no
        status = self._snapshot_status()
        store = self.store
        return lambda: store.save(status), status

    def _failed_try(self, failures: int, exc: BaseException) -> None:
        """Note a failed try of a commit's write. The failure is kept beside the state (not
        rolled back): `status_view` and the fault log show it. After the last try every event
        since the last commit is rolled back (memory equals disk): PersistenceError."""
        self.health.failed(exc)
        if failures < (retry.STATUS_SAVE.tries or 0):
            return
        if self.on_gave_up is not None:
            self.on_gave_up(f"status save failed {failures} times: {exc}")
        published = self.extras.published_seq  # what went out stays out
        self.rollback(self._base)
        self.extras.published_seq = published
        raise PersistenceError(
            f"cannot save the job's status ({exc}); the event was rolled back and "
            "nothing was published: it is handled again when it comes back"
        ) from exc

    def _committed(self, written: Status | None) -> None:
        """The bookkeeping of a commit whose write is on disk."""
        self.health.saved()
        if written is not None:
            self.status = written
        self.extras.undo.forget()
        self._dirty = False
        self._write_steplog()
        self._base = self.begin()

    def _write_steplog(self) -> None:
        """Log the steps of the events just committed (after the commit: a rolled-back step
        is never logged); a failed write is reported loudly, the saved state stays as it is."""
        steps, self._unlogged = self._unlogged, []
        if self._steplog is None:
            return
        try:
            self._steplog.write_all(steps)
        except OSError as exc:
            self.extras.counters["steplog_failed"] += 1
            log.error(
                "step log write failed (%s): the log misses steps from %d on",
                exc,
                steps[0].seq_no if steps else -1,
            )

    # ---------------- snapshots ----------------

    @property
    def snapshot_due(self) -> bool:
        """Whether `compact()` would take a snapshot now (never: each commit saves one)."""
        return False

    def compact(self) -> None:
        """Take a snapshot if one is due (docs/persistence.md). Not needed for durability, so
        the service takes it after the commit's order is published and its replies are sent:
        a fault's order does not wait for it."""
        if self.snapshot_due:
            self.snapshot()

    def snapshot(self) -> None:
        """Save the whole status (it covers every commit so far). A failure is shown and tried
        again at the next commit."""
        try:
            self._save_snapshot()
        except SAVE_ERRORS as exc:
            self.health.failed(exc)
            return
        self.health.saved()

    def _save_snapshot(self) -> None:
        status = self._snapshot_status()
        self.store.save(status)
        self.status = status
        self._base = self._base._replace(status=status)
        self._snapped, self._since_snapshot = self._snapshot_key(), 0
        self._unsaved_history.clear()

    def _snapshot_status(self) -> Status:
        """The whole status of the committed state: O(pods)."""
        assert self._render is not None, "Journal.start() binds the view"
        wal_record = self._next_record - 1
        return self._render.snapshot(self.status, self.extras, self._unsaved_history, wal_record)

    def _snapshot_key(self) -> tuple[object, ...]:
        s = self.engine.state
        return str(s.phase), int(s.recoverCount), bool(s.shouldQuit), self.status.error_nodes

    def _note_history(self, state: State) -> None:
        """Keep a history entry for a commit that reached another phase or recoverCount
        (O(1): the retries function is kept as it is, read at the next snapshot)."""
        key = (str(state.phase), int(state.recoverCount))
        if key != self._history_key:
            self._history_key = key
            self._unsaved_history.append((key[0], state.retries, key[1]))


class WalJournal(StatusJournal):
    """A journal whose commits append to a write-ahead log `wal` beside the `store` of its
    snapshots (see the module's docstring)."""

    def __init__(self, store: StatusStore, wal: Log) -> None:
        super().__init__(store)
        self.wal: Log = wal

    def _commit_write(self) -> tuple[Callable[[], None], Status | None]:
        """The append of one record of the changes since the last commit: O(those changes)."""
        self.extras.step_no = self.engine.seq_no
        wal, number, record = self.wal, self._next_record, self._record()
        return lambda: wal.append(number, record), None

    def _record(self) -> dict[str, Any]:
        """The WAL record of the changes since the last commit."""
        record: dict[str, Any] = {
            "steps": [
                [s.seq_no, s.action, encode(s.process), encode_choices(s.choices)]
                for s in self._unlogged
                if s.applied
            ],
            "extras": self.extras.delta(),
        }
        if self.status.error_nodes is not self._base.status.error_nodes:
            record["errorNodes"] = [
                {"node": e.node, "reason": e.reason, "time": e.time}
                for e in self.status.error_nodes
            ]
        return record

    def _committed(self, written: Status | None) -> None:
        self._next_record += 1
        self._since_snapshot += 1
        self._note_history(self.engine.state)
        super()._committed(written)

    @property
    def snapshot_due(self) -> bool:
        """At a change of what users read first (phase, recoverCount, shouldQuit, the error
        nodes), or when the WAL holds `snapshot_every` records (bounds the replay); never while
        events are not committed (a snapshot never holds what the WAL does not)."""
        if self._dirty:
            return False
        return self._since_snapshot >= self.snapshot_every or self._snapshot_key() != self._snapped

    def _save_snapshot(self) -> None:
        super()._save_snapshot()
        self.wal.reset()  # a crash before this: the records are skipped at resume


def open_journal(store: StatusStore, wal: Log | None = None) -> StatusJournal:
    """The journal over `store` (and `wal`, if the job has one)."""
    return StatusJournal(store) if wal is None else WalJournal(store, wal)
