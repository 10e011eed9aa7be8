"""The agent service: the I/O around `AgentCore` (bus, heartbeats, command, checks, hang watch).

`AgentCore` decides (which order to work on, what to report, when to leave) from the spec's
generated actions on its view; this module connects, runs the checks and the user command,
and sends what the core returns. No master within `connect_timeout`: the command runs as a
plain process (RunIndependent) and its exit code is the agent's. An agent the controller
declared lost (missed heartbeats, e.g. it was frozen) is told so when it comes back; it stops
its command and exits `AgentExit.EVICTED`, and the launcher replaces it in place.

A hang (agent/stall.py): while the command runs, a HangWatch polls its progress (progress
file, output, CPU time); no progress for `hang_timeout` s and the agent looks at its ranks,
stops the culprit (stopped, or outside a collective) and reports Error: the job restarts in
place, no node blamed. Ranks waiting in a collective behind a culprit elsewhere are left to
that pod's Error.

The slow-node path (spec agentHang / agentCheckpoint / agentEvict): a failed
allreduce-performance check or `aegis ctl hang` reports Hang (the command keeps running).
Once the controller decided hangWithQuit, every agent reports the newest step all its ranks
saved since (Checkpoint); the report that makes a step every pod saved is the safe point
(docs/checkpoints.md); the marked agent then stops its command and exits 1, so its node is
blacklisted and the pod replaced.

Checkpoints (agent/checkpoint_store.py): the agent owns its ranks' checkpoint versions in
shared memory and says what it holds in every report and heartbeat; a RunCommand order names
the step the ranks restart from (`Order.restore`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from aegis import retry
from aegis.checks.client import DiagnosisClient
from aegis.checks.hangwatch import HangWatch
from aegis.checks.result import (
    BOOTCHECK_CHECKS,
    COLLECTIVE_CHECKS,
    TROUBLESHOOT_CHECKS,
    CheckResult,
    CheckType,
)
from aegis.ops.podctl import pod_socket_path, serve_pod_control
from aegis.protocol.envelope import Message
from aegis.protocol.environment import AgentConfig, Var, user_env
from aegis.protocol.exitcodes import TERMINATED, AgentExit, terminated_by
from aegis.protocol.faults import ProcessFailure
from aegis.protocol.payloads import Order, Report, Sender
from aegis.protocol.subjects import JobSubjects
from aegis.runtime.agent.checkpoint_store import CheckpointStore
from aegis.runtime.agent.command import command_problem, write_termination_message
from aegis.runtime.agent.core import (
    RESTART,
    AgentCore,
    Evict,
    Ignore,
    Leave,
    RoundOutcome,
    Work,
    round_outcome,
)
from aegis.runtime.agent.ctl import AgentCtl
from aegis.runtime.agent.identity import keep_renewed
from aegis.runtime.agent.node_ranks import check_params, local_ranks, rank_file
from aegis.runtime.agent.placement import (
    diagnosis_env,
    local_ranks_of,
    run_independent,
)
from aegis.runtime.agent.ranks import LocalRanks
from aegis.runtime.agent.run_watch import RunWatch
from aegis.runtime.agent.stall import Stall
from aegis.runtime.agent.standby import StandbyPool
from aegis.runtime.agent.waits import JOIN_PATIENCE_S, join_waits, report_waits
from aegis.runtime.control import handle_agent_request
from aegis.runtime.errors import (
    CommandError,
    CredentialsRejected,
    NoReply,
    RunnerError,
    TransportError,
)
from aegis.runtime.lifetime import supervised, watch_parent
from aegis.runtime.transport.bus import Bus
from aegis.runtime.transport.grpc_credentials import IssuedCredentials, request_credentials

log = logging.getLogger(__name__)

BOOTCHECK = tuple(str(c) for c in BOOTCHECK_CHECKS)  # env, collective, allreduce_performance
TROUBLESHOOT = tuple(str(c) for c in TROUBLESHOOT_CHECKS)  # the seven troubleshoot checks
# how long a pod whose stalled ranks died waits before it reports the Error (agent/stall.py)
PEER_GRACE_S = 2.0


class AgentService:
    """One agent process; `await AgentService(cfg).run()` returns the exit code."""

    def __init__(self, cfg: AgentConfig, diag: DiagnosisClient | None = None) -> None:
        self.cfg = cfg
        sender = Sender(cfg.incarnation, cfg.node, cfg.pod_ip, cfg.node_ip)
        self.core = AgentCore(cfg.job, cfg.namespace, cfg.pod, sender)
        self.subjects = JobSubjects(cfg.namespace, cfg.job)
        # this incarnation's own subjects: its credential may publish on these only
        self.report_subject = self.subjects.report(cfg.pod, cfg.incarnation)
        self.join_subject = self.subjects.join(cfg.pod, cfg.incarnation)
        self.heartbeat_subject = self.subjects.heartbeat(cfg.pod, cfg.incarnation)
        self.diag = diag or DiagnosisClient(env=diagnosis_env(cfg), simulate=cfg.simulate)
        self.orders: asyncio.Queue[Message] = asyncio.Queue()
        self.beat_sooner = asyncio.Event()  # set when an order may have shortened the period
        self.stopped = asyncio.Event()
        self.exit_code = 0
        self.bus: Bus | None = None
        self.issued: IssuedCredentials | None = None  # this incarnation's credential
        self.work: asyncio.Task[None] | None = None
        self.ranks: LocalRanks | None = None
        self.nproc = local_ranks_of(cfg)
        self.warm: asyncio.Task[None] | None = None
        self.slow_note = ""  # why this node is slow (its last performance check), if it is
        self.gpu_type = "cpu"  # from the bootcheck's environment check
        # each rank's next attempt, started ahead (--standby): off the crash-to-restart path
        self.standbys = StandbyPool(cfg.preload) if cfg.standby or cfg.preload else None
        first = cfg.rank * self.nproc
        self.store = CheckpointStore(
            cfg.pod,
            range(first, first + self.nproc),
            cfg.world_size * self.nproc,
            checkpoint_dir=cfg.checkpoint_dir,
            every=cfg.checkpoint_every,
            shm_bytes=cfg.checkpoint_shm_bytes,
        )
        self.stall: Stall | None = None  # the hang handling of the running command

    async def run(self) -> int:
        """Connect (or fall back), then serve orders until the job ends or we must exit."""
        problem = command_problem(self.cfg.command, user_env(os.environ))
        if problem is not None:  # the user's error: no retry or node would change it
            print(
                f"aegis: agent {self.cfg.pod}: the command cannot start: {problem} "
                f"(exit {AgentExit.BAD_COMMAND}: the job fails, no node blamed)",
                flush=True,
            )
            write_termination_message(f"the command cannot start: {problem}")
            return AgentExit.BAD_COMMAND
        warm = self.warm = asyncio.create_task(self.diag.start())
        await self.store.start()
        self._stand_by_first()
        try:
            try:
                deadline = asyncio.get_running_loop().time() + self.cfg.connect_timeout
                await asyncio.wait_for(self._connect(), self.cfg.connect_timeout)
                await self._join(deadline)  # a controller that is there may be behind
            except CredentialsRejected as exc:
                # refused, not absent: never run the command alone on that (someone else may
                # hold this incarnation's credential); exit to be replaced by a new one
                warm.cancel()
                self._credential_lost(f"the credential service refused it: {exc}")
                return self.exit_code
            except (TransportError, TimeoutError, OSError) as exc:
                log.warning("agent %s: cannot reach the controller: %s", self.cfg.pod, exc)
                warm.cancel()
                if self.cfg.fallback == "fail":
                    print(
                        f"aegis: agent {self.cfg.pod}: no controller within "
                        f"{self.cfg.connect_timeout:g} s ({exc or 'timed out'}); not running the "
                        f"command alone (fallback fail): exit {AgentExit.NO_CONTROLLER}",
                        flush=True,
                    )
                    return AgentExit.NO_CONTROLLER
                if self.standbys is not None:  # the command runs alone, cold
                    await self.standbys.close()
                return await run_independent(self.cfg)
            beat = supervised(self._heartbeat(), "heartbeat", self._background_failed)
            renew = supervised(self._keep_renewed(), "renewal", self._background_failed)
            try:
                await self._serve()
            finally:
                beat.cancel()
                renew.cancel()
            return self.exit_code
        finally:
            await self._stop_work()
            await self.store.close()
            if self.standbys is not None:
                await self.standbys.close()
            warm.cancel()
            with contextlib.suppress(Exception):
                await self.diag.close()
            if self.bus is not None:
                await self.bus.close()

    def stop(self, code: int) -> None:
        """Leave the job with `code` (signal, final order, or Level 3 exit)."""
        self.exit_code = code
        self.stopped.set()

    def _background_failed(self, exc: BaseException) -> None:
        print(f"aegis: agent {self.cfg.pod}: internal failure {exc!r}: exit", flush=True)
        self.stop(AgentExit.EVICTED)  # replaced in place: not a node fault

    async def _keep_renewed(self) -> None:
        assert self.bus is not None and self.issued is not None
        ca = self.cfg.ca.encode("ascii") if self.cfg.ca else None
        await keep_renewed(
            self.cfg.grpc_target, self.issued, self.bus, self._credential_lost, ca_pem=ca
        )

    def _credential_lost(self, why: str) -> None:
        print(f"aegis: agent {self.cfg.pod}: {why}; exit {AgentExit.EVICTED}", flush=True)
        self.stop(AgentExit.EVICTED)  # replaced in place by its launcher, if it is not already

    async def _connect(self) -> None:
        cfg = self.cfg
        issued = self.issued = await request_credentials(
            cfg.grpc_target,
            namespace=cfg.namespace,
            job=cfg.job,
            pod_name=cfg.pod,
            proof=cfg.token,
            incarnation=cfg.incarnation,
            policy=retry.AGENT_CREDENTIALS,
            timeout=2.0,
            ca_pem=cfg.ca.encode("ascii") if cfg.ca else None,
        )
        # the proof is spent: gone from this process's environment (a child never saw it)
        os.environ.pop(Var.BOOTSTRAP_TOKEN, None)
        # the credential allows this incarnation's own subjects only: its joins, reports and
        # heartbeats, the orders, ctl requests to its pod and its own reply inbox
        self.bus = await Bus.connect(
            issued.nats_url,
            issued.credentials,
            name=cfg.pod,
            reconnect_attempts=-1,
            inbox_prefix=self.subjects.inbox_prefix(cfg.pod),
            tls_ca=cfg.ca or None,
        )
        await self.bus.subscribe(self.subjects.master, self._heard)
        # an order the agent missed, sent again when its heartbeat shows it (OrderVersions)
        await self.bus.subscribe(self.subjects.order_inbox(cfg.pod), self._heard)
        await self.bus.subscribe(
            self.subjects.ctl_agent(cfg.pod), lambda m: handle_agent_request(AgentCtl(self), m)
        )
        # `kubectl exec POD -- aegis ctl hang|check|burn`: the same handler, on a pod-local
        # socket (aegis.ops.podctl); never a way to stop the job or reach another pod
        self.pod_ctl = await serve_pod_control(
            pod_socket_path(cfg.progress_dir, cfg.pod),
            lambda m: handle_agent_request(AgentCtl(self), m),
        )

    async def _join(self, deadline: float) -> None:
        """ACK until the controller answers: one ACK, sent again with one reply subject
        (its copies are handled once). While nobody is subscribed to receive it, the connect
        timeout's `deadline` (loop time) holds (TransportError past it); a controller that
        got it but is behind on its queue (12,500 pods joining at once take it tens of
        seconds) is waited for, up to JOIN_PATIENCE_S, not taken for absent, which would
        run the command alone; each series of copies it missed restarts the deadline."""
        assert self.bus is not None
        loop = asyncio.get_running_loop()
        patience = loop.time() + max(self.cfg.connect_timeout, JOIN_PATIENCE_S)
        while True:
            try:
                reply = await self.bus.request_patiently(
                    self.join_subject, self.core.ack(), join_waits()
                )
                break
            except NoReply as exc:  # no reply to any copy, none refused: it is there, behind
                if loop.time() > patience:
                    raise TransportError(f"the controller did not answer: {exc}") from None
                deadline = loop.time() + self.cfg.connect_timeout
            except TransportError as exc:  # nobody subscribed (yet, or any more), or no bus
                if loop.time() > deadline:
                    raise TransportError(f"no controller to join: {exc}") from None
                await asyncio.sleep(0.1)
        await self._heard(reply)

    async def _heard(self, msg: Message) -> None:
        """An order (or the reply to an ACK) arrived: queue it."""
        await self.orders.put(msg)

    async def _serve(self) -> None:
        while not self.stopped.is_set():
            get = asyncio.create_task(self.orders.get())
            stop = asyncio.create_task(self.stopped.wait())
            done, _ = await asyncio.wait({get, stop}, return_when=asyncio.FIRST_COMPLETED)
            stop.cancel()
            if get not in done:
                get.cancel()
                return
            await self._take(get.result())

    async def _take(self, msg: Message) -> None:
        working = self.work is not None and not self.work.done()
        period = self.core.heartbeat_period(self.cfg.heartbeat_s)
        decision = self.core.on_order(msg, working=working)
        if self.core.heartbeat_period(self.cfg.heartbeat_s) < period:
            self.beat_sooner.set()
        if isinstance(decision, Ignore):
            log.debug("agent %s: order %d ignored: %s", self.cfg.pod, msg.seq, decision.why)
        elif isinstance(decision, Leave):
            self._leave(decision)
        elif isinstance(decision, Evict):
            await self._evict()
        elif isinstance(decision, Work):
            await self._stop_work()
            self.work = supervised(
                self._work(decision.seq, decision.order), "work", self._background_failed
            )

    def _leave(self, leave: Leave) -> None:
        if leave.code != AgentExit.LEFT:
            print(f"aegis: agent {self.cfg.pod}: {leave.why}; exit {leave.code}", flush=True)
        self.stop(leave.code)

    async def _work(self, seq: int, order: Order) -> None:
        phase = order.spec_phase
        try:
            done = await self._perform(seq, order)
        finally:
            await self._stop_runner()
        if done.outcome == RESTART:
            print(
                f"aegis: agent {self.cfg.pod}: {done.reason}: restart the container (Level 2), "
                f"exit {AgentExit.RESTART_CONTAINER}",
                flush=True,
            )
            self.stop(AgentExit.RESTART_CONTAINER)
            return
        report = Report(
            self.core.sender,
            reason=done.reason,
            checks=tuple(r.to_dict() for r in done.results),
            round_seconds=done.seconds,
            gpu_type=self.gpu_type if done.results else None,
            checkpoint=self.store.info(),
            failure=done.failure,
            user_error=done.out.user_error,
        )
        msg = self.core.finish_work(seq, phase, done.outcome, report)
        if msg is None:
            return
        await self.send_report(msg)
        if self.core.exited:
            print(f"aegis: agent {self.cfg.pod}: {done.reason}: exit 1 (node fault)", flush=True)
            self.stop(AgentExit.NODE_FAULT)

    async def _perform(self, seq: int, order: Order) -> _Done:
        phase = order.spec_phase
        if phase == "RunCommand":
            return await self._run_command(order)
        checks: tuple[str, ...] = BOOTCHECK if phase == "BootChecking" else TROUBLESHOOT
        if phase == "Troubleshooting":  # a failure: what the ranks hold goes to disk too
            self.store.persist_breakpoint()
        if self.core.peers_finished():
            # a replacement joining a round its peers have already finished: nobody is left
            # to meet in a collective check, so run only the local ones
            checks = tuple(c for c in checks if c not in COLLECTIVE_CHECKS)
            log.info("agent %s: peers finished this round; local checks only", self.cfg.pod)
        if self.warm is not None:  # the worker imports torch once, at agent start
            with contextlib.suppress(Exception):
                await asyncio.shield(self.warm)
        started = time.monotonic()
        results = await self.diag.run(
            checks, f"{self.cfg.job}-{seq}", check_params(self.cfg, order)
        )
        seconds = round(time.monotonic() - started, 6)
        self._note_gpu(results)
        out = round_outcome(phase, results, self.cfg.container_restarts)
        self.slow_note = out.slow_note
        log.info("agent %s: %s checks: %s", self.cfg.pod, phase, out.reason)
        return _Done(out, tuple(results), seconds)

    def _note_gpu(self, results: Sequence[CheckResult]) -> None:
        for r in results:
            names = r.details.get("device_names") if r.check_type == CheckType.ENV else None
            if isinstance(names, list):
                self.gpu_type = str(names[0]) if names else "cpu"

    async def _run_command(self, order: Order) -> _Done:
        point = order.restore
        self.store.restore_from(None if point is None else (point.step, point.source))
        if point is not None and point.source == "memory":
            self.store.persist_breakpoint(point.step)
        ranks = self.ranks = self._local_ranks(order, await self._host_store(order))
        self.stall = Stall(self.cfg.hang_timeout)
        try:
            await ranks.start(retry=order.retry)
        except CommandError as exc:  # the user's: the controller ends the job, no retry
            print(f"aegis: agent {self.cfg.pod}: {exc}", flush=True)
            return _Done(RoundOutcome("Error", str(exc), user_error=True))
        except RunnerError as exc:  # the node's (out of memory, of file descriptors)
            return _Done(RoundOutcome("Error", str(exc)))
        watches = [
            HangWatch(
                self.cfg.hang_timeout if self.cfg.hang_timeout > 0 else float("inf"),
                progress_file=str(self._progress_file(lr)),
                pgid=runner.pid,
                last_output=lambda runner=runner: runner.last_output,  # type: ignore[misc]
                # the marker file is one per pod: watched once
                checkpoint_file=(self.cfg.checkpoint_file or None) if lr == 0 else None,
            )
            for lr, runner in enumerate(ranks.runners)
        ]
        watcher = supervised(RunWatch(self, watches).run(), "hang watch", self._background_failed)
        try:
            failure = await ranks.wait()
        finally:
            watcher.cancel()
        await self.store.quiet()  # what the ranks sent before they ended is in the report
        if failure is None:
            return _Done(RoundOutcome("Finish", "exit 0"))
        if self.stall.reason:  # the culprit this agent stopped: the rank that failed first
            return _Done(
                RoundOutcome("Error", self.stall.reason), failure=failure.process_failure()
            )
        if self.cfg.hang_timeout > 0 and min(w.age_s() for w in watches) >= self.cfg.hang_timeout:
            # stalled ranks that died: most likely behind a culprit another pod just stopped;
            # its Error goes first (this work is cancelled by the order it brings)
            await asyncio.sleep(PEER_GRACE_S)
        if failure.user_error:
            print(f"aegis: agent {self.cfg.pod}: {failure.describe()}", flush=True)
        out = RoundOutcome("Error", failure.describe(), user_error=failure.user_error)
        return _Done(out, failure=failure.process_failure())

    async def _host_store(self, order: Order) -> bool:
        """Whether the ranks find their rendezvous store already up (TORCHELASTIC_USE_AGENT_
        STORE): node 0 has its warm diagnosis worker host it on the order's MASTER_PORT before
        the ranks start, as torchrun's agent does. Rank 0 hosting it itself (the fallback
        when the worker cannot) costs the other ranks TCPStore's connect backoff, up to about
        a second, whenever they import torch faster than rank 0. The ranks of other nodes
        are clients of the store either way."""
        if self.cfg.rank != 0:
            return True
        world = self.cfg.world_size * self.nproc
        # the server listens on every interface; its own client needs no name resolved
        why = await self.diag.host_store("127.0.0.1", order.master_port, world)
        if why is not None:
            log.info("agent %s: rank 0 hosts the rendezvous store: %s", self.cfg.pod, why)
        return why is None

    def _stand_by_first(self) -> None:
        """With --standby/--preload: start each rank's first attempt ahead, now, so that its
        interpreter and preloads start while the agent joins and checks the node (preloading
        on CPU time those leave). Its environment is the first attempt's as far as it is
        known before the order: what the order sets is in the standby's LATE_VARS, and a
        standby that does not fit is a cold start."""
        if self.standbys is None:
            return
        for lr, runner in enumerate(self._local_ranks(None).runners):
            self.standbys.refill(lr, runner.argv, runner.environment(), runner.cwd, delay=0.0)

    def _local_ranks(self, order: Order | None, agent_store: bool = False) -> LocalRanks:
        return local_ranks(self.cfg, self.nproc, order, self.store, self.standbys, agent_store)

    def _progress_file(self, local_rank: int) -> Path:
        return rank_file(self.cfg, "progress", local_rank)

    def stack_file(self, local_rank: int) -> Path:
        """Where local rank `local_rank` dumps its stacks (aegis.checks.stackdump)."""
        return rank_file(self.cfg, "stack", local_rank)

    async def report_hang(self, reason: str) -> bool:
        """Report Hang (agentHang) for the running command; False when the spec says no."""
        msg = self.core.hang(reason)
        if msg is None:
            log.info("agent %s: not reporting hang (%s): not enabled", self.cfg.pod, reason)
            return False
        print(f"aegis: agent {self.cfg.pod}: {reason}: marked slow, not killed", flush=True)
        await self.send_report(msg)
        return True

    async def _evict(self) -> None:
        """agentEvict: the checkpoint is safe; report, stop the command, exit 1 (replace me)."""
        msg = self.core.evict()
        if msg is None:
            return
        # report first: once the controller has applied the eviction (phase Restarting), the
        # peers' errors caused by this rank leaving are not counted as new failures
        await self.send_report(msg)
        await self._stop_work()
        print(
            f"aegis: agent {self.cfg.pod}: slow node evicted at the checkpoint: exit 1",
            flush=True,
        )
        self.stop(AgentExit.NODE_FAULT)

    async def send_report(self, report: Message) -> None:
        assert self.bus is not None
        while not self.stopped.is_set():
            try:
                reply = await self.bus.request_patiently(
                    self.report_subject, report, report_waits()
                )
            except TransportError:
                await asyncio.sleep(0.2)
                continue
            leave = self.core.on_receipt(reply)
            if leave is not None:
                self._leave(leave)
            return

    # ---------------- operator control (`aegis ctl`) ----------------

    async def _heartbeat(self) -> None:
        """Beat every `heartbeat_period` from the last beat. An order that shortens the period
        (a controller restarted with a larger heartbeat budget: its silence timeout is
        shorter too) wakes the wait: sleeping out a period of up to 60 s asked for by the
        controller before would have the pod declared lost."""
        loop = asyncio.get_running_loop()
        last = loop.time()
        while True:
            wait = last + self.core.heartbeat_period(self.cfg.heartbeat_s) - loop.time()
            if wait > 0:
                self.beat_sooner.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.beat_sooner.wait(), wait)
                continue  # the period again: it may be shorter now
            last = loop.time()
            if self.bus is not None and self.bus.connected:
                with contextlib.suppress(TransportError):
                    await self.bus.publish(
                        self.heartbeat_subject, self.core.heartbeat(self.store.info())
                    )

    async def _stop_work(self) -> None:
        task, self.work = self.work, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self._stop_runner()

    async def _stop_runner(self) -> None:
        ranks, self.ranks = self.ranks, None
        if ranks is not None:
            await ranks.stop(5.0)


@dataclass(frozen=True)
class _Done:
    """What a piece of work ended with: the round's outcome and, for checks, its results."""

    out: RoundOutcome
    results: tuple[CheckResult, ...] = ()
    seconds: float | None = None
    failure: ProcessFailure | None = None  # the command's rank that failed, if one did

    @property
    def outcome(self) -> str:
        """ "Finish", "Error" or RESTART."""
        return self.out.outcome

    @property
    def reason(self) -> str:
        """Why (the first failed checks, or the command's exit)."""
        return self.out.reason


async def agent_main(cfg: AgentConfig) -> int:
    """The `aegis agent` process body: signals stop the agent and its command."""
    agent = AgentService(cfg)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, agent.stop, terminated_by(sig))
    orphan = asyncio.create_task(watch_parent(lambda: agent.stop(TERMINATED)))
    try:
        return await agent.run()
    except Exception as exc:  # a bug of ours is not the node's fault: Python's exit 1 would be
        log.error("agent %s failed", cfg.pod, exc_info=exc)
        print(
            f"aegis: agent {cfg.pod}: internal error {exc!r}: exit {AgentExit.INTERNAL}",
            flush=True,
        )
        return AgentExit.INTERNAL
    finally:
        orphan.cancel()
