"""A small real DDP job (gloo, CPU): torch.nn.Linear + DistributedDataParallel, a few steps.

Runs unmodified under torchrun or `aegis run`. Fault injection for tests and the bench:
  CRASH_ONCE_RANK=R  CRASH_DIR=D   rank R exits 1 on its first attempt only (marker in D)
  CRASH_SCHEDULE="0,1,2"  attempt k (TORCHELASTIC_RESTART_COUNT): rank schedule[k] exits 1 at
                     once; the other ranks wait (for a release file in CRASH_DIR that never
                     comes) until they are stopped
  HOLD_FILE=F        every rank waits for F to exist before training
  TIMES_FILE=F       append "start <rank> <time>" / "crash <rank> <time>" lines to F
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path


def note(kind: str, rank: int) -> None:
    """Append a timestamped line to TIMES_FILE (for the bench)."""
    path = os.environ.get("TIMES_FILE")
    if path:
        with open(path, "a") as f:
            f.write(f"{kind} {rank} {time.time():.6f}\n")


def inject(rank: int) -> None:
    """Crash as CRASH_ONCE_RANK / CRASH_SCHEDULE say."""
    crash_dir = Path(os.environ.get("CRASH_DIR", "."))
    schedule = os.environ.get("CRASH_SCHEDULE")
    once = os.environ.get("CRASH_ONCE_RANK")
    if schedule is not None:
        plan = [int(x) for x in schedule.split(",") if x]
        k = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
        if k < len(plan):
            if plan[k] == rank:
                note("crash", rank)
                print(f"rank {rank}: scheduled failure in attempt {k}", flush=True)
                sys.exit(1)
            release = crash_dir / f"release-{k}"
            while not release.exists():  # stopped by the agent when the job troubleshoots
                time.sleep(0.05)
    elif once is not None and int(once) == rank:
        marker = crash_dir / f"crashed-{rank}"
        if not marker.exists():
            crash_dir.mkdir(parents=True, exist_ok=True)
            marker.touch()
            note("crash", rank)
            print(f"rank {rank}: crashing once", flush=True)
            sys.exit(1)


def main() -> int:
    rank = int(os.environ["RANK"])
    note("start", rank)
    inject(rank)
    hold = os.environ.get("HOLD_FILE")
    while hold and not os.path.exists(hold):
        time.sleep(0.05)
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(8, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(int(os.environ.get("STEPS", "3"))):
        x = torch.randn(4, 8)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
    dist.barrier()
    dist.destroy_process_group()
    print(f"rank {rank} done (restart {os.environ.get('TORCHELASTIC_RESTART_COUNT')})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
