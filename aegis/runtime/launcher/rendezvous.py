"""The node rendezvous over TLS: node 0's server, and the joining node's side.

The messages and their MACs are `aegis.protocol.rendezvous` (pure); this module moves them:
one JSON line at a time over asyncio TLS streams, every read and write bounded in time. The
server never lets a peer's bytes end it: a connection that sends something malformed, or
nothing, is closed and logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import secrets
import ssl
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from aegis.errors import AegisError
from aegis.protocol import rendezvous as wire
from aegis.protocol.errors import MalformedMessage
from aegis.runtime.transport.tls import JobTls, client_context, unverified_client_context

log = logging.getLogger(__name__)
FIRST_LINE_S = 10.0  # a new connection says what it wants within this (handshake included)
WRITE_S = 10.0  # a write that cannot be flushed in this long: the peer is not reading
RETRY_S = (0.2, 0.5, 1.0, 2.0)  # a node waiting for node 0 tries again after these, then 2 s


class RendezvousError(AegisError):
    """The node cannot join (node 0 absent past the join timeout, refused, or an impostor)."""


class PeerGone(Exception):
    """The peer closed the connection, sent something malformed, or fell silent."""


@dataclass
class Link:
    """One rendezvous connection: messages in and out, each bounded in time."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    heard_at: float = field(default_factory=time.monotonic)

    @property
    def local_address(self) -> str:
        """This side's address of the connection (the one the peer reaches us by)."""
        return str(self.writer.get_extra_info("sockname")[0])

    @property
    def peer_address(self) -> str:
        """The peer's address."""
        peer = self.writer.get_extra_info("peername")
        return str(peer[0]) if peer else "?"

    async def send(self, msg: wire.NodeMessage) -> None:
        """Write one message; PeerGone if it cannot be flushed within WRITE_S."""
        try:
            self.writer.write(wire.encode(msg))
            await asyncio.wait_for(self.writer.drain(), WRITE_S)
        except (OSError, TimeoutError, RuntimeError) as exc:
            raise PeerGone(f"cannot send to {self.peer_address}: {exc!r}") from None

    async def receive(self, timeout: float) -> wire.NodeMessage:
        """The next message; PeerGone on EOF, a malformed line, or `timeout` s of silence."""
        try:
            line = await asyncio.wait_for(self.reader.readuntil(b"\n"), timeout)
        except TimeoutError:
            raise PeerGone(f"nothing from {self.peer_address} for {timeout:g} s") from None
        except asyncio.IncompleteReadError:
            raise PeerGone(f"{self.peer_address} closed the connection") from None
        except asyncio.LimitOverrunError:
            raise PeerGone(f"{self.peer_address} sent a line over {wire.MAX_LINE} bytes") from None
        except (OSError, ssl.SSLError) as exc:
            raise PeerGone(f"connection to {self.peer_address} failed: {exc!r}") from None
        self.heard_at = time.monotonic()
        try:
            return wire.decode(line)
        except MalformedMessage as exc:
            raise PeerGone(f"{self.peer_address}: {exc}") from None

    async def close(self) -> None:
        """Close the connection (bounded: a peer that does not answer the TLS close)."""
        self.writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.writer.wait_closed(), 2.0)

    def abort(self) -> None:
        """Drop the connection at once (the peer is gone: no TLS close to wait for)."""
        self.writer.transport.abort()


async def _open(host: str, port: int, ctx: ssl.SSLContext, timeout: float) -> Link:
    reader, writer = await asyncio.wait_for(
        asyncio.open_connection(
            host,
            port,
            ssl=ctx,
            server_hostname=host,
            limit=wire.MAX_LINE + 1,
            ssl_handshake_timeout=timeout,
        ),
        timeout,
    )
    return Link(reader, writer)


# ---------------- the joining node ----------------


