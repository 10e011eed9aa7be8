"""A fleet of simulated agents for bench/scale.py: many per process, one asyncio loop.

Each simulated agent is a real agent minus the work: it makes its own NKey pair and gets its
credential from the real gRPC credential service (one Issue call with the bootstrap token and
its incarnation), connects to the real nats-server with that JWT (aegis.testing.lean_nats; the
server enforces the per-pod permissions), subscribes to the orders and its own inbox, ACKs,
heartbeats, and decides with the real `AgentCore` (aegis.runtime.agent.core): it answers every
order the core says to work on with the core's Finish report, at once (or after `work_s`). A
crashing agent drops its connection when its RunCommand order arrives; the fleet tells the
launcher (the `on_lost` hook) and starts its replacement, a new incarnation, as `aegis run`
does. bench/fleet_procs.py runs a fleet over several processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import grpc

from aegis.protocol.envelope import Message
from aegis.protocol.errors import MalformedMessage
from aegis.protocol.payloads import Receipt, ReceiptResult, Report, Sender
from aegis.protocol.subjects import JobSubjects
from aegis.runtime.agent.core import AgentCore, Ignore, Leave, Work
from aegis.runtime.agent.waits import join_waits, report_waits
from aegis.runtime.controller.gc_tuning import CollectorClock, thresholds
from aegis.runtime.transport.auth import new_user_keypair
from aegis.runtime.transport.grpc_credentials import build_request
from aegis.runtime.transport.proto import credentials_pb2_grpc as pb_grpc
from aegis.testing.lean_nats import LeanNats, NatsError
from bench.fleet_stats import FleetStats

log = logging.getLogger("bench.fleet")

# The cyclic collector's thresholds while a fleet runs. A fleet process holds the long-lived
# state of thousands of agents (their connections, cores, pending requests), where a real
# agent is a process of its own with a small heap: under CPython's defaults (700, 10, 10) the
# bench would spend much of its time collecting that heap, measuring its own collector
# (docs/scale.md, "Decisions"). An in-process fleet (--fleet-procs 1) sets them for the
# bench's whole process while it runs.
FLEET_GC_THRESHOLDS = (100_000, 1_000, 1_000)

CRASH_EXIT = 137  # what the launcher is told a crashed agent exited with (SIGKILL)
_RETRYABLE = {
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
    grpc.StatusCode.DEADLINE_EXCEEDED,
}


@dataclass(frozen=True)
class FleetConfig:
    """Where the fleet's agents connect and how they behave."""

    job: str
    namespace: str
    grpc_target: str
    token: str
    heartbeat_s: float = 5.0
    work_s: float = 0.0  # seconds each piece of work takes (0: answer at once)
    crashes: tuple[str, ...] = ()  # pods that crash once, in this order, one per RunCommand
    # when a crashing pod dies, as a fraction of work_s after its order: 0.5 halfway (the
    # others working, not reporting), 1.0 as the others report, up to 2.0 while the
    # controller may still be taking their burst (its replacement joins behind it)
    crash_at: float = 0.5
    start_rate: float = 0.0  # agents started per second (0: all at once)
    drop_orders: float = 0.0  # each agent loses each order on the order subject with this chance
    issue_concurrency: int = 256
    connect_concurrency: int = 64
    gc_thresholds: tuple[int, int, int] = FLEET_GC_THRESHOLDS


