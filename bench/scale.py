"""How the controller scales: a fleet of simulated agents against the real controller.

    python bench/scale.py --agents N [--faults F] [--json] [--in-process]

It starts what `aegis run` starts (nats-server in operator mode with the job's account, the
gRPC credential service, the `aegis controller` process reading launcher events on stdin)
and, instead of N agent processes, N simulated agents in this process (bench/fleet.py: each
its own NKey, credential, NATS identity and real AgentCore). It runs a healthy job, then,
with --faults F, a job in which F pods crash once (one per RunCommand order), and prints one
JSON object of figures (see docs/scale.md for what each one measures). --in-process measures
the controller core alone (no network, no processes). Timings on a shared machine are noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from prometheus_client.parser import text_string_to_metric_families

from aegis.protocol.control import make_request
from aegis.protocol.environment import DEFAULT_HEARTBEAT_RATE
from aegis.protocol.job_settings import JobSettings
from aegis.protocol.state_codec import encode_state
from aegis.runtime.engine import initial_state, runtime_constants
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
from bench.fleet import (
    FLEET_GC_THRESHOLDS,
    Fleet,
    FleetConfig,
    FleetStats,
    ProcFleet,
    SplitFleet,
)

# once the controller exited, the agents still there get this long to leave before the
# bench stops them (aegis run's launcher SIGTERMs them, then SIGKILLs after 10 s)
END_GRACE_S = 10.0

JOB, NAMESPACE = "scale", "default"


def raise_nofile() -> tuple[int, int]:
    """Soft RLIMIT_NOFILE up to the hard limit (inherited by nats-server and the controller);
    (soft, hard) after."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        want = hard if hard != resource.RLIM_INFINITY else 1 << 20
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)


