"""A minimal NATS client for simulating thousands of agents in one process (no nats-py).

`LeanNats` speaks just what an Aegis agent needs of the NATS protocol: INFO, CONNECT with a
user JWT and the server's nonce signed by the user's NKey seed, SUB, PUB (with a reply
subject), MSG, PING/PONG and -ERR. It has no reconnects, no headers, no flusher, no
subscription objects: one asyncio protocol per connection, whose `on_msg(subject, payload)`
is called for every message. The server still enforces everything: the JWT's signature and
permissions, the nonce check (tests/testing/test_lean_nats.py holds it against a real
nats-server).

Why not nats-py: the fleet bench (bench/scale.py) runs thousands of simulated agents in one
process, each with its own credential and connection, as the real agents would have. A
nats-py client is made for one long-lived client per process: five asyncio tasks per
connection (reader, flusher, pinger, ...) and its own buffering. Side by side in one process
(bench/nats_clients.py), a nats-py connection takes about twice the CPU to connect and
subscribe and to take its messages, and five times the memory, of a LeanNats one
(docs/scale.md, "Decisions"): the bench would measure its own clients. The real agent uses
nats-py (aegis.runtime.transport.bus); this client is for load, not for production.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable
from typing import Any

import nkeys


class NatsError(Exception):
    """The server refused the connection (authorization) or it closed."""


class LeanNats(asyncio.Protocol):
    """The NATS client protocol, just what an agent needs (no reconnects, no headers)."""

    def __init__(self, on_msg: Callable[[str, bytes], None]) -> None:
        self.on_msg = on_msg
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.info: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pong: asyncio.Future[None] | None = None
        self.errors: list[str] = []
        self.closed = asyncio.Event()

    @classmethod
    async def connect(
        cls, host: str, port: int, jwt: str, seed: bytes, name: str,
        on_msg: Callable[[str, bytes], None], timeout: float = 10.0,
    ) -> LeanNats:  # fmt: skip
        """Connect and authenticate with the user JWT and the nonce signed by `seed`."""
        loop = asyncio.get_running_loop()
        _, proto = await loop.create_connection(lambda: cls(on_msg), host, port)
        try:
            info = await asyncio.wait_for(proto.info, timeout)
            sig = nkeys.from_seed(bytearray(seed)).sign(info["nonce"].encode())
            options = {
                "verbose": False, "pedantic": False, "jwt": jwt, "name": name,
                "sig": base64.urlsafe_b64encode(sig).rstrip(b"=").decode(),
                "protocol": 1, "lang": "python-lean", "version": "0", "headers": False,
            }  # fmt: skip
            await asyncio.wait_for(proto.ping(f"CONNECT {json.dumps(options)}\r\n"), timeout)
        except BaseException:
            proto.close()
            raise
        return proto

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed.set()
        for fut in (self.info, self.pong):
            if fut is not None and not fut.done():
                fut.set_exception(NatsError(f"connection closed: {self.errors or exc}"))

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while True:
            end = self.buf.find(b"\r\n")
            if end < 0:
                return
            line = bytes(self.buf[:end])
            if line.startswith(b"MSG "):
                parts = line.split(b" ")
                size = int(parts[-1])
                if len(self.buf) < end + 2 + size + 2:
                    return  # the payload is still on its way
                payload = bytes(self.buf[end + 2 : end + 2 + size])
                del self.buf[: end + 2 + size + 2]
                self.on_msg(parts[1].decode(), payload)
                continue
            del self.buf[: end + 2]
            self._control(line)

    def _control(self, line: bytes) -> None:
        if line.startswith(b"INFO "):
            if not self.info.done():
                self.info.set_result(json.loads(line[5:]))
        elif line == b"PING":
            self.write("PONG\r\n")
        elif line == b"PONG":
            if (pong := self._pong_awaited()) is not None:
                pong.set_result(None)
        elif line.startswith(b"-ERR"):
            self._error(line)

    def _pong_awaited(self) -> asyncio.Future[None] | None:
        """The future of the PING that waits for its PONG (None: none waits)."""
        return self.pong if self.pong is not None and not self.pong.done() else None

    def _error(self, line: bytes) -> None:
        """-ERR: kept; one that ends the connection fails the PING awaited."""
        self.errors.append(line.decode(errors="replace"))
        refused = b"Permissions Violation" in line  # one subject refused, still connected
        pong = self._pong_awaited()
        if not refused and pong is not None:
            pong.set_exception(NatsError(self.errors[-1]))

    def write(self, text: str, payload: bytes = b"") -> None:
        """Send one protocol line (and a payload)."""
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(text.encode() + payload + (b"\r\n" if payload else b""))

    async def ping(self, before: str = "") -> None:
        """Send `before` and a PING; wait for the PONG (the server has processed both)."""
        self.pong = asyncio.get_running_loop().create_future()
        self.write(before + "PING\r\n")
        await self.pong

    def sub(self, subject: str, sid: int) -> None:
        """Subscribe (the server refuses a subject the JWT does not allow with -ERR)."""
        self.write(f"SUB {subject} {sid}\r\n")

    def pub(self, subject: str, payload: bytes, reply: str = "") -> None:
        """Publish, with a reply subject for a request."""
        head = f"PUB {subject} {reply} {len(payload)}\r\n" if reply else None
        self.write(head or f"PUB {subject} {len(payload)}\r\n", payload)

    def close(self) -> None:
        """Drop the connection (a crash closes it the same way)."""
        if self.transport is not None:
            self.transport.abort()