class Fleet:
    """Runs simulated agents; `on_lost(pod, incarnation, code)` is the launcher's hook."""

    def __init__(
        self,
        cfg: FleetConfig,
        expected: dict[str, str],
        on_lost: Callable[[str, str, int], None],
    ) -> None:
        self.cfg = cfg
        self.subjects = JobSubjects(cfg.namespace, cfg.job)
        self.expected = expected  # pod -> the incarnation the credential service accepts
        self.on_lost = on_lost
        self.stats = FleetStats()
        self.agents: dict[str, SimAgent] = {}
        self.crash_queue = list(cfg.crashes)
        self.crash_seq = -1
        self.channel: grpc.aio.Channel | None = None
        self.issue_gate = asyncio.Semaphore(cfg.issue_concurrency)
        self.connect_gate = asyncio.Semaphore(cfg.connect_concurrency)
        self.tasks: set[asyncio.Task[None]] = set()
        self.done = asyncio.Event()
        self.pods: tuple[str, ...] = ()

    async def run(self, pods: tuple[str, ...], incarnations: dict[str, str] | None = None) -> None:
        """Start one agent per pod (with the incarnation `incarnations` gives it, if any: the
        credential service must expect it); return when every agent has left (the job
        ended)."""
        self.pods = pods
        self.stats.started = time.monotonic()
        self.channel = grpc.aio.insecure_channel(self.cfg.grpc_target)
        clock = CollectorClock()
        clock.start()
        try:
            with thresholds(self.cfg.gc_thresholds):
                for i, pod in enumerate(pods):
                    self.spawn(pod, (incarnations or {}).get(pod))
                    if self.cfg.start_rate and i % 50 == 49:  # `start_rate` agents a second
                        await asyncio.sleep(50 / self.cfg.start_rate)
                await self.done.wait()
        finally:
            clock.stop()
            self.stats.gc_collections, self.stats.gc_s = sum(clock.runs), sum(clock.seconds)
            for agent in self.agents.values():
                agent.stop()
            # a report task whose receipt came as its agent left records it in a loop turn or
            # two: a child process sends its stats as soon as this returns
            if self.tasks:
                await asyncio.wait(set(self.tasks), timeout=5.0)
            await self.channel.close()

    @property
    def processes(self) -> int:
        """The processes the fleet's agents ran in: this one."""
        return 1

    @property
    def child_pids(self) -> list[int]:
        """No child processes: the agents run in this one."""
        return []

    def spawn(self, pod: str, incarnation: str | None = None) -> None:
        """Start a new incarnation of `pod` (the credential service expects it)."""
        inc = incarnation or secrets.token_hex(8)
        self.expected[pod] = inc
        agent = SimAgent(self, pod, inc)
        self.agents[pod] = agent
        task = asyncio.create_task(agent.run(), name=f"agent {pod}")
        self.tasks.add(task)
        task.add_done_callback(self._ended)

    def _ended(self, task: asyncio.Task[None]) -> None:
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("simulated agent failed: %r", task.exception())
            self.done.set()

    def crash_now(self, pod: str, seq: int) -> bool:
        """Whether `pod` crashes on RunCommand order `seq` (the next in the queue, one per
        order)."""
        if not self.crash_queue or self.crash_queue[0] != pod or seq <= self.crash_seq:
            return False
        self.crash_queue.pop(0)
        self.crash_seq = seq
        return True

    def crashed(self, agent: SimAgent) -> None:
        """An agent crashed: tell the launcher's hook, start its replacement."""
        self.on_lost(agent.pod, agent.incarnation, CRASH_EXIT)
        self.spawn(agent.pod)

    def left(self, pod: str, why: str) -> None:
        """An agent left after the final order."""
        self.stats.left[pod] = why
        if len(self.stats.left) == len(self.pods):
            self.done.set()

    def end(self) -> None:
        """The controller exited (the job ended): stop the agents still here, as `aegis
        run`'s launcher stops them (one that lost the final order would wait for nothing
        else: the controller that could send it again is gone), counted in stopped_at_end."""
        self.stats.stopped_at_end = len(self.pods) - len(self.stats.left)
        self.done.set()

    async def issue(self, pod: str, incarnation: str, public_key: str) -> tuple[str, str]:
        """(user JWT, NATS URL) from the credential service, retrying while it is busy."""
        assert self.channel is not None
        stub = pb_grpc.CredentialsStub(self.channel)
        request = build_request(
            self.cfg.namespace, self.cfg.job, pod, public_key, self.cfg.token, incarnation
        )
        for attempt in range(50):
            try:
                async with self.issue_gate:
                    reply = await stub.Issue(request, timeout=30.0, wait_for_ready=True)
            except grpc.aio.AioRpcError as err:
                if err.code() not in _RETRYABLE:
                    raise
                await asyncio.sleep(min(0.05 * 2**attempt, 2.0) * random.uniform(0.5, 1.0))
                continue
            expected = (self.subjects.master, self.subjects.report(pod, incarnation))
            if (reply.subjects.master, reply.subjects.worker) != expected:
                raise RuntimeError(f"credential service sent subjects {reply.subjects}")
            return reply.user_jwt, reply.nats_url
        raise RuntimeError(f"no credential for {pod} after 50 attempts")


