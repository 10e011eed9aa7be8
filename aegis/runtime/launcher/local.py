"""`aegis run`: a whole job on one machine — nats-server, credential server, controller, agents.

The controller runs as a subprocess (`aegis controller`) and is restarted if it dies (not if
it refused to run, exit 2: the job ends at once with its error); the launcher tells it on
stdin when an agent process exits. An agent that exits 1 (node fault) gets its node
blacklisted and is replaced on a fresh node slot; any other exit restarts it in
place (AgentExit.RESTART_CONTAINER is Level 2: the launcher counts it per pod and node and tells the
new agent, which escalates to Level 3 after MAX_CONTAINER_RESTARTS). Every child has its own
process group, so Ctrl-C leaves nothing running.

Once NATS is up the launcher writes `<state_dir>/ctl.json` (mode 0600: the NATS URL, a ctl
user's JWT and seed, the namespace, job and pods) for `aegis ctl --state-dir DIR ...`; the
ctl user may use only the job's control subjects. With `metrics_port` the controller serves
Prometheus metrics on 127.0.0.1:`metrics_port`/metrics.

Fault injection (tests, demos): `simulate` maps a node slot (node-1, node-2, ... in start
order; a replacement gets a fresh slot) to simulated check faults (aegis.checks.params
SIMULATIONS, e.g. gpu_lost); only agents started on that node get AEGIS_SIMULATE.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fcntl
import json
import logging
import os
import secrets
import shutil
import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from aegis import retry
from aegis.checks.params import DEFAULT_HANG_TIMEOUT_S
from aegis.errors import AegisError
from aegis.protocol.environment import DEFAULT_HEARTBEAT_RATE, AgentConfig, Var
from aegis.protocol.exitcodes import CONTROLLER_EXIT_BY_PHASE, AgentExit, terminated_by
from aegis.protocol.job_settings import DEFAULT_MAX_RETRY
from aegis.protocol.launcher_events import LauncherEvent, PodLost, Quit
from aegis.runtime.agent.command import command_problem
from aegis.runtime.agent.core import MAX_CONTAINER_RESTARTS
from aegis.runtime.controller.core import DEFAULT_HEARTBEAT_TIMEOUT_S
from aegis.runtime.controller.store import FileStatusStore
from aegis.runtime.controller.wal import WriteAheadLog
from aegis.runtime.errors import NatsServerError
from aegis.runtime.launcher.control_plane import (
    CONTROLLER_CREDS_FILE,
    ControlPlane,
    ControlPlaneConfig,
    control_plane,
)
from aegis.runtime.launcher.control_plane import CTL_FILE as CTL_FILE
from aegis.runtime.launcher.control_plane import free_port as free_port
from aegis.runtime.launcher.control_plane import write_private_json as write_private_json
from aegis.runtime.lifetime import (
    dies_with_parent,
    owned_tempdir,
    supervised,
    sweep_orphaned_tempdirs,
)
from aegis.runtime.transport.nats_server import NATS_DIR_PREFIX, NatsServer

log = logging.getLogger(__name__)
MAX_CONTROLLER_RESTARTS = 5
# `aegis controller` exits 2 when it refuses to run (aegis.cli: an AegisError such as a status
# file that is not a state of the spec, or bad arguments): the same again on every restart
CONTROLLER_REFUSED = 2
PROGRESS_DIR_PREFIX = "aegis-progress-"  # the ranks' progress and error files
STATE_DIR_PREFIX = "aegis-run-"  # the state dir of a job run without --state-dir
CREDENTIAL_FILES = (CTL_FILE, CONTROLLER_CREDS_FILE)  # removed when the job ends
JOB_FILE = "job.json"  # namespace, job, pods, MaxRetry: what `aegis ctl` reads after the end
LOCK_FILE = "launcher.lock"  # held by the launcher that runs the job (its pid inside)
STATUS_FILE = "status.json"
WAL_FILE = "wal.jsonl"  # the controller's write-ahead log beside it
AGENT_NATS_URL_ENV = "AEGIS_AGENT_NATS_URL"  # test hook: the NATS URL agents are given
_GRACE_S = 10.0
# the memory one agent process takes before its command's ranks (~53 MB RSS measured: Python,
# its imports, the NATS client); `aegis run` starts one per node on this machine
AGENT_PROCESS_BYTES = 64 << 20


def available_memory() -> int | None:
    """The bytes of memory this machine can give new processes (MemAvailable; None if the
    kernel does not say)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def capacity_problem(workers: int, available: int | None) -> str | None:
    """Why this machine cannot run `workers` agent processes (None if it can, or if its
    memory is not known): a job that cannot fit fails at once, before it starts anything."""
    need = workers * AGENT_PROCESS_BYTES
    if available is None or need <= available:
        return None
    return (
        f"--nnodes {workers}: aegis run starts an agent process per node on this machine "
        f"(~{AGENT_PROCESS_BYTES >> 20} MiB each, before the command's own ranks): that needs "
        f"~{need / 2**30:,.1f} GiB and this machine has {available / 2**30:,.1f} GiB available "
        f"(at most {available // AGENT_PROCESS_BYTES} nodes); for a fleet of that size without "
        "processes, see bench/scale.py"
    )


