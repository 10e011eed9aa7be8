"""Typed `Data` of the messages between controller and agents (pure code, no I/O).

- `Order`: what the controller broadcasts (or answers an ACK with) for the current masterSeq;
- `Eviction`: the order telling one lost incarnation of a pod to exit;
- `Sender`: who an agent's message comes from (every ACK, report and heartbeat carries it);
- `Heartbeat`: an agent's heartbeat: its sender and the versions of the order it holds;
- `Report`: an agent's Finish / Error / Hang / Checkpoint / Evicted;
- `Receipt`: the controller's answer to a report.

Each has `to_data()` and a `from_data()` that accepts only what `to_data()` can produce and
raises MalformedMessage otherwise, so a handler never reads a payload by key.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from aegis.generated.aegis_phase.agent_view import DERIVED, GLOBALS, PER_POD
from aegis.protocol.errors import MalformedMessage
from aegis.protocol.faults import ProcessFailure
from aegis.protocol.state_codec import CodecError, decode, encode
from aegis.values import Value

MAX_REASON = 500  # characters of a free-text reason kept by the controller
# the longest heartbeat period an order may ask for (Order.beat_s): it bounds how long a
# frozen agent goes unnoticed, whatever a controller computes
MAX_BEAT_S = 60.0


def _field(data: Mapping[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    if key not in data:
        raise MalformedMessage(f"Data lacks {key!r}")
    value = data[key]
    if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise MalformedMessage(f"Data[{key!r}] must be {_kind_name(kind)}; got a boolean")
    if not isinstance(value, kind):
        raise MalformedMessage(f"Data[{key!r}] must be {_kind_name(kind)}; got {value!r:.60}")
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(k.__name__ for k in kinds)


def _optional(
    data: Mapping[str, Any], key: str, kind: type | tuple[type, ...], default: Any
) -> Any:
    return _field(data, key, kind) if key in data else default


def _text(value: str, limit: int) -> str:
    return value[:limit]


@dataclass(frozen=True)
class Order:
    """The controller's order for masterSeq: the agent's projection of the spec state
    (aegis.generated.aegis_phase.agent_view) and where to rendezvous.

    Its size does not grow with the job: `globals` are the variables the agent's actions read
    that are not per worker, `derived` the definitions they read over every worker (evaluated
    by the controller), `pod` the PER_POD entries of the one pod the order is for (None in the
    broadcast), `finished` how many workers finished the current order. `version` is the
    controller's step number of the state it was made of (it grows with every state, and a
    restarted controller resumes it): an agent's heartbeat says which version it holds, and
    the controller sends the current order to an agent that missed one. `beat_s` is the
    heartbeat period the controller asks for at least (its heartbeat budget: a job of many
    pods beats less often each, docs/operations.md), 0 for none: the agent beats at
    max(its own period, beat_s)."""

    spec_phase: str
    final: str | None  # "Succeed" / "Failed" once the job ended: every agent leaves
    retry: int
    max_retry: int
    master_addr: str
    master_port: int
    check_port: int
    globals: Mapping[str, Value] = field(hash=False)
    derived: Mapping[str, Value] = field(hash=False)
    pod: Mapping[str, Value] | None = field(default=None, hash=False)
    finished: int = 0
    version: int = 0
    beat_s: float = 0.0

    def to_data(self) -> dict[str, Any]:
        """The order's `Data` object."""
        data: dict[str, Any] = {
            "specPhase": self.spec_phase,
            "final": self.final,
            "retry": self.retry,
            "maxRetry": self.max_retry,
            "masterAddr": self.master_addr,
            "masterPort": self.master_port,
            "checkPort": self.check_port,
            "view": {
                "globals": {k: encode(v) for k, v in self.globals.items()},
                "derived": {k: encode(v) for k, v in self.derived.items()},
            },
            "finished": self.finished,
            "version": self.version,
            "beatS": self.beat_s,
        }
        if self.pod is not None:
            data["pod"] = {k: encode(v) for k, v in self.pod.items()}
        return data

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Order:
        """Parse an order's `Data` (MalformedMessage if it is not one)."""
        final = data.get("final")
        if final is not None and not isinstance(final, str):
            raise MalformedMessage(f"Data['final'] must be a phase name or null; got {final!r}")
        ports = [_field(data, k, int) for k in ("masterPort", "checkPort")]
        if not all(0 < p < 65536 for p in ports):
            raise MalformedMessage(f"ports must be in 1..65535; got {ports}")
        view = _field(data, "view", dict)
        finished = _field(data, "finished", int)
        if finished < 0:
            raise MalformedMessage(f"Data['finished'] must be >= 0; got {finished}")
        version = _field(data, "version", int)
        if version < 0:
            raise MalformedMessage(f"Data['version'] must be >= 0; got {version}")
        beat_s = _field(data, "beatS", (int, float))
        if not (math.isfinite(beat_s) and 0 <= beat_s <= MAX_BEAT_S):
            raise MalformedMessage(f"Data['beatS'] must be in 0..{MAX_BEAT_S:g} s; got {beat_s}")
        pod = data.get("pod")
        return cls(
            spec_phase=_field(data, "specPhase", str),
            final=final,
            retry=_field(data, "retry", int),
            max_retry=_field(data, "maxRetry", int),
            master_addr=_field(data, "masterAddr", str),
            master_port=ports[0],
            check_port=ports[1],
            globals=_values(_field(view, "globals", dict), GLOBALS, "view.globals"),
            derived=_values(_field(view, "derived", dict), DERIVED, "view.derived"),
            pod=None if pod is None else _values(_field(data, "pod", dict), PER_POD, "pod"),
            finished=finished,
            version=version,
            beat_s=float(beat_s),
        )


