"""bench/persistence.py run as a program at a tiny size: one line per size, each figure from a
save that really wrote something."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_each_size_prints_every_figure() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "persistence.py"), "--pods", "8", "12",
         "--events", "3"],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(r["pods"], r["events"]) for r in rows] == [(8, 3), (12, 3)]
    for row in rows:
        for key in ("full_status_save_ms", "wal_append_ms", "cr_save_ms", "snapshot_ms",
                    "configmap_commit_ms", "configmap_snapshot_ms"):  # fmt: skip
            assert row[key] > 0, (key, row)
        assert row["configmap_snapshot_parts"] >= 1
        # a WAL record is what one join changed, the whole status is every pod's
        assert 0 < row["bytes_per_event"]["wal"] < row["bytes_per_event"]["full_status"]
