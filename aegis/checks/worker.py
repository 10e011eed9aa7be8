"""The diagnosis worker: `python -m aegis.checks.worker`, torch imported once, requests on stdin.

Speaks the line protocol of `aegis.checks.protocol`; the real stdout carries only protocol
lines (anything else printed goes to stderr). Exits on EOF, on `shutdown`, or with its parent.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import TYPE_CHECKING, BinaryIO

from aegis.checks.params import ParamsError, simulated_from_env
from aegis.checks.protocol import (
    Request,
    Response,
    StoreSpec,
    decode_request,
    encode_response,
    parse_line,
    ready_line,
)

if TYPE_CHECKING:
    from aegis.checks.runner import RoundRunner

PARENT_PID_ENV = "AEGIS_PARENT_PID"


def main() -> int:
    """Serve requests until EOF or shutdown."""
    out = _protocol_stdout()
    _die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the agent owns this process's lifecycle
    import torch

    from aegis.checks.runner import RoundRunner

    torch.set_num_threads(1)  # never compete with training for cores
    runner = RoundRunner(simulated_from_env())
    _send(out, ready_line(os.getpid(), torch.__version__))
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        resp, stop = _handle(runner, line)
        _send(out, encode_response(resp))
        if stop:
            break
    runner.close()
    out.flush()
    os._exit(0)  # do not join check threads that may be stuck


def _handle(runner: RoundRunner, line: bytes) -> tuple[Response, bool]:
    pid = os.getpid()
    try:
        req = decode_request(line)
    except (ParamsError, ValueError, TypeError) as exc:
        obj = parse_line(line) or {}
        return Response(int(obj.get("id", -1) or -1), False, pid, error=str(exc)), False
    if req.op == "ping":
        return Response(req.id, True, pid), False
    if req.op == "shutdown":
        return Response(req.id, True, pid), True
    if req.op == "store":
        assert req.store is not None  # decode_request checked it
        return _host_store(req.id, req.store), False
    return _run(runner, req), False


_hosted: list[object] = []  # the rendezvous store this worker hosts (at most one)
STORE_TIMEOUT_S = 1800.0  # torchrun's default rendezvous store timeout


def _host_store(req_id: int, spec: StoreSpec) -> Response:
    """Host the training's rendezvous store on `spec.port` (torchrun's agent store), so that
    every rank connects to a store that is already up; the previous one is closed first."""
    from datetime import timedelta

    import torch.distributed as dist

    _hosted.clear()  # its TCPStore goes with its last reference: the old port is free again
    if not spec.port:
        return Response(req_id, True, os.getpid())
    try:
        store = dist.TCPStore(
            spec.host or "127.0.0.1",
            spec.port,
            spec.world_size,
            True,
            timedelta(seconds=STORE_TIMEOUT_S),
            wait_for_workers=False,
        )
    except Exception as exc:  # e.g. the port is taken: the agent lets rank 0 host it
        return Response(req_id, False, os.getpid(), error=f"{type(exc).__name__}: {exc}")
    _hosted.append(store)
    return Response(req_id, True, os.getpid())


def _run(runner: RoundRunner, req: Request) -> Response:
    try:
        results = runner.run(req.checks, req.round, req.params)
    except Exception as exc:
        return Response(req.id, False, os.getpid(), error=f"{type(exc).__name__}: {exc}")
    return Response(req.id, True, os.getpid(), tuple(results), restart=runner.tainted)


def _protocol_stdout() -> BinaryIO:
    """Keep the real stdout for protocol lines; point fd 1 and sys.stdout at stderr."""
    fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(fd, "wb", buffering=0)


def _send(out: BinaryIO, data: bytes) -> None:
    try:
        out.write(data)
    except BrokenPipeError:
        os._exit(0)  # the agent is gone


def _die_with_parent() -> None:
    """Linux: get SIGKILL when the agent dies, so a worker stuck in a collective never lingers."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    parent = os.environ.get(PARENT_PID_ENV)
    if parent and parent.isdigit() and os.getppid() != int(parent):
        os._exit(0)  # the parent is already gone


if __name__ == "__main__":
    sys.exit(main())
