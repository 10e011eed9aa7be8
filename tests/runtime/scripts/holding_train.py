"""A training command that says it waits, waits for $HOLD_FILE, then trains as usual."""

from __future__ import annotations

import os
import runpy
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
hold = Path(os.environ["HOLD_FILE"])
print(f"rank {os.environ['RANK']} waiting for {hold}", flush=True)
deadline = time.monotonic() + 600
while not hold.exists() and time.monotonic() < deadline:
    time.sleep(0.1)
sys.argv = [str(ROOT / "examples" / "train_ddp.py")]
runpy.run_path(sys.argv[0], run_name="__main__")
