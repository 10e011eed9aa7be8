"""The agent: joins the job, works on each new order, reports exactly what the spec says.

It keeps the last spec state the controller published, overlaid with its own agentSeq and
agentState, and reports only when the generated `agentWork` is enabled for itself there;
the report is the message of that successor. No master within `connect_timeout`: the command
runs as a plain process (RunIndependent) and its exit code is the agent's. An agent the
controller declared lost (missed heartbeats, e.g. it was frozen) is told so when it comes
back; it stops its command and exits EVICTED_EXIT, and the launcher replaces it in place.

The slow-node path (spec agentHang / agentCheckpoint / agentEvict): while the command runs, a
HangWatch polls its progress (progress file, output, CPU time); no progress for
`hang_timeout` s, a failed allreduce-performance check, or `aegis ctl hang` reports Hang (the
command keeps running). Once the controller decided hangWithQuit, the agent of the rank that
completes a checkpoint reports it; the marked agent then stops its command and exits 1, so
its node is blacklisted and the pod replaced.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aegis.checks.client import DiagnosisClient
from aegis.checks.hangwatch import HangWatch
from aegis.checks.params import DEFAULT_HANG_TIMEOUT_S
from aegis.checks.progress import CHECKPOINT_FILE_ENV, PROGRESS_FILE_ENV
from aegis.checks.recovery import Action, decide
from aegis.checks.result import (
    BOOTCHECK_CHECKS,
    COLLECTIVE_CHECKS,
    TROUBLESHOOT_CHECKS,
    CheckResult,
    CheckType,
)
from aegis.generated.aegis_phase import State
from aegis.runtime.codec import decode_state
from aegis.runtime.control import CTL_CHECKS, handle_agent_request
from aegis.runtime.controller import EVICTED, ORDER_PHASES
from aegis.runtime.engine import Engine, runtime_constants
from aegis.runtime.errors import AegisError, TransportError
from aegis.runtime.messages import Message, MessagePhase, MessageType
from aegis.runtime.runner import RankEnv, Runner
from aegis.runtime.transport.bus import Bus
from aegis.runtime.transport.grpc_credentials import request_credentials
from aegis.runtime.transport.subjects import JobSubjects
from aegis.values import ModelValue, apply, except_

log = logging.getLogger(__name__)

BOOTCHECK = tuple(str(c) for c in BOOTCHECK_CHECKS)  # env, collective, allreduce_performance
TROUBLESHOOT = tuple(str(c) for c in TROUBLESHOOT_CHECKS)  # the seven checks of design §6
RESTART = "Restart"  # _perform's outcome for Level 2: no report, the container restarts
LOCAL_CHECKS = CTL_CHECKS  # `aegis ctl check`: io, runtime, gpu, rdma (no peers needed)
_SECRET_ENV = ("AEGIS_BOOTSTRAP_TOKEN",)
EVICTED_EXIT = 75  # declared lost by the controller: replace me (not a node fault: not 1)
RESTART_CONTAINER_EXIT = 76  # Level 2: restart my container in place (the node's hardware is fine)
MAX_CONTAINER_RESTARTS = 2  # Level 2 tries per pod and node before it escalates to Level 3


@dataclass(frozen=True)
class AgentConfig:
    """Everything an agent needs (the launcher or the pod spec sets AEGIS_* variables)."""

    job: str
    namespace: str
    pod: str
    rank: int
    world_size: int
    command: tuple[str, ...]
    grpc_target: str = ""
    token: str = field(default="", repr=False)
    incarnation: str = ""
    node: str = ""
    connect_timeout: float = 10.0
    heartbeat_s: float = 5.0
    master_addr: str = "127.0.0.1"
    master_port: int = 29500
    simulate: tuple[str, ...] = ()
    check_budget_s: float = 60.0
    hang_timeout: float = DEFAULT_HANG_TIMEOUT_S  # <= 0: no hang detection
    pod_ip: str = ""
    node_ip: str = ""
    progress_dir: str = ""  # where the command's progress file goes (default: tmp)
    checkpoint_file: str = ""  # a marker file whose change means "checkpoint done"
    container_restarts: int = 0  # Level 2 restarts of this pod on this node so far

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> AgentConfig:
        """Read the AEGIS_* variables (AegisError naming a missing one)."""
        try:
            return cls(
                job=env["AEGIS_JOB"],
                namespace=env.get("AEGIS_NAMESPACE", "default"),
                pod=env["AEGIS_POD"],
                rank=int(env["AEGIS_RANK"]),
                world_size=int(env["AEGIS_WORLD_SIZE"]),
                command=tuple(json.loads(env["AEGIS_COMMAND"])),
                grpc_target=env.get("AEGIS_GRPC", ""),
                token=env.get("AEGIS_BOOTSTRAP_TOKEN", ""),
                incarnation=env.get("AEGIS_INCARNATION") or os.urandom(8).hex(),
                node=env.get("AEGIS_NODE", ""),
                connect_timeout=float(env.get("AEGIS_CONNECT_TIMEOUT", "10")),
                heartbeat_s=float(env.get("AEGIS_HEARTBEAT_S", "5")),
                master_addr=env.get("AEGIS_MASTER_ADDR", "127.0.0.1"),
                master_port=int(env.get("AEGIS_MASTER_PORT", "29500")),
                simulate=tuple(s for s in env.get("AEGIS_SIMULATE", "").split(",") if s),
                hang_timeout=float(env.get("AEGIS_HANG_TIMEOUT", str(DEFAULT_HANG_TIMEOUT_S))),
                pod_ip=env.get("AEGIS_POD_IP", ""),
                node_ip=env.get("AEGIS_NODE_IP", ""),
                progress_dir=env.get("AEGIS_PROGRESS_DIR", ""),
                checkpoint_file=env.get(CHECKPOINT_FILE_ENV, ""),
                container_restarts=int(env.get("AEGIS_CONTAINER_RESTARTS", "0")),
            )
        except (KeyError, ValueError) as exc:
            raise AegisError(f"agent configuration incomplete or invalid: {exc!r}") from None

    def user_env(self) -> dict[str, str]:
        """The environment of the user command (no bootstrap token)."""
        return {k: v for k, v in os.environ.items() if k not in _SECRET_ENV}


async def run_independent(cfg: AgentConfig) -> int:
    """RunIndependent: the command as a plain process; its exit code (128+N for signal N)."""
    print(f"aegis: agent {cfg.pod}: no controller, running the command independently", flush=True)
    env = RankEnv(
        cfg.rank,
        cfg.world_size,
        master_addr=cfg.master_addr,
        master_port=cfg.master_port,
        run_id=cfg.job,
        job=cfg.job,
        pod=cfg.pod,
    )
    runner = Runner(cfg.command, env, env=cfg.user_env())
    await runner.start()
    try:
        code = await runner.wait()
    finally:
        if runner.running:
            await runner.stop(5.0)
    return code if code >= 0 else 128 - code


class Agent:
    """One agent process's logic; `await Agent(cfg).run()` returns the exit code."""

    def __init__(self, cfg: AgentConfig, diag: DiagnosisClient | None = None) -> None:
        self.cfg = cfg
        self.me = ModelValue(cfg.pod)
        self.subjects = JobSubjects(cfg.namespace, cfg.job)
        self.diag = diag or DiagnosisClient(simulate=cfg.simulate)
        self.orders: asyncio.Queue[Message] = asyncio.Queue()
        self.stopped = asyncio.Event()
        self.exit_code = 0
        self.bus: Bus | None = None
        self.view: Engine | None = None
        self.agent_seq = 0
        self.work: asyncio.Task[None] | None = None
        self.work_seq = -1  # the order `work` is working on
        self.runner: Runner | None = None
        self.warm: asyncio.Task[None] | None = None
        self.slow_note = ""  # why this node is slow (its last performance check), if it is
        self.gpu_type = "cpu"  # from the bootcheck's environment check
        self.mark_reason = ""  # why this agent reported Hang last

    async def run(self) -> int:
        """Connect (or fall back), then serve orders until the job ends or we must exit."""
        warm = self.warm = asyncio.create_task(self.diag.start())
        try:
            try:
                await asyncio.wait_for(self._connect(), self.cfg.connect_timeout)
            except (TransportError, TimeoutError, OSError) as exc:
                log.warning("agent %s: cannot reach the controller: %s", self.cfg.pod, exc)
                warm.cancel()
                return await run_independent(self.cfg)
            beat = asyncio.create_task(self._heartbeat())
            try:
                await self._serve()
            finally:
                beat.cancel()
            return self.exit_code
        finally:
            await self._stop_work()
            warm.cancel()
            with contextlib.suppress(Exception):
                await self.diag.close()
            if self.bus is not None:
                await self.bus.close()

    def stop(self, code: int) -> None:
        """Leave the job with `code` (signal, final order, or Level 3 exit)."""
        self.exit_code = code
        self.stopped.set()

    async def _connect(self) -> None:
        cfg = self.cfg
        issued = await request_credentials(
            cfg.grpc_target,
            namespace=cfg.namespace,
            job=cfg.job,
            pod_name=cfg.pod,
            bootstrap_token=cfg.token,
            attempts=1000,
            timeout=2.0,
            backoff=0.1,
        )
        self.bus = await Bus.connect(
            issued.nats_url, issued.credentials, name=cfg.pod, reconnect_attempts=-1
        )
        await self.bus.subscribe(self.subjects.master, self._on_order)
        await self._serve_control()
        ack = self._message(MessageType.ACK, MessagePhase.BOOTCHECK, self.agent_seq, {})
        while True:
            try:
                reply = await self.bus.request(self.subjects.worker, ack, timeout=1.0)
                break
            except TransportError:
                await asyncio.sleep(0.1)
        await self.orders.put(reply)

    async def _on_order(self, msg: Message) -> None:
        if msg.type is MessageType.ORDER and msg.pod_name in ("master", self.cfg.pod):
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
        data = msg.data
        if EVICTED in data:
            if data[EVICTED] == self.cfg.incarnation:
                self._evicted()
            return
        if data.get("final"):
            self.stop(0)
            return
        if self.view is not None and msg.seq <= self.agent_seq:
            return
        if msg.seq < self.work_seq:
            return  # an older order
        if msg.seq == self.work_seq and self.work is not None and not self.work.done():
            # the same order with a newer state (slow marks, an eviction, a checkpoint)
            self._update_view(data)
            if self.view is not None and self.view.enabled("agentEvict", w=self.me):
                await self._evict()
            return
        self._update_view(data)
        assert self.view is not None
        if not self.view.enabled("agentWork", w=self.me):
            return
        await self._stop_work()
        self.work_seq = msg.seq
        self.work = asyncio.create_task(self._work(msg.seq, str(data["specPhase"]), data))
        self.work.add_done_callback(self._work_done)

    def _update_view(self, data: Mapping[str, Any]) -> None:
        state = decode_state(data["state"])
        self.view = Engine(
            runtime_constants(data["world"], int(data["maxRetry"])),
            self._overlay(state),
            check_invariants=False,
        )

    def _work_done(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.error("agent %s: work failed", self.cfg.pod, exc_info=task.exception())

    def _overlay(self, s: State) -> State:
        seq = except_(s.agentSeq, (self.me,), lambda _: self.agent_seq)
        st = except_(s.agentState, (self.me,), lambda _: "Ready")
        return State.from_dict({**s.as_dict(), "agentSeq": seq, "agentState": st})

    async def _work(self, seq: int, phase: str, data: Mapping[str, Any]) -> None:
        extra: dict[str, Any] = {}
        try:
            outcome, reason = await self._perform(seq, phase, data, extra)
        finally:
            await self._stop_runner()
        if outcome == RESTART:
            print(
                f"aegis: agent {self.cfg.pod}: {reason}: restart the container (Level 2), "
                f"exit {RESTART_CONTAINER_EXIT}",
                flush=True,
            )
            self.stop(RESTART_CONTAINER_EXIT)
            return
        assert self.view is not None
        step = self.view.observe("agentWork", w=self.me, outcome=outcome)
        if not step.applied:
            log.warning(
                "agent %s: agentWork(%s) not enabled in order %d", self.cfg.pod, outcome, seq
            )
            return
        self.agent_seq = int(apply(step.state.agentSeq, self.me))
        report = self._message(
            MessageType(outcome), ORDER_PHASES[phase], self.agent_seq, {"reason": reason, **extra}
        )
        await self._send_report(report)
        if apply(step.state.agentState, self.me) == "Exited":
            print(f"aegis: agent {self.cfg.pod}: {reason}: exit 1 (node fault)", flush=True)
            self.stop(1)

    async def _perform(
        self, seq: int, phase: str, data: Mapping[str, Any], extra: dict[str, Any]
    ) -> tuple[str, str]:
        if phase == "RunCommand":
            return await self._run_command(data)
        checks: tuple[str, ...] = BOOTCHECK if phase == "BootChecking" else TROUBLESHOOT
        if self._peers_finished():
            # a replacement joining a round its peers have already finished: nobody is left
            # to meet in a collective check, so run only the local ones
            checks = tuple(c for c in checks if c not in COLLECTIVE_CHECKS)
            log.info("agent %s: peers finished this round; local checks only", self.cfg.pod)
        if self.warm is not None:  # the worker imports torch once, at agent start
            with contextlib.suppress(Exception):
                await asyncio.shield(self.warm)
        started = time.monotonic()
        results = await self.diag.run(checks, f"{self.cfg.job}-{seq}", self._params(data))
        extra.update(self._round_data(results, time.monotonic() - started))
        decision = decide(phase, "checks_done", results)
        log.info("agent %s: %s checks: %s", self.cfg.pod, phase, _failures(results))
        slow = [r for r in results if r.failed and r.check_type == CheckType.ALLREDUCE_PERFORMANCE]
        self.slow_note = f"allreduce performance: {slow[0].result}" if slow else ""
        if decision.action is Action.ISOLATE_NODE:
            return "Error", f"{phase}: {decision.reason} ({_failures(results)})"
        if decision.action is Action.RESTART_CONTAINER:
            if self.cfg.container_restarts < MAX_CONTAINER_RESTARTS:
                return RESTART, f"{phase}: {decision.reason}"
            # Level 2 did not help: the node is unusable for this pod after all (Level 3)
            return "Error", (
                f"{phase}: {decision.reason}; still failing after "
                f"{self.cfg.container_restarts} container restarts ({_failures(results)})"
            )
        return "Finish", decision.reason

    def _round_data(self, results: Sequence[CheckResult], seconds: float) -> dict[str, Any]:
        """What a check round's report carries for the controller's metrics."""
        for r in results:
            names = r.details.get("device_names") if r.check_type == CheckType.ENV else None
            if isinstance(names, list):
                self.gpu_type = str(names[0]) if names else "cpu"
        return {
            "checks": [r.to_dict() for r in results],
            "roundSeconds": round(seconds, 6),
            "gpuType": self.gpu_type,
        }

    def _peers_finished(self) -> bool:
        """Whether another worker already finished the current order (order's state)."""
        if self.view is None:
            return False
        s = self.view.state
        return any(bool(apply(s.finished, w)) for w in self.view.constants.Workers if w != self.me)

    async def _run_command(self, data: Mapping[str, Any]) -> tuple[str, str]:
        env = RankEnv(
            self.cfg.rank,
            self.cfg.world_size,
            master_addr=str(data["masterAddr"]),
            master_port=int(data["masterPort"]),
            run_id=self.cfg.job,
            job=self.cfg.job,
            pod=self.cfg.pod,
            max_restarts=int(data["maxRetry"]),
        )
        progress = self._progress_file()
        with contextlib.suppress(OSError):
            progress.unlink()
        user_env = {**self.cfg.user_env(), PROGRESS_FILE_ENV: str(progress)}
        if self.cfg.checkpoint_file:
            user_env[CHECKPOINT_FILE_ENV] = self.cfg.checkpoint_file
        runner = self.runner = Runner(self.cfg.command, env, env=user_env)
        runner.restart_count = int(data["retry"])
        await runner.start(retry=int(data["retry"]))
        watch = HangWatch(
            self.cfg.hang_timeout if self.cfg.hang_timeout > 0 else float("inf"),
            progress_file=str(progress),
            pgid=runner.pid,
            last_output=lambda: runner.last_output,
            checkpoint_file=self.cfg.checkpoint_file or None,
        )
        watcher = asyncio.create_task(self._watch(watch))
        try:
            code = await runner.wait()
        finally:
            watcher.cancel()
        return ("Finish", "exit 0") if code == 0 else ("Error", f"command exited {code}")

    def _progress_file(self) -> Path:
        base = Path(self.cfg.progress_dir or tempfile.gettempdir())
        return base / f"aegis-progress-{self.cfg.job}-{self.cfg.pod}-{self.cfg.incarnation}.json"

    async def _watch(self, watch: HangWatch) -> None:
        """While the command runs: report a known slowness, hangs and completed checkpoints."""
        timeout = self.cfg.hang_timeout
        period = watch.poll_interval_s  # min(1 s, timeout / 4): a stall is seen in timeout + 1 s
        if self.slow_note:
            await self.report_hang(self.slow_note)
        while True:
            await asyncio.sleep(period)
            step = watch.new_checkpoint()
            if step is not None:
                await self._report_checkpoint(step)
            verdict = watch.poll() if timeout > 0 else None
            if verdict is not None:
                await self.report_hang(
                    f"hang: no progress for {verdict.age_s:.1f} s ({verdict.detail})"
                )

    async def report_hang(self, reason: str) -> bool:
        """Report Hang (agentHang) for the running command; False when the spec says no."""
        view = self.view
        if view is None or not view.enabled("agentHang", w=self.me):
            log.info(
                "agent %s: not reporting hang (%s): agentHang not enabled", self.cfg.pod, reason
            )
            return False
        view.observe("agentHang", w=self.me)
        print(f"aegis: agent {self.cfg.pod}: {reason}: marked slow, not killed", flush=True)
        self.mark_reason = reason
        seq = int(view.state.masterSeq)
        await self._send_report(
            self._message(MessageType.HANG, MessagePhase.COMMAND, seq, {"reason": reason})
        )
        return True

    async def _report_checkpoint(self, step: int) -> None:
        view = self.view
        if view is None or not view.enabled("agentCheckpoint", w=self.me):
            log.debug("agent %s: checkpoint %d, no eviction waits for it", self.cfg.pod, step)
            return
        view.observe("agentCheckpoint", w=self.me)
        seq = int(view.state.masterSeq)
        await self._send_report(
            self._message(MessageType.CHECKPOINT, MessagePhase.COMMAND, seq, {"step": step})
        )

    async def _evict(self) -> None:
        """agentEvict: the checkpoint is safe; stop the command, report, exit 1 (replace me)."""
        assert self.view is not None
        step = self.view.observe("agentEvict", w=self.me)
        if not step.applied:
            return
        seq = int(self.view.state.masterSeq)
        reason = self.mark_reason or "marked slow"
        self.agent_seq = seq
        # report first: once the controller has applied the eviction (phase Restarting), the
        # peers' errors caused by this rank leaving are not counted as new failures
        await self._send_report(
            self._message(MessageType.EVICTED, MessagePhase.COMMAND, seq, {"reason": reason})
        )
        await self._stop_work()
        print(
            f"aegis: agent {self.cfg.pod}: slow node evicted at the checkpoint: exit 1",
            flush=True,
        )
        self.stop(1)

    def _params(self, data: Mapping[str, Any]) -> dict[str, Any]:
        b = self.cfg.check_budget_s
        return {
            "rendezvous": {
                "host": str(data["masterAddr"]),
                "port": int(data["checkPort"]),
                "rank": self.cfg.rank,
                "world_size": self.cfg.world_size,
                "backend": "gloo",
            },
            "budgets": {
                "collective": b,
                "allreduce_connection": b,
                "allreduce_performance": b,
                "env": b,
                "io": b,
            },
            "simulate": list(self.cfg.simulate),
        }

    async def _send_report(self, report: Message) -> None:
        assert self.bus is not None
        while not self.stopped.is_set():
            try:
                reply = await self.bus.request(self.subjects.worker, report, timeout=2.0)
            except TransportError:
                await asyncio.sleep(0.2)
                continue
            if reply.data.get("result") == EVICTED:
                self._evicted()
            return

    def _evicted(self) -> None:
        print(
            f"aegis: agent {self.cfg.pod}: the controller declared this incarnation lost "
            f"(missed heartbeats); exit {EVICTED_EXIT} to be replaced",
            flush=True,
        )
        self.stop(EVICTED_EXIT)

    # ---------------- operator control (`aegis ctl`) ----------------

    async def _serve_control(self) -> None:
        """Answer `aegis ctl` requests addressed to this pod (hang, check, burn)."""
        assert self.bus is not None
        await self.bus.subscribe(
            self.subjects.ctl_agent(self.cfg.pod), lambda m: handle_agent_request(self, m)
        )

    async def ctl_hang(self, reason: str) -> dict[str, Any]:
        """`aegis ctl hang`: mark this pod slow/hung (report Hang); nothing is killed."""
        running = self.runner is not None and self.runner.running
        if not running:
            return {"marked": False, "detail": "no training command is running"}
        marked = await self.report_hang(f"operator: {reason}" if reason else "operator")
        detail = "reported Hang" if marked else "agentHang not enabled (already marked?)"
        return {"marked": marked, "detail": detail}

    async def ctl_check(self, checks: Sequence[str]) -> list[dict[str, Any]]:
        """`aegis ctl check`: run local checks now, out of band (no peers needed)."""
        names = tuple(checks) or LOCAL_CHECKS
        bad = [c for c in names if c not in LOCAL_CHECKS]
        if bad:
            raise ValueError(f"not a local check: {', '.join(bad)}; use {', '.join(LOCAL_CHECKS)}")
        params = {"simulate": list(self.cfg.simulate)}
        results = await self.diag.run(names, f"ctl-{os.urandom(4).hex()}", params)
        return [r.to_dict() for r in results]

    async def ctl_burn(self, seconds: float) -> list[dict[str, Any]]:
        """`aegis ctl burn`: a compute burn-in of `seconds` on this node's device."""
        params = {"burn_seconds": float(seconds), "simulate": list(self.cfg.simulate)}
        results = await self.diag.run(("burn",), f"burn-{os.urandom(4).hex()}", params)
        return [r.to_dict() for r in results]

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(self.cfg.heartbeat_s)
            if self.bus is not None and self.bus.connected:
                beat = self._message(
                    MessageType.HEARTBEAT, MessagePhase.BOOTCHECK, self.agent_seq, {}
                )
                with contextlib.suppress(TransportError):
                    await self.bus.publish(self.subjects.worker, beat)

    def _message(
        self, kind: MessageType, phase: MessagePhase, seq: int, data: Mapping[str, Any]
    ) -> Message:
        return Message(
            self.cfg.job,
            self.cfg.namespace,
            self.cfg.pod,
            kind,
            phase,
            {
                **data,
                "incarnation": self.cfg.incarnation,
                "node": self.cfg.node,
                "podIP": self.cfg.pod_ip,
                "nodeIP": self.cfg.node_ip,
            },
            time.time(),
            seq,
        )

    async def _stop_work(self) -> None:
        task, self.work = self.work, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self._stop_runner()

    async def _stop_runner(self) -> None:
        runner, self.runner = self.runner, None
        if runner is not None and runner.pid is not None:
            await runner.stop(5.0)


def _failures(results: list[CheckResult]) -> str:
    bad = [f"{r.check_type}: {r.result}" for r in results if r.failed]
    return "; ".join(bad) or "no failed check"


async def watch_parent(on_gone: Callable[[], None], period: float = 0.5) -> None:
    """Call `on_gone` once the launcher (AEGIS_LAUNCHER_PID) is gone: no orphans left."""
    pid = int(os.environ.get("AEGIS_LAUNCHER_PID", "0"))
    while pid:
        await asyncio.sleep(period)
        if os.getppid() != pid:
            on_gone()
            return


async def agent_main(cfg: AgentConfig) -> int:
    """The `aegis agent` process body: signals stop the agent and its command."""
    agent = Agent(cfg)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, agent.stop, 128 + sig)
    orphan = asyncio.create_task(watch_parent(lambda: agent.stop(143)))
    try:
        return await agent.run()
    finally:
        orphan.cancel()