class SimAgent:
    """One simulated agent: credentials, NATS, ACK, orders through AgentCore, heartbeats."""

    def __init__(self, fleet: Fleet, pod: str, incarnation: str) -> None:
        self.fleet = fleet
        self.pod = pod
        self.incarnation = incarnation
        cfg = fleet.cfg
        sender = Sender(incarnation, node=f"node-{pod}", pod_ip="127.0.0.1", node_ip="127.0.0.1")
        self.core = AgentCore(cfg.job, cfg.namespace, pod, sender)
        self.subjects = fleet.subjects
        self.inbox = self.subjects.inbox_prefix(pod)
        self.conn: LeanNats | None = None
        self.pending: dict[str, tuple[float, asyncio.Future[Message]]] = {}
        self.next_reply = 0
        self.working = False
        self.gone = False
        self.leaving = False
        self.beat: asyncio.Task[None] | None = None
        self.order_inbox = self.subjects.order_inbox(pod)
        self.losses = random.Random(f"{pod}-{incarnation}")  # which orders it loses

    async def run(self) -> None:
        """Join the job; the rest happens in the message handler."""
        kp = new_user_keypair()
        jwt, url = await self.fleet.issue(self.pod, self.incarnation, kp.public_key.decode())
        stats = self.fleet.stats
        stats.creds_done.append(time.monotonic())
        host, port = url.removeprefix("nats://").rsplit(":", 1)
        for attempt in range(20):  # as a real agent: connect again until it is in
            try:
                async with self.fleet.connect_gate:
                    self.conn = await LeanNats.connect(
                        host, int(port), jwt, bytes(kp.seed), self.pod, self._on_msg
                    )
                break
            except (NatsError, OSError, TimeoutError) as exc:
                stats.connect_retries += 1
                if attempt == 19:
                    raise
                log.info("agent %s: connect failed (%r); again", self.pod, exc)
                await asyncio.sleep(min(0.1 * 2**attempt, 2.0) * random.uniform(0.5, 1.0))
        assert self.conn is not None
        self.conn.sub(self.subjects.master, 1)
        self.conn.sub(f"{self.inbox}.>", 2)
        await self.conn.ping()  # the subscriptions are in place (or refused: -ERR)
        reply = None
        while reply is None:  # as the real agent: one ACK, sent again until answered
            with contextlib.suppress(TimeoutError):
                ack = self.core.ack()
                subject = self.subjects.join(self.pod, self.incarnation)
                reply = await self.request(subject, ack, join_waits())
        stats.joined.append(time.monotonic())
        self.beat = asyncio.create_task(self._heartbeat())
        self._order(reply, len(reply.encode()))

    def _on_msg(self, subject: str, payload: bytes) -> None:
        reply = subject.startswith(self.inbox) and subject != self.order_inbox
        if self.gone or (self.leaving and not reply):
            return
        try:
            msg = Message.decode(payload)
        except MalformedMessage:
            self.fleet.stats.malformed += 1
            return
        if subject == self.order_inbox:  # an order it missed, sent again (OrderVersions)
            self.fleet.stats.orders_resent += 1
        elif subject == self.subjects.master:
            if self.losses.random() < self.fleet.cfg.drop_orders:
                self.fleet.stats.orders_dropped += 1  # lost on the way, as NATS may
                return
        elif subject.startswith(self.inbox):
            entry = self.pending.pop(subject, None)
            if entry is not None and not entry[1].done():
                entry[1].set_result(msg)
            return
        self._order(msg, len(payload))

    def _order(self, msg: Message, size: int) -> None:
        stats = self.fleet.stats
        if msg.pod_name == "master":
            stats.order_bytes = max(stats.order_bytes, size)
        elif msg.pod_name == self.pod:
            stats.pod_order_bytes = max(stats.pod_order_bytes, size)
        stats.first_seen.setdefault(msg.seq, time.monotonic())
        decision = self.core.on_order(msg, working=self.working)
        stats.malformed = max(stats.malformed, self.core.malformed)
        if isinstance(decision, Leave):
            task = asyncio.create_task(self._leave(decision.why))
            self.fleet.tasks.add(task)
            task.add_done_callback(self.fleet.tasks.discard)
        elif isinstance(decision, Work):
            phase = decision.order.spec_phase
            if phase == "RunCommand":
                stats.run_orders.setdefault(self.pod, time.monotonic())
                if self.fleet.crash_now(self.pod, decision.seq):
                    # `crash_at` through the command (halfway: the others are working)
                    loop = asyncio.get_running_loop()
                    loop.call_later(self.fleet.cfg.work_s * self.fleet.cfg.crash_at, self.crash)
                    return
            self.working = True
            loop = asyncio.get_running_loop()
            loop.call_later(self.fleet.cfg.work_s, self._finish, decision)
        elif not isinstance(decision, Ignore):
            log.info("agent %s: %s not simulated", self.pod, decision)

    def _finish(self, work: Work) -> None:
        if work.seq != self.core.work_seq:
            # a newer order came while this work ran: the real agent stopped the work then
            # (AgentService starts the new order's), so it has nothing to report
            self.fleet.stats.superseded += 1
            return
        self.working = False
        if self.gone:
            return
        msg = self.core.finish_work(
            work.seq, work.order.spec_phase, "Finish", Report(self.core.sender)
        )
        stats = self.fleet.stats
        if msg is not None and work.order.spec_phase == "RunCommand":
            stats.first_command_report = stats.first_command_report or time.monotonic()
        if msg is not None:
            task = asyncio.create_task(self._report(msg))
            self.fleet.tasks.add(task)
            task.add_done_callback(self.fleet.tasks.discard)

    async def _report(self, msg: Message) -> None:
        sent = time.monotonic()
        reply = None
        while reply is None and not self.gone:  # as the agent (AgentService._send_report)
            with contextlib.suppress(TimeoutError):
                subject = self.subjects.report(self.pod, self.incarnation)
                reply = await self.request(subject, msg, report_waits())
        if reply is None:
            return
        done = time.monotonic()
        stats = self.fleet.stats
        stats.report_ms.append((done - sent) * 1000)
        stats.report_times.append((sent, done))
        result = Receipt.from_data(reply.data).result
        stats.receipts[result.value] = stats.receipts.get(result.value, 0) + 1
        if result is ReceiptResult.EVICTED:
            self.stop()

    async def _leave(self, why: str) -> None:
        """The final order: wait for the receipts still on their way (the report that ended
        the job is answered after the final order goes out), then go."""
        self.leaving = True
        if self.beat is not None:
            self.beat.cancel()
        waiting = [fut for _, fut in self.pending.values()]
        if waiting:
            await asyncio.wait(waiting, timeout=5.0)
        await asyncio.sleep(0)  # let the report tasks take their receipts
        self.stop()
        self.fleet.left(self.pod, why)

    async def request(self, subject: str, msg: Message, waits: Sequence[float]) -> Message:
        """Publish `msg` with a reply subject in this agent's inbox, and again (the same
        reply subject, as Bus.request_patiently) after each of `waits` without a reply; the
        first reply. TimeoutError after the last wait."""
        assert self.conn is not None
        self.next_reply += 1
        reply_to = f"{self.inbox}.{self.next_reply}"
        fut: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self.pending[reply_to] = (time.monotonic(), fut)
        data = msg.encode()
        try:
            for i, wait in enumerate(waits):
                if i:
                    self.fleet.stats.resent += 1
                self.conn.pub(subject, data, reply_to)
                try:
                    return await asyncio.wait_for(asyncio.shield(fut), wait)
                except TimeoutError:
                    continue
            raise TimeoutError(f"no reply on {subject}")
        finally:
            self.pending.pop(reply_to, None)

    async def _heartbeat(self) -> None:
        """Beat every `heartbeat_s` or the longer period the orders ask for (the
        controller's heartbeat budget), saying which order it holds (as the real agent)."""
        own = self.fleet.cfg.heartbeat_s
        await asyncio.sleep(random.uniform(0, own))  # spread the fleet's beats
        while not self.gone and self.conn is not None:
            subject = self.subjects.heartbeat(self.pod, self.incarnation)
            self.conn.pub(subject, self.core.heartbeat().encode())
            self.fleet.stats.heartbeats += 1
            await asyncio.sleep(self.core.heartbeat_period(own))

    def crash(self) -> None:
        """Drop everything without a word, as a killed pod does; the launcher is told."""
        self.stop()
        self.fleet.crashed(self)

    def stop(self) -> None:
        """Close the connection and stop heartbeating."""
        self.gone = True
        if self.beat is not None:
            self.beat.cancel()
        if self.conn is not None:
            if self.conn.errors:
                self.fleet.stats.refused.extend(self.conn.errors)
            self.conn.close()
        for _, fut in self.pending.values():
            if not fut.done():
                fut.cancel()
        with contextlib.suppress(Exception):
            self.pending.clear()
