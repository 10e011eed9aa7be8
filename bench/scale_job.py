"""One job of the fleet bench (bench/scale.py): nats-server, the credential service, the real
`aegis controller` process, and a simulated fleet (bench/fleet.py) until the job ends.

`_run_job` starts the control plane as `aegis run`'s launcher does (aegis/runtime/launcher/
local.py): a copy of that start-up, to be replaced by the launcher's reusable control-plane
start-up once it has one. `ControllerProc` restarts a killed controller on the same state
directory, as the launcher does (--kill-controller-after).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from aegis.protocol.control import make_request
from aegis.protocol.job_settings import JobSettings
from aegis.runtime.errors import TransportError
from aegis.runtime.launcher.local import free_port
from aegis.runtime.transport.auth import JobAccount, Operator
from aegis.runtime.transport.bus import Bus
from aegis.runtime.transport.grpc_credentials import (
    CredentialServer,
    CredentialService,
    Throttle,
)
from aegis.runtime.transport.nats_server import NatsServer
from bench.fleet import Fleet, FleetConfig
from bench.fleet_procs import ProcFleet, SplitFleet
from bench.fleet_stats import FleetStats
from bench.procstat import GroupSample, ProcSample, cpu_seconds, sample_until

# once the controller exited, the agents still there get this long to leave before the
# bench stops them (aegis run's launcher SIGTERMs them, then SIGKILLs after 10 s)
END_GRACE_S = 10.0

JOB, NAMESPACE = "scale", "default"


@dataclass
class JobRun:
    """One job's figures."""

    stats: FleetStats
    ended: float
    controller_exit: int | None
    rss_peak_mb: float
    status_bytes: int
    ctl_status_bytes: int | None
    faults: list[tuple[float, int]] = field(default_factory=list)  # (lost at, seq seen then)
    cpu_s: dict[str, float] = field(default_factory=dict)  # process -> CPU seconds in the job
    sampled: list[ProcSample] = field(default_factory=list)  # the controller, nats-server
    fleet_sample: GroupSample | None = None  # the fleet's processes' CPU over time
    # the bench's own process alone: the credential service (and the agents, in one process)
    bench_sample: GroupSample | None = None
    fleet_procs: int = 1  # the processes the simulated agents ran in (Fleet.processes)
    # the controller's own aegis_fault_to_order_seconds: [(bucket bound s, cumulative count)]
    fault_to_order: list[tuple[float, float]] = field(default_factory=list)
    # its aegis_report_copies_total: report copies it did not handle again, by outcome
    report_copies: dict[str, float] = field(default_factory=dict)
    # its collector: runs, seconds and the longest pause (ms), from its aegis_gc_* metrics
    controller_gc: dict[str, float] = field(default_factory=dict)
    # --kill-controller-after: when it was killed (s from the fleet's start), how long the
    # restarted one took to answer `aegis ctl status`, how many processes ran
    controller_kill: dict[str, Any] | None = None
    final_phase: str | None = None  # status.json's phase and recoverCount at the end
    recover_count: int | None = None


class ControllerProc:
    """The job's `aegis controller` process. `kill_and_restart` SIGKILLs it and starts it
    again on the same state directory, as `aegis run`'s launcher restarts a controller that
    died (--kill-controller-after); `wait` returns the exit code of the last one."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        self.argv, self.env, self.cwd = argv, env, cwd
        self.proc: asyncio.subprocess.Process | None = None
        self.pids: list[int] = []  # every process started, the first first
        self.started = asyncio.Event()  # set at each start
        self.killed_at: float | None = None  # monotonic
        self._restart = False

    async def start(self) -> None:
        """Start a controller process (the first, or the one after a kill)."""
        self.started.clear()
        self.proc = await asyncio.create_subprocess_exec(
            *self.argv, stdin=asyncio.subprocess.PIPE, env=self.env, cwd=self.cwd
        )
        self.pids.append(self.proc.pid)
        self.started.set()

    @property
    def current(self) -> asyncio.subprocess.Process:
        """The process running now (or last)."""
        assert self.proc is not None, "start() first"
        return self.proc

    async def wait(self) -> int:
        """The exit code of the controller that ended the job (a killed one is restarted)."""
        while True:
            code = await self.current.wait()
            if not self._restart:
                return code
            self._restart = False
            await self.start()

    async def kill_and_restart(self, after: float) -> bool:
        """SIGKILL the controller `after` seconds from now (unless it has exited by then:
        False); `wait()`, which must be running, starts the next one."""
        await asyncio.sleep(after)
        if self.current.returncode is not None:
            return False
        self._restart = True
        self.killed_at = time.monotonic()
        self.started.clear()
        self.current.kill()
        await self.started.wait()
        return True


async def run_job(
    args: argparse.Namespace, crashes: tuple[str, ...], max_retry: int, name: str
) -> JobRun:
    """One job: nats-server, credential service, controller process, the fleet. The
    controller's state dir is `--state-dir`/`name` (kept), or a temporary one (removed)."""
    if args.state_dir is not None:
        state_dir = args.state_dir / name
        state_dir.mkdir(parents=True)
        return await _run_job(args, crashes, max_retry, state_dir)
    state_dir = Path(tempfile.mkdtemp(prefix="aegis-scale-"))
    try:
        return await _run_job(args, crashes, max_retry, state_dir)
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)


