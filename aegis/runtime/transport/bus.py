"""The NATS bus: a thin async wrapper that speaks `Message`, not bytes.

Nothing from nats-py leaks out: failures become BusError. A malformed payload or a failing
handler is counted and logged, never raised into the subscription's read loop. The server
reports permission violations asynchronously (a subscribe call itself succeeds); they are
counted in `stats` and wake `permission_denied`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from aegis.protocol.envelope import Message
from aegis.protocol.errors import MalformedMessage
from aegis.runtime.errors import BusError, NoReply, NoResponders
from aegis.runtime.log_limit import LimitedLog
from aegis.runtime.transport._nats import RawCredentials, nats
from aegis.runtime.transport.auth import UserCredentials
from aegis.runtime.transport.request_copies import Copy, Key, RequestCopies
from aegis.runtime.transport.tls import nats_tls_options

log = logging.getLogger(__name__)
warnings = LimitedLog(log)  # about what others send: one line per subject and kind a minute
NO_RESPONDERS = "503"  # the Status header nats-server puts on a request nobody received
# a dropped connection is retried this often (nats-py adds up to 0.1 s of jitter)
RECONNECT_WAIT_S = 1.0
# concurrent handlers of one subscription at most (the controller's reports: a batch of the
# group commit holds at most this many; the rest wait unread in nats-py's queue instead of as
# tasks in memory: docs/scale.md, "Decisions")
MAX_RUNNING_HANDLERS = 1024

Handler = Callable[[Message], Awaitable[Message | None]]
# a handler told the subject each message came in on (e.g. a pod's own report subject)
SubjectHandler = Callable[[str, Message], Awaitable[Message | None]]
_PERMISSIONS = "permissions violation"
_KEEP_MESSAGES = 100
# how long a flush that `flush()` stopped waiting for still waits for its PONG (see there);
# past it nats-py's own timeout applies, by when its ping interval has replaced a dead link
FLUSH_PATIENCE_S = 600
CLOSE_S = 2.0  # how long `close()` waits for the connection to close
DROP_LOG_PERIOD_S = 10.0  # messages dropped for a slow consumer: one log line per period


def _forget_flush(flushes: set[asyncio.Future[None]]) -> Callable[[asyncio.Future[None]], None]:
    """A done-callback: drop the flush from `flushes` and mark its outcome as seen."""

    def done(task: asyncio.Future[None]) -> None:
        flushes.discard(task)
        if not task.cancelled():
            task.exception()  # seen: a flush nobody waits for any more may fail quietly

    return done


@dataclass
class BusStats:
    """Counters a controller or agent can export and tests can wait on."""

    malformed: int = 0
    handler_errors: int = 0
    permission_errors: int = 0
    permission_messages: list[str] = field(default_factory=list)  # the first 100
    # messages this client dropped: a subscription's pending limits were full (a slow
    # consumer); `Bus.dropped_at` is when the last one was
    dropped: int = 0
    # messages shed unread: their sender's subject was over its budget (`SenderBudget`)
    shed: int = 0


class SenderBudget:
    """How many messages each sender (the subject it publishes on: one pod incarnation's)
    may have handled: `rate` a second, bursts of `burst`; past it they are dropped unread,
    before they cost a decode or a task. Honest agents send a few a second; a flood from one
    pod's credential is shed here, where it costs least, and the others are not slowed down.
    At most `max_senders` are kept (the longest idle forgotten)."""

    def __init__(self, rate: float, burst: float, max_senders: int = 100_000) -> None:
        self.rate, self.burst, self.max_senders = rate, burst, max_senders
        self._senders: OrderedDict[str, list[float]] = OrderedDict()  # -> [tokens, stamp]

    def admit(self, subject: str) -> bool:
        """Spend one of `subject`'s tokens; False when it has none left."""
        now = time.monotonic()
        entry = self._senders.get(subject)
        if entry is None:
            entry = self._senders[subject] = [self.burst, now]
            if len(self._senders) > self.max_senders:
                self._senders.popitem(last=False)
        else:
            self._senders.move_to_end(subject)
            entry[0] = min(self.burst, entry[0] + (now - entry[1]) * self.rate)
            entry[1] = now
        if entry[0] < 1:
            return False
        entry[0] -= 1
        return True


class Subscription:
    """A live subscription; `await unsubscribe()` ends it."""

    def __init__(self, sub: Any) -> None:
        self._sub = sub

    @property
    def subject(self) -> str:
        """The subscribed subject (may contain wildcards)."""
        return str(self._sub.subject)

    @property
    def pending(self) -> int:
        """Messages received by the client and not yet handed to the handler."""
        return int(self._sub.pending_msgs)

    async def unsubscribe(self) -> None:
        """Stop receiving; pending messages are dropped."""
        try:
            await self._sub.unsubscribe()
        except nats.errors.Error as exc:
            raise BusError(f"unsubscribe from {self.subject} failed: {exc}") from None


class Bus:
    """A NATS connection authenticated with a user JWT; create with `await Bus.connect()`."""

    def __init__(self) -> None:
        self._nc: Any = None
        self.stats = BusStats()
        self.permission_denied = asyncio.Event()
        self._recent_errors: list[str] = []  # distinct, for connect failure messages
        self._handlers: set[asyncio.Task[None]] = set()  # concurrent handlers still running
        self._flushes: set[asyncio.Future[None]] = set()  # nats-py flushes awaiting a PONG
        self._echo_subject = ""  # this connection's own probe subject (`echo`)
        self.echoed_at: float | None = None  # loop time the last probe came back
        self.dropped_at: float | None = None  # monotonic time this client last dropped one
        self._dropped_logged = float("-inf")
        self._credentials: RawCredentials | None = None  # read at each (re)connect
        self.closed = asyncio.Event()  # the connection ended for good (closed, or refused)

    async def echo(self) -> None:
        """Send a probe to this connection's own inbox; `echoed_at` is when one came back.

        A round trip through the server, without PING: a frozen (SIGSTOPped) server keeps
        the TCP connection up, so `connected` stays True, but nothing comes back. A failed
        send is not raised (the round trip just does not happen)."""
        if self._nc is None or not self.connected:
            return
        try:
            if not self._echo_subject:
                subject = self._nc.new_inbox()
                await self._nc.subscribe(subject, cb=self._echoed)
                self._echo_subject = subject
            await self._nc.publish(self._echo_subject, b"")
        except nats.errors.Error as exc:
            log.debug("echo probe not sent: %r", exc)

    async def _echoed(self, _msg: Any) -> None:
        self.echoed_at = asyncio.get_running_loop().time()

    @classmethod
    async def connect(
        cls,
        url: str,
        credentials: UserCredentials,
        *,
        name: str | None = None,
        timeout: float = 10.0,
        reconnect_attempts: int = 60,
        inbox_prefix: str | None = None,
        tls_ca: bytes | str | None = None,
    ) -> Bus:
        """Connect to `url` with `credentials` (JWT + seed, signed in memory) within
        `timeout` s; a dropped connection is retried `reconnect_attempts` times (-1: forever).
        Replies to this connection's requests arrive under `inbox_prefix` (its credential
        may subscribe to its own inbox only; default `_INBOX`). `tls_ca`: the server speaks
        TLS with a certificate this CA signed (a job across hosts: transport/tls.py)."""
        if reconnect_attempts == 0:
            raise ValueError("reconnect_attempts must be > 0 or -1 (nats-py reads 0 as forever)")
        if url.partition("://")[0].lower() in ("ws", "wss"):
            raise BusError(f"cannot connect to NATS at {url}: use nats:// or tls://, not websocket")
        bus = cls()
        bus._credentials = RawCredentials(credentials.creds_text())
        try:
            bus._nc = await asyncio.wait_for(
                nats.connect(
                    url,
                    name=name,
                    user_credentials=bus._credentials,
                    closed_cb=bus._on_closed,
                    connect_timeout=max(1, round(min(timeout, 5.0))),
                    reconnect_time_wait=RECONNECT_WAIT_S,
                    max_reconnect_attempts=reconnect_attempts,
                    error_cb=bus._on_error,
                    **({"inbox_prefix": inbox_prefix} if inbox_prefix else {}),
                    **nats_tls_options(tls_ca),
                ),
                timeout,
            )
        except Exception as exc:  # nats-py raises assorted OSError/Timeout/nats errors
            cause = "; ".join(bus._recent_errors) or repr(exc)
            raise BusError(f"cannot connect to NATS at {url}: {cause}") from None
        return bus

    async def use_credentials(self, credentials: UserCredentials) -> None:
        """Reconnect now with `credentials` (a renewed JWT): nats-server fixes a connection's
        expiry when it is made, so a fresh JWT takes effect only on a new connection. The
        subscriptions come back by themselves; what was published meanwhile is sent after."""
        if self._credentials is None or self._nc is None:
            raise BusError("not connected: nothing to renew")
        self._credentials.data = credentials.creds_text()  # nats-py reads it at each connect
        try:
            await self._nc.force_reconnect()
        except nats.errors.Error as exc:
            raise BusError(f"reconnecting with renewed credentials failed: {exc}") from None

    async def _on_closed(self) -> None:
        self.closed.set()

    @property
    def connected(self) -> bool:
        """True while the connection is up."""
        return bool(self._nc is not None and self._nc.is_connected)

    async def publish(self, subject: str, message: Message) -> None:
        """Send `message` on `subject` (buffered; `flush()` to push it out)."""
        payload = message.encode()
        try:
            await self._nc.publish(subject, payload)
        except nats.errors.Error as exc:
            raise BusError(f"publish to {subject} failed: {exc}") from None

    async def subscribe(self, subject: str, handler: Handler) -> Subscription:
        """Call `handler` for every decoded message on `subject`; a returned Message is
        sent back as the reply when the sender used `request()`."""

        async def on_msg(msg: Any) -> None:
            await self._dispatch(msg, lambda _subject, message: handler(message))

        return await self._subscribe(subject, on_msg)

    async def subscribe_each(
        self,
        subject: str,
        handler: SubjectHandler,
        *,
        concurrent: bool = False,
        max_running: int = MAX_RUNNING_HANDLERS,
        copies: RequestCopies | None = None,
        pending_msgs_limit: int | None = None,
        budget: SenderBudget | None = None,
    ) -> Subscription:
        """Like `subscribe`, but `handler(subject, message)` is told the concrete subject
        each message came in on (the sender's identity, when only it may publish there).
        `concurrent`: each message is handled in a task of its own, started in arrival order
        (a handler that waits, e.g. for a group commit, does not hold up the next one), at
        most `max_running` at once: past that the messages wait undecoded in nats-py's queue
        for this subscription (its pending limits apply: a backlog costs bytes, not a task
        and a decoded message each). `copies`: a request sent again with the same bytes and
        reply subject is handled once (request_copies.py); the others are dropped or
        answered with the first one's reply, undecoded. `pending_msgs_limit`: nats-py's
        limit on the messages waiting (default 524,288); past it they are dropped and counted
        (`stats.dropped`, `dropped_at`). `budget`: a sender over its budget has its messages
        dropped unread (`stats.shed`; a warning a minute per sender)."""
        running = asyncio.Semaphore(max_running)

        async def on_msg(msg: Any) -> None:
            if budget is not None and not budget.admit(msg.subject):
                self.stats.shed += 1
                warnings.warning(
                    (msg.subject, "shed"),
                    "%s sends more than %g messages a second: the excess is dropped unread",
                    msg.subject,
                    budget.rate,
                )
                return
            key = None
            if copies is not None and msg.reply:
                key = RequestCopies.key(msg.subject, msg.reply, msg.data)
                seen = copies.arrived(key)  # it counts the copies not handled
                if seen is Copy.RUNNING:
                    return
                if isinstance(seen, bytes):
                    await self._answer_again(msg.reply, seen)
                    return
            if concurrent:
                await running.acquire()
                task = asyncio.create_task(self._dispatch(msg, handler, copies, key))
                self._handlers.add(task)
                task.add_done_callback(self._handlers.discard)
                task.add_done_callback(lambda _: running.release())
            else:
                await self._dispatch(msg, handler, copies, key)

        return await self._subscribe(subject, on_msg, pending_msgs_limit)

    async def _subscribe(
        self,
        subject: str,
        on_msg: Callable[[Any], Awaitable[None]],
        pending_msgs_limit: int | None = None,
    ) -> Subscription:
        limits = {} if pending_msgs_limit is None else {"pending_msgs_limit": pending_msgs_limit}
        try:
            sub = await self._nc.subscribe(subject, cb=on_msg, **limits)
        except nats.errors.Error as exc:
            raise BusError(f"subscribe to {subject} failed: {exc}") from None
        return Subscription(sub)

    async def request(self, subject: str, message: Message, timeout: float = 2.0) -> Message:
        """Send `message` and wait for one reply; BusError on timeout or no responder."""
        try:
            reply = await self._nc.request(subject, message.encode(), timeout=timeout)
        except nats.errors.NoRespondersError:
            raise NoResponders(f"request on {subject}: nobody is subscribed") from None
        except (TimeoutError, nats.errors.Error) as exc:
            raise BusError(f"request on {subject} failed: {exc!r}") from None
        return _decoded_reply(subject, reply.data)

    async def request_patiently(
        self, subject: str, message: Message, waits: Iterable[float]
    ) -> Message:
        """Send `message`, and again after each of `waits` (seconds) that passes without a
        reply; the first reply to any copy ends it. Every copy carries the same reply subject,
        so a reply that comes late (a controller behind on its queue) still counts: with
        `request` it would go to a timed-out inbox, and the copies would pile up until one
        came back within a single wait. BusError when no reply came within the last wait, or
        nobody is subscribed."""
        try:
            inbox = self._nc.new_inbox()  # under this connection's inbox prefix
            sub = await self._nc.subscribe(inbox, max_msgs=1)
        except nats.errors.Error as exc:
            raise BusError(f"request on {subject} failed: {exc!r}") from None
        data = message.encode()
        try:
            for wait in waits:
                try:
                    await self._nc.publish(subject, data, reply=inbox)
                    reply = await sub.next_msg(timeout=wait)
                except TimeoutError:  # nats-py's is one too
                    continue
                except nats.errors.Error as exc:
                    raise BusError(f"request on {subject} failed: {exc!r}") from None
                if reply.headers and reply.headers.get("Status") == NO_RESPONDERS:
                    raise NoResponders(f"request on {subject}: nobody is subscribed")
                return _decoded_reply(subject, reply.data)
            raise NoReply(f"request on {subject}: no reply to any copy")
        finally:
            with contextlib.suppress(nats.errors.Error):
                await sub.unsubscribe()

    async def flush(self, timeout: float = 2.0) -> None:
        """Wait until the server has processed everything sent so far (a PING/PONG);
        BusError if no PONG came within `timeout`.

        nats-py's own timeout cancels the PING's future but leaves it queued, and the late
        PONG then fails its read loop (InvalidStateError in `_process_pong`: orders stopped
        reaching a 1,000-agent job). So nats-py's flush is given `FLUSH_PATIENCE_S` and left
        to wait for its PONG in a task of its own; this call stops waiting after `timeout`."""
        if self._nc is None or self._nc.is_closed:
            raise BusError("flush failed: the connection is closed")
        task = asyncio.ensure_future(self._nc.flush(timeout=FLUSH_PATIENCE_S))
        self._flushes.add(task)
        task.add_done_callback(_forget_flush(self._flushes))
        done, _ = await asyncio.wait({task}, timeout=timeout)
        if not done:
            raise BusError(f"flush failed: no PONG from the server within {timeout} s")
        exc = task.exception()
        if exc is not None:
            raise BusError(f"flush failed: {exc!r}") from None

    async def close(self, timeout: float = CLOSE_S) -> None:
        """Drain nothing, close the connection; safe to call twice. Bounded: over TLS, a
        server that cannot be reached any more never answers the close."""
        if self._nc is not None and not self._nc.is_closed:
            try:
                await asyncio.wait_for(self._nc.close(), timeout)
            except TimeoutError:
                log.info("NATS connection not closed within %g s: dropped", timeout)
        for task in list(self._flushes):  # their PONGs will not come any more
            task.cancel()

    async def wait_permission_denied(self, timeout: float) -> str:
        """The first permission violation reported by the server (BusError if none)."""
        try:
            await asyncio.wait_for(self.permission_denied.wait(), timeout)
        except TimeoutError:
            raise BusError(f"no permission violation reported within {timeout}s") from None
        return self.stats.permission_messages[0]

    async def _dispatch(
        self,
        msg: Any,
        handler: SubjectHandler,
        copies: RequestCopies | None = None,
        key: Key | None = None,
    ) -> None:
        sent: bytes | None = None  # the reply, for the copies of this request
        try:
            try:
                message = Message.decode(msg.data)
            except MalformedMessage as exc:
                self.stats.malformed += 1
                warnings.warning(
                    (msg.subject, "malformed"),
                    "dropped malformed message on %s: %s",
                    msg.subject,
                    exc.reason,
                )
                return
            try:
                reply = await handler(str(msg.subject), message)
                if reply is not None and msg.reply:
                    data = reply.encode()
                    await self._nc.publish(msg.reply, data)
                    sent = data
            except Exception:
                self.stats.handler_errors += 1
                warnings.log(
                    logging.ERROR,
                    (msg.subject, "handler"),
                    "handler for %s failed on %.300s",
                    msg.subject,
                    message,
                    exc_info=True,
                )
        finally:
            if copies is not None and key is not None:
                copies.ended(key, sent)

    async def _answer_again(self, reply_subject: str, data: bytes) -> None:
        """Send a request copy its first copy's reply (a failure is counted, not raised)."""
        try:
            await self._nc.publish(reply_subject, data)
        except Exception:
            self.stats.handler_errors += 1
            log.exception("answering a request copy on %s failed", reply_subject)

    async def _on_error(self, exc: Exception) -> None:
        if isinstance(exc, nats.errors.SlowConsumerError):
            # one call per dropped message: under a backlog, hundreds of thousands; a log
            # line each cost the very CPU the backlog lacked
            self.stats.dropped += 1
            self.dropped_at = time.monotonic()
            if self.dropped_at - self._dropped_logged >= DROP_LOG_PERIOD_S:
                self._dropped_logged = self.dropped_at
                log.warning(
                    "this client is behind: messages dropped (%d so far; the last on %s)",
                    self.stats.dropped,
                    exc.subject,
                )
        elif _PERMISSIONS in (text := str(exc)).lower():
            self.stats.permission_errors += 1
            if len(self.stats.permission_messages) < _KEEP_MESSAGES:
                self.stats.permission_messages.append(text)
            self.permission_denied.set()
            warnings.warning(("refused", text[:200]), "NATS refused: %s", text)
        else:
            if repr(exc) not in self._recent_errors:
                self._recent_errors = [*self._recent_errors[-4:], repr(exc)]
            log.warning("NATS error: %r", exc)


def _decoded_reply(subject: str, data: bytes) -> Message:
    """The reply to a request on `subject`; BusError if it is not a message."""
    try:
        return Message.decode(data)
    except MalformedMessage as exc:
        raise BusError(f"request on {subject}: bad reply: {exc.reason}") from None
