"""One of two gloo ranks saving or loading a sharded (DTensor) state dict through the agent's
store (python -m tests.checkpoint.dcp_rank save|load RANK PORT)."""

from __future__ import annotations

import os
import sys
from typing import Any

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Shard, distribute_tensor

from aegis.checkpoint import AegisStorageReader, AegisStorageWriter


def state(fill: float | None) -> dict[str, Any]:
    mesh = init_device_mesh("cpu", (2,))
    full = torch.arange(24, dtype=torch.float32).view(8, 3)
    replicated = torch.ones(5) * 7
    if fill is not None:
        full, replicated = torch.full_like(full, fill), torch.full_like(replicated, fill)
    return {
        "w": distribute_tensor(full, mesh, [Shard(0)]),
        "r": replicated,
        "meta": {"step": 3 if fill is None else -1},
    }


def main(action: str, rank: int, port: str) -> None:
    dist.init_process_group("gloo", rank=rank, world_size=2, init_method=f"tcp://127.0.0.1:{port}")
    if action == "save":
        dcp.save(state(None), storage_writer=AegisStorageWriter(3))
        print("saved", flush=True)
    else:
        sd = state(0.0)
        dcp.load(sd, storage_reader=AegisStorageReader())
        want = state(None)
        ok = torch.equal(sd["w"].full_tensor(), want["w"].full_tensor())
        ok = ok and torch.equal(sd["r"], want["r"]) and sd["meta"] == {"step": 3}
        print("loaded", ok, flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