async def _run_job(
    args: argparse.Namespace, crashes: tuple[str, ...], max_retry: int, state_dir: Path
) -> JobRun:
    pods = tuple(f"{JOB}-worker-{i}" for i in range(args.agents))
    op = Operator()
    account = op.create_job_account(NAMESPACE, JOB)
    expected: dict[str, str] = {}
    async with NatsServer(op, [account]) as nats:
        # every simulated agent calls from 127.0.0.1: the per-caller throttle (meant for one
        # pod IP each) is raised to let the whole fleet through
        throttle = Throttle(rate=10.0 * args.agents + 1000, burst=2.0 * args.agents + 1000)
        service = CredentialService(nats.url, throttle=throttle)
        service.add_job(account, expects=lambda pod, inc: expected.get(pod) == inc)
        async with CredentialServer(service) as grpc_server:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)  # children reaped so far
            children_cpu = before.ru_utime + before.ru_stime
            controller = _controller(args, state_dir, nats.url, account, max_retry)
            await controller.start()
            ctl_status = await _wait_serving(nats.url, account)  # then the fleet starts
            assert nats.pid is not None
            # the first controller process (a restarted one is not sampled: --kill-controller-after)
            sampled = [ProcSample(controller.current.pid), ProcSample(nats.pid)]
            running: list[Fleet | ProcFleet | SplitFleet] = []  # the fleet, once made
            fleet_sample = GroupSample(lambda: [os.getpid(), *(running and running[0].child_pids)])
            bench_sample = GroupSample(lambda: [os.getpid()])
            stop_sampling = asyncio.Event()
            groups = [fleet_sample, bench_sample]
            sampler = asyncio.create_task(sample_until(sampled, stop_sampling, groups))
            fleet_cpu = time.process_time()  # the fleet and the credential service
            # its start-up is not counted
            controller_cpu = cpu_seconds(controller.current.pid) or 0.0
            faults: list[tuple[float, int]] = []
            fleet: Fleet | ProcFleet | SplitFleet

            def lost(pod: str, incarnation: str, code: int) -> None:
                seen = max(fleet.stats.first_seen, default=0)
                faults.append((time.monotonic(), seen))
                event = {"event": "lost", "pod": pod, "incarnation": incarnation,
                         "exitCode": code, "node": f"node-{pod}"}  # fmt: skip
                stdin = controller.current.stdin
                assert stdin is not None
                stdin.write((json.dumps(event) + "\n").encode())

            cfg = _fleet_config(args, grpc_server.address, account, crashes)
            fleet = _fleet(cfg, expected, lost, args.fleet_procs)
            running.append(fleet)
            resumed: list[float] = []  # the kill -> the restarted controller answering
            killer = None
            if args.kill_controller_after is not None and not crashes:
                kill = _kill_controller(
                    controller, args.kill_controller_after, nats.url, account, resumed
                )
                killer = asyncio.create_task(kill)
            try:
                code: int | None = await _run_fleet(fleet, pods, controller, args.timeout)
            except TimeoutError:
                code = None
                print(f"scale: the job did not end within {args.timeout} s", file=sys.stderr)
            finally:
                ended = time.monotonic()
                # this process: the credential service, and the agents unless in children
                children_fleet = 0.0 if isinstance(fleet, Fleet) else fleet.cpu_s
                cpu = {"fleet": round(time.process_time() - fleet_cpu + children_fleet, 2)}
                stop_sampling.set()
                await sampler
                await _cancel(killer)
                cpu["nats_server"] = sampled[1].cpu_used
                await _stop(controller.current)
                # reaped: its whole CPU time is in RUSAGE_CHILDREN (nats-server's is not yet)
                # (less the fleet's child processes, reaped too: their own count at their end)
                children = resource.getrusage(resource.RUSAGE_CHILDREN)
                used = children.ru_utime + children.ru_stime - children_cpu - controller_cpu
                cpu["controller"] = round(used - children_fleet, 2)
            size, final = _final_status(state_dir / "status.json")
    rss = max(sampled[0].rss_mb, default=0.0)
    run = JobRun(
        fleet.stats,
        ended,
        code,
        rss,
        size,
        ctl_status,
        faults,
        cpu,
        sampled,
        fleet_sample,
        bench_sample if isinstance(fleet, ProcFleet) else None,  # only then no agent in it
        fleet.processes,
    )
    run.final_phase, run.recover_count = final.get("phase"), final.get("recoverCount")
    run.controller_kill = _controller_kill(controller, fleet.stats.started, resumed)
    run.fault_to_order = _buckets(state_dir / "metrics.prom", "aegis_fault_to_order_seconds")
    run.report_copies = _counts(state_dir / "metrics.prom", "aegis_report_copies", "outcome")
    run.controller_gc = controller_gc(state_dir / "metrics.prom")
    return run


