"""A seeded fault layer between NATS clients and nats-server (test tooling, not part of aegis).

A TCP proxy on loopback that speaks enough of the NATS client protocol to see messages: it
passes every control line (INFO, CONNECT, SUB, UNSUB, PING, PONG, +OK, -ERR) through as is,
and for each message (PUB/HPUB from the client, MSG/HMSG from the server) decides, with a
seeded random generator and per-subject-kind probabilities, to drop it, send it twice, hold
it back behind the next message (reorder) or delay it. The kinds are `order`
(`aegis.<ns>.<job>.master`), `report` (`...report.<pod>`), `heartbeat`
(`...heartbeat.<pod>`) and `other` (replies, ctl requests: never touched unless a rule says).
A rule may name one client (the `name` of its CONNECT: an agent's is its pod) and drop the
first N messages of its kind to or from it (e.g. the first order one pod hears).

The upstream address is resolved when a client connects (a callable), so the proxy can be
started before the nats-server whose port it does not know yet; a refused upstream closes
the client (it reconnects, as it would to a dead server).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

KINDS = ("order", "report", "heartbeat", "other")


def subject_kind(subject: str) -> str:
    """`order`, `report`, `heartbeat` or `other` for an aegis subject."""
    parts = subject.split(".")
    if len(parts) >= 4 and parts[0] == "aegis":
        if parts[3] == "master" and len(parts) == 4:
            return "order"
        if parts[3] == "report" and len(parts) == 5:
            return "report"
        if parts[3] == "heartbeat" and len(parts) == 5:
            return "heartbeat"
    return "other"


@dataclass(frozen=True)
class Rule:
    """Probabilities for the messages of one kind (each drawn independently, in this order:
    drop; else duplicate; then reorder or delay). `delay_s` is the most a delay adds."""

    drop: float = 0.0
    dup: float = 0.0
    reorder: float = 0.0
    delay: float = 0.0
    delay_s: float = 0.0
    drop_first: int = 0  # drop the first N messages of the kind, per client, before any draw
    client: str = ""  # the rule applies to this client only ("": every client)


@dataclass
class FaultPlan:
    """Rules per kind; kinds without one pass untouched."""

    rules: dict[str, Rule] = field(default_factory=dict)

    def rule(self, kind: str, client: str = "") -> Rule:
        """The rule for `kind` on a connection of `client` (none: pass untouched)."""
        rule = self.rules.get(kind, Rule())
        return rule if rule.client in ("", client) else Rule()


@dataclass
class _Conn:
    """What both directions of one client connection share: the client's name."""

    name: str = ""


_HOLD_S = 0.2  # a reordered message waits at most this long for a successor


class _Pipe:
    """One direction of one connection: frames in, faulted frames out, in order unless a
    fault says otherwise."""

    def __init__(self, proxy: NatsProxy, writer: asyncio.StreamWriter, conn: _Conn) -> None:
        self.proxy = proxy
        self.writer = writer
        self.conn = conn
        self.held: bytes | None = None
        self.held_timer: asyncio.TimerHandle | None = None

    def write(self, data: bytes) -> None:
        if not self.writer.is_closing():
            self.writer.write(data)

    def release_held(self) -> None:
        if self.held_timer is not None:
            self.held_timer.cancel()
            self.held_timer = None
        if self.held is not None:
            data, self.held = self.held, None
            self.write(data)

    def message(self, subject: str, frame: bytes) -> None:
        kind = subject_kind(subject)
        rule = self.proxy.plan.rule(kind, self.conn.name)
        rng = self.proxy.rngs[kind]
        with self.proxy.lock:
            first = self.proxy.first_dropped
            early = first[(self.conn.name, kind)] < rule.drop_first
            first[(self.conn.name, kind)] += early
            drop = early or rng.random() < rule.drop
            dup = not drop and rng.random() < rule.dup
            reorder = not drop and rng.random() < rule.reorder
            delay = rng.uniform(0, rule.delay_s) if not drop and rng.random() < rule.delay else 0
        stats = self.proxy.stats
        stats[(kind, "seen")] += 1
        if drop:
            stats[(kind, "dropped")] += 1
            return
        copies = frame * 2 if dup else frame
        if dup:
            stats[(kind, "duplicated")] += 1
        if delay > 0:
            stats[(kind, "delayed")] += 1
            asyncio.get_running_loop().call_later(delay, self.write, copies)
            return
        if reorder and self.held is None:
            stats[(kind, "reordered")] += 1
            self.held = copies
            self.held_timer = asyncio.get_running_loop().call_later(_HOLD_S, self.release_held)
            return
        self.write(copies)
        self.release_held()  # a held message goes after its successor

    def control(self, line: bytes) -> None:
        if line[:8].upper() == b"CONNECT ":
            with contextlib.suppress(ValueError, AttributeError):
                self.conn.name = str(json.loads(line[8:]).get("name") or "")
        self.write(line)


