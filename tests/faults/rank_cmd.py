"""A cheap training command for fault schedules (no torch import: seconds matter in CI).

Like examples/train_ddp.py it honours HOLD_FILE (wait for it before "training"),
CRASH_ONCE_RANK with CRASH_DIR (that rank exits 1 on its first attempt only) and STEPS /
STEP_S (a few short steps once released)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path


def main() -> int:
    rank = int(os.environ["RANK"])
    once = os.environ.get("CRASH_ONCE_RANK")
    if once is not None and int(once) == rank:
        marker = Path(os.environ.get("CRASH_DIR", ".")) / f"crashed-{rank}"
        if not marker.exists():
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.touch()
            print(f"rank {rank}: crashing once", flush=True)
            return 1
    hold = os.environ.get("HOLD_FILE")
    while hold and not os.path.exists(hold):
        time.sleep(0.05)
    for step in range(int(os.environ.get("STEPS", "3"))):
        time.sleep(float(os.environ.get("STEP_S", "0.05")))
        if rank == 0:
            print(f"step {step}", flush=True)
    print(f"rank {rank} done (restart {os.environ.get('TORCHELASTIC_RESTART_COUNT')})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
