"""A keyed work queue, as client-go's workqueue: the one queue both controllers work from.

A key (a job) is handed to one worker at a time: a key added while a worker holds it is
marked dirty and handed out again once that worker is `done` with it, so a change made during
a reconcile is never lost and never reconciled twice at once. A key added while it waits is
not queued twice. `add_after` queues a key later (the earliest of its due times wins);
`add_rate_limited` queues it after its own capped exponential backoff, which `forget` resets
(a reconcile that succeeded). Thread-safe; `shut_down` wakes every waiting worker.
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from aegis import retry

K = TypeVar("K", bound=Hashable)

# the one retry schedule of the Kubernetes control loop (aegis.retry.KUBE_CONTROLLER): a failed
# list or watch, and a key whose reconcile failed, wait RETRY_INITIAL_S doubling to
# RETRY_MAX_S (with jitter)
RETRY_INITIAL_S = retry.KUBE_CONTROLLER.first_s
RETRY_MAX_S = retry.KUBE_CONTROLLER.max_s


class Backoff(retry.Backoff):
    """aegis.retry's capped exponential backoff with jitter on the control loop's schedule:
    initial·2^n, at most `maximum` seconds, each delay drawn from its upper half (so that
    many clients do not retry in step)."""

    def __init__(self, initial: float = RETRY_INITIAL_S, maximum: float = RETRY_MAX_S) -> None:
        policy = retry.KUBE_CONTROLLER
        super().__init__(dataclasses.replace(policy, first_s=initial, max_s=maximum))


class WorkQueue(Generic[K]):
    """Keys to reconcile: each handed to one worker at a time, none lost while it is held."""

    def __init__(
        self,
        backoff_initial_s: float = RETRY_INITIAL_S,
        backoff_max_s: float = RETRY_MAX_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._cond = threading.Condition()
        self._ready: deque[K] = deque()
        self._dirty: set[K] = set()  # to hand out (queued, or again once done)
        self._held: set[K] = set()  # handed out and not done yet
        self._due: dict[K, float] = {}  # add_after: the earliest time each key is due
        self._timers: list[tuple[float, int, K]] = []  # (due, order, key), a heap
        self._order = itertools.count()
        self._failures: dict[K, Backoff] = {}
        self._backoff = (backoff_initial_s, backoff_max_s)
        self._clock = clock
        self._shut = False

    def add(self, key: K) -> None:
        """Queue `key` (once; if a worker holds it, again when that worker is done)."""
        with self._cond:
            self._add(key)

    def add_after(self, key: K, delay_s: float) -> None:
        """Queue `key` in `delay_s` seconds (now if not positive)."""
        with self._cond:
            if delay_s <= 0:
                self._add(key)
                return
            due = self._clock() + delay_s
            if self._shut or self._due.get(key, due + 1) <= due:
                return
            self._due[key] = due
            heapq.heappush(self._timers, (due, next(self._order), key))
            self._cond.notify()

    def add_rate_limited(self, key: K) -> float:
        """Queue `key` after its backoff (one more failure); the delay."""
        with self._cond:
            backoff = self._failures.setdefault(key, Backoff(*self._backoff))
        delay = backoff.next()
        self.add_after(key, delay)
        return delay

    def forget(self, key: K) -> None:
        """`key` succeeded: its next failure waits the initial delay again."""
        with self._cond:
            self._failures.pop(key, None)

    def get(self, timeout: float | None = None) -> K | None:
        """The next key to reconcile (held until `done`), or None once shut down or after
        `timeout` seconds."""
        deadline = None if timeout is None else self._clock() + timeout
        with self._cond:
            while True:
                self._release_due()
                if self._shut:
                    return None
                if self._ready:
                    key = self._ready.popleft()
                    self._dirty.discard(key)
                    self._held.add(key)
                    return key
                waits = [t for t in (self._next_due(), deadline) if t is not None]
                if deadline is not None and self._clock() >= deadline:
                    return None
                self._cond.wait(max(0.0, min(waits) - self._clock()) if waits else None)

    def done(self, key: K) -> None:
        """The worker is done with `key`: queue it again if it was added meanwhile."""
        with self._cond:
            self._held.discard(key)
            if key in self._dirty:
                self._ready.append(key)
                self._cond.notify()

    def shut_down(self) -> None:
        """Hand out nothing more; every `get` returns None."""
        with self._cond:
            self._shut = True
            self._cond.notify_all()

    def pending(self, key: K) -> bool:
        """Whether `key` is to be handed out (queued now, or again once its worker is done)."""
        with self._cond:
            return key in self._dirty

    def held(self, key: K) -> bool:
        """Whether a worker holds `key` now."""
        with self._cond:
            return key in self._held

    def __len__(self) -> int:
        with self._cond:
            return len(self._ready)

    def _add(self, key: K) -> None:
        if self._shut or key in self._dirty:
            return
        self._dirty.add(key)
        if key not in self._held:
            self._ready.append(key)
            self._cond.notify()

    def _next_due(self) -> float | None:
        return self._timers[0][0] if self._timers else None

    def _release_due(self) -> None:
        now = self._clock()
        while self._timers and self._timers[0][0] <= now:
            due, _, key = heapq.heappop(self._timers)
            if self._due.get(key) == due:
                del self._due[key]
                self._add(key)