def needed_fds(agents: int) -> int:
    """File descriptors this process needs: one socket per simulated agent, plus slack."""
    return agents + 256


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


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds the process has used (None once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class ProcSample:
    """A process's peak resident set (MB) and the CPU seconds it used since sampling began."""

    pid: int
    rss_mb: list[float] = field(default_factory=list)
    series: list[tuple[float, float]] = field(default_factory=list)  # (monotonic, CPU s)

    def cpu_share(self, start: float, end: float) -> float | None:
        """The share of one core (%) used between two monotonic times: from the last sample
        at or before `start` to the first one at or after `end` (samples are 0.2 s apart, a
        busy machine stretches that), or to the last sample if the process exited before
        one came after `end` (the controller leaves right after the job's last report)."""
        first, last = _around(self.series, start), _around(self.series, end)
        if first is None or last is None or last[1][0] <= first[0][0]:
            return None
        (t0, c0), (t1, c1) = first[0], last[1]
        return round(100 * (c1 - c0) / (t1 - t0), 1)

    @property
    def cpu_used(self) -> float:
        """CPU seconds from the first sample to the last."""
        return round(self.series[-1][1] - self.series[0][1], 2) if self.series else 0.0

    def cpu_at(self, t: float) -> float | None:
        """CPU seconds used by monotonic time `t` (`cpu_at` of the samples)."""
        return cpu_at(self.series, t)


@dataclass
class GroupSample:
    """The CPU seconds a group of processes used (the fleet: this process, the credential
    service in it, and its child processes as they come): each sample adds every member's
    last reading, so one that has exited still counts what it used."""

    pids: Callable[[], Iterable[int]]
    series: list[tuple[float, float]] = field(default_factory=list)  # (monotonic, CPU s)
    last: dict[int, float] = field(default_factory=dict)

    def sample(self) -> None:
        """Read every member's CPU time now."""
        for pid in self.pids():
            cpu = cpu_seconds(pid)
            if cpu is not None:
                self.last[pid] = cpu
        self.series.append((time.monotonic(), sum(self.last.values())))

    def cpu_at(self, t: float) -> float | None:
        """As ProcSample.cpu_at."""
        return cpu_at(self.series, t)


def cpu_at(series: Sequence[tuple[float, float]], t: float) -> float | None:
    """The CPU seconds of a (monotonic, CPU s) series at `t`, linear between the samples
    around it; None before the first sample; past the last, the last (the controller exits
    right after the job's last report: what it used after its last sample, at most 0.2 s
    of CPU, is not counted)."""
    around = _around(series, t)
    if around is None:
        return None
    (t0, c0), (t1, c1) = around
    return c0 if t1 == t0 else c0 + (c1 - c0) * (t - t0) / (t1 - t0)


def _around(
    series: Sequence[tuple[float, float]], t: float
) -> tuple[tuple[float, float], tuple[float, float]] | None:
    """The last sample at or before `t` and the first at or after it (the last sample when
    none is after it); None when no sample is at or before `t`."""
    before = [(a, c) for a, c in series if a <= t]
    after = [(a, c) for a, c in series if a >= t] or list(series[-1:])
    if not before:
        return None
    return before[-1], after[0]


async def _sample(
    procs: list[ProcSample], stop: asyncio.Event, groups: Sequence[GroupSample] = ()
) -> None:
    """Read each process's VmHWM and CPU time (and each group's CPU time) every 0.2 s until
    `stop` (or it exits), and once more then."""
    while True:
        last = stop.is_set()
        for group in groups:
            group.sample()
        for proc in procs:
            cpu = cpu_seconds(proc.pid)
            if cpu is not None:
                proc.series.append((time.monotonic(), cpu))
            with contextlib.suppress(OSError, ValueError):
                for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        proc.rss_mb.append(int(line.split()[1]) / 1024)
        if last:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.2)


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
            creds = account.controller_credentials()
            creds_path = state_dir / "controller.creds.json"
            creds_path.write_text(json.dumps({"jwt": creds.user_jwt, "seed": creds.seed.decode()}))
            creds_path.chmod(0o600)
            before = resource.getrusage(resource.RUSAGE_CHILDREN)  # children reaped so far
            children_cpu = before.ru_utime + before.ru_stime
            controller = ControllerProc(
                [
                    sys.executable, "-m", "aegis.cli", "controller",
                    "--state-dir", str(state_dir),
                    "--nats-url", nats.url, "--creds", str(creds_path), "--events",
                    "--metrics-port", str(free_port()),  # metrics.prom, read once it exits
                ],
                env={
                    **os.environ,
                    **JobSettings(
                        JOB, NAMESPACE, args.agents, max_retry, args.heartbeat_timeout,
                        args.heartbeat_rate,
                    ).to_env(),
                    "AEGIS_LAUNCHER_PID": str(os.getpid()),
                },
                cwd=Path(__file__).resolve().parents[1],
            )  # fmt: skip
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
            sampler = asyncio.create_task(_sample(sampled, stop_sampling, groups))
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

            cfg = FleetConfig(
                job=JOB,
                namespace=NAMESPACE,
                grpc_target=grpc_server.address,
                token=account.bootstrap_token,
                heartbeat_s=args.heartbeat_s,
                work_s=args.work_s,
                crash_at=args.crash_at,
                crashes=crashes,
                start_rate=args.start_rate,
                drop_orders=args.drop_orders,
                gc_thresholds=args.fleet_gc,
            )
            procs = args.fleet_procs
            if procs == 1:
                fleet = Fleet(cfg, expected, lost)
            elif crashes:  # the crashing pods beside the launcher's hook, the rest in children
                fleet = SplitFleet(cfg, expected, lost, procs)
            else:
                fleet = ProcFleet(cfg, expected, procs)
            running.append(fleet)
            resumed: list[float] = []  # the kill -> the restarted controller answering
            if args.kill_controller_after is not None and not crashes:

                async def kill() -> None:
                    if await controller.kill_and_restart(args.kill_controller_after):
                        assert controller.killed_at is not None
                        if await _wait_serving(nats.url, account) is not None:
                            resumed.append(time.monotonic() - controller.killed_at)

                killer: asyncio.Task[None] | None = asyncio.create_task(kill())
            else:
                killer = None
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
                if killer is not None:
                    killer.cancel()
                    await asyncio.gather(killer, return_exceptions=True)
                cpu["nats_server"] = sampled[1].cpu_used
                last = controller.current
                if last.returncode is None:
                    last.terminate()
                    try:  # a controller busy with a backlog may not get to its SIGTERM handler
                        await asyncio.wait_for(last.wait(), 10)
                    except TimeoutError:
                        last.kill()
                        await last.wait()
                # reaped: its whole CPU time is in RUSAGE_CHILDREN (nats-server's is not yet)
                # (less the fleet's child processes, reaped too: their own count at their end)
                children = resource.getrusage(resource.RUSAGE_CHILDREN)
                used = children.ru_utime + children.ru_stime - children_cpu - controller_cpu
                cpu["controller"] = round(used - children_fleet, 2)
            status = state_dir / "status.json"
            size = status.stat().st_size if status.exists() else 0
            final = json.loads(status.read_bytes()) if size else {}
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
    if controller.killed_at is not None:
        run.controller_kill = {
            "killed_at_s": round(controller.killed_at - fleet.stats.started, 3),
            "resume_s": round(resumed[0], 3) if resumed else None,
            "processes": len(controller.pids),
        }
    run.fault_to_order = _buckets(state_dir / "metrics.prom", "aegis_fault_to_order_seconds")
    run.report_copies = _counts(state_dir / "metrics.prom", "aegis_report_copies", "outcome")
    run.controller_gc = controller_gc(state_dir / "metrics.prom")
    return run


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


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)


