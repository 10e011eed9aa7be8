"""The one control loop both controllers run on (aegis/k8s/control_loop.py): its work queue
(one key never held twice, none lost, delays and per-key backoff), the stores its reflectors
keep, and how the loop treats a sync that fails, asks to be called again, or has a bug."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aegis.k8s.control_loop import ControlLoop, LoopSettings
from aegis.k8s.errors import ApiError
from aegis.k8s.informer import KeyedStore
from aegis.k8s.workqueue import Backoff, WorkQueue

from ..support import wait_for


class _NoApi:
    """An API for a loop with no sources: only its watches are closed."""

    def close_watches(self) -> None:
        pass


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_key_added_twice_is_handed_out_once() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    q.add("b")
    q.add("a")
    assert [q.get(0), q.get(0), q.get(0)] == ["a", "b", None]


def test_a_key_added_while_held_waits_for_done_then_comes_once() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    assert q.get(0) == "a"
    q.add("a")
    q.add("a")
    assert q.held("a") and q.pending("a") and q.get(0) is None  # not to a second worker
    q.done("a")
    assert q.get(0) == "a" and q.get(0) is None
    q.done("a")
    assert not q.held("a") and not q.pending("a")


def test_add_after_is_due_at_its_earliest_time() -> None:
    clock = _Clock()
    q: WorkQueue[str] = WorkQueue(clock=clock)
    q.add_after("a", 10.0)
    q.add_after("a", 5.0)  # the earlier wins
    q.add_after("a", 20.0)
    clock.now += 4.9
    assert q.get(0) is None
    clock.now += 0.2
    assert q.get(0) == "a"
    q.done("a")
    clock.now += 20.0
    assert q.get(0) is None  # the later times were not kept


def test_failures_back_off_per_key_and_a_success_forgets_them() -> None:
    q: WorkQueue[str] = WorkQueue(0.5, 4.0)
    delays = [q.add_rate_limited("a") for _ in range(6)]
    assert [0.25 <= d <= 0.5 for d in delays[:1]] == [True]
    assert all(2.0 <= d <= 4.0 for d in delays[3:])  # capped
    assert q.add_rate_limited("b") <= 0.5  # its own count
    q.forget("a")
    assert q.add_rate_limited("a") <= 0.5


def test_backoff_is_bounded() -> None:
    backoff = Backoff(0.5, 4.0)
    delays = [backoff.next() for _ in range(50)]
    assert delays[0] <= 0.5 and max(delays) <= 4.0 and min(delays[5:]) >= 2.0
    backoff.reset()
    assert backoff.next() <= 0.5


def test_shut_down_wakes_a_waiting_worker() -> None:
    q: WorkQueue[str] = WorkQueue()
    got: list[Any] = []
    worker = threading.Thread(target=lambda: got.append(q.get()))
    worker.start()
    q.shut_down()
    worker.join(5)
    assert got == [None] and not worker.is_alive()
    q.add("a")
    assert q.get(0) is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["add", "get", "done"]), st.sampled_from("abc"))))
def test_no_key_is_held_twice_or_lost(ops: list[tuple[str, str]]) -> None:
    """Any interleaving of adds, hand-outs and dones: a key is never handed out while held,
    and every key added after its last hand-out is handed out again once its worker is done."""
    q: WorkQueue[str] = WorkQueue()
    held: set[str] = set()
    owed: set[str] = set()  # added since last handed out
    for op, key in ops:
        if op == "add":
            q.add(key)
            owed.add(key)
        elif op == "get":
            got = q.get(0)
            if got is not None:
                assert got not in held
                held.add(got)
                owed.discard(got)
        elif key in held:
            q.done(key)
            held.discard(key)
    for key in sorted(held):
        q.done(key)
    drained = set()
    while (got := q.get(0)) is not None:
        assert got not in drained
        drained.add(got)
        q.done(got)
    assert drained == owed


def _cr(name: str, phase: str = "", rv: str = "1") -> dict[str, Any]:
    meta = {"name": name, "namespace": "ns", "resourceVersion": rv}
    return {"metadata": meta, "status": {"phase": phase}}


def _store() -> KeyedStore[tuple[str, str], str]:
    def key_of(obj: Any) -> tuple[str, str]:
        return ("ns", obj["metadata"]["name"])

    return KeyedStore(lambda o: str(o["status"]["phase"]), key_of)


def test_a_store_queues_only_what_changes_its_reading_and_a_list_finds_the_deleted() -> None:
    store = _store()
    assert store.replace([_cr("a"), _cr("b")], "1") == {("ns", "a"), ("ns", "b")}
    assert store.apply("MODIFIED", _cr("a", rv="2")) is None  # same reading
    assert store.apply("MODIFIED", _cr("a", "Failed", "3")) == ("ns", "a")
    assert store.apply("BOOKMARK", _cr("a", "x")) is None
    # a relist after a broken watch: b was deleted meanwhile (no DELETED event seen)
    assert store.replace([_cr("a", "Failed")], "9") == {("ns", "b")}
    assert store.get("ns", "a") == "Failed" and store.get("ns", "b") is None
    assert store.apply("DELETED", _cr("a", "Failed")) == ("ns", "a")
    assert store.keys() == set()


@contextmanager
def _looping(loop: ControlLoop[str]) -> Iterator[threading.Thread]:
    stop = threading.Event()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            loop.run(stop)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield thread
    finally:
        stop.set()
        thread.join(10)
        assert not thread.is_alive()


def test_a_failed_sync_is_retried_after_its_backoff_and_a_deadline_is_kept() -> None:
    calls: list[str] = []

    def sync(key: str) -> float | None:
        calls.append(key)
        if key == "flaky" and calls.count(key) < 3:
            raise ApiError(503, "ServiceUnavailable", "try again")
        if key == "timer" and calls.count(key) < 2:
            return 0.05  # call me again then
        return None

    settings = LoopSettings(resync_s=3600, retry_on=(ApiError,), backoff=(0.01, 0.05), workers=2)
    loop: ControlLoop[str] = ControlLoop(_NoApi(), [], sync, lambda: (), settings)  # type: ignore[arg-type]
    with _looping(loop):
        loop.queue.add("flaky")
        loop.queue.add("timer")
        wait_for(lambda: calls.count("flaky") == 3 and calls.count("timer") == 2, 10, "retries")
    assert calls.count("flaky") == 3 and calls.count("timer") == 2


def test_a_bug_in_a_sync_stops_the_loop_and_is_raised() -> None:
    def sync(key: str) -> None:
        raise RuntimeError(f"bug with {key}")

    loop: ControlLoop[str] = ControlLoop(
        _NoApi(),  # type: ignore[arg-type]
        [],
        sync,
        lambda: ["a"],
        LoopSettings(resync_s=0.01, retry_on=(ApiError,)),
    )
    with pytest.raises(RuntimeError, match="bug with a"):
        loop.run(threading.Event())  # ends by itself
