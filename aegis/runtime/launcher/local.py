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
import json
import logging
import os
import secrets
import shutil
import signal
import sys

from aegis.protocol.environment import AgentConfig, Var
from aegis.protocol.exitcodes import (
    CONTROLLER_EXIT_BY_PHASE,
    AgentExit,
    ControllerExit,
    terminated_by,
)
from aegis.protocol.launcher_events import LauncherEvent, PodLost, Quit
from aegis.runtime.agent.command import command_problem
from aegis.runtime.agent.containment import children, set_child_subreaper
from aegis.runtime.agent.core import MAX_CONTAINER_RESTARTS
from aegis.runtime.errors import NatsServerError
from aegis.runtime.handover import hand_over
from aegis.runtime.launcher.agents import AgentProc, spawn_agent, sweep_strays, terminate_group
from aegis.runtime.launcher.agents import python_aegis as _python_aegis
from aegis.runtime.launcher.bus_keeper import keep_bus_up
from aegis.runtime.launcher.control_plane import CTL_FILE as CTL_FILE
from aegis.runtime.launcher.control_plane import (
    ControlPlane,
    ControlPlaneConfig,
    control_plane,
)
from aegis.runtime.launcher.control_plane import LaunchError as LaunchError
from aegis.runtime.launcher.control_plane import free_port as free_port
from aegis.runtime.launcher.control_plane import write_private_json as write_private_json
from aegis.runtime.launcher.local_job import AGENT_PROCESS_BYTES as AGENT_PROCESS_BYTES
from aegis.runtime.launcher.local_job import LocalJob, say_shared_host
from aegis.runtime.launcher.local_job import available_memory as available_memory
from aegis.runtime.launcher.local_job import capacity_problem as capacity_problem
from aegis.runtime.launcher.proofs import IncarnationProofs
from aegis.runtime.launcher.state_dir import (
    CREDENTIAL_FILES,
    JOB_FILE,
    STATE_DIR_PREFIX,
    claim_state_dir,
)
from aegis.runtime.launcher.state_dir import STATUS_FILE as STATUS_FILE
from aegis.runtime.launcher.state_dir import WAL_FILE as WAL_FILE
from aegis.runtime.launcher.state_dir import finished_phase as finished_phase
from aegis.runtime.launcher.state_dir import never_joined as never_joined
from aegis.runtime.launcher.state_dir import progress_mark as progress_mark
from aegis.runtime.lifetime import (
    dies_with_parent,
    keep_memory_private,
    owned_tempdir,
    supervised,
    sweep_orphaned_tempdirs,
)
from aegis.runtime.transport.nats_server import NATS_DIR_PREFIX, NatsServer