def _busy_seconds(intervals: list[tuple[float, float]]) -> float:
    """The time during which at least one report was in flight."""
    busy, end = 0.0, float("-inf")
    for start, stop in sorted(intervals):
        if stop <= end:
            continue
        busy += stop - max(start, end)
        end = stop
    return busy


def figures(args: argparse.Namespace, healthy: JobRun, faulty: JobRun | None) -> dict[str, Any]:
    """The JSON object the bench prints."""
    s = healthy.stats
    n = args.agents
    creds = sorted(s.creds_done)[:n]
    run = sorted(s.run_orders.values())
    busy = _busy_seconds(s.report_times)
    pods = tuple(f"{JOB}-worker-{i}" for i in range(n))
    old_order = len(json.dumps(encode_state(initial_state(runtime_constants(pods, 3)))))
    out: dict[str, Any] = {
        "agents": n,
        # the controller ended it Succeed and every agent left on the final order, or (one
        # that lost it, --drop-orders) was stopped after the controller exited
        "succeeded": healthy.controller_exit == 0 and len(s.left) + s.stopped_at_end == n,
        "creds_s": round(creds[-1] - s.started, 3) if len(creds) == n else None,
        "creds_to_runcommand_s": round(run[-1] - s.started, 3) if len(run) == n else None,
        "job_s": round(healthy.ended - s.started, 3),
        "credentials": len(s.creds_done),  # issued (a job that did not end: how far it got)
        "joined": len(s.joined),  # ACKs answered (a job that did not end: how far it got)
        "reports": len(s.report_ms),
        "reports_per_s": round(len(s.report_ms) / busy, 1) if busy else None,
        "event_p50_ms": _pct(s.report_ms, 0.5),
        "event_p99_ms": _pct(s.report_ms, 0.99),
        "receipts": s.receipts,
        "controller_rss_mb": round(healthy.rss_peak_mb, 1),
        "heartbeats": s.heartbeats,
        # CPU seconds from the fleet's start to the job's end: the controller's per ACK or
        # report (its heartbeats ride along); "fleet" includes the credential service
        "cpu_s": healthy.cpu_s,
        "controller_cpu_ms_per_event": (
            round(1000 * healthy.cpu_s["controller"] / events, 3)
            if (events := len(s.joined) + len(s.report_ms))
            else None
        ),
        "order_bytes": s.order_bytes,
        "pod_order_bytes": s.pod_order_bytes,
        "old_order_bytes": old_order,  # peer: the whole spec state every order carried before
        "status_bytes": healthy.status_bytes,
        "ctl_status_bytes": healthy.ctl_status_bytes,
        "refused": len(s.refused),
        "malformed_orders": s.malformed,
        "connect_retries": s.connect_retries,
        "nofile": list(resource.getrlimit(resource.RLIMIT_NOFILE)),
        "start_rate": args.start_rate,
        "heartbeat_s": args.heartbeat_s,
        "heartbeat_rate": args.heartbeat_rate,
        "fleet_procs": healthy.fleet_procs,
        "controller_gc": healthy.controller_gc,
        # the fleet's cyclic collections and their time (its processes' sum; not the
        # controller's): a bench artefact, see bench/fleet.py FLEET_GC_THRESHOLDS
        "fleet_gc": {
            "thresholds": list(args.fleet_gc),
            "runs": s.gc_collections,
            "s": round(s.gc_s, 2),
        },
    }
    out |= idle_figures(healthy)
    if healthy.controller_kill is not None:
        # with the status it ended with: a resume must not have cost a retry
        out["controller_kill"] = {
            **healthy.controller_kill,
            "final_phase": healthy.final_phase,
            "recover_count": healthy.recover_count,
        }
    out |= cpu_windows(healthy, os.cpu_count() or 1)
    if faulty is not None:
        f = faulty.stats
        delays = []
        for lost_at, seen in faulty.faults:
            later = [t for seq, t in f.first_seen.items() if seq > seen and t >= lost_at]
            if later:
                delays.append((min(later) - lost_at) * 1000)
        out["faults"] = args.faults
        out["fault_job_succeeded"] = faulty.controller_exit == 0 and len(f.left) == n
        out["fault_job_fleet_procs"] = faulty.fleet_procs
        out["fault_to_order_ms"] = {
            "p50": _pct(delays, 0.5),
            "p99": _pct(delays, 0.99),
            "measured": len(delays),
            "each": [round(d, 1) for d in delays],
        }
        # the same, on the controller's clock: from reading the loss to publishing the order
        # (the fleet's own delay in taking the order is not in it); bucket bounds
        out["controller_fault_to_order_ms"] = {
            "p50_le": _bucket_pct(faulty.fault_to_order, 0.5),
            "p99_le": _bucket_pct(faulty.fault_to_order, 0.99),
            "measured": faulty.fault_to_order[-1][1] if faulty.fault_to_order else 0,
        }
        out["fault_job_work_superseded"] = f.superseded
        out["fault_job_s"] = round(faulty.ended - f.started, 3)
        out["fault_job_controller_rss_mb"] = round(faulty.rss_peak_mb, 1)
        out["fault_job_controller_gc"] = faulty.controller_gc
    return out


