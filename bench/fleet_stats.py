"""What a simulated fleet measured (bench/fleet.py), and how the figures of a fleet run over
several processes are merged."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class FleetStats:
    """What the fleet measured (monotonic seconds; latencies in ms)."""

    started: float = 0.0
    creds_done: list[float] = field(default_factory=list)
    joined: list[float] = field(default_factory=list)
    run_orders: dict[str, float] = field(default_factory=dict)  # pod -> first RunCommand order
    report_ms: list[float] = field(default_factory=list)  # report sent -> receipt
    report_times: list[tuple[float, float]] = field(default_factory=list)  # (sent, answered)
    receipts: dict[str, int] = field(default_factory=dict)
    first_seen: dict[int, float] = field(default_factory=dict)  # order seq -> first arrival
    order_bytes: int = 0
    pod_order_bytes: int = 0
    left: dict[str, str] = field(default_factory=dict)  # pod -> why it left
    refused: list[str] = field(default_factory=list)  # server -ERR lines (permissions)
    malformed: int = 0
    connect_retries: int = 0  # NATS connects tried again (the server's auth timeout, refused)
    heartbeats: int = 0  # heartbeats sent
    orders_resent: int = 0  # orders the controller sent again (a heartbeat showed one missed)
    orders_dropped: int = 0  # orders an agent lost on purpose (--drop-orders)
    stopped_at_end: int = 0  # agents still there when the controller exited, then stopped
    resent: int = 0  # report copies sent again because no receipt came within a wait
    superseded: int = 0  # pieces of work a newer order replaced before they ended
    first_command_report: float | None = None  # the first RunCommand report sent
    gc_collections: int = 0  # the cyclic collector's runs while the fleet ran
    gc_s: float = 0.0  # the time they took (wall clock: a busy machine makes it longer)

    def to_json(self) -> dict[str, Any]:
        """The stats as one JSON object (a child fleet process sends it to the bench)."""
        out = dataclasses.asdict(self)
        out["first_seen"] = {str(seq): t for seq, t in self.first_seen.items()}
        return out

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> FleetStats:
        """The inverse of `to_json`."""
        stats = cls(**obj)
        stats.first_seen = {int(seq): t for seq, t in obj["first_seen"].items()}
        stats.report_times = [(a, b) for a, b in obj["report_times"]]
        return stats

    @classmethod
    def merged(cls, parts: Sequence[FleetStats]) -> FleetStats:
        """The stats of a fleet run as `parts` (one per process, each over its own pods):
        lists joined, counts added, earliest times and largest sizes kept."""
        out = cls()
        for f in dataclasses.fields(cls):
            values = [getattr(p, f.name) for p in parts]
            default = getattr(out, f.name)
            merge = _MERGED.get(f.name) or _merge_by_type(default)
            setattr(out, f.name, merge(values, default))
        return out


Merge = Callable[[list[Any], Any], Any]  # (each part's value, the default) -> the fleet's


def _earliest(values: list[Any], default: Any) -> Any:
    known = [v for v in values if v is not None]
    return min(known) if known else default


def _largest(values: list[Any], default: Any) -> Any:
    return max(values, default=0)


def _earliest_each(values: list[dict[Any, float]], default: Any) -> dict[Any, float]:
    """An order's first arrival at any agent."""
    merged: dict[Any, float] = {}
    for seen in values:
        for seq, t in seen.items():
            merged[seq] = min(t, merged.get(seq, t))
    return merged


def _added_each(values: list[dict[Any, int]], default: Any) -> dict[Any, int]:
    merged: dict[Any, int] = {}
    for counts in values:
        for result, n in counts.items():
            merged[result] = merged.get(result, 0) + n
    return merged


def _joined(values: list[list[Any]], default: Any) -> list[Any]:
    return [v for part in values for v in part]


def _united(values: list[dict[Any, Any]], default: Any) -> dict[Any, Any]:
    """pod -> ...: each pod is in one part."""
    return {k: v for part in values for k, v in part.items()}


def _added(values: list[Any], default: Any) -> Any:
    return sum(values)


# the fields not merged as their type says
_MERGED: dict[str, Merge] = {
    "started": _earliest,
    "first_command_report": _earliest,
    "order_bytes": _largest,
    "pod_order_bytes": _largest,
    "first_seen": _earliest_each,
    "receipts": _added_each,
}


def _merge_by_type(default: Any) -> Merge:
    """Lists joined, dicts united, counts added."""
    if isinstance(default, list):
        return _joined
    if isinstance(default, dict):
        return _united
    return _added
