"""The controller process: the core on a NATS bus, plus the launcher's events on stdin.

It also answers the operator's control requests (`aegis ctl`, aegis.runtime.control) on
`JobSubjects.ctl_controller`, under the same lock as every other event, and feeds a
JobObserver (metrics) with the applied check reports; `serve()` writes the structured fault
log (`<state_dir>/faults.jsonl`) and, with a metrics port, serves `GET /metrics`.

A periodic task (every min(timeout / 4, 1) s, O(workers)) declares agents whose heartbeats
stopped lost (`ControllerCore.on_heartbeat_lost`), only while the bus is seen to work (the
controller's own probe comes back, or some agent is heard) and its own client dropped no
message since the last scan: a frozen nats-server, or a controller too far behind to read
every heartbeat, is not a pod loss.

Every event is handled under one lock (aegis.runtime.controller.priority_lock). A pod's
join (its ACK:
a crashed pod's replacement), a launcher's event and an operator's request take it before
the reports and heartbeats waiting for it: a fault's restart waits for the replacement to
join, and it must not queue behind a burst of reports. For the same reason joins come on a
subject of their own (`JobSubjects.join`), read apart from the reports. An event that leads
to a new order commits and publishes it at once (`ControllerCore.order_due`), not after its
batch."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import math
import signal
import sys
import time
from pathlib import Path

from aegis.checks.faultlog import FaultLogWriter, FaultRecord
from aegis.protocol.control import make_reply
from aegis.protocol.envelope import Message, MessageType
from aegis.protocol.errors import MalformedMessage
from aegis.protocol.exitcodes import (
    CONTROLLER_EXIT_BY_PHASE,
    TERMINATED,
    ControllerExit,
    terminated_by,
)
from aegis.protocol.launcher_events import PodLost, parse_event
from aegis.protocol.payloads import ReceiptResult
from aegis.protocol.subjects import JobSubjects
from aegis.runtime.control import ControllerControl
from aegis.runtime.controller.checkpoints import CheckpointMetrics
from aegis.runtime.controller.core import ControllerCore, JobConfig, Outcome, PersistenceError
from aegis.runtime.controller.group_commit import GroupCommit
from aegis.runtime.controller.narrator import Narrator
from aegis.runtime.controller.observability import JobObserver, MetricsServer, write_textfile
from aegis.runtime.controller.priority_lock import PriorityLock, UrgentHold
from aegis.runtime.controller.reserve import SAVE_GIVE_UP_S, SpaceReserve, reserve_bytes
from aegis.runtime.controller.store import FileStatusStore
from aegis.runtime.controller.wal import WriteAheadLog
from aegis.runtime.engine import EngineError
from aegis.runtime.lifetime import supervised, watch_parent
from aegis.runtime.steplog import StepLog
from aegis.runtime.transport.auth import UserCredentials
from aegis.runtime.transport.bus import (
    MAX_RUNNING_HANDLERS,
    RECONNECT_WAIT_S,
    Bus,
    SenderBudget,
    Subscription,
)
from aegis.runtime.transport.request_copies import RequestCopies

log = logging.getLogger(__name__)
CONTROLLER_CREDS = "controller.creds.json"  # its NATS user in the state dir (mode 0600)
CA_FILE = "ca.pem"  # the job's CA certificate in the state dir (a job across hosts: TLS)
# what one pod incarnation's subjects may bring the controller, a second (bursts of
# SENDER_BURST); an agent sends a few: its heartbeats, its reports and their copies
SENDER_RATE = 100.0
SENDER_BURST = 1000.0
MAX_SCAN_PERIOD_S = 1.0
# the bus counts as down (a frozen nats-server) when neither our own probe nor any agent came
# through it for this many scan periods (a freeze must last 3/4 of the timeout to cost a pod)
BUS_SILENT_PERIODS = 2
# after an outage an agent may reconnect up to one reconnect wait (plus nats-py's jitter and a
# connect on a loaded machine) later than the controller: that much more than the timeout
RECONNECT_GRACE_S = 2 * RECONNECT_WAIT_S
REPORT_TYPES = frozenset(
    {
        MessageType.FINISH,
        MessageType.ERROR,
        MessageType.HANG,
        MessageType.CHECKPOINT,
        MessageType.EVICTED,
    }
)
# the message types each kind of a pod's subjects carries (JobSubjects.pod_subject)
SUBJECT_TYPES = {
    "join": frozenset({MessageType.ACK}),
    "report": REPORT_TYPES,
    "heartbeat": frozenset({MessageType.HEARTBEAT}),
}


class ControllerService:
    """Runs one job's controller until the job terminates; `run()` returns the exit code."""

    def __init__(
        self,
        core: ControllerCore,
        bus: Bus,
        observer: JobObserver | None = None,
        narrator: Narrator | None = None,
        *,
        beats_bus: Bus | None = None,
        ctl_bus: Bus | None = None,
    ) -> None:
        """`narrator`: says each fault and what follows on the console (its records come from
        the core's `on_fault`, wired by the caller). `beats_bus`, `ctl_bus`: connections of
        their own for the heartbeats and the operator's requests (default: `bus`). A server
        sends a connection its messages in order: on one connection, a flood on one pod's
        report subject would hold up every heartbeat (pods declared lost) and `aegis ctl`
        behind it."""
        self.core = core
        self.narrator = narrator
        self.bus = bus
        self.beats_bus = beats_bus or bus
        self.ctl_bus = ctl_bus or bus
        self.subjects = JobSubjects(core.job.namespace, core.job.name)
        self.observer = observer
        self.control = ControllerControl(core, self._apply, core.job.namespace, core.job.name)
        self.lock = PriorityLock()
        # handlers of one subscription (joins, reports) running at once, at most; past that
        # the messages wait in the bus client's queue for that subscription
        self.max_running = MAX_RUNNING_HANDLERS
        self.done = asyncio.Event()
        self.exit_code: int | None = None
        # events commit in groups: durable, then the order is published, then the replies
        core.autocommit = False
        self.commits = GroupCommit(core.journal, self.lock, self._publish_due)
        self.reserve: SpaceReserve | None = None  # the state dir's reserve (`serve`)
        self.save_give_up_s = SAVE_GIVE_UP_S
        self._beats: Subscription | None = None  # the heartbeats' (its backlog is read)
        self._sends: set[asyncio.Task[None]] = set()  # heartbeat answers waiting for a commit
        self.refused_events = 0  # launcher event lines that were not events

    async def run(self, events: asyncio.StreamReader | None = None) -> int:
        """Subscribe, re-publish the current order, handle events until the job ends."""
        if self.observer is not None:
            self.observer.job_started(self.core.journal.fresh)
        if self.narrator is not None:
            self.narrator.start(*self._narrated())
        # a report's copies (an agent waiting for its receipt sends it again) are handled once
        counted = None if self.observer is None else self.observer.on_report_copy
        copies = RequestCopies(on_copy=counted)
        # joins apart from reports: a replacement's ACK is read at once, not after every
        # report queued before it (the bus starts at most max_running handlers a subscription)
        # each pod incarnation's messages within a budget (SENDER_RATE): a flood from one
        # credential is dropped unread, before it costs a decode, a task or the lock
        budget = SenderBudget(SENDER_RATE, SENDER_BURST)
        for subject in (self.subjects.joins, self.subjects.reports):
            await self.bus.subscribe_each(
                subject,
                self._on_message,
                concurrent=True,
                max_running=self.max_running,
                copies=copies,
                budget=budget,
            )
        self._beats = await self.beats_bus.subscribe_each(
            self.subjects.heartbeats, self._on_message, budget=budget
        )
        # a full heartbeat timeout from now, when agents can reach us: a restart that took
        # long (load, a slow bus) must not count the agents as lost
        self.core.refresh_all()
        await self.ctl_bus.subscribe(self.subjects.ctl_controller, self._on_control)
        async with self.lock:
            await self._publish()
        tasks = [
            supervised(self._watch_heartbeats(), "heartbeat watch", self._task_failed),
            supervised(self._watch_saves(), "save watch", self._task_failed),
        ]
        if events is not None:
            tasks.append(
                supervised(self._read_events(events), "launcher events", self._task_failed)
            )
        await self.done.wait()
        for task in tasks:
            task.cancel()
        with contextlib.suppress(Exception):
            await self.bus.flush()  # the last order
        with contextlib.suppress(Exception):
            await self.ctl_bus.flush()  # the reply to a `ctl stop`
        await self.commits.finish()  # the last snapshot, not left to a task the exit cancels
        if self.observer is not None:
            self.observer.job_ended(self.core.terminal)
        self._say_how_it_ended()
        return self.exit_code if self.exit_code is not None else ControllerExit.STOPPED

    def _say_how_it_ended(self) -> None:
        """The job's summary, what the disk did to its state, and why it failed."""
        ended = [self.core.view.summary(), self.storage_note()]
        if self.narrator is not None and self.core.terminal == "Failed":
            cause = self.narrator.cause(int(self.core.state.countedFailures))
            ended.append(f"aegis: why it failed: {cause}")
        for line in filter(None, ended):
            print(line, file=sys.stderr, flush=True)

    def _narrated(self) -> tuple[str, int, int]:
        s = self.core.state
        return str(s.phase), int(s.countedFailures), self.core.extras.command_orders

    async def close(self) -> None:
        """After `run()`, once the bus is closed: the last commits end and their worker
        thread with them (the WAL may be closed after this)."""
        await self.commits.close()

    def stop(self, code: int) -> None:
        """End `run()` with `code` (a signal, or a fatal engine error)."""
        if self.exit_code is None:
            self.exit_code = code
        self.done.set()

    def terminal_saved(self) -> bool:
        """Whether the job ended and what is on disk says how (its last save went through)."""
        return self.core.terminal is not None and self.core.journal.health.ok

    def storage_note(self) -> str:
        """What the disk did to the job's state, said when the job ends ('' if nothing)."""
        health = self.core.journal.health
        full = self.reserve is not None and self.reserve.released
        if not full and not health.failures:
            return ""
        where = "the state dir's filesystem filled up" if full else "saving the state failed"
        phase = self.core.state.phase
        saved = (
            f"status.json holds the outcome ({phase})"
            if health.ok
            else f"status.json does NOT hold the outcome ({phase}): {health.last_error}"
        )
        return f"aegis: {where} during the run ({health.failures} failed saves); {saved}"

    async def _watch_saves(self) -> None:
        """End the job when its state has not been saved for SAVE_GIVE_UP_S in a row (a disk
        full even after its reserve was given back): ControllerExit.STORAGE, not restarted.
        Until then every event is rolled back and handled again when it comes back."""
        failing_since: float | None = None
        while not self.done.is_set():
            await asyncio.sleep(min(1.0, self.save_give_up_s / 4))
            if self.core.journal.health.ok:
                failing_since = None
                continue
            now = time.monotonic()
            failing_since = failing_since if failing_since is not None else now
            if now - failing_since > self.save_give_up_s:
                print(
                    f"aegis: the job's state could not be saved for {self.save_give_up_s:g} s "
                    f"({self.core.journal.health.last_error}); the job stops. What ran: phase "
                    f"{self.core.state.phase}, {self.core.view.summary()}; status.json holds "
                    "what was saved before",
                    file=sys.stderr,
                    flush=True,
                )
                self.stop(ControllerExit.STORAGE)
                return

    def _dropped_at(self) -> float:
        """When our client last dropped messages (too far behind) on the connections that
        carry the agents' messages (-inf: never)."""
        return max(b.dropped_at or -math.inf for b in (self.bus, self.beats_bus))

    def _task_failed(self, exc: BaseException) -> None:
        """A supervision task ended by an exception: stop rather than run unsupervised (the
        launcher restarts a controller that exits with a crash code; state is on disk)."""
        print(f"aegis: controller task failed: {exc!r}; exiting", file=sys.stderr, flush=True)
        self.stop(1)

    async def _on_message(self, subject: str, msg: Message) -> Message | None:
        # the sender is the pod incarnation whose subject it came in on (only its credential
        # may publish there), never the payload's: a message that claims another pod or
        # another incarnation is dropped (aegis.runtime.controller.senders)
        found = self.subjects.pod_subject(subject)  # (kind, pod, incarnation), read once
        if not self.core.sender_matches(found, msg):
            if msg.type is MessageType.HEARTBEAT:
                return None
            return self.core.orders.receipt(msg, ReceiptResult.FORGED)  # a forged sender
        if found is None or msg.type not in SUBJECT_TYPES[found.kind]:
            return self.core.senders.misrouted(msg)  # e.g. an ACK among the reports
        if msg.type is MessageType.HEARTBEAT:
            async with self.lock:
                beat = self.core.on_heartbeat(msg)
            if beat.reply is not None:  # an eviction (a heartbeat has no reply subject)
                self._send_when_durable(self.subjects.master, beat.reply)
            if beat.resend is not None:  # a missed order: to the pod's own inbox
                self._send_when_durable(self.subjects.order_inbox(msg.pod_name), beat.resend)
            return None
        hold: PriorityLock | UrgentHold
        if msg.type is MessageType.ACK:  # a join goes before the reports waiting
            hold, on = self.lock.urgent(), self.core.on_ack
        else:
            hold, on = self.lock, self.core.on_report
        async with hold:  # handled in memory; committed with the others of its batch ...
            out = self._handle(lambda: on(msg))
            try:  # ... unless it leads to an order: that goes out now
                if self.core.orders.order_due:
                    await self.commits.commit_locked()
            except PersistenceError as exc:
                log.error("%s", exc)  # rolled back: the agent retries it
                return None
        try:
            await self.commits.durable()
        except PersistenceError as exc:
            log.error("%s", exc)  # rolled back: the agent retries it
            return None
        if out is None:
            return None
        if out.applied and self.observer is not None:
            self.observer.on_report(msg)
        return out.reply

    def _send_when_durable(self, subject: str, message: Message) -> None:
        """Publish `message` once the state it shows is on disk (not at all if that commit
        failed: it was rolled back), in a task of its own: heartbeats are handled one at a
        time, and one that waited for a commit held up every heartbeat behind it (at 12,500
        pods agents were declared lost, docs/scale.md)."""

        async def send() -> None:
            with contextlib.suppress(Exception):
                await self.commits.durable()
                await self.bus.publish(subject, message)

        task = asyncio.create_task(send())
        self._sends.add(task)
        task.add_done_callback(self._sends.discard)

    async def _on_control(self, msg: Message) -> Message:
        async with self.lock.urgent():
            reply = await self.control.handle(msg)
            try:
                await self.commits.commit_locked()  # a taint is durable before it is answered
            except PersistenceError as exc:
                log.error("%s", exc)
                return make_reply(msg, ok=False, error=str(exc))
            # and in status.json (an operator reads it next): an operator's request is rare,
            # so its snapshot is not left to wait for the commits to pause
            self.core.journal.compact()
            return reply

    async def _apply(self, handle: object) -> Message | None:
        """Handle an event and commit it at once (the caller holds the lock)."""
        out = self._handle(handle)
        try:
            await self.commits.commit_locked()
        except PersistenceError as exc:
            # memory was rolled back to what is on disk; the event is handled when it recurs
            log.error("%s", exc)
            return None
        return None if out is None else out.reply

    def _handle(self, handle: object) -> Outcome | None:
        """Apply one event in memory (under the lock); None if the engine stopped the job."""
        try:
            out: Outcome = handle()  # type: ignore[operator]
        except EngineError as exc:
            log.error("%s", exc)
            print(f"aegis: controller stopped the job: {exc}", file=sys.stderr, flush=True)
            self.stop(ControllerExit.STOPPED)
            return None
        finally:
            if self.narrator is not None:
                self.narrator.after_event(*self._narrated())
        return out

    async def _publish_due(self) -> None:
        """After a commit: publish its order if it has one not yet out."""
        if self.core.orders.needs_publish:
            await self._publish()

    async def _publish(self) -> None:
        core, orders = self.core, self.core.orders
        if not orders.in_order_phase:
            return  # no order in this phase (Pending, Restarting)
        for pod_order in orders.pod_orders():  # before the broadcast: each pod's own entries
            await self.bus.publish(self.subjects.master, pod_order)
        await self.bus.publish(self.subjects.master, orders.order_for())
        # no flush (a PING/PONG) per commit: it would hold the lock for a round trip while
        # a thousand reports wait; nats-py writes the buffer out at once, in order (an
        # order before the replies of its batch), and an agent that missed one is sent it
        # again when its heartbeat shows it (OrderVersions)
        orders.mark_published()
        if self.observer is not None:
            self.observer.order_published()
        if core.terminal is not None:
            self.stop(CONTROLLER_EXIT_BY_PHASE[core.terminal])

    async def _watch_heartbeats(self) -> None:
        """Declare the agents silent past the heartbeat timeout lost, but only while the bus
        itself is seen to work (`_bus_works`): a bus outage or a frozen nats-server silences
        every agent at once, and that is not N pod losses. When the bus works again (or this
        process ran late: SIGSTOPped, starved; or its client dropped messages, too far behind
        on its queue) every agent gets a full timeout from then."""
        timeout = self.core.job.silence_timeout
        if timeout <= 0:
            return
        period = min(timeout / 4, MAX_SCAN_PERIOD_S)
        was_up = True
        loop = asyncio.get_running_loop()
        last = started = loop.time()
        warned = False
        while not self.done.is_set():
            await self.bus.echo()  # back within the next period if the server is running
            await asyncio.sleep(period)
            now = loop.time()
            late, last = now - last - period, now
            if self.bus.echoed_at is None and not warned and now - started > 10 * period:
                warned = True
                log.warning(
                    "the bus probe never came back: a frozen nats-server is told from lost "
                    "pods only by every agent falling silent at once"
                )
            if not self._bus_works(now, BUS_SILENT_PERIODS * period):
                was_up = False
                continue
            if not was_up:
                # the agents reconnect on their own schedule, up to one reconnect wait after
                # us: each gets a full timeout from when it can be back
                self.core.refresh_all(time.monotonic() + RECONNECT_GRACE_S)
                was_up = True
                continue
            if late > timeout / 2:
                # this process did not run for a while (SIGSTOPped, starved): the silence
                # was ours too; the heartbeats queued meanwhile are still to be read
                self.core.refresh_all()
                continue
            if time.monotonic() - self._dropped_at() <= period + late:
                # our client dropped messages since the last scan (too far behind): an agent's
                # silence may be its heartbeats we dropped, not its death; declaring it lost
                # would restart pods, more load on a controller already behind
                self.core.refresh_all()
                continue
            asked = loop.time()
            async with self.lock:
                if self._behind_on_beats(loop.time() - asked, timeout):
                    self.core.refresh_all()
                    continue
                for pod in self.core.silent_pods():
                    await self._apply(lambda pod=pod: self.core.on_heartbeat_lost(pod))

    def _behind_on_beats(self, waited: float, timeout: float) -> bool:
        """Whether the heartbeats of silent-looking agents may be waiting in our own queue:
        the lock took long (events held it; a heartbeat's handler waits for it too), or a
        beat from every pod's worth is still unread (a 12,500-pod controller slowed down by
        half declared 693 pods lost whose heartbeats it had not read yet)."""
        if waited > timeout / 4:
            return True
        beats = self._beats
        return beats is not None and beats.pending >= len(self.core.job.pods)

    def _bus_works(self, now: float, within: float) -> bool:
        """Whether the bus carried something to us lately: connected, and our own probe came
        back or some agent was heard within `within` s (a probe that never came back, e.g.
        no permission for it, is not evidence of an outage)."""
        if not (self.bus.connected and self.beats_bus.connected):
            return False  # our own connection is down: the agents' silence is ours
        echoed = self.bus.echoed_at
        if echoed is None or now - echoed <= within:
            return True
        heard = max(self.core.last_seen.values(), default=float("-inf"))
        return time.monotonic() - heard <= within

    async def _read_events(self, reader: asyncio.StreamReader) -> None:
        """The launcher's events (aegis.protocol.launcher_events), one a line, until its end;
        a line that is not one is logged and skipped: the controller never stops on one."""
        while True:
            try:
                line = await reader.readline()
            except ValueError as exc:  # a line past the reader's limit (it is dropped)
                self._refuse_event(str(exc))
                continue
            if not line:
                return
            try:
                ev = parse_event(line)
            except MalformedMessage as exc:
                self._refuse_event(str(exc))
                continue
            async with self.lock.urgent():
                if isinstance(ev, PodLost) and self.narrator is not None:
                    self.narrator.on_launcher_event(ev)
                if isinstance(ev, PodLost):
                    await self._apply(
                        lambda ev=ev: self.core.on_pod_lost(
                            ev.pod, ev.incarnation, ev.exit_code, ev.node, ev.reason
                        )
                    )
                elif ev.reason:
                    await self._apply(lambda why=ev.reason: self.core.on_quit(why))
                else:
                    await self._apply(self.core.on_quit)

    def _refuse_event(self, why: str) -> None:
        self.refused_events += 1
        log.warning("launcher event refused (%d so far): %s", self.refused_events, why)


