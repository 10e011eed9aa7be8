"""The node rendezvous of a job across hosts, as pure code: node 0's launcher and every other
node's launcher exchange these messages, one JSON object a line (docs/multihost.md).

A joining node first asks for the job's CA (`Hello` -> `CaOffer`) over a TLS connection it
cannot verify yet, and accepts the CA only if the offer's MAC, keyed by the join secret every
node was given, covers its own nonce and that CA: an impostor without the secret cannot make
one (kubeadm's token discovery works the same way). It then reconnects trusting that CA alone
and sends `Join` with a token derived from the secret. Node 0 answers `Welcome` or `Refused`,
then sends `Start` (run an agent for this pod) and `End`; the node sends `Exited` when its
agent exits. Both sides send `Ping` so that a silent peer is seen (docs/multihost.md, "Host
loss"). Every decoder checks types and sizes and raises MalformedMessage: a peer's bytes
never crash a launcher.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from aegis.protocol.errors import MalformedMessage

VERSION = 1
DEFAULT_JOIN_TIMEOUT_S = 600.0  # torchrun's join_timeout: nodes wait this long for each other
DEFAULT_HOST_TIMEOUT_S = 30.0  # a host silent this long is lost (a 10 s link cut is not)
MAX_LINE = 256 * 1024  # bytes of one message, newline included (a CA and an agent's config)
MIN_SECRET_CHARS = 16
NONCE_CHARS = 64  # hex: 32 random bytes
_HEX = re.compile(r"[0-9a-f]+")
_VAR = re.compile(r"AEGIS_[A-Z_]+")
_MAX_TEXT = 4096  # a host name, a reason
_MAX_VALUE = 128 * 1024  # one agent variable (the command, the CA)


def _key(secret: bytes, purpose: str) -> bytes:
    """A key for one purpose, derived from the join secret (HMAC-SHA256 as the KDF)."""
    return hmac.new(secret, f"aegis-rendezvous-v{VERSION}/{purpose}".encode(), "sha256").digest()


def ca_mac(secret: bytes, nonce: str, ca_pem: str) -> str:
    """The MAC node 0 puts on its CA offer: it covers the asker's nonce and the CA's bytes."""
    digest = hashlib.sha256(ca_pem.encode("ascii", "replace")).hexdigest()
    msg = f"{nonce}:{digest}".encode()
    return hmac.new(_key(secret, "ca"), msg, "sha256").hexdigest()


def ca_offer_genuine(secret: bytes, nonce: str, offer: CaOffer) -> bool:
    """Whether `offer` was made by a holder of `secret` for this `nonce` (constant time)."""
    return hmac.compare_digest(ca_mac(secret, nonce, offer.ca), offer.mac)


def join_token(secret: bytes) -> str:
    """What a node proves it holds the secret with, once the channel is verified."""
    return _key(secret, "join").hex()


def secret_problem(secret: str) -> str | None:
    """Why `secret` cannot be a join secret (None if it can)."""
    if len(secret.strip()) < MIN_SECRET_CHARS:
        return (
            f"the join secret has {len(secret.strip())} characters; use at least "
            f"{MIN_SECRET_CHARS} random ones (e.g. `openssl rand -hex 32`)"
        )
    return None


@dataclass(frozen=True)
class Hello:
    """A joining node asks for the job's CA; `nonce`: 64 hex digits it made up."""

    OP: ClassVar[str] = "hello"
    nonce: str


@dataclass(frozen=True)
class CaOffer:
    """Node 0's CA certificate (PEM) with `ca_mac` over the asker's nonce."""

    OP: ClassVar[str] = "ca"
    ca: str
    mac: str


@dataclass(frozen=True)
class Join:
    """A node joins: its rank (>= the job's node count: a spare), name and ranks per node."""

    OP: ClassVar[str] = "join"
    token: str
    node_rank: int
    hostname: str
    nproc: int


@dataclass(frozen=True)
class Refused:
    """Node 0 will not take this node (the reason says what to change)."""

    OP: ClassVar[str] = "refused"
    why: str


@dataclass(frozen=True)
class Welcome:
    """The node is in: the job, its node name in the job, and whether it waits as a spare."""

    OP: ClassVar[str] = "welcome"
    job: str
    namespace: str
    node: str
    spare: bool
    host_timeout: float


@dataclass(frozen=True)
class Start:
    """Run an agent: `agent` holds its AEGIS_* variables (validated by the node)."""

    OP: ClassVar[str] = "start"
    agent: Mapping[str, str]


@dataclass(frozen=True)
class Exited:
    """The node's agent for `pod` (that incarnation) exited with `code` (< 0: a signal)."""

    OP: ClassVar[str] = "exited"
    pod: str
    incarnation: str
    code: int


@dataclass(frozen=True)
class End:
    """The job ended: leave with `code` (0: it succeeded); `why` is said on the node."""

    OP: ClassVar[str] = "end"
    code: int
    why: str


@dataclass(frozen=True)
class Ping:
    """I am here (sent every `host_timeout / 6` s by both sides)."""

    OP: ClassVar[str] = "ping"


