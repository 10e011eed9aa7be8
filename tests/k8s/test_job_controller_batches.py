"""The Job Controller's pod calls in slow-start batches, on the in-memory API (aegis.testing.
memory_api): what goes out together, and where a refusal stops a run of creations.

A create is numbered from 1 in the order the API receives it; the batches are 1, 2, 4, ...
calls (up to `pod_calls`), each finished before the next is sent.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from aegis.k8s.cr_store import CrStatusStore
from aegis.k8s.errors import ApiError
from aegis.k8s.job_controller import JobController, JobControllerConfig
from aegis.k8s.manifests import PodSettings
from aegis.k8s.resources import AEGIS_JOB, POD, Resource
from aegis.runtime.controller.store import PodInfo, Status
from aegis.testing.memory_api import MemoryApi

from .cluster import aegis_job

NAMESPACE = "team"
CONFIG = JobControllerConfig(pod=PodSettings(controller_address="ctl:50051"))


class _Api(MemoryApi):
    """MemoryApi whose pod creates and deletes first call `hook(verb, n)` (n: that verb's
    call number, from 1)."""

    def __init__(self, hook: Callable[[str, int], None] = lambda verb, n: None) -> None:
        super().__init__()
        self.hook = hook
        self.calls = {"create": 0, "delete": 0}
        self._counting = threading.Lock()

    def before(self, verb: str, res: Resource) -> None:
        if res is not POD or verb not in self.calls:
            return
        with self._counting:
            self.calls[verb] += 1
            n = self.calls[verb]
        self.hook(verb, n)

    def pods(self) -> list[str]:
        return [p["metadata"]["name"] for p in self.list(POD, NAMESPACE)]


def _controller(api: _Api, workers: int) -> JobController:
    api.create(AEGIS_JOB, NAMESPACE, aegis_job(workers=workers))
    return JobController(api, CONFIG, new_token=lambda: "tok")  # type: ignore[arg-type]


def test_a_batch_of_creations_is_in_flight_at_once() -> None:
    # 7 pods: batches of 1, 2 and 4; the third batch's creates wait for each other, which
    # only calls sent together can do (one at a time, the first would wait alone and fail)
    together = threading.Barrier(4, timeout=10)

    def hook(verb: str, n: int) -> None:
        if n >= 4:
            together.wait()

    api = _Api(hook)
    _controller(api, 7).reconcile_job(NAMESPACE, "train")
    assert len(api.pods()) == 7 and api.calls["create"] == 7


def test_a_refusal_every_create_gets_costs_one_call() -> None:
    quota = [True]

    def hook(verb: str, n: int) -> None:
        if quota[0]:
            raise ApiError(403, "Forbidden", "exceeded quota: pods")

    api = _Api(hook)
    controller = _controller(api, 20)
    with pytest.raises(ApiError, match="exceeded quota"):
        controller.reconcile_job(NAMESPACE, "train")
    assert api.calls["create"] == 1 and api.pods() == []
    quota[0] = False  # the quota is raised: the next reconcile creates them all
    controller.reconcile_job(NAMESPACE, "train")
    assert len(api.pods()) == 20


def test_an_error_ends_the_run_after_its_batch() -> None:
    def hook(verb: str, n: int) -> None:
        if n == 5:
            raise ApiError(500, "InternalError", "etcd leader changed")

    api = _Api(hook)
    controller = _controller(api, 20)
    with pytest.raises(ApiError, match="etcd leader changed"):
        controller.reconcile_job(NAMESPACE, "train")
    # batches 1, 2 and 4 went out (the third with the failing call); the fourth did not
    assert api.calls["create"] == 7 and len(api.pods()) == 6
    controller.reconcile_job(NAMESPACE, "train")
    assert len(api.pods()) == 20 and api.calls["create"] == 7 + 14


def test_a_pod_refused_as_invalid_fails_the_job_once() -> None:
    def hook(verb: str, n: int) -> None:
        raise ApiError(422, "Invalid", "spec.containers[0].resources: bad quantity")

    api = _Api(hook)
    _controller(api, 20).reconcile_job(NAMESPACE, "train")
    status = api.get(AEGIS_JOB, NAMESPACE, "train")["status"]
    assert status["phase"] == "Failed" and "bad quantity" in status["message"]
    assert api.calls["create"] == 1  # not one refused create (and status patch) per pod


def test_a_failed_job_deletes_its_pods_in_batches() -> None:
    together = threading.Barrier(4, timeout=10)

    def hook(verb: str, n: int) -> None:
        if verb == "delete" and 4 <= n <= 7:
            together.wait()

    api = _Api(hook)
    controller = _controller(api, 20)
    controller.reconcile_job(NAMESPACE, "train")
    infos = {p: PodInfo(retries=4) for p in api.pods()}  # maxRetry is 3
    CrStatusStore(api, NAMESPACE, "train").save(
        Status(phase="Troubleshooting", recover_count=4, pod_infos=infos)
    )
    controller.reconcile_job(NAMESPACE, "train")
    assert api.pods() == [] and api.calls["delete"] == 20
    status = api.get(AEGIS_JOB, NAMESPACE, "train")["status"]
    assert status["phase"] == "Failed" and "retries exhausted" in status["message"]