def idle_figures(job: JobRun) -> dict[str, Any]:
    """What the job costs while every agent works on RunCommand (from the last agent's
    RunCommand order to the first command report; a long --work-s gives a long window): the
    controller's and nats-server's CPU share then, and the orders the controller sent again
    to agents whose heartbeat showed them behind (none while nothing is lost: agents no
    longer re-ask, docs/scale.md)."""
    s = job.stats
    run = sorted(s.run_orders.values())
    start, end = (run[-1] if run else None), s.first_command_report
    out: dict[str, Any] = {
        "orders_resent": s.orders_resent,
        "orders_dropped": s.orders_dropped,
        "stopped_at_end": s.stopped_at_end,
        "reports_resent": s.resent,
        # of those, the ones the controller did not handle again (dropped / answered alike)
        "controller_report_copies": {k: int(v) for k, v in job.report_copies.items()},
        "idle_s": None,
    }
    if start is None or end is None or end - start < 1.0 or len(job.sampled) < 2:
        return out
    out["idle_s"] = round(end - start, 2)
    for name, proc in zip(("controller", "nats_server"), job.sampled, strict=True):
        out[f"idle_{name}_cpu_pct"] = proc.cpu_share(start, end)
    return out


def cpu_windows(job: JobRun, cores: int) -> dict[str, Any]:
    """Where the CPU went in two windows of the job, by process group, from the 0.2 s
    samples: from the fleet's start to the last agent's RunCommand order, and the command
    round (from the first RunCommand order to the last command report's receipt; the
    order's fan-out included, and any --work-s). With the simulated agents and nats-server
    on the same `cores` as the controller, their CPU bounds what the machine can show: the
    floor on credentials -> RunCommand and the ceiling on reports/s with a controller that
    cost nothing (on a cluster the agents run on their own nodes). With the agents in child
    processes the bench's own process is the credential service: its CPU, nats-server's and
    the controller's bound credentials -> RunCommand with agents that cost nothing."""
    s = job.stats
    run = sorted(s.run_orders.values())
    if not run or job.fleet_sample is None or len(job.sampled) < 2:
        return {}
    groups: dict[str, ProcSample | GroupSample] = {
        "fleet": job.fleet_sample,
        "nats_server": job.sampled[1],
        "controller": job.sampled[0],
    }

    def used(start: float, end: float) -> dict[str, float] | None:
        out = {}
        for name, group in groups.items():
            a, b = group.cpu_at(start), group.cpu_at(end)
            if a is None or b is None:
                return None
            out[name] = b - a
        return out

    figures: dict[str, Any] = {}
    to_run = used(s.started, run[-1])
    if to_run is not None:
        figures["cpu_s_to_runcommand"] = {k: round(v, 2) for k, v in to_run.items()}
        figures["runcommand_floor_s"] = round((to_run["fleet"] + to_run["nats_server"]) / cores, 2)
        bench = job.bench_sample
        a = None if bench is None else bench.cpu_at(s.started)
        b = None if bench is None else bench.cpu_at(run[-1])
        if a is not None and b is not None:
            # the agents in child processes: the bench's own process is the credential
            # service (and the bench's bookkeeping), a part of the system under test
            service = min(b - a, to_run["fleet"])
            figures["fleet_split_to_runcommand"] = {
                "bench_process": round(service, 2),
                "agent_processes": round(to_run["fleet"] - service, 2),
            }
            system = service + to_run["nats_server"] + to_run["controller"]
            figures["system_floor_s"] = round(system / cores, 2)
    round_reports = [answered for sent, answered in s.report_times if sent >= run[0]]
    in_round = used(run[0], max(round_reports)) if round_reports else None
    if in_round is not None:
        per = {k: 1000 * v / len(round_reports) for k, v in in_round.items()}
        figures["command_round_cpu_ms_per_report"] = {k: round(v, 3) for k, v in per.items()}
        others = per["fleet"] + per["nats_server"]
        figures["reports_per_s_ceiling"] = round(1000 * cores / others, 1) if others else None
    return figures