NodeMessage = Hello | CaOffer | Join | Refused | Welcome | Start | Exited | End | Ping
_TYPES: dict[str, type[Any]] = {
    t.OP: t for t in (Hello, CaOffer, Join, Refused, Welcome, Start, Exited, End, Ping)
}
_WIRE_NAMES = {"node_rank": "nodeRank", "host_timeout": "hostTimeout"}


def encode(msg: NodeMessage) -> bytes:
    """One line: the message as a JSON object with its `op`, then a newline."""
    body: dict[str, Any] = {"op": msg.OP, "v": VERSION}
    for name, value in vars(msg).items():
        body[_WIRE_NAMES.get(name, name)] = dict(value) if isinstance(value, Mapping) else value
    line = json.dumps(body, separators=(",", ":")).encode() + b"\n"
    if len(line) > MAX_LINE:
        raise MalformedMessage(f"{msg.OP} message of {len(line)} bytes exceeds {MAX_LINE}")
    return line


def decode(line: bytes) -> NodeMessage:
    """The message on one line; MalformedMessage saying what is wrong with it."""
    if len(line) > MAX_LINE:
        raise MalformedMessage(f"a line of {len(line)} bytes exceeds {MAX_LINE}")
    try:
        obj = json.loads(line)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MalformedMessage(f"not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise MalformedMessage("not a JSON object")
    op = obj.get("op")
    if obj.get("v") != VERSION:
        raise MalformedMessage(f"protocol version {obj.get('v')!r}, this node speaks {VERSION}")
    kind = _TYPES.get(op) if isinstance(op, str) else None
    if kind is None:
        raise MalformedMessage(f"unknown op {op!r}")
    return _DECODERS[kind.OP](_Fields(obj, kind.OP))


class _Fields:
    """Typed access to a message's fields; each getter raises MalformedMessage."""

    def __init__(self, obj: dict[str, Any], op: str) -> None:
        self.obj, self.op = obj, op

    def _get(self, name: str) -> Any:
        if name not in self.obj:
            raise MalformedMessage(f"{self.op}: missing {name!r}")
        return self.obj[name]

    def text(self, name: str, limit: int = _MAX_TEXT, *, empty: bool = False) -> str:
        value = self._get(name)
        if not isinstance(value, str) or len(value) > limit or (not empty and not value):
            raise MalformedMessage(f"{self.op}: {name!r} must be a string of 1..{limit} chars")
        return value

    def hex(self, name: str, size: int) -> str:
        value = self.text(name, size)
        if len(value) != size or not _HEX.fullmatch(value):
            raise MalformedMessage(f"{self.op}: {name!r} must be {size} lowercase hex digits")
        return value

    def integer(self, name: str, low: int, high: int) -> int:
        value = self._get(name)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise MalformedMessage(f"{self.op}: {name!r} must be an integer in {low}..{high}")
        return value

    def number(self, name: str, low: float, high: float) -> float:
        value = self._get(name)
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        if not ok or not low <= value <= high:
            raise MalformedMessage(f"{self.op}: {name!r} must be a number in {low}..{high}")
        return float(value)

    def flag(self, name: str) -> bool:
        value = self._get(name)
        if not isinstance(value, bool):
            raise MalformedMessage(f"{self.op}: {name!r} must be true or false")
        return value

    def variables(self, name: str) -> dict[str, str]:
        value = self._get(name)
        if not isinstance(value, dict) or len(value) > 64:
            raise MalformedMessage(f"{self.op}: {name!r} must be an object of at most 64 entries")
        for key, item in value.items():
            if not _VAR.fullmatch(key) or not isinstance(item, str) or len(item) > _MAX_VALUE:
                raise MalformedMessage(f"{self.op}: {name!r} holds {key!r}: not an AEGIS_ string")
        return dict(value)


_MAX_RANK = 1 << 20
_MAX_CODE = 1 << 16
_DECODERS: dict[str, Any] = {
    "hello": lambda f: Hello(f.hex("nonce", NONCE_CHARS)),
    "ca": lambda f: CaOffer(f.text("ca", _MAX_VALUE), f.hex("mac", 64)),
    "join": lambda f: Join(
        f.hex("token", 64),
        f.integer("nodeRank", 0, _MAX_RANK),
        f.text("hostname"),
        f.integer("nproc", 1, 4096),
    ),
    "refused": lambda f: Refused(f.text("why")),
    "welcome": lambda f: Welcome(
        f.text("job", 63),
        f.text("namespace", 63),
        f.text("node", 512),
        f.flag("spare"),
        f.number("hostTimeout", 0.1, 86400.0),
    ),
    "start": lambda f: Start(f.variables("agent")),
    "exited": lambda f: Exited(
        f.text("pod", 253), f.text("incarnation", 128), f.integer("code", -_MAX_CODE, _MAX_CODE)
    ),
    "end": lambda f: End(f.integer("code", 0, 255), f.text("why", empty=True)),
    "ping": lambda f: Ping(),
}