@dataclass
class LocalJob:
    """The options of `aegis run`."""

    command: list[str]
    workers: int
    max_retry: int = DEFAULT_MAX_RETRY
    job: str = "local"
    namespace: str = "default"
    state_dir: Path | None = None
    connect_timeout: float = 10.0
    heartbeat_s: float = 5.0
    heartbeat_timeout: float = DEFAULT_HEARTBEAT_TIMEOUT_S
    heartbeat_rate: float = DEFAULT_HEARTBEAT_RATE  # the controller's heartbeat budget
    hang_timeout: float = DEFAULT_HANG_TIMEOUT_S  # <= 0: no hang detection
    checkpoint_file: str = ""  # marker file meaning "checkpoint done" (besides the API)
    extra_env: dict[str, str] = field(default_factory=dict)
    simulate: dict[str, tuple[str, ...]] = field(default_factory=dict)  # node -> faults
    metrics_port: int = 0  # > 0: the controller serves GET /metrics on 127.0.0.1:port
    nproc_per_node: int = 1  # ranks per node agent (AUTO: its visible GPUs, else 1)
    log_dir: str = ""  # per-rank stdout/stderr files under it
    resume: bool = False  # a state dir whose job already ended: report it, run nothing
    fallback: str = "fail"  # an agent without a controller: "fail" the job, or "independent"
    standby: bool = False  # agents start each rank's next attempt ahead
    preload: tuple[str, ...] = ()  # modules those standbys import ahead (implies standby)

    @property
    def heartbeat_interval(self) -> float:
        """Agents beat at least 4 times per timeout."""
        if self.heartbeat_timeout <= 0:
            return self.heartbeat_s
        return min(self.heartbeat_s, self.heartbeat_timeout / 4)

    @property
    def pods(self) -> list[str]:
        """The pod names, rank order."""
        return [f"{self.job}-worker-{i}" for i in range(self.workers)]


@dataclass
class _AgentProc:
    pod: str
    rank: int
    node: str
    incarnation: str
    proc: asyncio.subprocess.Process | None  # None: it runs on another host


async def spawn_agent(cfg: AgentConfig, env: dict[str, str]) -> asyncio.subprocess.Process:
    """Start `aegis agent` configured by `cfg` (its AEGIS_* variables over `env`), in a
    session of its own, killed if this process dies."""
    return await asyncio.create_subprocess_exec(
        *dies_with_parent([*_python_aegis(), "agent"]),
        env={**env, **cfg.to_env(), Var.LAUNCHER_PID: str(os.getpid())},
        start_new_session=True,
    )


class LaunchError(AegisError):
    """The job cannot be launched as asked (state directory in use, finished, not a dir)."""


@contextlib.contextmanager
def claim_state_dir(state_dir: Path) -> Iterator[None]:
    """Make `state_dir` and hold its lock while the job runs: one launcher per state dir (the
    kernel drops the lock with the process, so a killed launcher leaves none behind)."""
    if state_dir.exists() and not state_dir.is_dir():
        raise LaunchError(f"--state-dir {state_dir} exists and is not a directory")
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
        lock = open(state_dir / LOCK_FILE, "a+")  # noqa: SIM115 - held for the whole job
    except OSError as exc:
        raise LaunchError(f"cannot use --state-dir {state_dir}: {exc}") from None
    try:
        try:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip() or "another process"
            raise LaunchError(
                f"{state_dir} is in use by another aegis run (pid {holder}); one state "
                "directory holds one job"
            ) from None
        lock.seek(0)
        lock.truncate()
        lock.write(str(os.getpid()))
        lock.flush()
        yield
    finally:
        lock.close()


