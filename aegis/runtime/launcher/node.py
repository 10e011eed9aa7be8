"""`aegis run` on a node other than node 0 of a job across hosts (docs/multihost.md).

The node finds node 0 (`--rdzv-endpoint`), learns the job's CA through the join secret, joins,
and then does what node 0 says: start an agent for a pod (`Start`), report when it exits
(`Exited`), and leave when the job ends (`End`). It runs no controller and keeps no state.
Node 0 gone (its connection closed, or silent for the host timeout) ends the node: its agent
and ranks are stopped and it exits 1, saying why; a standby control plane is a later step.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import shutil
import signal
import socket
import sys
import time
from dataclasses import dataclass, field

from aegis.protocol import rendezvous as wire
from aegis.protocol.environment import AgentConfig, ConfigError, Var
from aegis.protocol.exitcodes import terminated_by
from aegis.protocol.rendezvous import DEFAULT_HOST_TIMEOUT_S, DEFAULT_JOIN_TIMEOUT_S
from aegis.runtime.launcher.agents import spawn_agent, terminate_group
from aegis.runtime.launcher.local import PROGRESS_DIR_PREFIX, LocalJob
from aegis.runtime.launcher.netif import interface_of
from aegis.runtime.launcher.rendezvous import (
    FIRST_LINE_S,
    Link,
    PeerGone,
    RendezvousError,
    discover_ca,
    join,
)
from aegis.runtime.lifetime import owned_tempdir, sweep_orphaned_tempdirs

GLOO_IFNAME = "GLOO_SOCKET_IFNAME"


@dataclass(frozen=True)
class NodeJob:
    """Where this node sits in a job across hosts (`--nnodes MIN[:MAX] --node-rank R
    --rdzv-endpoint HOST:PORT`): MIN nodes train, up to MAX - MIN more wait as spares."""

    nnodes: int
    max_nodes: int
    node_rank: int
    rdzv_host: str
    rdzv_port: int
    secret: bytes = field(repr=False)
    join_timeout: float = DEFAULT_JOIN_TIMEOUT_S
    host_timeout: float = DEFAULT_HOST_TIMEOUT_S

    @property
    def endpoint(self) -> str:
        """HOST:PORT of node 0's rendezvous."""
        return f"{self.rdzv_host}:{self.rdzv_port}"


def agent_environment(address: str) -> dict[str, str]:
    """The environment this node's agents start with: ours without the join secret, with
    gloo bound to the interface other nodes reach this one on (unless already chosen)."""
    env = {k: v for k, v in os.environ.items() if k != Var.JOIN_SECRET}
    interface = interface_of(address)
    if interface is not None:
        env.setdefault(GLOO_IFNAME, interface)
    return env


def say(text: str) -> None:
    """One line for whoever runs `aegis run` on this node."""
    print(f"aegis: {text}", file=sys.stderr, flush=True)


