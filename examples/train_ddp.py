"""A small real DDP job (gloo, CPU): torch.nn.Linear + DistributedDataParallel, a few steps.

Runs unmodified under torchrun or `aegis run`. Under `aegis run` it checkpoints every step
with `aegis.checkpoint.save` (into its node agent's memory) and, when restarted, resumes from
`aegis.checkpoint.load()`: the newest step every rank saved. Fault injection for tests and
the bench:
  CRASH_ONCE_RANK=R  CRASH_DIR=D   rank R exits 1 on its first attempt only (marker in D)
  CRASH_AFTER_S=S    ... S seconds after its process group is ready, not at its start (a
                     crash mid-training: the other ranks wait in their first allreduce)
  CRASH_SCHEDULE="0,1,2"  attempt k (TORCHELASTIC_RESTART_COUNT): rank schedule[k] exits 1 at
                     once; the other ranks wait (for a release file in CRASH_DIR that never
                     comes) until they are stopped
  HOLD_FILE=F        every rank waits for F to exist before training
  TIMES_FILE=F       append "start <rank> <time>" / "crash <rank> <time>" lines to F,
                     "pg <rank> <time>" once init_process_group has returned, "step1 <rank>
                     <time>" once an attempt's first step is done
  SAVE_EVERY=K       aegis.checkpoint.save every K steps (default 1; 0: never)
Slow-node path (first attempt only, i.e. TORCHELASTIC_RESTART_COUNT = 0):
  STEP_S=S           sleep S seconds per step; every rank prints each step and calls
                     aegis.progress(step) when aegis is importable
  TRAIN_UNTIL_STOPPED=1  keep training (past STEPS) until stopped by the agent
  CHECKPOINT_WHEN=F  every rank calls aegis.checkpoint_done(step) once, when F exists
  HANG_RANK=R HANG_AFTER=K  rank R goes silent after K steps (no output, no progress, no
                     CPU) until HANG_RELEASE exists; "hang <rank> <time>" goes to TIMES_FILE
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


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


def checkpoints() -> Any:
    """aegis.checkpoint when this process runs under an Aegis agent, else None."""
    try:
        import aegis.checkpoint
    except ImportError:  # plain torchrun without aegis installed
        return None
    return aegis.checkpoint if aegis.checkpoint.available() else None


def signals() -> tuple[Callable[[int], None], Callable[[int], None]]:
    """aegis.progress / aegis.checkpoint_done, or no-ops without aegis."""
    try:
        import aegis

        return aegis.progress, aegis.checkpoint_done
    except ImportError:  # plain torchrun without aegis installed
        return (lambda _: None), (lambda _: None)


def slow_path(rank: int, step: int, checkpointed: bool) -> bool:
    """Progress, checkpoint and hang injection of the first attempt; True once checkpointed."""
    progress, checkpoint_done = signals()
    print(f"rank {rank} step {step}", flush=True)
    progress(step)
    when = os.environ.get("CHECKPOINT_WHEN")
    if when and not checkpointed and os.path.exists(when):
        checkpoint_done(step)
        note("checkpoint", rank)
        print(f"rank {rank}: checkpoint of step {step} done", flush=True)
        checkpointed = True
    hang = os.environ.get("HANG_RANK")
    if hang is not None and int(hang) == rank and step == int(os.environ.get("HANG_AFTER", "0")):
        note("hang", rank)
        release = os.environ.get("HANG_RELEASE", "")
        while not (release and os.path.exists(release)):
            time.sleep(0.05)
    time.sleep(float(os.environ.get("STEP_S", "0")))
    return checkpointed


def main() -> int:
    rank = int(os.environ["RANK"])
    note("start", rank)
    crash_after = os.environ.get("CRASH_AFTER_S")
    if crash_after is None:
        inject(rank)
    hold = os.environ.get("HOLD_FILE")
    while hold and not os.path.exists(hold):
        time.sleep(0.05)
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("gloo")
    note("pg", rank)
    if crash_after is not None and os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0":
        time.sleep(float(crash_after))
        inject(rank)
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(8, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ckpt = checkpoints()
    restored = ckpt.load() if ckpt is not None else None
    step = 0
    if restored is not None:
        model.module.load_state_dict(restored.state["model"])
        opt.load_state_dict(restored.state["optimizer"])
        step = restored.step + 1
        print(f"rank {rank} restored step {restored.step} from {restored.source}", flush=True)
    first = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0"
    injecting = first and any(
        k in os.environ for k in ("STEP_S", "CHECKPOINT_WHEN", "HANG_RANK", "TRAIN_UNTIL_STOPPED")
    )
    forever = first and os.environ.get("TRAIN_UNTIL_STOPPED") == "1"
    steps = int(os.environ.get("STEPS", "3"))
    checkpointed = False
    save_every = int(os.environ.get("SAVE_EVERY", "1"))
    first_step = True
    while step < steps or forever:
        x = torch.randn(4, 8, generator=torch.Generator().manual_seed(step))  # data by step
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
        if ckpt is not None and save_every and step % save_every == 0:
            ckpt.save({"model": model.module.state_dict(), "optimizer": opt.state_dict()}, step)
        if first_step:
            note("step1", rank)
            first_step = False
        if injecting:
            checkpointed = slow_path(rank, step, checkpointed)
        step += 1
    dist.barrier()
    dist.destroy_process_group()
    print(f"rank {rank} done (restart {os.environ.get('TORCHELASTIC_RESTART_COUNT')})", flush=True)
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # the work is done and the process group destroyed: leave without the interpreter's
    # teardown, where torch's gloo threads can abort the process after a peer has exited
    # ("terminate called without an active exception", SIGABRT: a failed rank to any launcher)
    os._exit(code)