def in_process(args: argparse.Namespace) -> dict[str, Any]:
    """The controller core alone (bench/fleet_core.py): ACKs and reports through ControllerCore
    and AgentCore, no network; bench/scale_core.py measures the engine and the core by event
    kind."""
    from bench.fleet_core import measure

    keep = None
    if args.state_dir is not None:
        keep = args.state_dir / "in-process"
        keep.mkdir(parents=True)
    result: dict[str, Any] = measure(args.agents, keep=keep)
    return result


def gc_thresholds(text: str) -> tuple[int, int, int]:
    """Three collector thresholds "G0,G1,G2" (G0 >= 1; argparse's type for --fleet-gc)."""
    parts = text.split(",")
    try:
        values = tuple(int(v) for v in parts)
    except ValueError:
        values = ()
    if len(values) != 3 or values[0] < 1 or min(values) < 0:
        raise argparse.ArgumentTypeError(f"expected G0,G1,G2 (integers, G0 >= 1); got {text!r}")
    return values[0], values[1], values[2]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--agents", type=int, required=True, help="simulated agents (pods)")
    p.add_argument("--faults", type=int, default=0, help="pods that crash once (second job)")
    p.add_argument("--json", action="store_true", help="print only the JSON object")
    p.add_argument(
        "--state-dir",
        type=Path,
        help="keep each job's controller state (status, WAL, step log, metrics) in "
        "DIR/healthy and DIR/faulty, which must not exist (default: temporary, removed)",
    )
    p.add_argument("--in-process", action="store_true", help="the controller core alone")
    p.add_argument("--heartbeat-s", type=float, default=5.0, help="each agent's beat period")
    p.add_argument("--heartbeat-timeout", type=float, default=30.0)
    p.add_argument(
        "--heartbeat-rate",
        type=float,
        default=DEFAULT_HEARTBEAT_RATE,
        help="the controller's heartbeat budget (beats a second, all agents; 0: none)",
    )
    p.add_argument("--work-s", type=float, default=0.0, help="seconds each order's work takes")
    p.add_argument(
        "--crash-at",
        type=float,
        default=0.5,
        help="when a crashing pod dies, as a fraction of --work-s after its order (0.5: "
        "halfway, the others working; 1: as the others report; up to 2: while the controller "
        "may still be taking their burst of reports)",
    )
    p.add_argument(
        "--start-rate", type=float, default=0.0, help="agents started per second (0: all at once)"
    )
    p.add_argument("--timeout", type=float, default=600.0, help="seconds one job may take")
    p.add_argument(
        "--kill-controller-after",
        type=float,
        default=None,
        metavar="S",
        help="SIGKILL the healthy job's controller S seconds after the fleet starts and start "
        "it again on the same state directory, as `aegis run`'s launcher does",
    )
    p.add_argument(
        "--drop-orders",
        type=float,
        default=0.0,
        help="each agent loses each order published on the order subject with this chance "
        "(the controller must send it again when the agent's heartbeat shows it)",
    )
    p.add_argument(
        "--fleet-procs",
        type=int,
        default=1,
        help="processes the simulated agents run in (the crash job's crashing pods and their "
        "replacements run in this one, beside the launcher's hook; the others in the "
        "rest); one Python process is one core's work",
    )
    p.add_argument(
        "--fleet-gc",
        type=gc_thresholds,
        default=FLEET_GC_THRESHOLDS,
        metavar="G0,G1,G2",
        help="the cyclic collector's thresholds in the fleet's processes (default "
        f"{','.join(map(str, FLEET_GC_THRESHOLDS))}; CPython's own: 700,10,10)",
    )
    args = p.parse_args(argv)
    if args.fleet_procs < 1 or args.fleet_procs > max(1, args.agents):
        p.error("--fleet-procs must be in 1..agents")
    if not 0.0 <= args.crash_at <= 2.0:
        p.error("--crash-at must be in 0..2")
    if args.agents < 1 or not 0 <= args.faults <= args.agents:
        p.error("--agents must be >= 1 and --faults in 0..agents")
    kill = args.kill_controller_after
    if kill is not None and not (math.isfinite(kill) and kill >= 0):
        p.error("--kill-controller-after must be a finite number of seconds >= 0")
    if not 0 <= args.drop_orders <= 1:
        p.error("--drop-orders must be in 0..1")
    if not (math.isfinite(args.heartbeat_rate) and args.heartbeat_rate >= 0):
        p.error("--heartbeat-rate must be a finite number >= 0 (0: no budget)")
    if args.state_dir is not None and args.state_dir.exists():
        p.error(f"--state-dir {args.state_dir}: exists (give a new directory)")
    return args


async def _main(args: argparse.Namespace) -> dict[str, Any]:
    healthy = await run_job(args, (), max_retry=3, name="healthy")
    faulty = None
    if args.faults:
        crashes = tuple(
            f"{JOB}-worker-{i * args.agents // args.faults}" for i in range(args.faults)
        )
        faulty = await run_job(args, crashes, max_retry=args.faults + 1, name="faulty")
    return figures(args, healthy, faulty)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    soft, hard = raise_nofile()
    if not args.in_process and soft < needed_fds(args.agents):
        print(
            f"scale: {args.agents} agents need about {needed_fds(args.agents)} open files; "
            f"the limit is {soft} (hard {hard}): raise it (ulimit -n) or use fewer agents",
            file=sys.stderr,
        )
        return 2
    started = time.monotonic()
    result = in_process(args) if args.in_process else asyncio.run(_main(args))
    result["bench_s"] = round(time.monotonic() - started, 2)
    print(json.dumps(result) if args.json else json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
