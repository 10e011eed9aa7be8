"""The bus message (docs/design.md, "Communication") and its strict JSON codec (no I/O).

Wire form: one JSON object with exactly the keys AegisName, AegisNamespace, PodName, Type,
Phase, Data, TimeStamp, Seq. `decode` accepts nothing else and raises only MalformedMessage.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from aegis.protocol import json_bytes
from aegis.protocol.errors import InvalidNameError, MalformedMessage
from aegis.protocol.subjects import BROADCAST_POD, validate_label, validate_pod_name

MAX_MESSAGE_BYTES = 1 << 20  # 1 MiB, also NATS's default max_payload
MAX_SEQ = (1 << 63) - 1
KEYS = ("AegisName", "AegisNamespace", "PodName", "Type", "Phase", "Data", "TimeStamp", "Seq")
_KEY_SET = frozenset(KEYS)


class MessageType(StrEnum):
    """What a message is."""

    ACK = "ACK"
    ORDER = "Order"
    ERROR = "Error"
    FINISH = "Finish"
    HEARTBEAT = "Heartbeat"
    HANG = "Hang"  # the agent's command makes no progress or is slow: mark it (spec agentHang)
    CHECKPOINT = "Checkpoint"  # a checkpoint completed: a safe point (spec agentCheckpoint)
    EVICTED = "Evicted"  # the agent leaves at the safe point (spec agentEvict)
    CONTROL = "Control"  # an operator's request (`aegis ctl`) and its reply


class MessagePhase(StrEnum):
    """Which protocol phase a message belongs to."""

    BOOTCHECK = "bootcheck"
    COMMAND = "command"
    TROUBLESHOOT = "troubleshoot"


def _enum(kind: type[StrEnum], value: object, key: str) -> Any:
    # one dict lookup (a member is found by its own value too), cheaper than kind(value)
    member = kind._value2member_map_.get(value) if isinstance(value, str) else None
    if member is not None:
        return member
    allowed = ", ".join(m.value for m in kind)
    raise MalformedMessage(f"{key} must be one of {allowed}; got {value!r}")


def _timestamp(ts: Any) -> float:
    """A message's TimeStamp: a finite number (MalformedMessage if not)."""
    if isinstance(ts, bool) or not isinstance(ts, int | float) or not math.isfinite(ts):
        raise MalformedMessage(f"TimeStamp must be a finite number; got {ts!r}")
    return float(ts)


def _check_seq(seq: Any) -> None:
    """A message's Seq: an integer in 0..2^63-1 (MalformedMessage if not)."""
    if isinstance(seq, bool) or not isinstance(seq, int):
        raise MalformedMessage(f"Seq must be an integer; got {seq!r}")
    if not 0 <= seq <= MAX_SEQ:
        raise MalformedMessage(f"Seq must be in 0..2^63-1; got {seq}")


