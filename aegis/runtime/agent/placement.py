"""Where an agent's ranks run (node, ranks per node, rendezvous), the environment of its
diagnosis worker, and its command run alone when no controller answers (RunIndependent)."""

from __future__ import annotations

import ipaddress
import os
import tempfile
from pathlib import Path

from aegis.protocol.environment import AUTO, AgentConfig, Var, user_env
from aegis.protocol.exitcodes import terminated_by
from aegis.protocol.payloads import Order
from aegis.runtime.agent.ranks import LocalRanks, Placement


def placement(
    cfg: AgentConfig, nproc: int, order: Order | None = None, agent_store: bool = False
) -> Placement:
    """Where this pod's ranks sit: node `cfg.rank` of `cfg.world_size`, `nproc` ranks each,
    meeting at the order's rendezvous (the launcher's, running independently); `agent_store`:
    the rendezvous store is hosted by the node-0 agent, not by rank 0."""
    return Placement(
        node_rank=cfg.rank,
        nnodes=cfg.world_size,
        nproc=nproc,
        master_addr=order.master_addr if order else cfg.master_addr,
        master_port=order.master_port if order else cfg.master_port,
        run_id=cfg.job,
        job=cfg.job,
        pod=cfg.pod,
        max_restarts=order.max_retry if order else 0,
        agent_store=agent_store,
    )


def visible_gpus() -> int:
    """The GPUs this node shows its processes (CUDA_VISIBLE_DEVICES, else /dev/nvidiaN)."""
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        return len([d for d in listed.split(",") if d.strip() and d.strip() != "-1"])
    try:
        return sum(1 for d in os.listdir("/dev") if d.startswith("nvidia") and d[6:].isdigit())
    except OSError:
        return 0


def local_ranks_of(cfg: AgentConfig) -> int:
    """K: the configured ranks per node; "auto" is the visible GPUs, else 1."""
    if cfg.nproc_per_node == AUTO:
        return max(visible_gpus(), 1)
    return cfg.nproc_per_node


def diagnosis_env(cfg: AgentConfig) -> dict[str, str]:
    """The diagnosis worker's environment: the agent's, without the spent bootstrap token,
    its gloo sockets on loopback when the job's rendezvous is (local mode); on Kubernetes
    gloo binds the pod's own address, the interface of its hostname."""
    env = {k: v for k, v in os.environ.items() if k != Var.BOOTSTRAP_TOKEN}
    if is_loopback(cfg.master_addr):
        env.setdefault("GLOO_SOCKET_IFNAME", "lo")
    return env


def is_loopback(host: str) -> bool:
    """Whether `host` is a loopback address or `localhost` (no DNS lookup: on Kubernetes the
    rendezvous name may not resolve yet when the agent starts)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def run_independent(cfg: AgentConfig) -> int:
    """RunIndependent: the command as a plain process; its exit code (128+N for signal N)."""
    print(f"aegis: agent {cfg.pod}: no controller, running the command independently", flush=True)
    with tempfile.TemporaryDirectory(prefix="aegis-independent-") as work:
        ranks = LocalRanks(
            cfg.command,
            placement(cfg, local_ranks_of(cfg)),
            env=user_env(os.environ),
            work_dir=Path(work),
            log_dir=Path(cfg.log_dir) / cfg.pod if cfg.log_dir else None,
        )
        await ranks.start(retry=0)
        try:
            failure = await ranks.wait(5.0)
        finally:
            await ranks.stop(5.0)
    if failure is None:
        return 0
    print(f"aegis: agent {cfg.pod}: {failure.describe()}", flush=True)
    code = failure.exit_code
    return code if code >= 0 else terminated_by(-code)
