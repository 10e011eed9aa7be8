"""The files an agent shares with its ranks (progress, stack dumps) and its diagnosis worker's
parameters for a check round."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from aegis.protocol.environment import AgentConfig
from aegis.protocol.payloads import Order


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
