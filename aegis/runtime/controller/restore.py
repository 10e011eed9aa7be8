"""Resuming a job from what its journal saved: the snapshot (the status), checked against the
spec and this job, then the write-ahead log's records after it, replayed through the
generated tables (docs/persistence.md, "Resume"). Anything that does not fit is a
CorruptStatusError that names it and says how to start afresh; nothing here writes."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aegis.generated.aegis_phase import Constants, State, violated_invariants
from aegis.protocol.state_codec import CodecError, decode, decode_choices, decode_state
from aegis.runtime.controller.bookkeeping import Extras
from aegis.runtime.controller.job import JobConfig
from aegis.runtime.controller.store import ErrorNode, Status
from aegis.runtime.controller.wal import Log, WalRecord
from aegis.runtime.engine import Engine, EngineError, candidates
from aegis.runtime.errors import CorruptStatusError
from aegis.values import Fn, ModelValue, apply

log = logging.getLogger(__name__)

FIX = "move the status file away to start the job afresh"


@dataclass(frozen=True)
class Restored:
    """A resumed job: its state, bookkeeping and status after the replay; `next_record`, the
    number of the next WAL record; `replayed`, how many records the snapshot did not cover."""

    state: State
    extras: Extras
    status: Status
    next_record: int
    replayed: int


def restore(
    status: Status,
    wal: Log | None,
    job: JobConfig,
    constants: Constants,
    on_record: Callable[[State], None],
) -> Restored | None:
    """The job saved in `status` and `wal` (None: nothing saved); `on_record(state)` sees the
    state after each replayed record."""
    records = wal.read() if wal is not None else []
    saved = status.spec_state
    if not saved:
        if records:  # the status was moved away to start afresh: so is its WAL
            log.warning("no saved status: the %d WAL record(s) left are dropped", len(records))
        return None
    try:
        # older status files kept the bookkeeping inside specState
        runtime = status.runtime or saved.get("runtime", {})
        reasons = {p: i.last_failed_reason for p, i in status.pod_infos.items()}
        extras = Extras.from_json(runtime, {p: r for p, r in reasons.items() if r})
        state = decode_state(saved["variables"])
        covered = int(runtime.get("walRecord", 0))
    except (CodecError, KeyError, TypeError, ValueError, AttributeError) as exc:
        why = f"saved specState is not a state of the spec ({exc}); {FIX}"
        raise CorruptStatusError(why) from None
    check_saved_state(state, job, constants)
    check_status_fields(status, state, job.pods)
    replay = _Replay(constants, state, extras, status, covered)
    for rec in records:
        replay.record(rec, wal, on_record)
    extras.step_no = replay.engine.seq_no
    extras.undo.forget()
    return Restored(replay.engine.state, extras, replay.status, replay.next_record, replay.replayed)


def check_saved_state(state: State, job: JobConfig, constants: Constants) -> None:
    """The saved spec state must be one of this job's pods and keep every invariant."""
    pods = sorted(str(w) for w in state.innerPhase) if isinstance(state.innerPhase, Fn) else []
    if pods != sorted(job.pods):
        raise CorruptStatusError(
            f"the saved job has pods {pods[:4]}{'...' if len(pods) > 4 else ''} "
            f"({len(pods)}); this job has {len(job.pods)} ({job.pods[0]}...): "
            f"another job's state; {FIX}"
        )
    try:
        bad = violated_invariants(constants, state)
    except (KeyError, TypeError, AttributeError) as exc:
        raise CorruptStatusError(f"saved specState is malformed ({exc!r}); {FIX}") from None
    if bad:
        raise CorruptStatusError(
            f"saved specState breaks the spec's invariant(s) {', '.join(bad)} "
            f"(phase {state.phase!r}, recoverCount {state.recoverCount!r}); {FIX}"
        )