async def discover_ca(
    host: str,
    port: int,
    secret: bytes,
    deadline: float,
    on_wait: Callable[[str], None] = lambda _: None,
) -> bytes:
    """Node 0's CA, proven by the join secret; tries until the monotonic `deadline` while
    node 0 is not there yet (`on_wait(why)` after the first failed try). RendezvousError
    when node 0 is not there by then, or when what answers does not hold the secret."""
    attempt = 0
    while True:
        try:
            return await _ask_ca(host, port, secret, max(1.0, deadline - time.monotonic()))
        except (OSError, TimeoutError, PeerGone, ssl.SSLError) as exc:
            why = _why(exc)
        if attempt == 0:
            on_wait(why)
        wait = RETRY_S[min(attempt, len(RETRY_S) - 1)]
        attempt += 1
        if time.monotonic() + wait > deadline:
            raise RendezvousError(f"node 0 at {host}:{port} did not answer in time ({why})")
        await asyncio.sleep(wait)


async def _ask_ca(host: str, port: int, secret: bytes, timeout: float) -> bytes:
    link = await _open(host, port, unverified_client_context(), min(timeout, FIRST_LINE_S))
    try:
        nonce = secrets.token_hex(wire.NONCE_CHARS // 2)
        await link.send(wire.Hello(nonce))
        offer = await link.receive(min(timeout, FIRST_LINE_S))
    finally:
        await link.close()
    if isinstance(offer, wire.Refused):
        raise RendezvousError(f"node 0 at {host}:{port} refused: {offer.why}")
    if not isinstance(offer, wire.CaOffer):
        raise PeerGone(f"{host}:{port} answered {offer.OP!r} to hello")
    if not wire.ca_offer_genuine(secret, nonce, offer):
        raise RendezvousError(
            f"what answers at {host}:{port} does not hold this job's join secret: every node "
            "must be given the same one (AEGIS_JOIN_SECRET or --join-secret-file), or another "
            "job's node 0 is on that port"
        )
    return offer.ca.encode("ascii")


async def join(
    host: str, port: int, ca_pem: bytes, request: wire.Join, timeout: float
) -> tuple[Link, wire.Welcome]:
    """Join over TLS trusting `ca_pem` alone; the link and node 0's welcome, or
    RendezvousError (refused, or the server's certificate is not the job's)."""
    try:
        link = await _open(host, port, client_context(ca_pem), timeout)
    except ssl.SSLCertVerificationError as exc:
        raise RendezvousError(
            f"node 0 at {host}:{port} presented a certificate the job's CA did not sign for "
            f"that name: {exc.verify_message}"
        ) from None
    except (OSError, TimeoutError) as exc:
        raise RendezvousError(f"cannot reach node 0 at {host}:{port}: {_why(exc)}") from None
    try:
        await link.send(request)
        answer = await link.receive(timeout)
    except PeerGone as exc:
        await link.close()
        raise RendezvousError(f"node 0 at {host}:{port}: {exc}") from None
    if isinstance(answer, wire.Welcome):
        return link, answer
    await link.close()
    why = answer.why if isinstance(answer, wire.Refused) else f"it answered {answer.OP!r}"
    raise RendezvousError(f"node 0 at {host}:{port} did not take this node: {why}")


def _why(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    return str(exc) or type(exc).__name__


# ---------------- node 0 ----------------

# a joined node's messages after its welcome go to the launcher: (session, message)
OnMessage = Callable[["Session", wire.NodeMessage], Awaitable[None]]
OnLost = Callable[["Session", str], Awaitable[None]]
# decides on a join: the welcome, or the reason for refusing it
Admit = Callable[[wire.Join, Link], "wire.Welcome | str"]


@dataclass
class Session:
    """A joined node as node 0 sees it."""

    node_rank: int
    name: str
    spare: bool
    link: Link
    lost: bool = False

    async def send(self, msg: wire.NodeMessage) -> bool:
        """Send `msg`; False if the node is gone (its loss is reported by the reader)."""
        if self.lost:
            return False
        try:
            await self.link.send(msg)
        except PeerGone:
            return False
        return True


class RendezvousServer:
    """Node 0's rendezvous: offers the CA to holders of the secret, admits nodes, then
    relays each node's messages (`on_message`) and its loss (`on_lost`, once)."""

    def __init__(
        self,
        tls: JobTls,
        secret: bytes,
        admit: Admit,
        on_message: OnMessage,
        on_lost: OnLost,
        host_timeout: float,
    ) -> None:
        self.tls = tls
        self._secret = secret
        self._token = wire.join_token(secret)
        self._admit = admit
        self._on_message = on_message
        self._on_lost = on_lost
        self.host_timeout = host_timeout
        self.sessions: dict[str, Session] = {}  # node name -> session
        self.joined = asyncio.Event()  # set whenever a node joins
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self, host: str, port: int) -> None:
        """Listen on host:port (RendezvousError if it cannot)."""
        try:
            self._server = await asyncio.start_server(
                self._serve,
                host,
                port,
                ssl=self.tls.server_context(),
                ssl_handshake_timeout=FIRST_LINE_S,
                limit=wire.MAX_LINE + 1,
                reuse_address=True,
            )
        except OSError as exc:
            why = exc.strerror or exc
            raise RendezvousError(
                f"cannot listen on {host or '*'}:{port} for the other nodes ({why}): is another "
                "job's node 0 using that port? Choose another in --rdzv-endpoint"
            ) from None

    async def close(self) -> None:
        """Stop listening and close every session (its tasks end)."""
        if self._server is not None:
            self._server.close()
        for session in list(self.sessions.values()):
            session.lost = True
            await session.link.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2.0)
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        link = Link(reader, writer)
        try:
            await self._first(link)
        except asyncio.CancelledError:
            await link.close()
            raise
        except Exception:  # never let one connection end the server
            log.exception("rendezvous: connection from %s failed", link.peer_address)
            await link.close()
        finally:
            if task is not None:
                self._tasks.discard(task)

    async def _first(self, link: Link) -> None:
        try:
            msg = await link.receive(FIRST_LINE_S)
        except PeerGone as exc:
            log.info("rendezvous: %s", exc)
            await link.close()
            return
        if isinstance(msg, wire.Hello):
            ca = self.tls.ca_pem.decode("ascii")
            await _quietly(link.send(wire.CaOffer(ca, wire.ca_mac(self._secret, msg.nonce, ca))))
            await link.close()
        elif isinstance(msg, wire.Join):
            await self._join(link, msg)
        else:
            log.warning("rendezvous: %s opened with %r", link.peer_address, msg.OP)
            await link.close()

    async def _join(self, link: Link, msg: wire.Join) -> None:
        if not hmac.compare_digest(msg.token, self._token):
            await _quietly(link.send(wire.Refused("wrong join token")))
            await link.close()
            return
        verdict = self._admit(msg, link)
        if isinstance(verdict, str):
            print(
                f"aegis: refused node {msg.node_rank} ({msg.hostname}, "
                f"{link.peer_address}): {verdict}",
                file=sys.stderr,
                flush=True,
            )
            await _quietly(link.send(wire.Refused(verdict)))
            await link.close()
            return
        session = Session(msg.node_rank, verdict.node, verdict.spare, link)
        if not await session.send(verdict):
            await link.close()
            return
        self.sessions[session.name] = session
        self.joined.set()
        pinger = asyncio.create_task(_ping(session, self.host_timeout))
        try:
            why = await self._relay(session)
        finally:
            pinger.cancel()
        session.lost = True
        link.abort()
        await self._on_lost(session, why)

    async def _relay(self, session: Session) -> str:
        """Hand the node's messages on until it is gone; why it is gone."""
        while True:
            try:
                msg = await session.link.receive(self.host_timeout)
            except PeerGone as exc:
                return str(exc)
            if not isinstance(msg, wire.Ping):
                await self._on_message(session, msg)


async def _ping(session: Session, host_timeout: float) -> None:
    """Tell the node we are here, six times per host timeout."""
    while await session.send(wire.Ping()):
        await asyncio.sleep(host_timeout / 6)


async def _quietly(send: Awaitable[None]) -> None:
    with contextlib.suppress(PeerGone):
        await send
