"""A training step whose tensor the wire test can recognise: rank 0 broadcasts 1 MiB of the
float 1234.5678 over gloo, every rank checks it; run under `aegis run` (torchrun's variables)."""

from __future__ import annotations

import os
import sys

import torch
import torch.distributed as dist

MARKER = 1234.5678


def main() -> int:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    tensor = torch.full((1 << 18,), MARKER if rank == 0 else 0.0, dtype=torch.float32)
    dist.broadcast(tensor, src=0)
    assert torch.all(tensor == torch.tensor(MARKER, dtype=torch.float32)), "broadcast failed"
    dist.barrier()
    dist.destroy_process_group()
    print(f"rank {rank} got the marker", flush=True)
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)
