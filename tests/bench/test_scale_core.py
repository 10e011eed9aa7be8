"""bench/scale_core.py: it runs both jobs on the engine and the controller, and prints figures."""

from __future__ import annotations

import gc
import json

import pytest

from ..support.bench import load_bench

bench = load_bench("scale_core")


def test_small_sizes_print_one_object_per_size_and_a_ratio(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert bench.main(["--pods", "4,8"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
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


def test_bad_arguments_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--parts", "engine,gpu"]) == 2
    assert bench.main(["--pods", "2"]) == 2
    assert "sizes are >= 3 pods" in capsys.readouterr().err


def test_the_collector_peer_runs_with_the_defaults_and_every_part_counts_collections(
    capsys: pytest.CaptureFixture[str],
) -> None:
    before = gc.get_threshold()
    assert bench.main(["--pods", "4", "--parts", "controller,controller-default-gc"]) == 0
    assert gc.get_threshold() == before  # each part restores what it found
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {r["part"] for r in rows} == {"controller", "controller-default-gc"}
    assert all(r["gc_s"] >= 0 and r["gc_max_pause_ms"] >= 0 for r in rows)
    t = bench.Timings()
    with bench.gc_clock(t):
        gc.collect()
    assert t.gc_s > 0 and t.gc_max_pause_ms > 0
