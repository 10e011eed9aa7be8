"""bench/pod_creation.py and bench/pod_reads.py run as programs at tiny sizes: what their
figures mean (each pod created once; a list per reconcile against one list for the cache; a
small job beside a large one), not how fast anything is."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _bench(name: str, *args: str) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / f"{name}.py"), *args],
        capture_output=True, text=True, timeout=240, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.mark.timeout(300)
def test_pod_creation_creates_each_pod_once_and_a_small_job_gets_its_pods_beside() -> None:
    (line,) = _bench("pod_creation", "--pods", "30", "--latency-ms", "0", "--calls", "1", "4",
                     "--beside", "3", "--workers", "1", "4")  # fmt: skip
    assert line["pods"] == 30 and [r["pod_calls"] for r in line["runs"]] == [1, 4]
    for run in line["runs"]:
        assert run["create"] == 30 + 3  # the pods, the Secret, the Service, the Aegis CR
    # `beside` ends only once both jobs have every pod (the bench exits otherwise)
    assert [b["reconcile_workers"] for b in line["beside"]] == [1, 4]
    assert all(b["small_s"] >= 0 and b["large_s"] >= 0 for b in line["beside"])


@pytest.mark.timeout(300)
def test_pod_reads_lists_per_reconcile_only_without_the_cache() -> None:
    (line,) = _bench("pod_reads", "--pods", "20", "--kubelet-pods-per-s", "2000",
                     "--latency-ms", "0")  # fmt: skip
    listing, cached = line["runs"]
    assert (listing["cache"], cached["cache"]) == (False, True)
    assert listing["pod_lists"] > 1 and listing["pods_listed"] > 0
    assert (cached["pod_lists"], cached["pods_listed"]) == (1, 0)  # the informer's, before the job
    assert listing["creates"] == cached["creates"] == 20 + 3
