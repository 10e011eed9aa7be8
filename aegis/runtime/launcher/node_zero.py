"""`aegis run --node-rank 0` of a job across hosts: the control plane and the node directory.

Node 0 makes the job's CA and its server certificate, starts the control plane with TLS on
every interface (control_plane.py), and listens on `--rdzv-endpoint`'s port for the other
nodes (rendezvous.py). Once the job's MIN nodes have joined (within `--join-timeout`) it
starts pod R on node R: its own agent as a child, the others' through their node's
launcher. An agent's exit, wherever it ran, is handled as on one machine (local.py); a node
that exits 1 (node fault) is blacklisted and its pod moves to a spare node, if one joined.
A host whose connection closes or falls silent for `--host-timeout` is lost: its pod is lost
too (the controller is told) and moves to a spare, or the job fails saying there is none.
When the job ends, every node is told (`End`) and leaves with the job's exit code.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import socket
import time

from aegis.protocol import rendezvous as wire
from aegis.protocol.environment import AgentConfig
from aegis.protocol.exitcodes import AgentExit
from aegis.protocol.launcher_events import PodLost
from aegis.runtime.launcher.agents import AgentProc, spawn_agent
from aegis.runtime.launcher.control_plane import ControlPlane, ControlPlaneConfig
from aegis.runtime.launcher.local import Launcher, LocalJob, run_local
from aegis.runtime.launcher.netif import interface_addresses, resolve
from aegis.runtime.launcher.node import NodeJob, agent_environment, say
from aegis.runtime.launcher.rendezvous import Link, RendezvousServer, Session
from aegis.runtime.launcher.state_dir import finished_phase
from aegis.runtime.transport.tls import JobTls

END_GRACE_S = 15.0  # how long node 0 waits for the other nodes to stop their agents


class NodeZeroLauncher(Launcher):
    """The launcher of node 0 (see the module's docstring)."""

    def __init__(self, job: LocalJob, nodes: NodeJob, nproc: int) -> None:
        super().__init__(job)
        self.nodes = nodes
        self.nproc = nproc
        self.name = socket.gethostname()
        self.address = ""  # this node's address as the others reach it
        self.blacklist: set[str] = set()
        self.started = False  # the pods were placed: a node joining now is a spare
        self.end_why = ""
        self.tls = JobTls.generate(self._names(), label=f"aegis {job.namespace}/{job.job}")
        self.server = RendezvousServer(
            self.tls,
            nodes.secret,
            self._admit,
            self._on_message,
            self._on_lost,
            nodes.host_timeout,
        )

    def _names(self) -> list[str]:
        """Every name and address other nodes may reach node 0 by (its certificate's)."""
        return [
            self.nodes.rdzv_host,
            self.name,
            socket.getfqdn(),
            *interface_addresses().values(),
            "localhost",
            "127.0.0.1",
        ]

    async def _run(self) -> int:
        await self.server.start("", self.nodes.rdzv_port)
        say(f"node 0: rendezvous for {self.nodes.nnodes} node(s) at {self.nodes.endpoint} (TLS)")
        try:
            return await super()._run()
        finally:
            await self.server.close()

    def _plane_config(self) -> ControlPlaneConfig:
        return dataclasses.replace(
            super()._plane_config(),
            bind_host="0.0.0.0",
            advertise_host=self.nodes.rdzv_host,
            tls=self.tls,
            agent_nats_url="",
        )

    def _agent_config(self, plane: ControlPlane) -> AgentConfig:
        return dataclasses.replace(super()._agent_config(plane), nproc_per_node=self.nproc)

    def shared_host_env(self) -> dict[str, str]:
        """One agent on this host (its ranks get OMP_NUM_THREADS as its RankEnv says)."""
        return {}

    # ---------------- nodes joining ----------------

    def _admit(self, msg: wire.Join, link: Link) -> wire.Welcome | str:
        nodes = self.nodes
        if msg.nproc != self.nproc:
            return (
                f"it runs {msg.nproc} ranks per node and node 0 runs {self.nproc}: give every "
                "node the same --nproc-per-node"
            )
        if msg.node_rank == 0:
            return f"node rank 0 is {self.name}: give each node its own --node-rank"
        if msg.node_rank >= nodes.max_nodes:
            return f"node rank {msg.node_rank} is not below --nnodes' maximum {nodes.max_nodes}"
        live = [s for s in self.server.sessions.values() if not s.lost]
        holder = next((s for s in live if s.node_rank == msg.node_rank), None)
        if holder is not None:
            return f"node rank {msg.node_rank} already joined from {holder.link.peer_address}"
        if len(live) + 1 >= nodes.max_nodes:
            return f"the job already has its {nodes.max_nodes} nodes"
        taken = {self.name, *(s.name for s in live)}
        name = msg.hostname if msg.hostname not in taken else f"{msg.hostname}@{link.peer_address}"
        if not self.address:
            self.address = link.local_address
        spare = self.started or msg.node_rank >= nodes.nnodes
        say(
            f"node 0: node {msg.node_rank} joined as {name} from {link.peer_address}"
            f"{' (a spare)' if spare else ''}"
        )
        return wire.Welcome(self.job.job, self.job.namespace, name, spare, self.nodes.host_timeout)

    async def _start_agents(self) -> None:
        """Wait (bounded) for the MIN nodes, then start pod R on node R."""
        placed = await self._wait_for_nodes()
        if placed is None:
            return
        self.started = True
        if not self.address:
            self.address = resolve(self.nodes.rdzv_host)
        for rank, pod in enumerate(self.job.pods):
            await self._start_agent(pod, rank, placed[rank])

    async def _wait_for_nodes(self) -> list[str] | None:
        """The node names of ranks 0..MIN-1 once all joined; None (the job fails) when they
        did not within the join timeout."""
        nodes = self.nodes
        deadline = time.monotonic() + nodes.join_timeout
        if nodes.nnodes > 1:
            say(
                f"node 0: waiting for node ranks 1..{nodes.nnodes - 1}, up to "
                f"{nodes.join_timeout:g} s (--join-timeout)"
            )
        while True:
            by_rank = {s.node_rank: s.name for s in self.server.sessions.values() if not s.lost}
            missing = [r for r in range(1, nodes.nnodes) if r not in by_rank]
            if not missing:
                return [self.name, *(by_rank[r] for r in range(1, nodes.nnodes))]
            left = deadline - time.monotonic()
            if left <= 0:
                self.end_why = (
                    f"node rank(s) {', '.join(map(str, missing))} did not join within "
                    f"{nodes.join_timeout:g} s (--join-timeout): the job fails"
                )
                say(f"node 0: {self.end_why}")
                self.interrupt(1)
                return None
            self.server.joined.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.server.joined.wait(), min(left, 1.0))

    # ---------------- agents on any node ----------------

    async def _start_agent(self, pod: str, rank: int, node: str) -> None:
        cfg = self._agent_cfg(pod, rank, node)
        if node == self.name:
            cfg = dataclasses.replace(cfg, pod_ip=self.address, node_ip=self.address)
            env = {**agent_environment(self.address), **self.job.extra_env}
            proc = await spawn_agent(cfg, env)
            self._track(AgentProc(pod, rank, node, cfg.incarnation, proc))
            return
        agent = AgentProc(pod, rank, node, cfg.incarnation, None)
        self._track(agent)
        session = self.server.sessions.get(node)
        if session is None or session.lost:
            await self._host_lost(agent, f"{node} is gone")
        elif not await session.send(wire.Start(cfg.to_env())):
            pass  # its reader sees the connection fail and reports the loss (`_on_lost`)

    def _new_node(self) -> str | None:
        """A spare node: joined, alive, not blacklisted, running no pod (lowest rank first)."""
        busy = {a.node for a in self.agents.values()}
        spares = sorted(
            (s.node_rank, s.name)
            for s in self.server.sessions.values()
            if not s.lost and s.name not in self.blacklist and s.name not in busy
        )
        return spares[0][1] if spares else None

    async def _agent_exited(self, agent: AgentProc, code: int) -> None:
        if code == AgentExit.NODE_FAULT:
            self.blacklist.add(agent.node)  # never used again by this job
        await super()._agent_exited(agent, code)

    def _no_node_for(self, pod: str, why: str) -> None:
        self.end_why = f"{pod} has no node to run on ({why}) and no spare node is free"
        super()._no_node_for(pod, why)

    async def _on_message(self, session: Session, msg: wire.NodeMessage) -> None:
        if not isinstance(msg, wire.Exited):
            say(f"node 0: ignored {msg.OP!r} from {session.name}")
            return
        agent = self.agents.get(msg.pod)
        mine = agent is not None and agent.node == session.name and agent.proc is None
        if agent is not None and mine and agent.incarnation == msg.incarnation:
            await self._agent_exited(agent, msg.code)

    async def _on_lost(self, session: Session, why: str) -> None:
        if self.done.is_set():
            return
        if self.started:
            self.blacklist.add(session.name)  # a host lost while the job runs is not reused
        say(f"node 0: lost node {session.node_rank} ({session.name}): {why}")
        for agent in list(self.agents.values()):
            if agent.node == session.name and agent.proc is None:
                await self._host_lost(agent, why)

    async def _host_lost(self, agent: AgentProc, why: str) -> None:
        """`agent`'s host is gone: its pod is lost; it moves to a spare node (Level 3)."""
        if self.done.is_set() or self.agents.get(agent.pod) is not agent:
            return
        why = f"host {agent.node} lost: {why}"  # no exit code: its process was not seen to exit
        self._tell_controller(PodLost(agent.pod, agent.incarnation, -1, agent.node, why))
        await self._revoke(agent, self._retire(agent))  # its credential dies with its host
        node = self._new_node()
        if node is None:
            self._no_node_for(agent.pod, f"its host {agent.node} was lost")
            return
        say(f"{agent.pod} lost with its host {agent.node}; rescheduled to {node} (Level 3)")
        await self._start_agent(agent.pod, agent.rank, node)

    # ---------------- the end ----------------

    async def _shutdown(self) -> None:
        await asyncio.gather(self._end_nodes(), super()._shutdown())

    async def _end_nodes(self) -> None:
        """Tell every node the job ended; wait (bounded) for them to stop their agents."""
        why = self._why_ended()
        live = [s for s in self.server.sessions.values() if not s.lost]
        for session in live:
            await session.send(wire.End(self.exit_code, why))
        deadline = time.monotonic() + END_GRACE_S
        while any(not s.lost for s in live) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)

    def _why_ended(self) -> str:
        phase = finished_phase(self.state_dir)
        if phase is not None:
            return f"the job ended {phase} (node 0: {self.name})"
        if self.end_why:
            return self.end_why
        return f"node 0 ({self.name}) stopped the job (exit {self.exit_code})"


async def run_node_zero(job: LocalJob, nodes: NodeJob, nproc: int) -> int:
    """`aegis run` on node 0: `run_local` with node 0's launcher."""
    return await run_local(job, NodeZeroLauncher(job, nodes, nproc))
