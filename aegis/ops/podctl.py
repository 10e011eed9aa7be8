"""Pod-local control: `kubectl exec POD -- aegis ctl hang|check|burn` reaches its own agent.

Inside a worker pod the only credential is the pod's own (its bootstrap token, its worker JWT),
and a worker's JWT may not publish on the job's ctl subjects: it cannot stop the job, taint a
node or address another pod (aegis.runtime.transport.auth). So pod-local ctl does not use NATS
at all: the agent serves the agent half of the control protocol (hang, check, burn; never
status/stop/taint/untaint) on a Unix socket inside the pod, mode 0600, at
`pod_socket_path(progress_dir, pod)`. Whoever can exec into the container can already signal
its processes; the socket gives them nothing beyond their own pod.

Wire: one request line (a control `Message`, `Message.encode()`), one reply line.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

from aegis.protocol.envelope import Message

log = logging.getLogger(__name__)

MAX_LINE = 1 << 20
SOCKET_NAME = "aegis-ctl-{pod}.sock"
_READ_TIMEOUT_S = 10.0


def pod_socket_path(progress_dir: str, pod: str) -> Path:
    """Where pod `pod`'s agent listens (AEGIS_PROGRESS_DIR, else the temp dir)."""
    return Path(progress_dir or tempfile.gettempdir()) / SOCKET_NAME.format(pod=pod)


def find_pod_socket(pod: str, progress_dir: str = "", progress_file: str = "") -> Path:
    """Where a process of pod `pod` finds its agent's socket: in AEGIS_PROGRESS_DIR (the pod's
    environment), else in a directory above the command's progress file (the agent keeps it
    in a work dir under its progress dir), else in the temp dir. The first candidate that
    exists; the most likely one if none does (the caller reports it)."""
    candidates: list[Path] = []
    if progress_dir:
        candidates.append(pod_socket_path(progress_dir, pod))
    if progress_file:
        parents = Path(progress_file).parents
        candidates += [pod_socket_path(str(d), pod) for d in list(parents)[:3]]
    candidates.append(pod_socket_path("", pod))
    return next((c for c in candidates if c.exists()), candidates[0])


Handler = Callable[[Message], Awaitable[Message]]


async def serve_pod_control(path: Path, handler: Handler) -> asyncio.Server | None:
    """Listen on `path` (replacing a stale socket); None (logged) if it cannot."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), _READ_TIMEOUT_S)
            if not line.endswith(b"\n") or len(line) > MAX_LINE:
                return
            reply = await handler(Message.decode(line.rstrip(b"\n")))
            writer.write(reply.encode() + b"\n")
            await writer.drain()
        except Exception as exc:  # a bad client never reaches the agent's work
            log.warning("pod-local control request dropped: %r", exc)
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    try:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        old = os.umask(0o177)
        try:
            server = await asyncio.start_unix_server(serve, path=str(path), limit=MAX_LINE + 1)
        finally:
            os.umask(old)
        os.chmod(path, 0o600)
    except OSError as exc:
        log.warning("pod-local control unavailable (%s): %s", path, exc)
        return None
    return server


async def ask_pod(path: Path, request: Message, timeout: float) -> Message:
    """Send `request` to the agent at `path`; its reply (OSError/TimeoutError if none)."""

    async def ask() -> Message:
        reader, writer = await asyncio.open_unix_connection(str(path), limit=MAX_LINE + 1)
        try:
            writer.write(request.encode() + b"\n")
            await writer.drain()
            line = await reader.readline()
            if not line:
                raise ConnectionError("the agent closed the connection without a reply")
            return Message.decode(line.rstrip(b"\n"))
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    return await asyncio.wait_for(ask(), timeout)
