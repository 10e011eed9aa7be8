"""The operator's control protocol (`aegis ctl`): requests, replies and their validation.

Request: `Message(type Control, PodName "ctl", Data {"command": NAME, ...args})`, sent with
NATS request/reply to `JobSubjects.ctl_controller` (status, stop, taint, untaint) or to
`JobSubjects.ctl_agent(pod)` (hang, check, burn). Reply: `Message(type Control, PodName "ctl",
Data {"ok": bool, "result": ..., "error": str})`.

Every request is validated strictly against `COMMANDS` (known command, only known arguments,
each of its type and range); a bad request, or a handler that fails, gets an error reply.
Nothing here raises into the controller's or the agent's subscription.

Only the job's ctl user (`JobAccount.ctl_credentials`, allowed on `aegis.<ns>.<job>.ctl.>`
and `_INBOX.>`) and the job's own processes can reach these subjects.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aegis.errors import AegisError
from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.protocol.errors import InvalidNameError, MalformedMessage
from aegis.protocol.subjects import validate_subdomain

log = logging.getLogger(__name__)

CTL_POD = "ctl"  # PodName of every control request and reply
CONTROLLER_COMMANDS = ("status", "stop", "taint", "untaint")
AGENT_COMMANDS = ("hang", "check", "burn")
# checks an agent can run alone, out of band (the collective ones need every rank);
# the agent's LOCAL_CHECKS
CTL_CHECKS = ("io", "runtime", "gpu", "rdma")
DEFAULT_CTL_CHECKS = CTL_CHECKS
DEFAULT_BURN_S = 10.0
MAX_BURN_S = 600.0
MAX_REASON = 500
DEFAULT_TAINT_REASON = "tainted by the operator (aegis ctl)"
DEFAULT_HANG_REASON = "aegis ctl hang"


class ControlError(AegisError, ValueError):
    """A control request or reply is invalid, or the other side refused it."""


# ---------------- argument validators (each returns the clean value or raises) ----------------


def node_name(value: object) -> str:
    """A node name: a DNS-1123 subdomain (lower-case letters, digits, '-', '.'), ≤ 253."""
    try:
        return validate_subdomain("node", value)
    except InvalidNameError as exc:
        raise ControlError(str(exc)) from None


def reason_text(value: object) -> str:
    """A free-text reason: a string of at most MAX_REASON characters, no control characters."""
    if not isinstance(value, str):
        raise ControlError(f"reason must be a string, got {type(value).__name__}")
    if len(value) > MAX_REASON:
        raise ControlError(f"reason is {len(value)} characters long; the limit is {MAX_REASON}")
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise ControlError("reason must not contain control characters (newlines, tabs, ...)")
    return value


def flag(value: object) -> bool:
    """A yes/no argument."""
    if not isinstance(value, bool):
        raise ControlError(f"expected true or false, got {value!r}")
    return value


def check_names(value: object) -> tuple[str, ...]:
    """A non-empty list of distinct names from CTL_CHECKS."""
    if not isinstance(value, list | tuple) or not value:
        raise ControlError(f"checks must be a non-empty list of names from {list(CTL_CHECKS)}")
    if not all(isinstance(c, str) for c in value):
        raise ControlError("checks must be strings")
    unknown = [c for c in value if c not in CTL_CHECKS]
    if unknown:
        raise ControlError(
            f"unknown or collective check(s) {unknown}: an agent runs only {list(CTL_CHECKS)} "
            "out of band (collective checks need every rank: they run in troubleshoot rounds)"
        )
    if len(set(value)) != len(value):
        raise ControlError(f"checks {list(value)} name a check twice")
    return tuple(value)


def burn_seconds(value: object) -> float:
    """A burn-in duration: a number of seconds in (0, MAX_BURN_S]."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ControlError(f"seconds must be a number, got {value!r}")
    seconds = float(value)
    if not math.isfinite(seconds) or not 0 < seconds <= MAX_BURN_S:
        raise ControlError(f"seconds must be > 0 and <= {MAX_BURN_S:g}, got {value!r}")
    return seconds


_REQUIRED = object()


@dataclass(frozen=True)
class _Arg:
    check: Callable[[object], Any]
    default: object = _REQUIRED


