"""The markers of a timeline: one per fault, read from the fault log's fields.

The controller decides each fault's kind and recovery level where it handles the event
(aegis.protocol.faults); a marker takes them as the record has them, and its message is
only shown. A record written before faults were typed has no kind: it is read as `other`
(shown, with no level). Without a fault log, the markers come from the step log's actions
(`step_marker`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aegis.protocol.faults import FaultKind, FaultRecord, RecoveryLevel

# what each kind is called on its marker; a reschedule or an eviction names its node
_LABELS = {
    FaultKind.ERROR: "error (Level 1)",
    FaultKind.CHECK_FAILED: "check failed",
    FaultKind.CONTAINER_RESTART: "Level 2: container restart",
    FaultKind.HANG: "hang marked",
    FaultKind.HANG_QUIT: "eviction decided",
    FaultKind.POD_LOST: "pod restart",
    FaultKind.LOST: "heartbeats missed",
    FaultKind.SAVE_FAILED: "status save failed",
    FaultKind.STOP: "job stopped",
}
_NODE_LABELS = {
    FaultKind.RESCHEDULE: "Level 3: left {node}",
    FaultKind.EVICTED: "evicted from {node}",
    FaultKind.EVICTED_EXIT: "left {node} (evicted)",
}


@dataclass(frozen=True)
class Marker:
    """One event on a pod's row."""

    pod: str
    time: float
    kind: str  # a FaultKind's value
    level: str | None  # a RecoveryLevel's value
    node: str
    text: str

    @property
    def label(self) -> str:
        """A short label: what and, for a reschedule or an eviction, the node."""
        kind = FaultKind(self.kind) if self.kind in FaultKind._value2member_map_ else None
        if kind in _NODE_LABELS:
            return _NODE_LABELS[kind].format(node=self.node or "?")
        return _LABELS.get(kind, self.kind) if kind is not None else self.kind


def fault_markers(
    records: Iterable[Mapping[str, Any]], pods: Sequence[str], job: str = ""
) -> tuple[list[Marker], list[Marker]]:
    """The markers of the pods' rows (a fault-log record, a JSON object, of one of `pods`:
    any pod if empty), and of the job's row (its records: a stop), in time order."""
    out, job_out = [], []
    for r in sorted((FaultRecord.from_obj(o) for o in records), key=lambda r: r.time):
        level = None if r.level is None else r.level.value
        marker = Marker(r.pod, r.time, r.kind.value, level, r.node, r.message)
        if r.pod == job and r.pod not in pods:
            job_out.append(marker)
        elif not pods or r.pod in pods:
            out.append(marker)
    return out, job_out


# a step of these actions is a marker when there is no fault log (its w: the pod)
_STEP_KINDS: Mapping[str, tuple[FaultKind, RecoveryLevel | None]] = {
    "reschedule": (FaultKind.RESCHEDULE, RecoveryLevel.NODE),
    "agentHang": (FaultKind.HANG, None),
    "hangWithQuit": (FaultKind.HANG_QUIT, None),
    "evictSlow": (FaultKind.EVICTED, RecoveryLevel.EVICT),
    "envPodRestart": (FaultKind.POD_LOST, None),
}


def step_marker(
    action: str, choices: Mapping[str, Any], t: float, pods: Sequence[str]
) -> list[Marker]:
    """The marker of one logged step (none for most): the spec's actions and the `receive`
    of an Error report."""
    if action == "receive":
        m = choices.get("m")
        try:
            mtype, sender = str(m["type"]), str(m["from"])  # type: ignore[index]
        except (TypeError, KeyError):
            return []
        if mtype == "Error":
            error, one = FaultKind.ERROR.value, RecoveryLevel.PROCESS.value
            return [Marker(sender, t, error, one, "", "Error reported (step log)")]
        return []
    if action in _STEP_KINDS and "w" in choices:
        kind, level = _STEP_KINDS[action]
        pod = str(choices["w"])
        if pod in pods:
            value = None if level is None else level.value
            return [Marker(pod, t, kind.value, value, "", f"{action} (step log)")]
    return []
