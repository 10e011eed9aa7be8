"""The job's status as others read it, rendered from the controller's memory (no I/O).

- `snapshot`: the whole `Status` (the CR's shape) of the committed state, which the journal
  saves as its snapshot: O(pods), an unchanged pod keeps its entry;
- `status_view`: what `aegis ctl status` shows (a large job's pods summarised);
- `summary`: the user-facing line at the job's end (docs/operations.md).
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from aegis.generated.aegis_phase import State
from aegis.protocol.faults import FaultRecord
from aegis.protocol.outcome import JobOutcome
from aegis.protocol.state_codec import StateEncoder
from aegis.runtime.controller.bookkeeping import Extras
from aegis.runtime.controller.job import JobConfig
from aegis.runtime.controller.journal import Journal
from aegis.runtime.controller.recorder import FaultRecorder
from aegis.runtime.controller.store import PodInfo, Snapshot, Status
from aegis.runtime.engine import Engine
from aegis.values import ModelValue, apply

# `aegis ctl status` lists every pod up to this many; past it the pods with something to see
# (a fault, retries, a slow or evict mark, a phase not the job's) and counts of the rest:
# ~200 bytes a pod, so one reply stays well under NATS's 1 MiB at any job size
STATUS_POD_LIMIT = 1000
# a history entry kept between snapshots: (phase, the retries function, recoverCount)
HistoryEntry = tuple[str, Any, int]


def _notable(pod: Mapping[str, Any], phase: str) -> bool:
    """Whether `aegis ctl status` must show this pod of a large job by name."""
    return bool(
        pod["retries"]
        or pod["slow"]
        or pod["evict"]
        or pod["lastFault"]
        or pod["lastFailedReason"]
        or pod["innerPhase"] != phase
    )


def _fault_view(r: FaultRecord) -> dict[str, Any]:
    """A pod's last fault in `status_view`: its fields, as the fault log has them."""
    return {
        "message": r.message,
        "time": r.time,
        "node": r.node,
        "kind": r.kind.value,
        "level": None if r.level is None else r.level.value,
        "exitCode": r.exit_code,
        "signal": r.signal,
        "rank": r.rank,
    }


