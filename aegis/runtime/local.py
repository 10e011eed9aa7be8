"""`aegis run`: a whole job on one machine — nats-server, credential server, controller, agents.

The controller runs as a subprocess (`aegis controller`) and is restarted if it dies; the
launcher tells it on stdin when an agent process exits. An agent that exits 1 (node fault)
gets its node blacklisted and is replaced on a fresh node slot; any other exit restarts it in
place (RESTART_CONTAINER_EXIT is Level 2: the launcher counts it per pod and node and tells the
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
import json
import logging
import os
import secrets
import shlex
import signal
import socket
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from aegis.checks.params import DEFAULT_HANG_TIMEOUT_S
from aegis.runtime.agent import MAX_CONTAINER_RESTARTS, RESTART_CONTAINER_EXIT
from aegis.runtime.controller import DEFAULT_HEARTBEAT_TIMEOUT_S, TERMINAL_EXIT
from aegis.runtime.transport.auth import Operator, UserCredentials
from aegis.runtime.transport.grpc_credentials import CredentialServer, CredentialService
from aegis.runtime.transport.nats_server import NatsServer

log = logging.getLogger(__name__)
MAX_CONTROLLER_RESTARTS = 5
CTL_FILE = "ctl.json"  # what `aegis ctl --state-dir` reads
_GRACE_S = 10.0


@dataclass
class LocalJob:
    """The options of `aegis run`."""

    command: list[str]
    workers: int
    max_retry: int = 3
    job: str = "local"
    namespace: str = "default"
    state_dir: Path | None = None
    connect_timeout: float = 10.0
    heartbeat_s: float = 5.0
    heartbeat_timeout: float = DEFAULT_HEARTBEAT_TIMEOUT_S
    hang_timeout: float = DEFAULT_HANG_TIMEOUT_S  # <= 0: no hang detection
    checkpoint_file: str = ""  # marker file meaning "checkpoint done" (besides the API)
    extra_env: dict[str, str] = field(default_factory=dict)
    simulate: dict[str, tuple[str, ...]] = field(default_factory=dict)  # node -> faults
    metrics_port: int = 0  # > 0: the controller serves GET /metrics on 127.0.0.1:port

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
    proc: asyncio.subprocess.Process


def free_port() -> int:
    """A free loopback TCP port (base of the per-order rendezvous ports)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_private_json(path: Path, obj: object) -> None:
    """Write `obj` as JSON to `path`, readable by this user only (0600 from the start)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        os.fchmod(f.fileno(), 0o600)  # an existing file keeps its mode through O_TRUNC
        json.dump(obj, f)


def _python_aegis() -> list[str]:
    return [sys.executable, "-m", "aegis.cli"]


class Launcher:
    """Starts and supervises every process of a local job."""

    def __init__(self, job: LocalJob) -> None:
        self.job = job
        self.state_dir = job.state_dir or Path(tempfile.mkdtemp(prefix="aegis-run-"))
        self.agents: dict[str, _AgentProc] = {}
        self.controller: asyncio.subprocess.Process | None = None
        self.node_count = 0
        self.blacklist: set[str] = set()
        self.container_restarts: dict[tuple[str, str], int] = {}  # (pod, node) -> Level 2 count
        self.done = asyncio.Event()
        self.exit_code = 1
        self._watchers: set[asyncio.Task[None]] = set()

    async def run(self) -> int:
        """Run the job to its end; the exit code (0 Succeed, non-zero otherwise)."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        op = Operator()
        account = op.create_job_account(self.job.namespace, self.job.job)
        async with NatsServer(op, [account]) as nats:
            service = CredentialService(nats.url, [account])
            async with CredentialServer(service) as grpc_server:
                creds = account.controller_credentials()
                creds_path = self.state_dir / "controller.creds.json"
                write_private_json(creds_path, {"jwt": creds.user_jwt, "seed": creds.seed.decode()})
                self._write_ctl(nats.url, account.ctl_credentials())
                self._ctl_args = [
                    "controller",
                    "--state-dir",
                    str(self.state_dir),
                    "--job",
                    self.job.job,
                    "--namespace",
                    self.job.namespace,
                    "--workers",
                    str(self.job.workers),
                    "--max-retry",
                    str(self.job.max_retry),
                    "--nats-url",
                    nats.url,
                    "--creds",
                    str(creds_path),
                    "--port-base",
                    str(free_port()),
                    "--heartbeat-timeout",
                    str(self.job.heartbeat_timeout),
                    "--metrics-port",
                    str(self.job.metrics_port),
                    "--events",
                ]
                self._agent_env = {
                    "AEGIS_JOB": self.job.job,
                    "AEGIS_NAMESPACE": self.job.namespace,
                    "AEGIS_WORLD_SIZE": str(self.job.workers),
                    "AEGIS_COMMAND": json.dumps(self.job.command),
                    "AEGIS_GRPC": grpc_server.address,
                    "AEGIS_BOOTSTRAP_TOKEN": account.bootstrap_token,
                    "AEGIS_CONNECT_TIMEOUT": str(self.job.connect_timeout),
                    "AEGIS_HEARTBEAT_S": str(self.job.heartbeat_interval),
                    "AEGIS_HANG_TIMEOUT": str(self.job.hang_timeout),
                    "AEGIS_CHECKPOINT_FILE": self.job.checkpoint_file,
                    "AEGIS_PROGRESS_DIR": str(self.state_dir),
                    "AEGIS_POD_IP": "127.0.0.1",
                    "AEGIS_NODE_IP": "127.0.0.1",
                    "AEGIS_LAUNCHER_PID": str(os.getpid()),
                    **self.job.extra_env,
                }
                return await self._supervise()

    def _write_ctl(self, nats_url: str, creds: UserCredentials) -> None:
        path = self.state_dir / CTL_FILE
        write_private_json(
            path,
            {
                "natsUrl": nats_url,
                "jwt": creds.user_jwt,
                "seed": creds.seed.decode(),
                "namespace": self.job.namespace,
                "job": self.job.job,
                "pods": self.job.pods,
            },
        )
        print(
            f"aegis: control this job with: aegis ctl --state-dir "
            f"{shlex.quote(str(self.state_dir))} status "
            f"(credentials in {path})",
            file=sys.stderr,
            flush=True,
        )

    async def _supervise(self) -> int:
        tasks = [asyncio.create_task(self._controller_loop())]
        for rank, pod in enumerate(self.job.pods):
            await self._start_agent(pod, rank, self._new_node())
        try:
            await self.done.wait()
        finally:
            for t in tasks:
                t.cancel()
            await self._shutdown()
        return self.exit_code

    def interrupt(self, code: int) -> None:
        """Ctrl-C / SIGTERM: stop everything, exit with `code`."""
        self.exit_code = code
        self.done.set()

    async def _controller_loop(self) -> None:
        for attempt in range(MAX_CONTROLLER_RESTARTS + 1):
            self.controller = await asyncio.create_subprocess_exec(
                *_python_aegis(),
                *self._ctl_args,
                stdin=asyncio.subprocess.PIPE,
                start_new_session=True,
                env={**os.environ, "AEGIS_LAUNCHER_PID": str(os.getpid())},
            )
            code = await self.controller.wait()
            if code in TERMINAL_EXIT.values():
                self.exit_code = 0 if code == 0 else 1
                self.done.set()
                return
            if self.done.is_set():
                return
            print(
                f"aegis: controller exited {code}; restarting it ({attempt + 1})",
                file=sys.stderr,
                flush=True,
            )
        print("aegis: the controller keeps dying; giving up", file=sys.stderr, flush=True)
        self.interrupt(1)

    def _new_node(self) -> str:
        self.node_count += 1
        return f"node-{self.node_count}"

    async def _start_agent(self, pod: str, rank: int, node: str) -> None:
        inc = secrets.token_hex(8)
        env = {
            **os.environ,
            **self._agent_env,
            "AEGIS_POD": pod,
            "AEGIS_RANK": str(rank),
            "AEGIS_NODE": node,
            "AEGIS_INCARNATION": inc,
            "AEGIS_CONTAINER_RESTARTS": str(self.container_restarts.get((pod, node), 0)),
        }
        if node in self.job.simulate:
            env["AEGIS_SIMULATE"] = ",".join(self.job.simulate[node])
        proc = await asyncio.create_subprocess_exec(
            *_python_aegis(), "agent", env=env, start_new_session=True
        )
        agent = _AgentProc(pod, rank, node, inc, proc)
        self.agents[pod] = agent
        watch = asyncio.create_task(self._watch_agent(agent))
        self._watchers.add(watch)
        watch.add_done_callback(self._watchers.discard)

    async def _watch_agent(self, agent: _AgentProc) -> None:
        code = await agent.proc.wait()
        if self.done.is_set() or self.agents.get(agent.pod) is not agent:
            return
        if code == 0:  # left after the final order
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
        node = agent.node
        if code == RESTART_CONTAINER_EXIT:
            key = (agent.pod, node)
            self.container_restarts[key] = self.container_restarts.get(key, 0) + 1
            print(
                f"aegis: {agent.pod} restarts its container on {node} (Level 2, "
                f"{self.container_restarts[key]} of {MAX_CONTAINER_RESTARTS})",
                file=sys.stderr,
                flush=True,
            )
        if code == 1:
            self.blacklist.add(node)
            node = self._new_node()
            print(
                f"aegis: {agent.pod} left {agent.node} (node fault); rescheduled to {node}",
                file=sys.stderr,
                flush=True,
            )
        await self._start_agent(agent.pod, agent.rank, node)

    def _tell_controller(self, event: dict[str, object]) -> None:
        ctl = self.controller
        if ctl is None or ctl.stdin is None or ctl.returncode is not None:
            return  # a restarted controller infers the restart from the new incarnation
        with contextlib.suppress(OSError, RuntimeError):
            ctl.stdin.write((json.dumps(event) + "\n").encode())

    async def _shutdown(self) -> None:
        procs = [a.proc for a in self.agents.values()]
        if self.controller is not None:
            procs.append(self.controller)
        await asyncio.gather(*(_terminate(p) for p in procs))


async def _terminate(proc: asyncio.subprocess.Process) -> None:
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


async def run_local(job: LocalJob) -> int:
    """`aegis run` body: a Launcher with SIGINT/SIGTERM wired to a clean stop."""
    launcher = Launcher(job)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, launcher.interrupt, 128 + sig)
    return await launcher.run()
