"""The controller process's collector thresholds (aegis/runtime/controller/gc_tuning.py)."""

from __future__ import annotations

import gc

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from aegis.runtime.controller.gc_tuning import (
    COLLECTOR_CLOCK,
    CONTROLLER_THRESHOLDS,
    CollectorClock,
    thresholds,
    tune_controller_process,
)
from aegis.runtime.controller.observability import CollectorMetrics, ObserverMetrics


def test_thresholds_hold_inside_the_block_and_come_back_after_an_error() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), thresholds((12_345, 3, 4)):
        assert gc.get_threshold() == (12_345, 3, 4)
        raise RuntimeError("the block failed")
    assert gc.get_threshold() == before


def test_the_controller_process_gets_its_thresholds() -> None:
    with thresholds(gc.get_threshold()):  # put back for the other tests
        try:
            tune_controller_process()
            tune_controller_process()  # a second call: the clock is not added twice
            assert gc.get_threshold() == CONTROLLER_THRESHOLDS
            assert [cb for cb in gc.callbacks if cb is COLLECTOR_CLOCK] == [COLLECTOR_CLOCK]
        finally:
            COLLECTOR_CLOCK.stop()
    assert all(cb is not COLLECTOR_CLOCK for cb in gc.callbacks)
    assert CONTROLLER_THRESHOLDS[0] > 700  # fewer, larger young collections than CPython's


def test_the_clock_counts_each_collection_by_generation_and_its_time() -> None:
    clock = CollectorClock()
    clock.start()
    try:
        with thresholds((0, 0, 0)):  # no automatic collection between these
            gc.collect(1)
            gc.collect(2)
            gc.collect(2)
    finally:
        clock.stop()
    gc.collect(0)  # after stop: not counted
    assert clock.runs == [0, 1, 2]
    assert clock.seconds[0] == 0 and clock.seconds[1] > 0 and clock.seconds[2] > 0
    assert max(clock.seconds[1], clock.seconds[2] / 2) <= clock.longest <= sum(clock.seconds)


def test_the_metrics_show_the_clock() -> None:
    clock = CollectorClock(runs=[7, 2, 1], seconds=[0.5, 0.25, 1.5], longest=0.75)
    registry = CollectorRegistry()
    registry.register(CollectorMetrics(clock))
    samples = gc_samples(generate_latest(registry))
    for generation, (runs, seconds) in enumerate(zip(clock.runs, clock.seconds, strict=True)):
        label = {"generation": str(generation)}
        assert ("aegis_gc_collections_total", label, runs) in samples
        assert ("aegis_gc_pause_seconds_total", label, seconds) in samples
    assert ("aegis_gc_longest_pause_seconds", {}, 0.75) in samples


def test_the_controller_metrics_show_the_process_clock() -> None:
    samples = gc_samples(ObserverMetrics().exposition())
    runs = {s[1]["generation"]: s[2] for s in samples if s[0] == "aegis_gc_collections_total"}
    assert runs == {str(g): COLLECTOR_CLOCK.runs[g] for g in range(3)}


def gc_samples(exposition: bytes) -> list[tuple[str, dict[str, str], float]]:
    return [
        (s.name, s.labels, s.value)
        for family in text_string_to_metric_families(exposition.decode())
        for s in family.samples
        if s.name.startswith("aegis_gc")
    ]