# command -> its arguments (name -> validator and default); nothing else is accepted
COMMANDS: Mapping[str, Mapping[str, _Arg]] = {
    "status": {},
    "stop": {},
    # force: taint a node none of the job's pods has run on (else refused: a typo)
    "taint": {
        "node": _Arg(node_name),
        "reason": _Arg(reason_text, DEFAULT_TAINT_REASON),
        "force": _Arg(flag, False),
    },
    "untaint": {"node": _Arg(node_name)},
    "hang": {"reason": _Arg(reason_text, DEFAULT_HANG_REASON)},
    "check": {"checks": _Arg(check_names, DEFAULT_CTL_CHECKS)},
    "burn": {"seconds": _Arg(burn_seconds, DEFAULT_BURN_S)},
}


@dataclass(frozen=True)
class ControlRequest:
    """A validated request: the command and every argument (defaults filled in)."""

    command: str
    args: Mapping[str, Any]


def validate(command: object, args: Mapping[str, object], allowed: Sequence[str]) -> ControlRequest:
    """Check `command` (one of `allowed`) and its `args`; ControlError says what is wrong."""
    if not isinstance(command, str) or command not in COMMANDS:
        raise ControlError(f"unknown command {command!r}: use one of {list(COMMANDS)}")
    if command not in allowed:
        where = "an agent" if command in AGENT_COMMANDS else "the controller"
        raise ControlError(f"{command} is a command for {where}, not sent here")
    spec = COMMANDS[command]
    unknown = sorted(set(args) - set(spec))
    if unknown:
        raise ControlError(f"{command}: unknown argument(s) {unknown}; it takes {sorted(spec)}")
    clean: dict[str, Any] = {}
    for name, arg in spec.items():
        if name in args:
            clean[name] = arg.check(args[name])
        elif arg.default is _REQUIRED:
            raise ControlError(f"{command}: missing argument {name!r}")
        else:
            clean[name] = arg.default
    return ControlRequest(command, clean)


def parse_request(msg: Message, allowed: Sequence[str]) -> ControlRequest:
    """The validated request a Control message carries (ControlError if it is not one)."""
    if msg.type is not MessageType.CONTROL:
        raise ControlError(f"expected a {MessageType.CONTROL.value} message, got {msg.type.value}")
    data = dict(msg.data)
    command = data.pop("command", None)
    if command is None:
        raise ControlError("request has no 'command'")
    return validate(command, data, allowed)


def make_request(namespace: str, job: str, command: str, **args: Any) -> Message:
    """A request for `command` (validated here first: ControlError on a bad argument)."""
    req = validate(command, args, tuple(COMMANDS))
    data = {"command": req.command, **jsonable(dict(req.args))}
    return Message(
        job, namespace, CTL_POD, MessageType.CONTROL, MessagePhase.COMMAND, data, time.time()
    )


def make_reply(req: Message, *, ok: bool, result: Any = None, error: str = "") -> Message:
    """The reply to `req`; a result that cannot be sent becomes an error reply."""

    def reply(data: Mapping[str, Any]) -> Message:
        return Message(
            req.aegis_name,
            req.aegis_namespace,
            CTL_POD,
            MessageType.CONTROL,
            MessagePhase.COMMAND,
            data,
            time.time(),
        )

    try:
        out = reply({"ok": ok, "result": result, "error": error})
        out.encode()
    except (MalformedMessage, TypeError, ValueError) as exc:
        log.error("control reply to %s cannot be sent: %s", req.data.get("command"), exc)
        out = reply({"ok": False, "result": None, "error": f"reply cannot be sent: {exc}"})
    return out


def reply_result(reply: Message) -> Any:
    """The result of a reply; ControlError with the other side's error if it refused."""
    data = reply.data
    if reply.type is not MessageType.CONTROL or not isinstance(data.get("ok"), bool):
        raise ControlError(f"not a control reply: {reply.type.value} {dict(data)!r:.200}")
    if not data["ok"]:
        raise ControlError(str(data.get("error") or "refused without a reason"))
    return data.get("result")


def jsonable(value: Any) -> Any:
    """`value` as plain JSON data (ValueError/TypeError if it is not JSON-able)."""
    return json.loads(json.dumps(value, allow_nan=False))