def finished_phase(state_dir: Path) -> str | None:
    """The terminal phase of the job saved in `state_dir`, None if none ended there."""
    status = FileStatusStore(state_dir / STATUS_FILE).load()
    if status is None:
        return None
    if status.phase == "Succeed" or (status.phase == "Failed" and status.should_quit):
        return status.phase
    return None


def never_joined(state_dir: Path) -> bool:
    """Whether no agent ever joined the controller of `state_dir`: an agent that exits then
    has run its command alone. Every join is a WAL record before it is answered, and a
    snapshot (taken up to 0.5 s after a commit, docs/persistence.md) keeps the incarnations;
    so none joined while the log is empty and the snapshot, if any, is Pending with none."""
    try:
        status = FileStatusStore(state_dir / STATUS_FILE).load()
        logged = WriteAheadLog(state_dir / WAL_FILE).read()
    except AegisError:
        return False
    if logged:
        return False
    if status is None:
        return True
    joined = (status.runtime or {}).get("incarnations") or {}
    return status.phase == "Pending" and status.master_seq == 0 and not any(joined.values())


def _restart_failed(attempt: int, exc: BaseException) -> None:
    log.warning("nats-server restart %d failed: %s", attempt, exc)


def _python_aegis() -> list[str]:
    return [sys.executable, "-m", "aegis.cli"]


