"""bench/nats_clients.py run as a program at a tiny size: both clients connect, subscribe and
take every broadcast, each way's cost per connection is printed beside the other's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(120)
def test_both_clients_are_measured_side_by_side() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "nats_clients.py"), "--connections", "20",
         "--broadcasts", "1"],
        capture_output=True, text=True, timeout=110, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    assert out["connections"] == 20
    for way in ("lean", "nats_py"):
        assert out[way]["connect_cpu_ms"] > 0 and out[way]["broadcasts_cpu_ms"] >= 0, out
        assert out[way]["delivered"] == 20, out  # one broadcast to each connection
    # the lean client is one protocol object per connection; nats-py runs tasks for each
    assert out["lean"]["tasks"] == 0 and out["nats_py"]["tasks"] >= 1, out
    assert set(out["nats_py_over_lean"]) == set(out["lean"]) - {"delivered"}
