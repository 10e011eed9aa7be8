"""What a local launcher tells its controller process: one JSON object a line on the
controller's stdin (pure code, no I/O).

- `PodLost`: an agent process exited (its pod, incarnation, exit code and node, and where
  the launcher starts it next);
- `Quit`: the job is to stop (ShouldQuit), and why.

`parse_event` accepts only what `to_line` writes and raises MalformedMessage, naming what is
wrong, for anything else: the controller logs and skips such a line, it never stops on one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from aegis.protocol.errors import MalformedMessage

MAX_LINE = 4096  # bytes of one event line that are read at most (its fields are short)


@dataclass(frozen=True)
class PodLost:
    """The agent of `pod` (this `incarnation`) exited with `exit_code` on `node`; `reason`:
    what the launcher knows beyond an exit (its host was lost: no process exited, and
    `exit_code` is -1)."""

    pod: str
    incarnation: str
    exit_code: int
    node: str = ""
    reason: str = ""
    next_node: str = ""  # where the launcher starts the pod again ("": it does not say)
    container_restarts: int | None = None  # Level 2: this one's number, of ...
    container_restart_limit: int | None = None  # ... at most this many before Level 3

    def to_line(self) -> bytes:
        """The event as one line (with its newline)."""
        obj = {
            "event": "lost",
            "pod": self.pod,
            "incarnation": self.incarnation,
            "exitCode": self.exit_code,
            "node": self.node,
        }
        for key, value in (
            ("reason", self.reason),
            ("nextNode", self.next_node),
            ("containerRestarts", self.container_restarts),
            ("containerRestartLimit", self.container_restart_limit),
        ):
            if value:
                obj[key] = value
        return (json.dumps(obj) + "\n").encode()


@dataclass(frozen=True)
class Quit:
    """The job is to stop (ShouldQuit); `reason`: why ("": as `aegis ctl stop` asks)."""

    reason: str = ""

    def to_line(self) -> bytes:
        """The event as one line (with its newline)."""
        obj = {"event": "quit", **({"reason": self.reason} if self.reason else {})}
        return (json.dumps(obj) + "\n").encode()


LauncherEvent = PodLost | Quit


def parse_event(line: bytes) -> LauncherEvent:
    """The event of one line (MalformedMessage saying what is wrong with it)."""
    if len(line) > MAX_LINE:
        raise MalformedMessage(f"launcher event of {len(line)} bytes (at most {MAX_LINE})")
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        raise MalformedMessage(f"launcher event is not JSON: {line[:100]!r}") from None
    if not isinstance(obj, dict):
        raise MalformedMessage(f"launcher event is not a JSON object: {line[:100]!r}")
    kind = obj.get("event")
    if kind == "quit":
        return Quit(_optional(obj, "reason", str, ""))
    if kind != "lost":
        raise MalformedMessage(f"unknown launcher event {kind!r:.40} (expected lost or quit)")
    return PodLost(
        pod=_field(obj, "pod", str),
        incarnation=_field(obj, "incarnation", str),
        exit_code=_field(obj, "exitCode", int),
        node=_optional(obj, "node", str, ""),
        reason=_optional(obj, "reason", str, ""),
        next_node=_optional(obj, "nextNode", str, ""),
        container_restarts=_optional(obj, "containerRestarts", int, None),
        container_restart_limit=_optional(obj, "containerRestartLimit", int, None),
    )


def _field(obj: dict[str, Any], key: str, kind: type) -> Any:
    if key not in obj:
        raise MalformedMessage(f"launcher event lost lacks {key!r}")
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, kind):
        raise MalformedMessage(
            f"launcher event {obj.get('event')}: {key!r} must be {kind.__name__}"
        )
    return value


def _optional(obj: dict[str, Any], key: str, kind: type, default: Any) -> Any:
    return _field(obj, key, kind) if key in obj else default