class Launcher:
    """Starts and supervises every process of a local job."""

    def __init__(self, job: LocalJob) -> None:
        self.job = job
        # what an earlier launcher left when it was SIGKILLed (its temp dirs) goes now
        for prefix in (PROGRESS_DIR_PREFIX, NATS_DIR_PREFIX, STATE_DIR_PREFIX):
            for path in sweep_orphaned_tempdirs(prefix):
                log.info("removed %s, left by a launcher that was killed", path)
        # without --state-dir the job's files live in a temp dir of this launcher's, removed
        # when it ends (it holds credentials); --state-dir keeps them
        self.temporary = job.state_dir is None
        self.state_dir = job.state_dir or owned_tempdir(STATE_DIR_PREFIX)
        # progress files live apart from the state dir: a path the training command is told
        # never leads to ctl.json or the controller's credentials
        self.progress_dir = owned_tempdir(PROGRESS_DIR_PREFIX)
        self.expected: dict[str, str] = {}  # pod -> the incarnation it runs as now
        self._alone: dict[str, int] = {}  # pod -> exit code of a command it ran alone
        self.agents: dict[str, _AgentProc] = {}
        self.controller: asyncio.subprocess.Process | None = None
        self.node_count = 0
        self.container_restarts: dict[tuple[str, str], int] = {}  # (pod, node) -> Level 2 count
        self.done = asyncio.Event()
        self.exit_code = 1
        self.resuming = False  # the state dir holds a job an earlier run left unfinished
        self._quitting = False  # the controller was told to quit (a command cannot start)
        self._watchers: set[asyncio.Task[None]] = set()
        self.plane: ControlPlane | None = None

    async def run(self) -> int:
        """Run the job to its end; the exit code (0 Succeed, non-zero otherwise). The job's
        credentials go with it (its files stay: `aegis ctl status` reads them)."""
        with claim_state_dir(self.state_dir):  # only the launcher holding it touches it
            try:
                return await self._claimed()
            finally:
                for name in CREDENTIAL_FILES:
                    with contextlib.suppress(OSError):
                        (self.state_dir / name).unlink()

    def forget(self) -> None:
        """Remove a temporary state dir (none was asked for: nothing is kept)."""
        if self.temporary:
            shutil.rmtree(self.state_dir, ignore_errors=True)

    async def _claimed(self) -> int:
        ended = finished_phase(self.state_dir)
        if ended is not None:
            if not self.job.resume:
                raise LaunchError(
                    f"{self.state_dir} holds a job that already ended {ended}: nothing would "
                    "run. Use another --state-dir, or --resume to report that result again"
                )
            print(f"aegis: job already ended {ended}; nothing was run", file=sys.stderr)
            return 0 if ended == "Succeed" else 1
        # a job saved by an earlier run that was interrupted: its agents are gone with it
        self.resuming = (self.state_dir / STATUS_FILE).exists()
        if self.resuming:
            print(
                f"aegis: resuming the job saved in {self.state_dir} (the interruption "
                "counts no retry)",
                file=sys.stderr,
                flush=True,
            )
        job = {"namespace": self.job.namespace, "job": self.job.job, "pods": self.job.pods}
        (self.state_dir / JOB_FILE).write_text(json.dumps({**job, "maxRetry": self.job.max_retry}))
        return await self._run()

    async def _run(self) -> int:
        async with control_plane(self._plane_config()) as plane:
            self.plane = plane
            self.expected = plane.expected
            self._ctl_args = plane.controller_argv()[len(_python_aegis()) :]
            self._ctl_env = plane.controller_env()  # the job's settings, whole
            self._agent_base = self._agent_config(plane)
            return await self._supervise(plane.nats)

    def _plane_config(self) -> ControlPlaneConfig:
        """The control plane of a job on this machine: loopback, no TLS."""
        return ControlPlaneConfig(
            job=self.job.job,
            namespace=self.job.namespace,
            workers=self.job.workers,
            max_retry=self.job.max_retry,
            state_dir=self.state_dir,
            heartbeat_timeout=self.job.heartbeat_timeout,
            heartbeat_rate=self.job.heartbeat_rate,
            metrics_port=self.job.metrics_port,
            # AGENT_NATS_URL_ENV (tests only): agents reach NATS through another address (the
            # fault-injecting proxy of tests/faults); the controller and ctl connect directly
            agent_nats_url=os.environ.get(AGENT_NATS_URL_ENV, ""),
        )

    def _agent_config(self, plane: ControlPlane) -> AgentConfig:
        """What every agent of the job is told (its pod, rank and node are set per agent)."""
        return AgentConfig(
            job=self.job.job,
            namespace=self.job.namespace,
            pod="",
            rank=0,
            world_size=self.job.workers,
            command=tuple(self.job.command),
            grpc_target=plane.grpc_target,
            token=plane.bootstrap_token,
            connect_timeout=self.job.connect_timeout,
            heartbeat_s=self.job.heartbeat_interval,
            hang_timeout=self.job.hang_timeout,
            checkpoint_file=self.job.checkpoint_file,
            progress_dir=str(self.progress_dir),
            pod_ip="127.0.0.1",
            node_ip="127.0.0.1",
            nproc_per_node=self.job.nproc_per_node,
            fallback=self.job.fallback,
            log_dir=self.job.log_dir,
            standby=self.job.standby or bool(self.job.preload),
            preload=self.job.preload,
            ca=plane.ca_pem,
        )

    async def _supervise_bus(self, nats: NatsServer) -> None:
        """Restart nats-server on its port when it dies (controller and agents reconnect; a
        bus outage is not a pod loss); after `aegis.retry.NATS_RESTART`'s failed tries in a
        row the job ends, clearly, instead of waiting for a bus that does not come back."""
        while not self.done.is_set():
            code = await nats.wait_exit()
            if self.done.is_set():
                return
            print(f"aegis: nats-server exited {code}; restarting it", file=sys.stderr, flush=True)
            try:
                await retry.call_async(
                    nats.restart, retry.NATS_RESTART, (NatsServerError, OSError), _restart_failed
                )
            except (NatsServerError, OSError):
                tries = retry.NATS_RESTART.tries
                print(
                    f"aegis: nats-server did not come back ({tries} tries): the job fails",
                    file=sys.stderr,
                    flush=True,
                )
                self.interrupt(1)
                return

    async def _supervise(self, nats: NatsServer) -> int:
        bus = supervised(self._supervise_bus(nats), "nats-server", lambda _: self.interrupt(1))
        tasks = [asyncio.create_task(self._controller_loop()), bus]
        tasks.append(supervised(self._start_agents(), "agents", lambda _: self.interrupt(1)))
        try:
            await self.done.wait()
        finally:
            for t in tasks:
                t.cancel()
            await self._shutdown()
        return self.exit_code

    async def _start_agents(self) -> None:
        """One agent per pod, each on a node of its own."""
        for rank, pod in enumerate(self.job.pods):
            node = self._new_node()
            assert node is not None  # a machine always has another node slot
            await self._start_agent(pod, rank, node)

    def interrupt(self, code: int) -> None:
        """Ctrl-C / SIGTERM: stop everything, exit with `code`."""
        self.exit_code = code
        self.done.set()

    async def _controller_loop(self) -> None:
        for attempt in range(MAX_CONTROLLER_RESTARTS + 1):
            # only the first controller of a resumed run may take the saved incarnations over
            resumed = ["--resumed-run"] if self.resuming and attempt == 0 else []
            self.controller = await asyncio.create_subprocess_exec(
                *dies_with_parent([*_python_aegis(), *self._ctl_args, *resumed]),
                stdin=asyncio.subprocess.PIPE,
                start_new_session=True,
                env={**os.environ, **self._ctl_env, Var.LAUNCHER_PID: str(os.getpid())},
            )
            code = await self.controller.wait()
            if code in CONTROLLER_EXIT_BY_PHASE.values():
                self.exit_code = 0 if code == 0 else 1
                self.done.set()
                return
            if self.done.is_set():
                return
            if code == CONTROLLER_REFUSED:
                print(
                    f"aegis: the controller refused to run (exit {code}; its error is above): "
                    "not restarting it, the job ends",
                    file=sys.stderr,
                    flush=True,
                )
                self.interrupt(1)
                return
            print(
                f"aegis: controller exited {code}; restarting it ({attempt + 1})",
                file=sys.stderr,
                flush=True,
            )
        print("aegis: the controller keeps dying; giving up", file=sys.stderr, flush=True)
        self.interrupt(1)

    def _new_node(self) -> str | None:
        """A fresh node slot for a pod to run on (None: there is none, the job fails)."""
        self.node_count += 1
        return f"node-{self.node_count}"

    def _agent_cfg(self, pod: str, rank: int, node: str) -> AgentConfig:
        """Agent `pod`'s configuration on `node`, as a new incarnation the job expects."""
        inc = secrets.token_hex(8)
        self.expected[pod] = inc
        return dataclasses.replace(
            self._agent_base,
            pod=pod,
            rank=rank,
            node=node,
            incarnation=inc,
            container_restarts=self.container_restarts.get((pod, node), 0),
            simulate=self.job.simulate.get(node, ()),
        )

    async def _start_agent(self, pod: str, rank: int, node: str) -> None:
        cfg = self._agent_cfg(pod, rank, node)
        proc = await spawn_agent(cfg, {**os.environ, **self.job.extra_env})
        self._track(_AgentProc(pod, rank, node, cfg.incarnation, proc))

    def _track(self, agent: _AgentProc) -> None:
        """`agent` is the pod's current incarnation: its exit is handled (`_agent_exited`)."""
        self.agents[agent.pod] = agent
        if agent.proc is None:
            return  # another host reports its exit
        watch = asyncio.create_task(self._watch_agent(agent, agent.proc))
        self._watchers.add(watch)
        watch.add_done_callback(self._watchers.discard)

    async def _watch_agent(self, agent: _AgentProc, proc: asyncio.subprocess.Process) -> None:
        await self._agent_exited(agent, await proc.wait())

    async def _agent_exited(self, agent: _AgentProc, code: int) -> None:
        """Agent `agent` exited with `code`: restart it in place, reschedule it (node fault)
        or end the job, as the exit code says."""
        if self.done.is_set() or self.agents.get(agent.pod) is not agent:
            return
        if code == AgentExit.NO_CONTROLLER:
            print(
                f"aegis: {agent.pod} could not reach the controller within "
                f"{self.job.connect_timeout:g} s and --fallback is fail: the job fails",
                file=sys.stderr,
                flush=True,
            )
            self.interrupt(1)
            return
        if self.job.fallback == "independent" and self._never_joined():
            self._alone[agent.pod] = code  # it ran the command alone: not restarted
            if len(self._alone) == len(self.job.pods):
                ok = all(c == 0 for c in self._alone.values())
                print(
                    f"aegis: every agent ran its command alone (no controller); exit codes "
                    f"{self._alone}",
                    file=sys.stderr,
                    flush=True,
                )
                self.interrupt(0 if ok else 1)
            return
        if code == AgentExit.LEFT:  # left after the final order
            return
        if code == AgentExit.BAD_COMMAND:  # the user's error (the agent said why): not restarted
            self._quit_bad_command(agent)
            return
        node: str | None = agent.node
        event = PodLost(agent.pod, agent.incarnation, code, agent.node)
        if code == AgentExit.RESTART_CONTAINER:
            key = (agent.pod, agent.node)
            self.container_restarts[key] = self.container_restarts.get(key, 0) + 1
            event = dataclasses.replace(
                event,
                container_restarts=self.container_restarts[key],
                container_restart_limit=MAX_CONTAINER_RESTARTS,
            )
            said = (
                f"{agent.pod} restarts its container on {agent.node} (Level 2, "
                f"{self.container_restarts[key]} of {MAX_CONTAINER_RESTARTS})"
            )
        elif code == AgentExit.NODE_FAULT:  # a node fault, or a slow node evicted
            node = self._new_node()
            said = f"{agent.pod} left {agent.node} (agent exit 1); rescheduled to {node}"
        else:
            said = f"{agent.pod}'s agent exited {code}; restarted on {node}"
        if node is not None:
            event = dataclasses.replace(event, next_node=node)
        # the controller says it, with what it counts; the launcher only when it cannot
        if not self._tell_controller(event) and node is not None:
            print(f"aegis: {said}", file=sys.stderr, flush=True)
        if node is None:
            self._no_node_for(agent.pod, f"it left {agent.node} with a node fault")
            return
        await self._start_agent(agent.pod, agent.rank, node)

    def _quit_bad_command(self, agent: _AgentProc) -> None:
        """An agent found that the command cannot start (exit 78): the job quits, nothing is
        restarted and no node is blamed; without a controller to tell, the launcher ends it."""
        if self._quitting:
            return  # every agent finds it: the controller is told once
        self._quitting = True
        problem = command_problem(list(self.job.command)) or "see the agent's line above"
        why = f"{agent.pod}: the command cannot start: {problem}"
        if not self._tell_controller(Quit(why)):
            print(f"aegis: {why}: the job fails", file=sys.stderr, flush=True)
            self.interrupt(1)

    def _no_node_for(self, pod: str, why: str) -> None:
        """No node can take `pod`: the job fails, saying so."""
        print(
            f"aegis: {pod} has no node to run on ({why}) and no spare node joined: the job "
            "fails (start spare nodes with --nnodes MIN:MAX)",
            file=sys.stderr,
            flush=True,
        )
        self.interrupt(1)

    def _never_joined(self) -> bool:
        return never_joined(self.state_dir)

    def _tell_controller(self, event: LauncherEvent) -> bool:
        """Write `event` to the controller's stdin; False if no controller can read it (a
        restarted controller infers a pod's restart from its new incarnation)."""
        ctl = self.controller
        if ctl is None or ctl.stdin is None or ctl.returncode is not None:
            return False
        try:
            ctl.stdin.write(event.to_line())
        except (OSError, RuntimeError):
            return False
        return True

    async def _shutdown(self) -> None:
        procs = [a.proc for a in self.agents.values() if a.proc is not None]
        if self.controller is not None:
            procs.append(self.controller)
        await asyncio.gather(*(terminate_group(p) for p in procs))
        shutil.rmtree(self.progress_dir, ignore_errors=True)


