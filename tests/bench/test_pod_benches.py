"""bench/pod_creation.py and bench/pod_reads.py at tiny sizes: what their figures mean (each
pod created once; a list per reconcile against one list for the cache; a small job beside a
large one), not how fast anything is."""

from __future__ import annotations

import threading

import pytest

from bench import pod_creation, pod_reads


def test_pod_creation_creates_each_pod_once_whatever_the_calls_at_once() -> None:
    for calls in (1, 4):
        run = pod_creation.measure(30, 0.0, calls)
        assert run["create"] == 30 + 3  # the pods, the Secret, the Service, the Aegis CR


def test_a_small_job_beside_a_large_one_gets_its_pods_either_way() -> None:
    # `beside` ends only once both jobs have every pod (SystemExit past its deadline)
    for workers in (1, 4):
        run = pod_creation.beside(40, 3, 0.0, workers)
        assert set(run) == {"reconcile_workers", "small_s", "large_s"}
        assert run["reconcile_workers"] == workers


def test_pod_reads_lists_per_reconcile_only_without_the_cache() -> None:
    listing, cached = (pod_reads.measure(20, 2000.0, 0.0, cache) for cache in (False, True))
    assert listing["pod_lists"] > 1 and listing["pods_listed"] > 0
    assert (cached["pod_lists"], cached["pods_listed"]) == (1, 0)  # the informer's, before the job
    assert listing["creates"] == cached["creates"] == 20 + 3


@pytest.mark.timeout(30)  # not the 60 s bound: a `run` that ended is seen at once
def test_the_benches_stop_waiting_for_a_controller_that_never_lists() -> None:
    class Ended(pod_creation.JobController):
        def run(self, stop: threading.Event) -> None:
            return  # ends before its pod cache lists anything

    controller = Ended(pod_creation.SlowApi(0.0))  # type: ignore[arg-type]
    with pytest.raises(SystemExit, match="pods not listed"):
        pod_creation.start_run(controller, wait_s=60.0)
    stop, thread = pod_creation.start_run(
        pod_creation.JobController(pod_creation.SlowApi(0.0))  # type: ignore[arg-type]
    )
    stop.set()
    thread.join(10)
    assert not thread.is_alive()  # listed, then stopped: `run` closes its watches and ends