class _Replay:
    """The snapshot's state (it covers WAL records up to `covered`) taken through the
    records after it; a record that does not replay is a CorruptStatusError naming it."""

    def __init__(
        self, constants: Constants, state: State, extras: Extras, status: Status, covered: int
    ) -> None:
        self.constants = constants
        self.extras = extras
        self.status = status
        self.covered = covered
        # restore() checked the snapshot's state against every invariant
        self.engine = Engine(constants, state, seq_no=extras.step_no, start_checked=True)
        self.next_record = covered + 1
        self.replayed = 0

    def record(self, rec: WalRecord, wal: Log | None, on_record: Callable[[State], None]) -> None:
        """Replay one record (skipped if the snapshot covers it)."""
        if rec.number <= self.covered:
            return  # in the snapshot already (a crash before the WAL was emptied)
        if rec.number != self.next_record:
            missing = f" follows record {self.next_record - 1}: records are missing"
            raise _bad_record(wal, rec, missing)
        try:
            self._apply(rec.body)
        except CorruptStatusError as exc:
            raise _bad_record(wal, rec, f": {exc}") from None
        except (CodecError, EngineError, KeyError, TypeError, ValueError) as exc:
            raise _bad_record(wal, rec, f" does not replay ({exc})") from None
        self.next_record += 1
        self.replayed += 1
        on_record(self.engine.state)

    def _apply(self, body: Mapping[str, Any]) -> None:
        """One record: its steps through the generated tables, then its deltas."""
        engine = self.engine
        for index, (seq_no, label, process, choices) in enumerate(body["steps"]):
            pid, wanted = decode(process), dict(decode_choices(choices))
            found = [
                (p, succ)
                for p, succ in candidates(self.constants, engine.state, label, wanted)
                if p == pid and dict(succ.choices) == wanted
            ]
            if len(found) != 1 or seq_no != engine.seq_no + 1:
                raise CorruptStatusError(
                    f"step {index} ({label} by {process} with {choices}, seq_no {seq_no}) is "
                    f"not enabled after step {engine.seq_no} ({len(found)} successors match)"
                )
            engine.take(label, found[0])  # checks the invariants, as the live step did
        self.extras.apply_delta(body["extras"])
        if "errorNodes" in body:
            nodes = tuple(ErrorNode(str(e["node"]), str(e["reason"]), float(e["time"]))
                          for e in body["errorNodes"])  # fmt: skip
            self.status = dataclasses.replace(self.status, error_nodes=nodes)


def _bad_record(wal: Log | None, rec: WalRecord, what: str) -> CorruptStatusError:
    """The error of a WAL record that cannot be replayed: where it is, what, the fix."""
    assert wal is not None  # the records come from it
    return CorruptStatusError(f"{wal.where}:{rec.line}: record {rec.number}{what}; {wal.fix}")


def check_status_fields(status: Status, state: State, pods: Iterable[str]) -> None:
    """The status's own fields must say what its spec state says, for this job's pods (a
    file edited by hand, or another job's): CorruptStatusError names the first that does
    not."""
    top = {
        "phase": (status.phase, str(state.phase)),
        "recoverCount": (status.recover_count, int(state.recoverCount)),
        "shouldQuit": (status.should_quit, bool(state.shouldQuit)),
        "masterSeq": (status.master_seq, int(state.masterSeq)),
    }
    for name, (got, want) in top.items():
        if got != want:
            raise _mismatch(name, got, want)
    names = sorted(pods)
    for name, keys in (("podInfos", status.pod_infos), ("workerSeqs", status.worker_seqs)):
        if sorted(keys) != names:
            raise CorruptStatusError(
                f"saved status field {name} lists pods {sorted(keys)[:3]}... ({len(keys)}); "
                f"this job has {len(names)} ({names[0]}...); {FIX}"
            )
    for pod in names:
        _check_pod(status, state, pod)
    _check_runtime(status.runtime, names)


def _mismatch(name: str, got: object, want: object) -> CorruptStatusError:
    return CorruptStatusError(
        f"saved status field {name} is {got!r:.80} but its specState says {want!r:.80}; {FIX}"
    )


def _check_pod(status: Status, state: State, pod: str) -> None:
    """One pod's entries in the status against the spec state's."""
    w, info = ModelValue(pod), status.pod_infos[pod]
    fields = {
        "innerPhase": (info.inner_phase, str(apply(state.innerPhase, w))),
        "retries": (info.retries, int(apply(state.retries, w))),
        "finished": (info.finished, bool(apply(state.finished, w))),
    }
    for name, (got, want) in fields.items():
        if got != want:
            raise _mismatch(f"podInfos[{pod!r}].{name}", got, want)
    if status.worker_seqs[pod] != apply(state.agentSeq, w):
        raise _mismatch(f"workerSeqs[{pod!r}]", status.worker_seqs[pod], apply(state.agentSeq, w))


def _check_runtime(runtime: Mapping[str, Any], names: Sequence[str]) -> None:
    """The bookkeeping may name only this job's pods."""
    for name in ("incarnations", "evicted", "retired"):
        keys = runtime.get(name, {})
        strays = sorted(set(keys) - set(names)) if isinstance(keys, Mapping) else keys
        if strays:
            raise CorruptStatusError(
                f"saved status field runtime.{name} names pods this job does not have "
                f"({strays!r:.80}); {FIX}"
            )
