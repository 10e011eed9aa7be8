"""bench/scale_core.py run as a program: it runs both jobs on the engine and the controller and
prints a line per size and a ratio per job; bad arguments are refused."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "bench" / "scale_core.py"), *args],
        capture_output=True, text=True, timeout=240, cwd=ROOT,
    )  # fmt: skip


@pytest.mark.timeout(300)
def test_small_sizes_print_one_object_per_size_and_a_ratio() -> None:
    done = _bench("--pods", "4,8")
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    sizes = [r for r in rows if "pods" in r]
    ratios = [r for r in rows if "ratio" in r]
    assert {(r["part"], r["job"], r["pods"]) for r in sizes} == {
        (part, job, n)
        for part in ("engine", "controller")
        for job in ("healthy", "crash_once")
        for n in (4, 8)
    }
    for r in sizes:
        kinds = {"join", "bootcheck_finish", "command_finish"}
        if r["job"] == "crash_once":
            kinds |= {"pod_lost", "rejoin", "troubleshoot_finish"}
        assert set(r["events"]) == kinds
        assert r["events"]["join"]["n"] == r["pods"]
        assert all(0 < e["p50_ms"] <= e["p99_ms"] for e in r["events"].values())
        assert r["job_s"] > 0
        if r["part"] == "controller":
            assert r["order_bytes"] > 0 and r["status_bytes"] > 0
    assert [(r["part"], r["job"], r["ratio"]) for r in ratios] == [
        (part, job, "cost(8)/cost(4)")
        for part in ("engine", "controller")
        for job in ("healthy", "crash_once")
    ]
    assert all(r["event_mean_ratio"] > 0 and r["event_p50_ratio"] > 0 for r in ratios)
    assert all(0 < r["event_p50_ms"] <= r["event_mean_ms"] * 10 for r in sizes)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--parts", "engine,gpu"], "parts are engine, controller"),
        (["--pods", "2"], "sizes are >= 3 pods"),
    ],
)
def test_bad_arguments_are_refused(args: list[str], says: str) -> None:
    done = _bench(*args)
    assert done.returncode == 2 and says in done.stderr, done.stderr


@pytest.mark.timeout(300)
def test_the_collector_peer_runs_with_the_defaults_and_every_part_counts_collections() -> None:
    done = _bench("--pods", "4", "--parts", "controller,controller-default-gc")
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert {r["part"] for r in rows} == {"controller", "controller-default-gc"}
    assert all(r["gc_s"] >= 0 and r["gc_max_pause_ms"] >= 0 for r in rows)
