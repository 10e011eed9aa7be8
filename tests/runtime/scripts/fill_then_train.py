"""A training command whose rank $FILL_RANK first fills the filesystem of $FILL_PATH (as a
checkpoint written to the wrong disk would), then trains as usual."""

from __future__ import annotations

import contextlib
import os
import runpy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
if os.environ.get("RANK") == os.environ.get("FILL_RANK"):
    block = b"\0" * (1 << 16)
    with contextlib.suppress(OSError), open(Path(os.environ["FILL_PATH"]) / "fill.bin", "ab") as f:
        while True:
            f.write(block)
            f.flush()
    print(f"rank {os.environ['RANK']} filled {os.environ['FILL_PATH']}", flush=True)
sys.argv = [str(ROOT / "examples" / "train_ddp.py")]
runpy.run_path(sys.argv[0], run_name="__main__")
