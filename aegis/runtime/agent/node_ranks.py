"""An agent's ranks for an attempt, the files it shares with them (progress, stack dumps), and
its diagnosis worker's parameters for a check round."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Any

from aegis.protocol.environment import AgentConfig, Var, user_env
from aegis.protocol.payloads import Order
from aegis.runtime.agent.checkpoint_store import CheckpointStore
from aegis.runtime.agent.placement import placement
from aegis.runtime.agent.ranks import LocalRanks
from aegis.runtime.agent.standby import StandbyPool


def work_dir(cfg: AgentConfig) -> Path:
    """This incarnation's directory of the files it shares with its ranks (made if missing)."""
    base = Path(cfg.progress_dir or tempfile.gettempdir())
    path = base / f"aegis-{cfg.job}-{cfg.pod}-{cfg.incarnation}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def rank_file(cfg: AgentConfig, kind: str, local_rank: int) -> Path:
    """Local rank `local_rank`'s `kind` file: "progress" (its HangWatch's progress, JSON) or
    "stack" (where it dumps its stacks: aegis.checks.stackdump)."""
    suffix = "json" if kind == "progress" else "txt"
    return work_dir(cfg) / f"{kind}-{local_rank}.{suffix}"


def check_params(cfg: AgentConfig, order: Order) -> dict[str, Any]:
    """The diagnosis worker's parameters for a check round of `order`."""
    b = cfg.check_budget_s
    return {
        "rendezvous": {
            "host": order.master_addr,
            "port": order.check_port,
            "rank": cfg.rank,
            "world_size": cfg.world_size,
            "backend": "gloo",
        },
        "budgets": {
            "collective": b,
            "allreduce_connection": b,
            "allreduce_performance": b,
            "env": b,
            "io": b,
        },
        "simulate": list(cfg.simulate),
    }


def local_ranks(
    cfg: AgentConfig,
    nproc: int,
    order: Order | None,
    store: CheckpointStore,
    standbys: StandbyPool | None,
    agent_store: bool = False,
) -> LocalRanks:
    """The pod's K local ranks for `order` (None: the first attempt, as far as it is known
    before its order), each with its progress, stack and error files and its checkpoint
    store's socket and a new token."""
    rank_env: dict[int, dict[str, str]] = {}
    store_env = store.new_attempt()
    for lr in range(nproc):
        progress = rank_file(cfg, "progress", lr)
        with contextlib.suppress(OSError):
            progress.unlink()
        rank_env[lr] = {
            Var.PROGRESS_FILE: str(progress),
            Var.STACK_FILE: str(rank_file(cfg, "stack", lr)),
            **store_env[lr],
        }
    env = user_env(os.environ)
    if cfg.checkpoint_file:
        env[Var.CHECKPOINT_FILE] = cfg.checkpoint_file
    return LocalRanks(
        cfg.command,
        placement(cfg, nproc, order, agent_store),
        env=env,
        work_dir=work_dir(cfg),
        log_dir=Path(cfg.log_dir) / cfg.pod if cfg.log_dir else None,
        rank_env=rank_env,
        standbys=standbys,
    )