def _controller(
    args: argparse.Namespace, state_dir: Path, nats_url: str, account: JobAccount, max_retry: int
) -> ControllerProc:
    """The controller process (not started), with its credentials in `state_dir`."""
    creds = account.controller_credentials()
    creds_path = state_dir / "controller.creds.json"
    creds_path.write_text(json.dumps({"jwt": creds.user_jwt, "seed": creds.seed.decode()}))
    creds_path.chmod(0o600)
    return ControllerProc(
        [
            sys.executable, "-m", "aegis.cli", "controller",
            "--state-dir", str(state_dir),
            "--nats-url", nats_url, "--creds", str(creds_path), "--events",
            "--metrics-port", str(free_port()),  # metrics.prom, read once it exits
        ],
        env={
            **os.environ,
            **JobSettings(
                JOB, NAMESPACE, args.agents, max_retry, args.heartbeat_timeout,
                args.heartbeat_rate,
            ).to_env(),  # the job's settings, whole
            "AEGIS_LAUNCHER_PID": str(os.getpid()),
        },
        cwd=Path(__file__).resolve().parents[1],
    )  # fmt: skip


def _fleet_config(
    args: argparse.Namespace, grpc_target: str, account: JobAccount, crashes: tuple[str, ...]
) -> FleetConfig:
    return FleetConfig(
        job=JOB,
        namespace=NAMESPACE,
        grpc_target=grpc_target,
        token=account.bootstrap_token,
        heartbeat_s=args.heartbeat_s,
        work_s=args.work_s,
        crash_at=args.crash_at,
        crashes=crashes,
        start_rate=args.start_rate,
        drop_orders=args.drop_orders,
        gc_thresholds=args.fleet_gc,
    )


def _fleet(
    cfg: FleetConfig,
    expected: dict[str, str],
    lost: Callable[[str, str, int], None],
    procs: int,
) -> Fleet | ProcFleet | SplitFleet:
    """The fleet in this process, or over `procs` processes (the crashing pods beside the
    launcher's hook, the rest in children)."""
    if procs == 1:
        return Fleet(cfg, expected, lost)
    if cfg.crashes:
        return SplitFleet(cfg, expected, lost, procs)
    return ProcFleet(cfg, expected, procs)


async def _kill_controller(
    controller: ControllerProc,
    after: float,
    nats_url: str,
    account: JobAccount,
    resumed: list[float],
) -> None:
    """Kill the controller `after` s and restart it; note how long until it answers again."""
    if await controller.kill_and_restart(after):
        assert controller.killed_at is not None
        if await _wait_serving(nats_url, account) is not None:
            resumed.append(time.monotonic() - controller.killed_at)


async def _cancel(task: asyncio.Task[None] | None) -> None:
    if task is not None:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def _controller_kill(
    controller: ControllerProc, started: float, resumed: list[float]
) -> dict[str, Any] | None:
    """When the controller was killed (since the fleet started), how long until it answered
    again, and its processes (None: it was not killed)."""
    if controller.killed_at is None:
        return None
    return {
        "killed_at_s": round(controller.killed_at - started, 3),
        "resume_s": round(resumed[0], 3) if resumed else None,
        "processes": len(controller.pids),
    }