def _values(obj: Mapping[str, Any], names: tuple[str, ...], where: str) -> dict[str, Value]:
    """The spec values of exactly `names` in `obj` (MalformedMessage naming what is wrong)."""
    if set(obj) != set(names):
        missing, extra = sorted(set(names) - set(obj)), sorted(set(obj) - set(names))
        raise MalformedMessage(
            f"Data[{where!r}] must hold {list(names)}: missing {missing}, unexpected {extra[:5]}"
        )
    try:
        return {k: decode(obj[k]) for k in names}
    except CodecError as exc:
        raise MalformedMessage(f"Data[{where!r}]: {exc}") from None


@dataclass(frozen=True)
class Eviction:
    """The order to the lost `incarnation` of a pod: exit, you are being replaced."""

    incarnation: str

    KEY = "evicted"

    def to_data(self) -> dict[str, Any]:
        """The eviction's `Data` object."""
        return {self.KEY: self.incarnation}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Eviction:
        """Parse an eviction's `Data`."""
        return cls(_field(data, cls.KEY, str))


def parse_order(data: Mapping[str, Any]) -> Order | Eviction:
    """An order message's payload, whichever of the two kinds it is."""
    if Eviction.KEY in data:
        return Eviction.from_data(data)
    return Order.from_data(data)


@dataclass(frozen=True)
class Sender:
    """Who sent an agent's message: its incarnation and where it runs (for the fault log)."""

    incarnation: str
    node: str = ""
    pod_ip: str = ""
    node_ip: str = ""

    def to_data(self) -> dict[str, Any]:
        """The sender's keys of a message's `Data`."""
        return {
            "incarnation": self.incarnation,
            "node": self.node,
            "podIP": self.pod_ip,
            "nodeIP": self.node_ip,
        }

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Sender:
        """The sender of a message (MalformedMessage without an incarnation)."""
        inc = _field(data, "incarnation", str)
        if not inc:
            raise MalformedMessage("Data['incarnation'] must not be empty")
        return cls(
            incarnation=_text(inc, 128),
            node=_text(_optional(data, "node", str, ""), 253),
            pod_ip=_text(_optional(data, "podIP", str, ""), 64),
            node_ip=_text(_optional(data, "nodeIP", str, ""), 64),
        )


