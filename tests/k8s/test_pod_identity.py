"""The credential service's pod check: from the pod cache when it shows the pod alive with
that uid and the job's label, from the API otherwise."""

from __future__ import annotations

from typing import Any

import pytest

from aegis.k8s.errors import ApiError
from aegis.k8s.pod_cache import PodCache
from aegis.k8s.pod_identity import pod_expected
from aegis.k8s.resources import LABEL_JOB, POD, Resource

from .test_pod_cache import NS, pod


class _Api:
    """The API's pods by name; counts its GETs."""

    def __init__(self, *pods: dict[str, Any]) -> None:
        self.pods = {p["metadata"]["name"]: p for p in pods}
        self.gets = 0

    def get(self, res: Resource, namespace: str, name: str) -> dict[str, Any]:
        assert res is POD and namespace == NS
        self.gets += 1
        if name not in self.pods:
            raise ApiError(404, "NotFound", f"pods {name} not found")
        return self.pods[name]


def _check(api: _Api, cache: PodCache | None, name: str, uid: str) -> tuple[bool, int]:
    before = api.gets
    ok = pod_expected(api, NS, "train", cache)(name, uid)  # type: ignore[arg-type]
    return ok, api.gets - before


def test_a_pod_the_watch_shows_alive_is_accepted_without_a_get() -> None:
    api, cache = _Api(pod("w-0", "a")), PodCache()
    cache.replace([pod("w-0", "a", "Running")])
    assert _check(api, cache, "w-0", "a") == (True, 0)
    assert _check(api, None, "w-0", "a") == (True, 1)  # no cache: the API, as before


@pytest.mark.parametrize(
    ("cached", "api_has", "accepted"),
    [
        (None, pod("w-0", "a"), True),  # not seen yet (the watch behind the pod's start)
        (pod("w-0", "old"), pod("w-0", "a"), True),  # the cache holds the replaced one
        (pod("w-0", "a", "Failed"), pod("w-0", "a", "Failed"), True),  # ended: the API says
        (pod("w-0", "a", deletionTimestamp="t"), None, False),  # deleting: gone by now
        (pod("w-0", "b"), pod("w-0", "b"), False),  # another incarnation, all along
    ],
)
def test_anything_else_is_asked_of_the_api(
    cached: dict[str, Any] | None, api_has: dict[str, Any] | None, accepted: bool
) -> None:
    api, cache = _Api(*([api_has] if api_has else [])), PodCache()
    cache.replace([cached] if cached else [])
    assert _check(api, cache, "w-0", "a") == (accepted, 1)


def test_a_cache_whose_watch_failed_is_not_asked() -> None:
    api, cache = _Api(), PodCache()  # the API no longer has the pod
    cache.replace([pod("w-0", "a", "Running")])
    cache.stale()  # the watch failed: it may have missed the deletion
    assert _check(api, cache, "w-0", "a") == (False, 1)


def test_another_jobs_pod_is_never_taken_from_the_cache() -> None:
    other = pod("w-0", "a")
    other["metadata"]["labels"] = {LABEL_JOB: "other"}
    api, cache = _Api(other), PodCache()
    cache.replace([other])
    assert _check(api, cache, "w-0", "a") == (False, 1)