async def _stop(proc: asyncio.subprocess.Process) -> None:
    """Stop the controller process if it still runs (SIGTERM, SIGKILL 10 s later)."""
    if proc.returncode is not None:
        return
    proc.terminate()
    try:  # a controller busy with a backlog may not get to its SIGTERM handler
        await asyncio.wait_for(proc.wait(), 10)
    except TimeoutError:
        proc.kill()
        await proc.wait()


def _final_status(status: Path) -> tuple[int, dict[str, Any]]:
    """The saved status's size and its object (0 and {} when there is none)."""
    size = status.stat().st_size if status.exists() else 0
    return size, json.loads(status.read_bytes()) if size else {}


async def _run_fleet(
    fleet: Fleet | ProcFleet | SplitFleet,
    pods: tuple[str, ...],
    controller: ControllerProc,
    timeout: float,
) -> int:
    """Run the fleet until every agent has left and the controller has exited (its exit
    code); TimeoutError past `timeout`. When the controller exits first, the agents still
    there get END_GRACE_S to leave, then are stopped (`Fleet.end`), as the launcher does."""
    agents = asyncio.create_task(fleet.run(pods))
    exited = asyncio.create_task(controller.wait())
    try:
        done, _ = await asyncio.wait(
            {agents, exited}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
        )
        if not done:
            raise TimeoutError
        if agents not in done:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(agents), END_GRACE_S)
            if not agents.done():
                fleet.end()
        await agents
        return await asyncio.wait_for(exited, 30)
    finally:
        for task in (agents, exited):
            task.cancel()  # past the timeout: the fleet stops its agents as it ends
        await asyncio.gather(agents, exited, return_exceptions=True)


def _samples(prom: Path, sample: str) -> list[Any]:
    """The samples named `sample` in a Prometheus text file (none if it is not there)."""
    if not prom.exists():
        return []
    families = text_string_to_metric_families(prom.read_text())
    return [s for family in families for s in family.samples if s.name == sample]


def controller_gc(prom: Path) -> dict[str, float]:
    """The controller's garbage collections (aegis_gc_*): runs, seconds, longest pause ms."""
    longest = _samples(prom, "aegis_gc_longest_pause_seconds")
    return {
        "runs": sum(s.value for s in _samples(prom, "aegis_gc_collections_total")),
        "s": round(sum(s.value for s in _samples(prom, "aegis_gc_pause_seconds_total")), 3),
        "longest_ms": round(1000 * longest[0].value, 1) if longest else 0.0,
    }


def _buckets(prom: Path, name: str) -> list[tuple[float, float]]:
    """A histogram's (upper bound, cumulative count) pairs from a Prometheus text file."""
    return sorted((float(s.labels["le"]), s.value) for s in _samples(prom, f"{name}_bucket"))


def _counts(prom: Path, name: str, label: str) -> dict[str, float]:
    """A labelled counter's values by `label` from a Prometheus text file."""
    return {s.labels[label]: s.value for s in _samples(prom, f"{name}_total")}


def _bucket_pct(buckets: list[tuple[float, float]], q: float) -> float | None:
    """The smallest bucket bound (ms) that holds the quantile `q` of a histogram."""
    total = buckets[-1][1] if buckets else 0
    if not total:
        return None
    return next(round(le * 1000, 1) for le, n in buckets if n >= q * total)


async def _wait_serving(url: str, account: JobAccount, timeout: float = 60.0) -> int | None:
    """Wait until the controller answers `aegis ctl status`; the reply's size in bytes (None
    when no answer came within `timeout`: the agents' ACKs wait for the controller anyway)."""
    subjects = account.subjects
    bus = await Bus.connect(
        url, account.ctl_credentials(), name="scale-ctl", inbox_prefix=subjects.ctl_inbox_prefix
    )
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            try:
                reply = await bus.request(
                    subjects.ctl_controller, make_request(NAMESPACE, JOB, "status"), timeout=5.0
                )
                return len(reply.encode())
            except TransportError:
                await asyncio.sleep(0.2)
        print("scale: no answer to `aegis ctl status`; starting the fleet anyway", file=sys.stderr)
        return None
    finally:
        await bus.close()