class NodeMember:
    """`aegis run --node-rank R` for R > 0: joins node 0, runs the agents it is told to."""

    def __init__(self, job: LocalJob, nodes: NodeJob, nproc: int) -> None:
        self.job = job
        self.nodes = nodes
        self.nproc = nproc  # ranks per node, "auto" already resolved
        self.stopped = asyncio.Event()
        self.stop_code = 1
        self.agent: tuple[AgentConfig, asyncio.subprocess.Process] | None = None
        self.env: dict[str, str] = {}
        self.address = ""
        self._watch: asyncio.Task[None] | None = None
        self.node0_lost = False
        for path in sweep_orphaned_tempdirs(PROGRESS_DIR_PREFIX):
            say(f"removed {path}, left by a launcher that was killed")
        self.progress_dir = owned_tempdir(PROGRESS_DIR_PREFIX)

    @property
    def who(self) -> str:
        """How this node names itself in its messages."""
        return f"node {self.nodes.node_rank}"

    def stop(self, code: int) -> None:
        """A signal: stop the agent and leave with `code`."""
        self.stop_code = code
        self.stopped.set()

    async def run(self) -> int:
        """Join and serve until the job ends; the exit code."""
        try:
            return await self._run()
        finally:
            shutil.rmtree(self.progress_dir, ignore_errors=True)

    async def _run(self) -> int:
        try:
            link, welcome = await self._join()
        except RendezvousError as exc:
            say(f"{self.who}: {exc}")
            return 1
        self.address = link.local_address
        self.env = agent_environment(self.address)
        role = ", a spare" if welcome.spare else ""
        say(
            f"{self.who}: joined job {welcome.namespace}/{welcome.job} at {self.nodes.endpoint} "
            f"as {welcome.node}{role} (this node's address {self.address})"
        )
        pinger = asyncio.create_task(self._ping(link, welcome.host_timeout))
        try:
            return await self._serve(link, welcome)
        finally:
            pinger.cancel()
            if self.node0_lost:
                link.abort()
            await self._stop_agent()
            await link.close()

    async def _join(self) -> tuple[Link, wire.Welcome]:
        nodes = self.nodes
        deadline = time.monotonic() + nodes.join_timeout

        def waiting(why: str) -> None:
            say(
                f"{self.who}: waiting for node 0 at {nodes.endpoint} ({why}), up to "
                f"{nodes.join_timeout:g} s (--join-timeout)"
            )

        ca = await discover_ca(nodes.rdzv_host, nodes.rdzv_port, nodes.secret, deadline, waiting)
        request = wire.Join(
            wire.join_token(nodes.secret), nodes.node_rank, socket.gethostname(), self.nproc
        )
        return await join(nodes.rdzv_host, nodes.rdzv_port, ca, request, FIRST_LINE_S)

    async def _ping(self, link: Link, host_timeout: float) -> None:
        with contextlib.suppress(PeerGone):
            while True:
                await link.send(wire.Ping())
                await asyncio.sleep(host_timeout / 6)

    async def _serve(self, link: Link, welcome: wire.Welcome) -> int:
        while True:
            receive = asyncio.ensure_future(link.receive(welcome.host_timeout))
            stop = asyncio.ensure_future(self.stopped.wait())
            await asyncio.wait({receive, stop}, return_when=asyncio.FIRST_COMPLETED)
            stop.cancel()
            if not receive.done():
                receive.cancel()
                say(f"{self.who}: stopped (exit {self.stop_code})")
                return self.stop_code
            try:
                msg = receive.result()
            except PeerGone as exc:
                self.node0_lost = True
                say(
                    f"{self.who}: lost node 0 at {self.nodes.endpoint} ({exc}); it hosts the "
                    "job's control plane, so the job ends on this node (docs/multihost.md, "
                    '"Host loss")'
                )
                return 1
            if isinstance(msg, wire.End):
                say(f"{self.who}: {msg.why} (exit {msg.code})")
                return msg.code
            if isinstance(msg, wire.Start):
                try:
                    await self._start_agent(link, msg)
                except ConfigError as exc:
                    say(f"{self.who}: node 0 sent an agent configuration this node refuses: {exc}")
                    return 1

    async def _start_agent(self, link: Link, start: wire.Start) -> None:
        await self._stop_agent()
        given = {**start.agent, Var.COMMAND: json.dumps(list(self.job.command))}
        cfg = AgentConfig.from_env(given)
        cfg = dataclasses.replace(
            cfg,
            progress_dir=str(self.progress_dir),
            log_dir=self.job.log_dir,
            pod_ip=self.address,
            node_ip=self.address,
        )
        proc = await spawn_agent(cfg, {**self.env, **self.job.extra_env})
        self.agent = (cfg, proc)
        self._watch = asyncio.create_task(self._report_exit(link, cfg, proc))

    async def _report_exit(
        self, link: Link, cfg: AgentConfig, proc: asyncio.subprocess.Process
    ) -> None:
        code = await proc.wait()
        if self.agent is not None and self.agent[1] is proc:
            self.agent = None
        with contextlib.suppress(PeerGone):
            await link.send(wire.Exited(cfg.pod, cfg.incarnation, code))

    async def _stop_agent(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        agent, self.agent = self.agent, None
        if agent is not None:
            await terminate_group(agent[1])


async def run_member(job: LocalJob, nodes: NodeJob, nproc: int) -> int:
    """`aegis run` on node R > 0: SIGINT/SIGTERM stop its agent and end it."""
    member = NodeMember(job, nodes, nproc)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, member.stop, terminated_by(sig))
    return await member.run()