async def _stdin_reader() -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    return reader


async def serve(
    job: JobConfig,
    state_dir: Path,
    nats_url: str,
    creds: UserCredentials,
    *,
    events: bool,
    metrics_port: int = 0,
    resumed_run: bool = False,
    nats_ca: bytes | None = None,
) -> int:
    """The `aegis controller` process: load the store, serve the job, return the exit code.

    Faults go to `<state_dir>/faults.jsonl`; with `metrics_port` > 0 the metrics are served
    on 127.0.0.1:`metrics_port` and written to `<state_dir>/metrics.prom` at the end.
    `nats_ca`: the CA of a nats-server that speaks TLS (a job across hosts)."""
    state_dir.mkdir(parents=True, exist_ok=True)
    # room for the job's own state when the disk fills (reserve.py); none: refused at once
    reserve = SpaceReserve(state_dir, reserve_bytes(len(job.pods)))
    reserve.hold()
    steplog = StepLog(state_dir / "steps.jsonl", on_full=reserve.on_full)
    wal = WriteAheadLog(state_dir / "wal.jsonl", on_full=reserve.on_full)
    faults = FaultLogWriter(state_dir / "faults.jsonl")
    observer = JobObserver(len(job.pods))
    narrator = Narrator(job.pods, job.max_retry)

    def write_fault(record: FaultRecord) -> None:
        faults.write(record)
        narrator.on_fault(record)

    core = ControllerCore(
        job,
        FileStatusStore(state_dir / "status.json", on_full=reserve.on_full),
        steplog,
        on_fault=observer.fault_sink(write_fault),
        wal=wal,
        resumed_run=resumed_run,
    )
    observer.shared.registry.register(CheckpointMetrics(core.checkpoints, job.name))
    connect = functools.partial(Bus.connect, nats_url, creds, reconnect_attempts=-1, tls_ca=nats_ca)
    bus = await connect(name="aegis-controller")
    beats_bus = await connect(name="aegis-controller-heartbeats")
    ctl_bus = await connect(name="aegis-controller-ctl")
    service = ControllerService(core, bus, observer, narrator, beats_bus=beats_bus, ctl_bus=ctl_bus)
    service.reserve = reserve
    metrics = await _start_metrics(observer, metrics_port)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, service.stop, terminated_by(sig))
    orphan = asyncio.create_task(watch_parent(lambda: service.stop(TERMINATED)))
    try:
        return await service.run(await _stdin_reader() if events else None)
    finally:
        orphan.cancel()
        for connection in (bus, beats_bus, ctl_bus):
            await connection.close()
        await service.close()
        steplog.close()
        wal.close()
        if service.terminal_saved():
            reserve.close()  # the job's outcome is saved: its room goes back to the disk
        if metrics is not None:
            await metrics.close()
            with contextlib.suppress(OSError):
                write_textfile(observer, state_dir / "metrics.prom")


async def _start_metrics(observer: JobObserver, port: int) -> MetricsServer | None:
    """The metrics endpoint, or None (port 0, or the port cannot be bound: said on stderr)."""
    if port <= 0:
        return None
    server = MetricsServer(observer, "127.0.0.1", port)
    try:
        await server.start()
    except OSError as exc:
        print(
            f"aegis: metrics: cannot listen on 127.0.0.1:{port} ({exc.strerror or exc}); "
            "the job runs without them",
            file=sys.stderr,
            flush=True,
        )
        return None
    print(f"aegis: metrics at {server.url}", file=sys.stderr, flush=True)
    return server


def load_credentials(path: Path) -> UserCredentials:
    """Controller credentials written by the launcher ({"jwt", "seed"}, mode 0600)."""
    obj = json.loads(path.read_text())
    return UserCredentials(user_jwt=obj["jwt"], seed=obj["seed"].encode("ascii"))