class StatusView:
    """Renders one job's status from the state the engine holds, the journal's status and
    bookkeeping, and the faults."""

    def __init__(
        self,
        job: JobConfig,
        engine: Engine,
        journal: Journal,
        faults: FaultRecorder,
        terminal: Callable[[], str | None],
    ) -> None:
        self.job = job
        self.engine = engine
        self.journal = journal
        self.faults = faults
        self._terminal = terminal
        # the spec state's encoding for snapshots: a variable left unchanged is not encoded again
        self._encode_state = StateEncoder()
        self._pod_values = tuple(ModelValue(p) for p in job.pods)  # the job's pods, as keys

    def snapshot(
        self, saved: Status, extras: Extras, history: Sequence[HistoryEntry], wal_record: int
    ) -> Status:
        """The whole status of the current state, from the last one `saved`: O(pods)."""
        s = self.engine.state
        status = dataclasses.replace(
            saved,
            phase=str(s.phase),
            recover_count=int(s.recoverCount),
            should_quit=bool(s.shouldQuit),
            pod_infos=self._pod_infos(s, saved.pod_infos, extras.reasons),
            master_seq=int(s.masterSeq),
            worker_seqs=self._worker_seqs(s),
            spec_state={"variables": self._encode_state(s)},
            runtime={**extras.to_json(), "walRecord": wal_record},
        )
        infos = status.pod_infos
        pods = sorted(infos)
        entries = [
            Snapshot(phase, tuple(int(apply(retries, ModelValue(p))) for p in pods), recovered)
            for phase, retries, recovered in history
        ]
        entries.append(
            Snapshot(status.phase, tuple(infos[p].retries for p in pods), status.recover_count)
        )
        return status.with_history(entries, self.job.status_budget.history)

    def _pod_infos(
        self, s: State, saved: Mapping[str, PodInfo], reasons: Mapping[str, str]
    ) -> dict[str, PodInfo]:
        """Every pod's entry: the saved one where nothing changed (O(1), no copy), else a new
        one stamped now."""
        now = time.time()
        infos = {}
        blank = PodInfo()
        inner, finished, retries = s.innerPhase.lookup(), s.finished.lookup(), s.retries.lookup()
        for pod, w in zip(self.job.pods, self._pod_values, strict=True):
            old = saved.get(pod, blank)
            values = (str(inner(w)), bool(finished(w)), int(retries(w)), reasons.get(pod, ""))
            if values == (old.inner_phase, old.finished, old.retries, old.last_failed_reason):
                infos[pod] = old
                continue
            infos[pod] = dataclasses.replace(
                old,
                inner_phase=values[0],
                finished=values[1],
                retries=values[2],
                last_failed_reason=values[3],
                updated_timestamp=now,
            )
        return infos

    def _worker_seqs(self, s: State) -> dict[str, int]:
        seq = s.agentSeq.lookup()
        return {p: int(seq(w)) for p, w in zip(self.job.pods, self._pod_values, strict=True)}

    def status_view(self) -> dict[str, Any]:
        """The job as `aegis ctl status` shows it (JSON-able)."""
        s = self.engine.state
        status, extras = self.journal.status, self.journal.extras
        pods = {pod: self._pod_view(s, pod, extras) for pod in self.job.pods}
        summary = None
        if len(pods) > STATUS_POD_LIMIT:  # one reply must stay under NATS's 1 MiB
            summary = {
                "total": len(pods),
                "byPhase": dict(Counter(str(p["innerPhase"]) for p in pods.values())),
                "byAgentState": dict(Counter(str(p["agentState"]) for p in pods.values())),
            }
            notable = [pod for pod, p in pods.items() if _notable(p, str(s.phase))]
            pods = {pod: pods[pod] for pod in notable[:STATUS_POD_LIMIT]}
            summary["shown"] = len(pods)
            summary["notable"] = len(notable)
        return {
            "job": self.job.name,
            "namespace": self.job.namespace,
            "phase": str(s.phase),
            "terminal": self._terminal(),
            "recoverCount": int(s.recoverCount),
            "maxRetry": self.job.max_retry,
            "shouldQuit": bool(s.shouldQuit),
            "masterSeq": int(s.masterSeq),
            "checkpointed": bool(s.checkpointed),
            "pods": pods,
            **({"podSummary": summary} if summary is not None else {}),
            "errorNodes": [
                {"node": e.node, "reason": e.reason, "time": e.time} for e in status.error_nodes
            ],
            "counters": dict(extras.counters),
            "persistence": self.journal.health.to_json(),
        }

    def _pod_view(self, s: State, pod: str, extras: Extras) -> dict[str, Any]:
        """One pod's entry in `status_view`."""
        w = ModelValue(pod)
        last = self.faults.last.get(pod)
        return {
            "innerPhase": str(apply(s.innerPhase, w)),
            "retries": int(apply(s.retries, w)),
            "failures": extras.failures.get(pod, 0),
            "finished": bool(apply(s.finished, w)),
            "slow": bool(apply(s.slow, w)),
            "evict": bool(apply(s.evict, w)),
            "agentState": str(apply(s.agentState, w)),
            "node": self.faults.node_of(pod),
            "incarnation": extras.incarnations.get(pod),
            "lastFailedReason": extras.reasons.get(pod, ""),
            "lastFault": None if last is None else _fault_view(last),
        }

    def summary(self) -> str:
        """The user-facing line (docs/design.md, "Checks and graded recovery")."""
        extras = self.journal.extras
        outcome = JobOutcome(
            self.job.name,
            self._terminal() or str(self.engine.state.phase),
            self.job.max_retry,
            max(extras.command_orders - 1, 0),
            extras.counters["node_faults"],
            extras.counters["evicted_slow"],
        )
        return f"aegis: {outcome.line()}"
