"""`aegis run`: a whole job on one machine — nats-server, credential server, controller, agents.

The controller runs as a subprocess (`aegis controller`) and is restarted if it dies (not if
it refused to run, exit 2: the job ends at once with its error); the launcher tells it on
stdin when an agent process exits. An agent that exits 1 (node fault) gets its node
blacklisted and is replaced on a fresh node slot; any other exit restarts it in
place (AgentExit.RESTART_CONTAINER is Level 2: the launcher counts it per pod and node and tells the
new agent, which escalates to Level 3 after MAX_CONTAINER_RESTARTS). Every child has its own
process group, so Ctrl-C leaves nothing running, and the launcher is a child subreaper: what a
killed agent's ranks leave comes to it and is ended (`sweep_strays`).

Each incarnation it starts proves itself with a secret of its own (launcher/proofs.py), which
`spawn_agent` hands to the agent on an inherited socket (aegis.runtime.handover), here or, for
a job across hosts, on the node the agent runs on; when an agent exits, its credential is
revoked on the server before its replacement starts (docs/security.md).

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
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from aegis.checks.params import DEFAULT_HANG_TIMEOUT_S
from aegis.errors import AegisError
from aegis.protocol.environment import DEFAULT_HEARTBEAT_RATE, AgentConfig, Var
from aegis.protocol.exitcodes import (
    CONTROLLER_EXIT_BY_PHASE,
    AgentExit,
    ControllerExit,
    terminated_by,
)
from aegis.runtime.agent.containment import children, kill_tree, set_child_subreaper
from aegis.runtime.agent.core import MAX_CONTAINER_RESTARTS
from aegis.runtime.controller.core import DEFAULT_HEARTBEAT_TIMEOUT_S
from aegis.runtime.controller.store import FileStatusStore
from aegis.runtime.controller.wal import WriteAheadLog
from aegis.runtime.errors import NatsServerError
from aegis.runtime.handover import hand_over
from aegis.runtime.launcher.control_plane import CTL_FILE as CTL_FILE
from aegis.runtime.launcher.control_plane import (
    ControlPlane,
    ControlPlaneConfig,
    control_plane,
)
from aegis.runtime.launcher.control_plane import LaunchError as LaunchError
from aegis.runtime.launcher.control_plane import free_port as free_port
from aegis.runtime.launcher.control_plane import write_private_json as write_private_json
from aegis.runtime.launcher.proofs import IncarnationProofs
from aegis.runtime.lifetime import (
    dies_with_parent,
    keep_memory_private,
    owned_tempdir,
    supervised,
    sweep_orphaned_tempdirs,
)
from aegis.runtime.transport.grpc_credentials import DEFAULT_TTL_S
from aegis.runtime.transport.nats_server import NATS_DIR_PREFIX, NatsServer

log = logging.getLogger(__name__)
MAX_CONTROLLER_RESTARTS = 5  # in a row: crashes with no step saved between them
STRAY_SWEEP_S = 1.0  # how often the launcher ends what a killed agent's ranks left
# `aegis controller` exits 2 when it refuses to run (aegis.cli: an AegisError such as a status
# file that is not a state of the spec, or bad arguments): the same again on every restart
CONTROLLER_REFUSED = 2
NATS_RESTARTS = 5  # tries to bring nats-server back (0.5 s, 1 s, 2 s, 4 s, 5 s apart)
PROGRESS_DIR_PREFIX = "aegis-progress-"  # the ranks' progress and error files
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
    max_retry: int = 3
    job: str = ""  # "": a name of its own (`local-<random>`), no other job's on this machine
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
    credential_ttl: float = DEFAULT_TTL_S  # a worker JWT's lifetime (renewed at half of it)

    def __post_init__(self) -> None:
        if not self.job:  # the job its state dir holds, else a name of its own
            self.job = saved_job_name(self.state_dir) or unique_job_name()

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


def unique_job_name() -> str:
    """A default job name no other job on this machine has (`local-` and 6 random hex
    digits): jobs of one user apart by name too, their ctl, subjects and progress files."""
    return f"local-{secrets.token_hex(3)}"


def saved_job_name(state_dir: Path | None) -> str:
    """The name of the job `state_dir` holds (its ctl.json), '' if none: `aegis run` started
    again on it resumes that job under its own name."""
    if state_dir is None:
        return ""
    try:
        name = json.loads((state_dir / CTL_FILE).read_text()).get("job", "")
    except (OSError, ValueError, AttributeError):
        return ""
    return name if isinstance(name, str) else ""


@dataclass
class _AgentProc:
    pod: str
    rank: int
    node: str
    incarnation: str
    proc: asyncio.subprocess.Process | None  # None: it runs on another host


async def spawn_agent(cfg: AgentConfig, env: dict[str, str]) -> asyncio.subprocess.Process:
    """Start `aegis agent` configured by `cfg` (its AEGIS_* variables over `env`), in a
    session of its own, killed if this process dies. Its proof (`cfg.token`: its
    incarnation's secret) is handed over on an inherited socket, never in its environment
    (aegis.runtime.handover): the one place a secret goes from a launcher to its agent."""
    agent_env = {**env, **cfg.to_env(), Var.LAUNCHER_PID: str(os.getpid())}
    agent_env.pop(Var.BOOTSTRAP_TOKEN, None)
    handed = hand_over(cfg.token) if cfg.token else None
    if handed is not None:
        agent_env.update(handed.env)
    try:
        return await asyncio.create_subprocess_exec(
            *dies_with_parent([*_python_aegis(), "agent"]),
            env=agent_env,
            start_new_session=True,
            pass_fds=() if handed is None else (handed.fd,),
        )
    finally:
        if handed is not None:
            handed.close()  # the agent holds the only copy now


@contextlib.contextmanager
def claim_state_dir(state_dir: Path) -> Iterator[None]:
    """Make `state_dir` and hold its lock while the job runs: one launcher per state dir (the
    kernel drops the lock with the process, so a killed launcher leaves none behind)."""
    if state_dir.exists() and not state_dir.is_dir():
        raise LaunchError(f"--state-dir {state_dir} exists and is not a directory")
    try:
        made = not state_dir.exists()
        state_dir.mkdir(parents=True, exist_ok=True)
        if made:  # the job's credentials go in it: nobody else's to list
            state_dir.chmod(0o700)
        lock = os.open(state_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise LaunchError(f"cannot use --state-dir {state_dir}: {exc}") from None
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(lock, 64, 0).decode(errors="replace").strip() or "another process"
            raise LaunchError(
                f"{state_dir} is in use by another aegis run (pid {holder}); one state "
                "directory holds one job"
            ) from None
        try:
            os.ftruncate(lock, 0)
            os.pwrite(lock, str(os.getpid()).encode(), 0)
        except OSError as exc:  # a full disk: said now, before anything starts
            raise LaunchError(f"cannot use --state-dir {state_dir}: {exc}") from None
        yield
    finally:
        os.close(lock)


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


def progress_mark(state_dir: Path) -> int:
    """How far the job saved in `state_dir` has come: the number of the last spec step on
    disk (its snapshot's, or its WAL's last record's); -1 when none can be read."""
    try:
        status = FileStatusStore(state_dir / STATUS_FILE).load()
        logged = WriteAheadLog(state_dir / WAL_FILE).read()
    except AegisError:
        return -1
    steps = [int((status.runtime or {}).get("stepNo", 0))] if status is not None else [-1]
    steps += [int(r.body.get("extras", {}).get("stepNo", -1)) for r in logged[-1:]]
    return max(steps)


def _python_aegis() -> list[str]:
    return [sys.executable, "-m", "aegis.cli"]


class Launcher:
    """Starts and supervises every process of a local job."""

    def __init__(self, job: LocalJob) -> None:
        self.job = job
        self.state_dir = job.state_dir or Path(tempfile.mkdtemp(prefix="aegis-run-"))
        # progress files live apart from the state dir: a path the training command is told
        # never leads to ctl.json or the controller's credentials
        # what an earlier launcher left when it was SIGKILLed (its temp dirs) goes now
        for prefix in (PROGRESS_DIR_PREFIX, NATS_DIR_PREFIX):
            for path in sweep_orphaned_tempdirs(prefix):
                log.info("removed %s, left by a launcher that was killed", path)
        self.progress_dir = owned_tempdir(PROGRESS_DIR_PREFIX)
        self.expected: dict[str, str] = {}  # pod -> the incarnation it runs as now
        self._alone: dict[str, int] = {}  # pod -> exit code of a command it ran alone
        self.agents: dict[str, _AgentProc] = {}
        self.controller: asyncio.subprocess.Process | None = None
        self.node_count = 0
        self.container_restarts: dict[tuple[str, str], int] = {}  # (pod, node) -> Level 2 count
        self.done = asyncio.Event()
        self.exit_code = 1
        self._watchers: set[asyncio.Task[None]] = set()
        self.plane: ControlPlane | None = None
        self.proofs = IncarnationProofs()  # the secret each incarnation proves itself with
        self._spawning = 0  # children being started (not known yet: not strays)
        self._revoked_keys: dict[str, str | None] = {}  # incarnation -> its credential's key
        self._revoked_on_server: set[str] = set()

    async def run(self) -> int:
        """Run the job to its end; the exit code (0 Succeed, non-zero otherwise)."""
        with claim_state_dir(self.state_dir):
            ended = finished_phase(self.state_dir)
            if ended is not None:
                if not self.job.resume:
                    raise LaunchError(
                        f"{self.state_dir} holds a job that already ended {ended}: nothing would "
                        "run. Use another --state-dir, or --resume to report that result again"
                    )
                print(f"aegis: job already ended {ended}; nothing was run", file=sys.stderr)
                return 0 if ended == "Succeed" else 1
            return await self._run()

    async def _run(self) -> int:
        async with control_plane(self._plane_config()) as plane:
            self.plane = plane
            self.expected = plane.expected
            self._ctl_args = plane.controller_argv()[len(_python_aegis()) :]
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
            credential_ttl=self.job.credential_ttl,
            # each incarnation proves itself with the secret made for it alone
            proves=self.proofs.proves,
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
        bus outage is not a pod loss); after NATS_RESTARTS failed tries in a row the job
        ends, clearly, instead of waiting for a bus that does not come back."""
        while not self.done.is_set():
            code = await nats.wait_exit()
            if self.done.is_set():
                return
            print(f"aegis: nats-server exited {code}; restarting it", file=sys.stderr, flush=True)
            for attempt in range(NATS_RESTARTS):
                try:
                    await nats.restart()
                    break
                except (NatsServerError, OSError) as exc:
                    log.warning("nats-server restart %d failed: %s", attempt + 1, exc)
                    await asyncio.sleep(min(0.5 * 2**attempt, 5.0))
            else:
                print(
                    f"aegis: nats-server did not come back ({NATS_RESTARTS} tries): the job fails",
                    file=sys.stderr,
                    flush=True,
                )
                self.interrupt(1)
                return

    async def _supervise(self, nats: NatsServer) -> int:
        bus = supervised(self._supervise_bus(nats), "nats-server", lambda _: self.interrupt(1))
        strays = supervised(self._sweep_strays(), "stray sweep", lambda _: self.interrupt(1))
        tasks = [asyncio.create_task(self._controller_loop()), bus, strays]
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

    async def _sweep_strays(self) -> None:
        """End what comes to this launcher (a child subreaper) that it did not start: the
        processes a rank left behind when its agent was killed outright (its reaper died
        with it), every STRAY_SWEEP_S; a process left by a rank never outlives its agent
        for longer."""
        while not self.done.is_set():
            await asyncio.sleep(STRAY_SWEEP_S)
            if not self._spawning:  # a child being started is not known yet
                self.sweep_strays()

    def sweep_strays(self) -> list[int]:
        """Kill (with everything under them) this process's children it did not start, and
        reap those dead (they were never asyncio's); the pids killed."""
        ours = {a.proc.pid for a in self.agents.values() if a.proc is not None}
        ours |= {p.pid for p in (self.controller,) if p is not None}
        ours |= {pid for pid in (self.plane.nats.pid if self.plane else None,) if pid}
        killed = []
        for pid in children(os.getpid()):
            if pid not in ours:
                killed += kill_tree(pid)
                log.warning("ended process %d, left by a rank whose agent was killed", pid)
        for pid in children(os.getpid(), zombies=True):
            if pid not in ours:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)
        return killed

    def interrupt(self, code: int) -> None:
        """Ctrl-C / SIGTERM: stop everything, exit with `code`."""
        self.exit_code = code
        self.done.set()

    async def _controller_loop(self) -> None:
        crashes = 0  # in a row: without the job's state moving on between them
        while True:
            mark = progress_mark(self.state_dir)
            # its state dir is handed over, neither in its command line nor in its environment
            handed = hand_over(str(self.state_dir), Var.STATE_DIR_FD)
            self._spawning += 1
            try:
                self.controller = await asyncio.create_subprocess_exec(
                    *dies_with_parent([*_python_aegis(), *self._ctl_args]),
                    stdin=asyncio.subprocess.PIPE,
                    start_new_session=True,
                    env={**os.environ, Var.LAUNCHER_PID: str(os.getpid()), **handed.env},
                    pass_fds=(handed.fd,),
                )
            finally:
                self._spawning -= 1
                handed.close()
            code = await self.controller.wait()
            if code in CONTROLLER_EXIT_BY_PHASE.values():
                self.exit_code = 0 if code == 0 else 1
                self.done.set()
                return
            if self.done.is_set():
                return
            if code == ControllerExit.STORAGE:
                print(
                    f"aegis: the controller could not save the job's state (exit {code}; what "
                    "ran is said above): not restarting it, the job ends",
                    file=sys.stderr,
                    flush=True,
                )
                self.interrupt(1)
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
            # "in a row": a controller that moved the job on before it died starts a new row
            crashes = 1 if progress_mark(self.state_dir) > mark else crashes + 1
            if crashes > MAX_CONTROLLER_RESTARTS:
                print(
                    f"aegis: the controller died {crashes} times in a row without the job "
                    "moving on; giving up",
                    file=sys.stderr,
                    flush=True,
                )
                self.interrupt(1)
                return
            print(
                f"aegis: controller exited {code}; restarting it ({crashes} of "
                f"{MAX_CONTROLLER_RESTARTS} in a row)",
                file=sys.stderr,
                flush=True,
            )

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
            token=self.proofs.new(pod, inc),  # handed over by spawn_agent, wherever it runs
            container_restarts=self.container_restarts.get((pod, node), 0),
            simulate=self.job.simulate.get(node, ()),
        )

    async def _start_agent(self, pod: str, rank: int, node: str) -> None:
        cfg = self._agent_cfg(pod, rank, node)
        self._spawning += 1
        try:
            proc = await spawn_agent(cfg, {**os.environ, **self.job.extra_env})
        finally:
            self._spawning -= 1
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
        # its credential dies with it: no renewal, no proof from now on, the controller told
        # at once (what it sent after that is refused), then revoked on the server (whoever
        # holds a copy, the training command that stole it, is cut off)
        key = self._retire(agent)
        try:
            await self._after_exit(agent, code)
        finally:
            await self._revoke(agent, key)

    async def _after_exit(self, agent: _AgentProc, code: int) -> None:
        """What an agent's exit leads to: the job ends, or the controller is told and the
        pod gets a new incarnation."""
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
        self._tell_controller(
            {
                "event": "lost",
                "pod": agent.pod,
                "incarnation": agent.incarnation,
                "exitCode": code,
                "node": agent.node,
            }
        )
        await self._revoke(agent, self._retire(agent))  # before its replacement exists
        node = agent.node
        if code == AgentExit.RESTART_CONTAINER:
            key = (agent.pod, agent.node)
            self.container_restarts[key] = self.container_restarts.get(key, 0) + 1
            print(
                f"aegis: {agent.pod} restarts its container on {agent.node} (Level 2, "
                f"{self.container_restarts[key]} of {MAX_CONTAINER_RESTARTS})",
                file=sys.stderr,
                flush=True,
            )
        if code == AgentExit.NODE_FAULT:
            fresh = self._new_node()
            if fresh is None:
                self._no_node_for(agent.pod, f"it left {agent.node} with a node fault")
                return
            node = fresh
            print(
                f"aegis: {agent.pod} left {agent.node} (node fault); rescheduled to {node}",
                file=sys.stderr,
                flush=True,
            )
        await self._start_agent(agent.pod, agent.rank, node)

    def _no_node_for(self, pod: str, why: str) -> None:
        """No node can take `pod`: the job fails, saying so."""
        print(
            f"aegis: {pod} has no node to run on ({why}) and no spare node joined: the job "
            "fails (start spare nodes with --nnodes MIN:MAX)",
            file=sys.stderr,
            flush=True,
        )
        self.interrupt(1)

    def _retire(self, agent: _AgentProc) -> str | None:
        """`agent`'s incarnation ended: its secret proves nothing, its credential is never
        renewed or issued again. The public key it was issued for (None if none was)."""
        self.proofs.forget(agent.pod, agent.incarnation)
        assert self.plane is not None
        service = self.plane.service
        key = service.revoke(self.job.namespace, self.job.job, agent.pod, agent.incarnation)
        self._revoked_keys.setdefault(agent.incarnation, key)
        return self._revoked_keys[agent.incarnation]

    async def _revoke(self, agent: _AgentProc, key: str | None) -> None:
        """Revoke `key` (`agent`'s credential) on the server, once: its connections close."""
        if key is None or key in self._revoked_on_server:
            return
        self._revoked_on_server.add(key)
        assert self.plane is not None
        try:
            await self.plane.nats.revoke(self.job.namespace, self.job.job, [key])
        except (NatsServerError, OSError) as exc:  # a server being restarted: it expires
            log.warning("revoking %s's credential failed: %s", agent.pod, exc)

    def _never_joined(self) -> bool:
        return never_joined(self.state_dir)

    def _tell_controller(self, event: dict[str, object]) -> None:
        ctl = self.controller
        if ctl is None or ctl.stdin is None or ctl.returncode is not None:
            return  # a restarted controller infers the restart from the new incarnation
        with contextlib.suppress(OSError, RuntimeError):
            ctl.stdin.write((json.dumps(event) + "\n").encode())

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
    keep_memory_private()  # the job's NATS operator and account keys live in this process
    set_child_subreaper()  # what a killed agent's ranks leave comes here, and is ended
    launcher = launcher or Launcher(job)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, launcher.interrupt, terminated_by(sig))
    code = await launcher.run()
    from aegis.timeline import write_run_timeline  # the run's picture: <state_dir>/timeline.html

    await asyncio.to_thread(write_run_timeline, launcher.state_dir)
    return code