async def _pump(reader: asyncio.StreamReader, pipe: _Pipe, from_client: bool) -> None:
    """Read NATS frames and hand them to `pipe` (messages one by one, other lines as is)."""
    while True:
        line = await reader.readline()
        if not line:
            return
        if not line.endswith(b"\r\n"):
            pipe.control(line)
            continue
        words = line[:-2].split()
        op = words[0].upper() if words else b""
        ops = (b"PUB", b"HPUB") if from_client else (b"MSG", b"HMSG")
        if op in ops:
            size = int(words[-1])
            body = await reader.readexactly(size + 2)
            pipe.message(words[1].decode(errors="replace"), line + body)
        else:
            pipe.control(line)
        await pipe.writer.drain()


class NatsProxy:
    """`async with NatsProxy(upstream, plan, seed) as p:` clients connect to `p.url`.

    `upstream()` returns `(host, port)` of the real server, or None while it is unknown.
    `stats` counts, per (kind, what), the messages seen, dropped, duplicated, delayed and
    reordered."""

    def __init__(
        self, upstream: Callable[[], tuple[str, int] | None], plan: FaultPlan, seed: int
    ) -> None:
        self.upstream = upstream
        self.plan = plan
        # one generator per kind: the n-th order's fate does not depend on how many
        # heartbeats went by before it
        self.rngs = {kind: random.Random(f"{seed}-{kind}") for kind in KINDS}
        self.lock = threading.Lock()
        self.stats: Counter[tuple[str, str]] = Counter()
        self.first_dropped: Counter[tuple[str, str]] = Counter()  # (client, kind) -> dropped
        self.connections = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.port = 0

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    async def __aenter__(self) -> NatsProxy:
        self._server = await asyncio.start_server(self._client, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _client(self, creader: asyncio.StreamReader, cwriter: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            target = self.upstream()
            if target is None:
                return
            try:
                sreader, swriter = await asyncio.open_connection(*target)
            except OSError:
                return
            self.connections += 1
            conn = _Conn()
            up = asyncio.create_task(_pump(creader, _Pipe(self, swriter, conn), from_client=True))
            down = asyncio.create_task(
                _pump(sreader, _Pipe(self, cwriter, conn), from_client=False)
            )
            _, pending = await asyncio.wait({up, down}, return_when=asyncio.FIRST_COMPLETED)
            for t in pending:
                t.cancel()
            await asyncio.gather(up, down, return_exceptions=True)
            swriter.close()
        except (OSError, asyncio.IncompleteReadError, ValueError):
            pass
        except asyncio.CancelledError:
            pass  # the proxy closes: end quietly (a cancelled handler is logged by asyncio)
        finally:
            cwriter.close()
            self._tasks.discard(task)


class ProxyThread:
    """A NatsProxy on its own event loop in a daemon thread (for synchronous tests)."""

    def __init__(
        self, upstream: Callable[[], tuple[str, int] | None], plan: FaultPlan, seed: int
    ) -> None:
        self.proxy = NatsProxy(upstream, plan, seed)
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._main, daemon=True, name="nats-proxy")

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._serve())

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        async with self.proxy:
            self._ready.set()
            await self._stop.wait()

    def __enter__(self) -> NatsProxy:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the NATS proxy did not start")
        return self.proxy

    def __exit__(self, *exc: object) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)
        with contextlib.suppress(Exception):
            self._loop.close()
