"""The diagnosis worker's wire protocol: one JSON object per line, no I/O in this module.

Worker -> agent, once at start:  {"event": "ready", "pid": 123, "torch": "2.13.0"}
Agent -> worker (request):       {"id": 1, "op": "run", "round": "r7", "checks": ["io", ...],
                                  "params": {CheckParams.to_dict()}}
                                 {"id": 2, "op": "ping"} | {"id": 3, "op": "shutdown"}
                                 {"id": 4, "op": "store", "host": "10.0.0.1", "port": 29500,
                                  "world_size": 4}  host the job's rendezvous store (port 0:
                                  stop hosting); one store at a time
Worker -> agent (response):      {"id": 1, "ok": true, "pid": 123, "restart": false,
                                  "results": [CheckResult.to_dict(), ...], "error": null}
`restart: true` asks the agent to replace the worker (a check thread overran its budget and
may still hold resources). Lines that are not JSON objects are not protocol (stray output).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from aegis.checks.params import CheckParams, ParamsError
from aegis.checks.result import CheckResult, CheckType

OPS = frozenset({"run", "ping", "shutdown", "store"})


@dataclass(frozen=True)
class Request:
    """One request from the agent to its worker."""

    id: int
    op: str
    round: str = ""
    checks: tuple[str, ...] = ()
    params: CheckParams = field(default_factory=CheckParams)
    store: StoreSpec | None = None  # op "store" only


@dataclass(frozen=True)
class StoreSpec:
    """The rendezvous store a worker hosts for the training ranks (port 0: none)."""

    host: str
    port: int
    world_size: int


@dataclass(frozen=True)
class Response:
    """The worker's answer to one request."""

    id: int
    ok: bool
    pid: int
    results: tuple[CheckResult, ...] = ()
    error: str | None = None
    restart: bool = False


def encode_request(req: Request) -> bytes:
    """The request as one line."""
    obj = {
        "id": req.id,
        "op": req.op,
        "round": req.round,
        "checks": list(req.checks),
        "params": req.params.to_dict(),
    }
    if req.store is not None:
        obj.update(host=req.store.host, port=req.store.port, world_size=req.store.world_size)
    return (json.dumps(obj, separators=(",", ":")) + "\n").encode()


def decode_request(line: bytes | str) -> Request:
    """Parse one request line; raise ParamsError when it is malformed."""
    obj = _object(line)
    op = obj.get("op")
    if op not in OPS:
        raise ParamsError(f"unknown op {op!r}; use one of {sorted(OPS)}")
    checks = tuple(str(c) for c in obj.get("checks", ()))
    known = {c.value for c in CheckType}
    if set(checks) - known:
        raise ParamsError(f"unknown check(s) {sorted(set(checks) - known)}; use {sorted(known)}")
    store = _store(obj) if op == "store" else None
    return Request(
        id=int(obj.get("id", 0)),
        op=str(op),
        round=str(obj.get("round", "")),
        checks=checks,
        params=CheckParams.from_dict(obj.get("params")),
        store=store,
    )


def _store(obj: dict[str, Any]) -> StoreSpec:
    """The store a `store` request names (ParamsError if its port or world size is bad)."""
    port, world = obj.get("port"), obj.get("world_size")
    if not (isinstance(port, int) and 0 <= port < 65536 and isinstance(world, int)):
        raise ParamsError(f"a store needs a port in 0..65535 and a world size: {obj}")
    if port and world < 1:
        raise ParamsError(f"a store needs a world size of at least 1: {obj}")
    return StoreSpec(str(obj.get("host", "")), port, world)


def encode_response(resp: Response) -> bytes:
    """The response as one line."""
    obj = {
        "id": resp.id,
        "ok": resp.ok,
        "pid": resp.pid,
        "restart": resp.restart,
        "error": resp.error,
        "results": [r.to_dict() for r in resp.results],
    }
    return (json.dumps(obj, separators=(",", ":"), default=str) + "\n").encode()


def decode_response(line: bytes | str) -> Response:
    """Parse one response line."""
    return response_from_dict(_object(line))


def response_from_dict(obj: dict[str, Any]) -> Response:
    """A Response from an already-parsed line."""
    return Response(
        id=int(obj["id"]),
        ok=bool(obj["ok"]),
        pid=int(obj["pid"]),
        results=tuple(CheckResult.from_dict(r) for r in obj.get("results", ())),
        error=obj.get("error"),
        restart=bool(obj.get("restart", False)),
    )


def ready_line(pid: int, torch_version: str) -> bytes:
    """The line a worker prints once torch is imported and it can take requests."""
    return (json.dumps({"event": "ready", "pid": pid, "torch": torch_version}) + "\n").encode()


def parse_line(line: bytes | str) -> dict[str, Any] | None:
    """The JSON object on `line`, or None when the line is not protocol."""
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def _object(line: bytes | str) -> dict[str, Any]:
    obj = parse_line(line)
    if obj is None:
        raise ParamsError(f"not a JSON object: {line[:200]!r}")
    return obj


def names(checks: Sequence[str | CheckType]) -> tuple[str, ...]:
    """Check names as plain strings, order kept, duplicates dropped."""
    return tuple(dict.fromkeys(str(c) for c in checks))