async def terminate_group(proc: asyncio.subprocess.Process) -> None:
    """SIGTERM the process group, SIGKILL after the grace period."""
    if proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        await asyncio.wait_for(proc.wait(), _GRACE_S)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()


async def run_local(job: LocalJob, launcher: Launcher | None = None) -> int:
    """`aegis run` body: a Launcher (this machine's, unless given) with SIGINT/SIGTERM wired
    to a clean stop."""
    launcher = launcher or Launcher(job)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, launcher.interrupt, terminated_by(sig))
    try:
        code = await launcher.run()
    finally:
        launcher.forget()
    if code in (terminated_by(signal.SIGINT), terminated_by(signal.SIGTERM)):
        print(
            "aegis: interrupted; "
            + (
                "its state was in a temporary dir, now removed (with --state-dir DIR the same "
                "command again resumes a job)"
                if launcher.temporary
                else "run the same command again to resume the job (the interruption counts "
                "no retry)"
            ),
            file=sys.stderr,
            flush=True,
        )
    if launcher.temporary:
        print(
            "aegis: the job's files (step log, fault log, timeline) were in a temporary dir, "
            "now removed: --state-dir DIR keeps them",
            file=sys.stderr,
            flush=True,
        )
        return code
    from aegis.timeline import write_run_timeline  # the run's picture: <state_dir>/timeline.html

    await asyncio.to_thread(write_run_timeline, launcher.state_dir)
    return code