log = logging.getLogger(__name__)
MAX_CONTROLLER_RESTARTS = 5  # in a row: crashes with no step saved between them
STRAY_SWEEP_S = 1.0  # how often the launcher ends what a killed agent's ranks left
# `aegis controller` exits 2 when it refuses to run (aegis.cli: an AegisError such as a status
# file that is not a state of the spec, or bad arguments): the same again on every restart
CONTROLLER_REFUSED = 2
PROGRESS_DIR_PREFIX = "aegis-progress-"  # the ranks' progress and error files
AGENT_NATS_URL_ENV = "AEGIS_AGENT_NATS_URL"  # test hook: the NATS URL agents are given


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
        self.agents: dict[str, AgentProc] = {}
        self.controller: asyncio.subprocess.Process | None = None
        self.node_count = 0
        self.container_restarts: dict[tuple[str, str], int] = {}  # (pod, node) -> Level 2 count
        self.done = asyncio.Event()
        self.exit_code = 1
        self.resuming = False  # the state dir holds a job an earlier run left unfinished
        self._quitting = False  # the controller was told to quit (a command cannot start)
        self._watchers: set[asyncio.Task[None]] = set()
        self.plane: ControlPlane | None = None
        self.proofs = IncarnationProofs()  # the secret each incarnation proves itself with
        self._spawning = 0  # children being started (not known yet: not strays)
        self._revoked_keys: dict[str, str | None] = {}  # incarnation -> its credential's key
        self._revoked_on_server: set[str] = set()
        # children this process had before the job (an API caller's): never strays
        self._before: set[int] = set()

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
        try:
            (self.state_dir / JOB_FILE).write_text(
                json.dumps({**job, "maxRetry": self.job.max_retry})
            )
        except OSError as exc:  # a full disk: said now, before anything starts
            raise LaunchError(f"cannot use --state-dir {self.state_dir}: {exc}") from None
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
            checkpoint_dir=self.job.checkpoint_dir,
            checkpoint_every=self.job.checkpoint_every,
            checkpoint_shm_bytes=self.job.checkpoint_shm_bytes,
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

    async def _supervise(self, nats: NatsServer) -> int:
        self._before = set(children(os.getpid()))
        say_shared_host(self.shared_host_env())
        bus = supervised(
            keep_bus_up(nats, self.done, self.interrupt), "nats-server", lambda _: self.interrupt(1)
        )
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
        """Kill (with everything under them) this process's children that came after the job
        started and that it did not start (agents.sweep_strays); the pids killed."""
        ours = {a.proc.pid for a in self.agents.values() if a.proc is not None} | self._before
        ours |= {p.pid for p in (self.controller,) if p is not None}
        ours |= {pid for pid in (self.plane.nats.pid if self.plane else None,) if pid}
        return sweep_strays(ours)

    def interrupt(self, code: int) -> None:
        """Ctrl-C / SIGTERM: stop everything, exit with `code`."""
        self.exit_code = code
        self.done.set()

    async def _controller_loop(self) -> None:
        crashes = 0  # in a row: without the job's state moving on between them
        # only the first controller of a resumed run may take the saved incarnations over
        resumed = self.resuming
        while True:
            mark = progress_mark(self.state_dir)
            self.controller = await self._start_controller(resumed)
            resumed = False
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

    async def _start_controller(self, resumed: bool) -> asyncio.subprocess.Process:
        """Start `aegis controller` (`resumed`: the first of a resumed run). Its state dir is
        handed over, neither in its command line nor in its environment."""
        handed = hand_over(str(self.state_dir), Var.STATE_DIR_FD)
        self._spawning += 1
        try:
            return await asyncio.create_subprocess_exec(
                *dies_with_parent(
                    [*_python_aegis(), *self._ctl_args, *(["--resumed-run"] if resumed else [])]
                ),
                stdin=asyncio.subprocess.PIPE,
                start_new_session=True,
                env={
                    **os.environ,
                    **self._ctl_env,
                    Var.LAUNCHER_PID: str(os.getpid()),
                    **handed.env,
                },
                pass_fds=(handed.fd,),
            )
        finally:
            self._spawning -= 1
            handed.close()

    def shared_host_env(self) -> dict[str, str]:
        """What every rank this launcher's agents start gets (LocalJob.shared_host_env)."""
        return self.job.shared_host_env()

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
            proc = await spawn_agent(
                cfg, {**os.environ, **self.shared_host_env(), **self.job.extra_env}
            )
        finally:
            self._spawning -= 1
        self._track(AgentProc(pod, rank, node, cfg.incarnation, proc))

    def _track(self, agent: AgentProc) -> None:
        """`agent` is the pod's current incarnation: its exit is handled (`_agent_exited`)."""
        self.agents[agent.pod] = agent
        if agent.proc is None:
            return  # another host reports its exit
        watch = asyncio.create_task(self._watch_agent(agent, agent.proc))
        self._watchers.add(watch)
        watch.add_done_callback(self._watchers.discard)

    async def _watch_agent(self, agent: AgentProc, proc: asyncio.subprocess.Process) -> None:
        await self._agent_exited(agent, await proc.wait())

    async def _agent_exited(self, agent: AgentProc, code: int) -> None:
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

    async def _after_exit(self, agent: AgentProc, code: int) -> None:
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
        await self._revoke(agent, self._retire(agent))  # before its replacement exists
        if node is None:
            self._no_node_for(agent.pod, f"it left {agent.node} with a node fault")
            return
        await self._start_agent(agent.pod, agent.rank, node)

    def _quit_bad_command(self, agent: AgentProc) -> None:
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

    def _retire(self, agent: AgentProc) -> str | None:
        """`agent`'s incarnation ended: its secret proves nothing, its credential is never
        renewed or issued again. The public key it was issued for (None if none was)."""
        self.proofs.forget(agent.pod, agent.incarnation)
        assert self.plane is not None
        service = self.plane.service
        key = service.revoke(self.job.namespace, self.job.job, agent.pod, agent.incarnation)
        self._revoked_keys.setdefault(agent.incarnation, key)
        return self._revoked_keys[agent.incarnation]

    async def _revoke(self, agent: AgentProc, key: str | None) -> None:
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


async def run_local(job: LocalJob, launcher: Launcher | None = None) -> int:
    """`aegis run` body: a Launcher (this machine's, unless given) with SIGINT/SIGTERM wired
    to a clean stop."""
    keep_memory_private()  # the job's NATS operator and account keys live in this process
    set_child_subreaper()  # what a killed agent's ranks leave comes here, and is ended
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
