"""The rank's side of the conversation with its node agent (blocking, no torch, no asyncio).

One connection per process, opened at the first request and opened again once if the agent
dropped it. Every request carries the rank's token (AEGIS_CHECKPOINT_TOKEN). Outside an Aegis
job (no AEGIS_CHECKPOINT_SOCKET) there is no agent: `AgentClient.from_env()` is None.

`send` writes a request without waiting for its reply (a save's commit: once sent, the agent
has it even if the rank dies next); the agent answers in order, so the replies of what was
sent are read before the next request's, into `late`, where the caller looks at them. A
commit's reply may hold the file the agent reserved for the next save (`reserved`): a save
that finds it writes there without asking; any `begin` gives it back.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from typing import Any

from aegis.checkpoint import wire
from aegis.protocol.environment import Var

CONNECT_TIMEOUT_S = 5.0
REQUEST_TIMEOUT_S = 120.0  # a save may wait for its version file while a persist copies it


class AgentUnavailable(ConnectionError):
    """The agent's socket cannot be reached (or it hung up mid-request)."""


class AgentClient:
    """Requests to this rank's agent."""

    def __init__(self, path: str, token: str) -> None:
        self.path = path
        self.token = token
        self._sock: socket.socket | None = None
        self._unread: list[str] = []  # what each reply still in the socket answers (`send`)
        self.late: list[tuple[str, wire.Reply]] = []  # those replies, read, not looked at yet
        self.reserved: dict[str, Any] | None = None  # the next save's file, as a commit's reply

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> AgentClient | None:
        """The client this process's environment names, None outside an Aegis job."""
        env = os.environ if env is None else env
        path, token = env.get(Var.CHECKPOINT_SOCKET, ""), env.get(Var.CHECKPOINT_TOKEN, "")
        return cls(path, token) if path else None

    def request(self, op: str, **fields: Any) -> wire.Reply:
        """Send one request and return the reply (AgentUnavailable if the agent is gone)."""
        frame = wire.encode_frame({"op": op, "token": self.token, **fields})
        for attempt in (0, 1):
            try:
                sock = self._connect()
                sock.sendall(frame)
                self._catch_up(sock)
                reply = wire.Reply.of(wire.decode_body(self._read(sock)))
                if op == "begin":  # the agent took back what it had reserved
                    self.reserved = None
                return reply
            except (OSError, wire.WireError) as exc:
                self.close()
                if attempt:
                    raise AgentUnavailable(f"agent at {self.path}: {exc}") from None
        raise AssertionError("unreachable")

    def send(self, what: str, op: str, **fields: Any) -> None:
        """Send one request without waiting for its reply; `what` names it in `late`."""
        frame = wire.encode_frame({"op": op, "token": self.token, **fields})
        try:
            self._connect().sendall(frame)
        except OSError as exc:
            self.close()
            raise AgentUnavailable(f"agent at {self.path}: {exc}") from None
        self._unread.append(what)

    def catch_up(self) -> None:
        """Read the replies to what was sent into `late` (they are normally in already); an
        agent that hung up makes them unanswered."""
        if self._sock is not None and self._unread:
            try:
                self._catch_up(self._sock)
            except (OSError, wire.WireError):
                self.close()

    def take_reserved(self) -> dict[str, Any] | None:
        """The file the agent reserved for this save (read from a commit's reply), once."""
        found, self.reserved = self.reserved, None
        return found

    def _catch_up(self, sock: socket.socket) -> None:
        while self._unread:
            reply = wire.Reply.of(wire.decode_body(self._read(sock)))
            found = reply.get("next")
            if reply.ok and isinstance(found, dict):
                self.reserved = found
            self.late.append((self._unread.pop(0), reply))

    def _connect(self) -> socket.socket:
        if self._sock is None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(CONNECT_TIMEOUT_S)
            try:
                sock.connect(self.path)
            except OSError:
                sock.close()
                raise
            sock.settimeout(REQUEST_TIMEOUT_S)
            self._sock = sock
        return self._sock

    @staticmethod
    def _read(sock: socket.socket) -> bytes:
        head = _read_exactly(sock, wire.FRAME_LEN.size)
        return _read_exactly(sock, wire.frame_length(head))

    def close(self) -> None:
        """Drop the connection (the next request opens another); what was sent on it and
        not answered yet is in `late` as unanswered."""
        for what in self._unread:
            self.late.append((what, wire.Reply(False, "the agent hung up before answering")))
        self._unread.clear()
        self.reserved = None  # a new connection asks again (`begin` takes it back)
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    chunks = []
    while n:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            raise ConnectionError("the agent closed the connection")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)
