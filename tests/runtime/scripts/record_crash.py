"""A gloo job whose rank 3 raises under `@record` on its first attempt, then all succeed.

Each rank joins a real process group (env://, the launcher's MASTER_ADDR/PORT) and checks an
all_reduce of the ranks' numbers.
"""

import os
from pathlib import Path

from torch.distributed.elastic.multiprocessing.errors import record


@record
def main() -> None:
    import torch
    import torch.distributed as dist

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    marker = Path(os.environ["CRASH_DIR"]) / "crashed"
    if rank == 3 and not marker.exists():
        marker.write_text("once")
        raise ValueError("boom on rank 3")
    dist.init_process_group("gloo")
    t = torch.tensor([float(rank)])
    dist.all_reduce(t)
    assert t.item() == sum(range(world)), t
    restart = os.environ["TORCHELASTIC_RESTART_COUNT"]
    print(f"rank {rank} of {world}: all_reduce ok (restart {restart})")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
