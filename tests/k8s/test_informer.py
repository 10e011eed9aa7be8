"""The reflector's rounds (the pod informer's, as every control loop's): a list, a watch from
its version, again; how long it waits after a failure or a watch that ends at once (never a
storm of lists)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from aegis.k8s.errors import ApiError
from aegis.k8s.informer import MIN_ROUND_S, RETRY_S, inform_pods
from aegis.k8s.pod_cache import PodCache
from aegis.k8s.resources import LABEL_JOB, POD, Resource
from aegis.k8s.workqueue import RETRY_MAX_S

from .test_pod_cache import NS, pod

REST = pytest.approx(MIN_ROUND_S, abs=0.1)  # the rest of a round's second (rounds take ~0 s)


class _Stop(threading.Event):
    """A stop event that records each wait instead of waiting."""

    def __init__(self) -> None:
        super().__init__()
        self.waits: list[float] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.waits.append(timeout or 0.0)
        return self.is_set()


class _Api:
    """Lists and watches by a script: each round's list answer (or error) and watch events
    (or error); the stop is set once the script is done."""

    def __init__(self, stop: _Stop, rounds: list[tuple[Any, Any]]) -> None:
        self.stop, self.rounds = stop, rounds
        self.asked: list[tuple[str, str]] = []
        self.cache: PodCache | None = None
        self.synced_at_list: list[bool] = []  # whether the cache read as synced at each list

    def list_versioned(self, res: Resource, namespace: Any, selector: str) -> Any:
        assert res is POD and selector == LABEL_JOB
        listed, _ = self.rounds[0]
        self.asked.append(("list", namespace))
        self.synced_at_list.append(self.cache is not None and self.cache.synced)
        if isinstance(listed, ApiError):
            self.rounds.pop(0)
            self._end()
            raise listed
        return listed

    def watch(
        self, res: Resource, namespace: Any, selector: str, timeout_s: int, resource_version: str
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        _, events = self.rounds.pop(0)
        self.asked.append(("watch", resource_version))
        self._end()
        if isinstance(events, ApiError):
            raise events
        yield from events

    def _end(self) -> None:
        if not self.rounds:
            self.stop.set()


def _inform(rounds: list[tuple[Any, Any]]) -> tuple[_Api, _Stop, PodCache, list[Any]]:
    stop = _Stop()
    api, cache = _Api(stop, rounds), PodCache()
    api.cache = cache
    moved: list[Any] = []
    inform_pods(api, cache, NS, stop, moved.append)  # type: ignore[arg-type]
    return api, stop, cache, moved


def test_each_round_lists_then_watches_from_the_lists_version() -> None:
    first = ([pod("w-0", "a")], "7")
    second = ([pod("w-0", "a", "Running")], "9")
    api, _, cache, moved = _inform(
        [(first, [("MODIFIED", pod("w-0", "a", "Failed"))]), (second, [])]
    )
    assert api.asked == [("list", NS), ("watch", "7"), ("list", NS), ("watch", "9")]
    assert moved == [(NS, "train")] * 3  # listed, failed, running again (the second list)
    assert [p.phase for p in cache.pods(NS, "train", "j1")] == ["Running"]


@pytest.mark.parametrize(
    ("error", "pauses"),
    [
        (ApiError(500, "InternalError", "etcd"), 1),  # then the round's rest
        (ApiError(410, "Expired", "too old resource version"), 0),  # at once
        (RuntimeError("a bug"), 1),  # logged; the cache is kept all the same
    ],
)
def test_a_failed_watch_lists_again_after_its_pause(error: Exception, pauses: int) -> None:
    api, stop, cache, _ = _inform([(([], "1"), error), (([], "2"), [])])
    # the first pause of the backoff: RETRY_S, less up to half of it (jitter)
    assert all(RETRY_S / 2 <= w <= RETRY_S for w in stop.waits[:pauses])
    # every round also waits out the rest of its second (the rounds here take no time)
    assert stop.waits[pauses:] == [REST, REST]
    # from the failure to the next list the cache is not trusted (reconciles list, checks GET)
    assert api.synced_at_list == [False, False] and cache.synced


def test_a_watch_that_ends_at_once_is_not_a_storm_of_lists() -> None:
    _, stop, _, _ = _inform([(([], str(n)), []) for n in range(5)])
    assert stop.waits == [REST] * 5  # a list a second at most


def test_failures_in_a_row_wait_longer_each_time_up_to_the_most() -> None:
    """One retry rule (aegis/k8s/workqueue.py's Backoff): a list that keeps failing waits
    0.5, 1, 2, ... s (less jitter), never past RETRY_MAX_S; a list that succeeds resets it."""
    down = ApiError(0, "", "connection refused")
    rounds: list[tuple[Any, Any]] = [(down, None)] * 9 + [(([], "1"), []), (down, None)]
    _, stop, _, _ = _inform(rounds)
    # each failed round pauses, then waits out the rest of its second; the good one only that
    assert len(stop.waits) == 21 and stop.waits[1:18:2] == [REST] * 9
    pauses = [*stop.waits[0:18:2], stop.waits[19]]
    for n, pause in enumerate(pauses[:9]):
        top = min(RETRY_S * 2**n, RETRY_MAX_S)
        assert top / 2 <= pause <= top, (n, pause)
    assert RETRY_S / 2 <= pauses[9] <= RETRY_S  # after the list that succeeded