@dataclass(frozen=True, slots=True)
class Message:
    """One bus message; `pod_name == "master"` addresses every worker."""

    aegis_name: str
    aegis_namespace: str
    pod_name: str
    type: MessageType
    phase: MessagePhase
    data: Mapping[str, Any] = field(default_factory=dict, hash=False)
    timestamp: float = 0.0
    seq: int = 0

    def __post_init__(self) -> None:
        try:
            validate_label("AegisName", self.aegis_name)
            validate_label("AegisNamespace", self.aegis_namespace)
            validate_pod_name(self.pod_name)
        except InvalidNameError as exc:
            raise MalformedMessage(str(exc)) from None
        object.__setattr__(self, "type", _enum(MessageType, self.type, "Type"))
        object.__setattr__(self, "phase", _enum(MessagePhase, self.phase, "Phase"))
        if not isinstance(self.data, Mapping) or not all(isinstance(k, str) for k in self.data):
            raise MalformedMessage("Data must be a JSON object with string keys")
        object.__setattr__(self, "data", MappingProxyType(dict(self.data)))
        object.__setattr__(self, "timestamp", _timestamp(self.timestamp))
        _check_seq(self.seq)

    @property
    def is_broadcast(self) -> bool:
        """True when addressed to every worker."""
        return self.pod_name == BROADCAST_POD

    def to_wire(self) -> dict[str, Any]:
        """The wire-form JSON object (the wire's key names)."""
        values = (
            self.aegis_name,
            self.aegis_namespace,
            self.pod_name,
            self.type.value,
            self.phase.value,
            dict(self.data),
            self.timestamp,
            self.seq,
        )
        return dict(zip(KEYS, values, strict=True))

    def encode(self) -> bytes:
        """Compact UTF-8 JSON; MalformedMessage if Data is not JSON or it exceeds 1 MiB. A lone
        surrogate in a string (UTF-8 cannot hold it: an exception's text about a file name
        that is not UTF-8 has one) goes out as U+FFFD, as `decode` reads one."""
        try:
            try:
                payload = json_bytes.dumps(self.to_wire())
            except UnicodeEncodeError:
                payload = json_bytes.dumps(without_lone_surrogates(self.to_wire()))
        except (TypeError, ValueError, RecursionError) as exc:
            raise MalformedMessage(f"Data is not encodable as JSON: {exc}") from None
        if len(payload) > MAX_MESSAGE_BYTES:
            raise MalformedMessage(f"encoded size {len(payload)} exceeds {MAX_MESSAGE_BYTES} bytes")
        return payload

    @classmethod
    def decode(cls, payload: bytes | bytearray | memoryview) -> Message:
        """Parse and validate a wire payload; raises only MalformedMessage."""
        obj = _parse(payload)
        if obj.keys() != _KEY_SET:
            missing = [k for k in KEYS if k not in obj]
            if missing:
                raise MalformedMessage(f"missing key(s): {', '.join(missing)}")
            unknown = sorted(set(obj) - _KEY_SET)
            raise MalformedMessage(f"unknown key(s): {', '.join(unknown)}")
        for key in ("AegisName", "AegisNamespace", "PodName", "Type", "Phase"):
            if not isinstance(obj[key], str):
                raise MalformedMessage(f"{key} must be a string; got {type(obj[key]).__name__}")
        if not isinstance(obj["Data"], dict):
            raise MalformedMessage("Data must be a JSON object")
        return cls(
            obj["AegisName"],
            obj["AegisNamespace"],
            obj["PodName"],
            obj["Type"],
            obj["Phase"],
            obj["Data"],
            obj["TimeStamp"],
            obj["Seq"],
        )


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise MalformedMessage("duplicate key in a JSON object")
    return obj


def _no_constant(name: str) -> Any:
    raise MalformedMessage(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise MalformedMessage(f"number {text[:20]} is out of range")
    return value


# made once: json.loads with hooks builds a decoder per call
_DECODER = json.JSONDecoder(
    object_pairs_hook=_no_duplicates, parse_constant=_no_constant, parse_float=_finite_float
)


def _parse(payload: object) -> dict[str, Any]:
    if not isinstance(payload, bytes | bytearray | memoryview):
        raise MalformedMessage(f"payload must be bytes; got {type(payload).__name__}")
    if len(payload) > MAX_MESSAGE_BYTES:
        raise MalformedMessage(f"payload of {len(payload)} bytes exceeds {MAX_MESSAGE_BYTES}")
    try:
        text = bytes(payload).decode("utf-8")
        obj = _DECODER.decode(text)
    except MalformedMessage:
        raise
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise MalformedMessage(f"not UTF-8 JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise MalformedMessage(f"top level must be a JSON object; got {type(obj).__name__}")
    if "\\ud" in text or "\\uD" in text:  # only an escape can make a surrogate
        obj = without_lone_surrogates(obj)
    return obj


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # json.loads joins a pair into one character


def without_lone_surrogates(obj: Any) -> Any:
    """`obj` (parsed JSON) with each lone surrogate in its strings and keys replaced by
    U+FFFD. JSON's `\\ud800` escape makes one, which no UTF-8 text holds: the controller
    could not write such a string to its status, WAL or step log (the commit of a report
    whose reason held one failed), nor an agent send it."""
    if isinstance(obj, str):
        return _LONE_SURROGATE.sub("\ufffd", obj)
    if isinstance(obj, dict):
        out = {without_lone_surrogates(k): without_lone_surrogates(v) for k, v in obj.items()}
        if len(out) != len(obj):
            raise MalformedMessage("duplicate key in a JSON object (keys differing in surrogates)")
        return out
    if isinstance(obj, list | tuple):
        return [without_lone_surrogates(v) for v in obj]
    return obj
