"""The Job Controller's `run` reconciles several jobs at once, never one job twice at once, on
the in-memory API (aegis.testing.memory_api): its watches, its pod cache and its pod calls."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from aegis.k8s.job_controller import JobController, JobControllerConfig, JobKey
from aegis.k8s.manifests import PodSettings
from aegis.k8s.model import JobView
from aegis.k8s.reconcile import Action
from aegis.k8s.resources import AEGIS_JOB, LABEL_JOB, POD, Resource
from aegis.testing.memory_api import MemoryApi

from ..support import wait_for
from .cluster import aegis_job

NAMESPACE = "team"
POD_SETTINGS = PodSettings(controller_address="ctl:50051")


def _job(name: str, workers: int) -> dict[str, Any]:
    return aegis_job(name, workers)


class _HeldApi(MemoryApi):
    """MemoryApi whose pod creates for the job `held` wait for `release` (10 s at most)."""

    def __init__(self, held: str) -> None:
        super().__init__()
        self.held, self.release = held, threading.Event()
        self.holding = threading.Event()  # a held create is waiting
        self.waits: list[bool] = []  # each held create: released (True) or timed out

    def create(
        self, res: Resource, namespace: str | None, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        if res is POD and body["metadata"]["labels"][LABEL_JOB] == self.held:
            self.holding.set()
            self.waits.append(self.release.wait(10))
        return super().create(res, namespace, body)

    def pods(self, job: str) -> int:
        return sum(
            1 for p in self.list(POD, NAMESPACE) if p["metadata"]["labels"][LABEL_JOB] == job
        )


class _Counting(JobController):
    """Counts each job's reconciles and the most of them at once."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.now: dict[str, int] = {}
        self.most: dict[str, int] = {}
        self.total: dict[str, int] = {}
        self._count = threading.Lock()

    def reconcile_job(self, namespace: str, name: str) -> list[Action]:
        with self._count:
            self.now[name] = self.now.get(name, 0) + 1
            self.most[name] = max(self.most.get(name, 0), self.now[name])
            self.total[name] = self.total.get(name, 0) + 1
        try:
            return super().reconcile_job(namespace, name)
        finally:
            with self._count:
                self.now[name] -= 1


@contextmanager
def _running(controller: JobController) -> Iterator[None]:
    stop = threading.Event()
    thread = threading.Thread(target=controller.run, args=(stop,), daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        controller.api.close_watches()
        thread.join(15)
    assert not thread.is_alive()


def test_a_job_whose_pods_are_slow_to_create_does_not_hold_up_another() -> None:
    """`big` comes first (name order) and its creates wait until `small`'s pods exist: only
    a second reconcile running beside the first can create them."""
    api = _HeldApi(held="big")
    api.create(AEGIS_JOB, NAMESPACE, _job("big", 3))
    api.create(AEGIS_JOB, NAMESPACE, _job("small", 2))
    controller = JobController(api, JobControllerConfig(pod=POD_SETTINGS))  # type: ignore[arg-type]
    with _running(controller):
        wait_for(lambda: api.pods("small") == 2, 10, "small's pods")
        api.release.set()
        wait_for(lambda: api.pods("big") == 3, 10, "big's pods")
    assert api.waits and all(api.waits)  # no held create waited in vain


def test_one_job_is_never_reconciled_twice_at_once_and_a_change_meanwhile_is_not_lost() -> None:
    api = _HeldApi(held="big")
    api.create(AEGIS_JOB, NAMESPACE, _job("big", 2))
    config = JobControllerConfig(pod=POD_SETTINGS, resync_s=3600)
    controller = _Counting(api, config)
    with _running(controller):
        wait_for(api.holding.is_set, 10, "big's first create, held")
        key: JobKey = (NAMESPACE, "big")
        assert controller.queue.held(key)
        for n in range(5):  # changes while it is reconciled: each queues the job again
            api.patch(AEGIS_JOB, NAMESPACE, "big", {"metadata": {"labels": {"n": str(n)}}})
        # the changes reached the queue: the job is to be reconciled again, once
        wait_for(lambda: controller.jobs.get(*key) is not None, 10, "the job in its store")
        wait_for(
            lambda: (
                controller.queue.pending(key)
                and (controller.jobs.get(*key) or JobView("", "", "", 0, 0)).resource_version
                == api.get(AEGIS_JOB, NAMESPACE, "big")["metadata"]["resourceVersion"]
            ),
            10,
            "the last change seen and queued",
        )
        assert len(controller.queue) == 0  # not handed out while held
        assert controller.total == {"big": 1} and api.waits == []  # still the first, held
        api.release.set()
        wait_for(lambda: controller.total.get("big", 0) >= 2, 10, "big reconciled again")
        wait_for(lambda: api.pods("big") == 2, 10, "big's pods")
    assert controller.most == {"big": 1}


class _InFlight(MemoryApi):
    """MemoryApi that counts the pod creates in flight at once (each takes 5 ms)."""

    def __init__(self) -> None:
        super().__init__()
        self.now = self.most = 0
        self._count = threading.Lock()

    def create(
        self, res: Resource, namespace: str | None, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        if res is not POD:
            return super().create(res, namespace, body)
        with self._count:
            self.now += 1
            self.most = max(self.most, self.now)
        try:
            time.sleep(0.005)  # a round trip, for the calls to overlap
            return super().create(res, namespace, body)
        finally:
            with self._count:
                self.now -= 1


def test_the_jobs_pod_calls_share_the_clients_connections() -> None:
    """Two jobs reconciled at once, each up to 32 pod calls at once: no more calls in flight
    than the client has pooled connections (3 here, POOL_SIZE in a deployment)."""
    api = _InFlight()
    api.create(AEGIS_JOB, NAMESPACE, _job("a", 12))
    api.create(AEGIS_JOB, NAMESPACE, _job("b", 12))
    controller = JobController(api, JobControllerConfig(pod=POD_SETTINGS))  # type: ignore[arg-type]
    controller._calls = threading.BoundedSemaphore(3)
    with _running(controller):
        wait_for(lambda: len(api.list(POD, NAMESPACE)) == 24, 10, "both jobs' pods")
    assert 1 < api.most <= 3
