"""Faults as data: what failed, where, and the recovery it starts (pure code, no I/O).

The controller decides each fault's kind where it handles the event (a report, an agent's
exit, missed heartbeats, a decision of the spec) and writes one `FaultRecord` per fault to
the structured fault log; the metrics, the timeline and `aegis ctl status` read its fields
and never parse its message, which is for people. A rank whose process failed is told by the
agent in its Error report as a `ProcessFailure` (local rank, global rank, exit code or
signal), as torch.distributed.elastic's `ProcessFailure` tells it.

| kind | what | level |
|---|---|---|
| `error` | a rank's command failed (or could not start) | 1: troubleshoot, restart in place |
| `check_failed` | a bootcheck or troubleshoot round failed on the pod | - (its exit tells) |
| `container_restart` | the agent exited 76 | 2 |
| `reschedule` | the agent exited 1: node blacklisted, pod rescheduled | 3 |
| `evicted` | a slow pod evicted at a checkpoint | evict |
| `evicted_exit` | the exit (or replacement) of a pod evicted at a checkpoint | - (counted) |
| `pod_lost` | the agent exited otherwise, or was replaced before its exit was reported | - |
| `hang` | a pod marked hung or slow (nothing killed) | - |
| `hang_quit` | the controller decided to evict a slow pod at the next checkpoint | - |
| `lost` | an agent missed its heartbeats: its pod is lost | - |
| `save_failed` | the controller could not save the job's status | - |
| `stop` | the job was told to quit (an operator; a command that cannot start); pod: the job | - |
| `other` | a record without a kind (written before faults were typed) | - |
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from aegis.protocol.errors import MalformedMessage
from aegis.protocol.exitcodes import AgentExit


class FaultKind(StrEnum):
    """What a fault is (the table in this module's docstring)."""

    ERROR = "error"
    CHECK_FAILED = "check_failed"
    CONTAINER_RESTART = "container_restart"
    RESCHEDULE = "reschedule"
    EVICTED = "evicted"
    EVICTED_EXIT = "evicted_exit"
    POD_LOST = "pod_lost"
    HANG = "hang"
    HANG_QUIT = "hang_quit"
    LOST = "lost"
    SAVE_FAILED = "save_failed"
    STOP = "stop"
    OTHER = "other"


class RecoveryLevel(StrEnum):
    """The recovery a fault starts: 1 in place, 2 the container, 3 another node, or the
    eviction of a slow pod at a checkpoint."""

    PROCESS = "1"
    CONTAINER = "2"
    NODE = "3"
    EVICT = "evict"


# the one place a kind's level is decided
LEVEL_OF_KIND: Mapping[FaultKind, RecoveryLevel] = {
    FaultKind.ERROR: RecoveryLevel.PROCESS,
    FaultKind.CONTAINER_RESTART: RecoveryLevel.CONTAINER,
    FaultKind.RESCHEDULE: RecoveryLevel.NODE,
    FaultKind.EVICTED: RecoveryLevel.EVICT,
}


def exit_kind(exit_code: int, *, evicted: bool) -> FaultKind:
    """The kind of an agent's exit: 1 is a node fault (or, for a pod the spec evicted, that
    eviction's exit), 76 a container restart, anything else a lost pod."""
    if exit_code == AgentExit.NODE_FAULT:
        return FaultKind.EVICTED_EXIT if evicted else FaultKind.RESCHEDULE
    if exit_code == AgentExit.RESTART_CONTAINER:
        return FaultKind.CONTAINER_RESTART
    return FaultKind.POD_LOST


def signal_of(exit_code: int | None) -> int | None:
    """The signal that ended a process whose exit code is `exit_code` (negative, as Python's
    `returncode`), None if it exited."""
    return -exit_code if exit_code is not None and exit_code < 0 else None


@dataclass(frozen=True)
class ProcessFailure:
    """The first rank of a pod whose process failed: its local and global rank and its exit
    code (negative: killed by that signal)."""

    local_rank: int
    rank: int
    exit_code: int

    @property
    def signal(self) -> int | None:
        """The signal that killed it, None if it exited."""
        return signal_of(self.exit_code)

    def to_data(self) -> dict[str, int]:
        """Its object in a report's `Data`."""
        return {"localRank": self.local_rank, "rank": self.rank, "exitCode": self.exit_code}

    @classmethod
    def from_data(cls, data: Any) -> ProcessFailure:
        """Parse `to_data` (MalformedMessage naming the bad field)."""
        if not isinstance(data, Mapping):
            raise MalformedMessage("Data['failure'] must be an object")
        values = []
        for key in ("localRank", "rank", "exitCode"):
            value = data.get(key)
            if isinstance(value, bool) or not isinstance(value, int):
                raise MalformedMessage(f"Data['failure'][{key!r}] must be an integer")
            values.append(value)
        if values[0] < 0 or values[1] < 0:
            raise MalformedMessage("Data['failure'] ranks must be >= 0")
        return cls(*values)


@dataclass(frozen=True)
class Fault:
    """One fault as the controller decides it: its kind, the pod, the text for people, and
    what is known of the process: the node it ran on, its exit code, the failed rank."""

    kind: FaultKind
    pod: str
    message: str
    node: str = ""
    exit_code: int | None = None
    rank: int | None = None

    @property
    def level(self) -> RecoveryLevel | None:
        """The recovery this fault starts (None: none of its own)."""
        return LEVEL_OF_KIND.get(self.kind)


@dataclass(frozen=True)
class FaultRecord:
    """One line of the structured fault log: a fault, where and when it happened (the pod's
    addresses as its agent last reported them, the job's phase after the fault's step)."""

    pod: str
    pod_ip: str
    node: str
    node_ip: str
    phase: str
    message: str
    time: float = field(default_factory=time.time)
    kind: FaultKind = FaultKind.OTHER
    level: RecoveryLevel | None = None
    exit_code: int | None = None
    signal: int | None = None
    rank: int | None = None

    @classmethod
    def of(
        cls, fault: Fault, phase: str, addresses: tuple[str, str, str] = ("", "", "")
    ) -> FaultRecord:
        """The record of `fault` while the job is in `phase`; `addresses`: the pod's (pod IP,
        node, node IP) as last reported (the fault's own node, if it knows one, wins)."""
        pod_ip, node, node_ip = addresses
        return cls(
            pod=fault.pod,
            pod_ip=pod_ip,
            node=fault.node or node,
            node_ip=node_ip,
            phase=phase,
            message=fault.message,
            kind=fault.kind,
            level=fault.level,
            exit_code=fault.exit_code,
            signal=signal_of(fault.exit_code),
            rank=fault.rank,
        )

    def to_json(self) -> str:
        """The record as one JSON line (no newline)."""
        return json.dumps(asdict(self), sort_keys=True, ensure_ascii=False)

    @classmethod
    def from_obj(cls, obj: Mapping[str, Any]) -> FaultRecord:
        """A record read back from its JSON object. A record written before faults were typed
        (no `kind`) is read as kind `other` with no level; a field of the wrong type is read
        as absent (a fault log is shown, never trusted to decide anything)."""
        kind, level = str(obj.get("kind")), str(obj.get("level"))
        return cls(
            pod=_text(obj, "pod"),
            pod_ip=_text(obj, "pod_ip"),
            node=_text(obj, "node"),
            node_ip=_text(obj, "node_ip"),
            phase=_text(obj, "phase"),
            message=_text(obj, "message"),
            time=_number(obj.get("time")) or 0.0,
            kind=FaultKind(kind) if kind in FaultKind._value2member_map_ else FaultKind.OTHER,
            level=RecoveryLevel(level) if level in RecoveryLevel._value2member_map_ else None,
            exit_code=_integer(obj.get("exit_code")),
            signal=_integer(obj.get("signal")),
            rank=_integer(obj.get("rank")),
        )


def _text(obj: Mapping[str, Any], key: str) -> str:
    value = obj.get(key)
    return value if isinstance(value, str) else ""


def _integer(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