@dataclass(frozen=True)
class Heartbeat:
    """An agent's heartbeat: who sends it and which order it holds: `holds`, the version of
    the newest order addressed to it that it received (the broadcast, its own order or an
    ACK's reply), `holds_pod` that of the newest one that carried its pod's entries (its own
    order or an ACK's reply); -1 before any. None: not said (the controller sends nothing)."""

    sender: Sender
    holds: int | None = None
    holds_pod: int | None = None

    def to_data(self) -> dict[str, Any]:
        """The heartbeat's `Data` object."""
        data = self.sender.to_data()
        if self.holds is not None:
            data["holds"] = self.holds
        if self.holds_pod is not None:
            data["holdsPod"] = self.holds_pod
        return data

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Heartbeat:
        """Parse a heartbeat's `Data` (MalformedMessage naming the bad field)."""
        return cls(Sender.from_data(data), *heartbeat_versions(data))


def heartbeat_versions(data: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """(holds, holdsPod) of a heartbeat's `Data`, its sender not parsed (the controller
    checked it already: 2,500 heartbeats a second at 12,500 pods); MalformedMessage if bad."""
    holds = _optional(data, "holds", int, None)
    holds_pod = _optional(data, "holdsPod", int, None)
    for key, value in (("holds", holds), ("holdsPod", holds_pod)):
        if value is not None and value < -1:
            raise MalformedMessage(f"Data[{key!r}] must be >= -1; got {value}")
    return holds, holds_pod


@dataclass(frozen=True)
class Report:
    """The body of an agent's report (Finish, Error, Hang, Checkpoint, Evicted)."""

    sender: Sender
    reason: str = ""
    step: int | None = None  # Checkpoint: the training step that was saved
    checks: tuple[Mapping[str, Any], ...] = ()  # a check round's CheckResult dicts
    round_seconds: float | None = None
    gpu_type: str | None = None
    failure: ProcessFailure | None = None  # Error: the rank whose process failed, if one did
    # Error: the command cannot start (the user's error): the job ends, no retry counted
    user_error: bool = False

    def to_data(self) -> dict[str, Any]:
        """The report's `Data` object."""
        data: dict[str, Any] = {**self.sender.to_data(), "reason": self.reason}
        if self.failure is not None:
            data["failure"] = self.failure.to_data()
        if self.user_error:
            data["userError"] = True
        if self.step is not None:
            data["step"] = self.step
        if self.checks:
            data["checks"] = [dict(c) for c in self.checks]
        if self.round_seconds is not None:
            data["roundSeconds"] = self.round_seconds
        if self.gpu_type is not None:
            data["gpuType"] = self.gpu_type
        return data

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Report:
        """Parse a report's `Data` (MalformedMessage naming the bad field)."""
        checks = _optional(data, "checks", list, [])
        if not all(isinstance(c, dict) for c in checks):
            raise MalformedMessage("Data['checks'] must be a list of objects")
        seconds = _optional(data, "roundSeconds", (int, float), None)
        if seconds is not None and not (math.isfinite(seconds) and seconds >= 0):
            raise MalformedMessage(f"Data['roundSeconds'] must be >= 0; got {seconds!r}")
        gpu = _optional(data, "gpuType", str, None)
        failure = data.get("failure")
        return cls(
            sender=Sender.from_data(data),
            reason=_text(_optional(data, "reason", str, ""), MAX_REASON),
            step=_optional(data, "step", int, None),
            checks=tuple(checks),
            round_seconds=None if seconds is None else float(seconds),
            gpu_type=None if gpu is None else _text(gpu, 128),
            failure=None if failure is None else ProcessFailure.from_data(failure),
            user_error=_optional(data, "userError", bool, False),
        )


class ReceiptResult(StrEnum):
    """What the controller did with a report."""

    APPLIED = "applied"
    NOT_ENABLED = "not enabled"  # the spec's action is not enabled for it now
    STALE = "stale"  # sent under an older order
    FORGED = "forged"  # not from a known incarnation of a pod of this job
    EVICTED = "evicted"  # this incarnation was declared lost: exit to be replaced
    UNEXPECTED_TYPE = "unexpected type"


@dataclass(frozen=True)
class Receipt:
    """The controller's answer to a report."""

    result: ReceiptResult

    def to_data(self) -> dict[str, Any]:
        """The receipt's `Data` object."""
        return {"result": self.result.value}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Receipt:
        """Parse a receipt's `Data`."""
        text = _field(data, "result", str)
        try:
            return cls(ReceiptResult(text))
        except ValueError:
            raise MalformedMessage(f"unknown receipt result {text!r}") from None
