"""One retry primitive for the whole code base: named schedules and the loops that use them.

A `RetryPolicy` is a setting, not code: how long the first pause is, how it grows, its cap,
whether it is jittered and how many tries there are in all. The policies Aegis uses are the
named constants below (each where its rule is explained), so that every schedule can be read
and changed in one place. `Backoff` walks a policy for a loop that retries until told to stop
(a watch, a resync, a restart loop: `next()` after a failure, `reset()` after a success);
`call` and `call_async` run one operation until it succeeds or the tries run out, with the
pauses slept (a blocking caller) or awaited (the event loop).

Why not tenacity or backoff: both wrap one call, while half of our policies pace a
long-running loop that resets on success; a hand-written primitive of this size (kopf's
throttler is 79 lines) covers both, for sync and asyncio callers, with no dependency.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """Pauses between tries: `first_s`·`factor`^n, at most `max_s`; with `jitter` each pause
    is drawn from [pause / 2, pause]; `tries`: how many tries in all (None: no limit)."""

    name: str
    first_s: float
    max_s: float
    factor: float = 2.0
    jitter: bool = False
    tries: int | None = None

    def pause(self, failures: int) -> float:
        """The pause after the `failures`-th failure in a row (1 for the first)."""
        n = max(failures - 1, 0)
        delay = min(self.max_s, self.first_s * self.factor ** min(n, 60))
        return delay * random.uniform(0.5, 1.0) if self.jitter else delay

    def pauses(self) -> Iterator[float]:
        """Every pause of a run of tries, in order (endless without a `tries` limit)."""
        failures = 1
        while self.tries is None or failures < self.tries:
            yield self.pause(failures)
            failures += 1


# the controller's status save (a WAL append or a snapshot): 4 pauses, < 1 s in all; the
# controller can do nothing safely until its state is on disk (docs/persistence.md)
STATUS_SAVE = RetryPolicy("status save", first_s=0.05, max_s=0.4, tries=5)
# an agent fetching its NATS credentials from the credential server (gRPC)
CREDENTIALS = RetryPolicy("credentials", first_s=0.2, max_s=5.0, jitter=True, tries=5)
# the same, from a starting agent: the credential server may still be starting too
AGENT_CREDENTIALS = RetryPolicy("agent credentials", 0.1, 5.0, jitter=True, tries=1000)
# `aegis run` bringing a dead nats-server back on its port
NATS_RESTART = RetryPolicy("nats-server restart", first_s=0.5, max_s=5.0, tries=5)
# the Kubernetes control loop (aegis.k8s.workqueue): a failed list or watch, a key whose
# reconcile failed, a job's runner restarted from its CR
KUBE_CONTROLLER = RetryPolicy("Kubernetes control loop", first_s=0.5, max_s=30.0, jitter=True)
# the Aegis Controller's credential service process, started again after a failed start
CREDENTIAL_PROCESS = RetryPolicy("credential process start", first_s=1.0, max_s=30.0)
# a CR status patch refused with 409 while only its metadata moved: patched again at once
CR_CONFLICT = RetryPolicy("CR status conflict", first_s=0.0, max_s=0.0, tries=5)


class Backoff:
    """A policy's pauses for a loop: `next()` after each failure, `reset()` after a success."""

    def __init__(self, policy: RetryPolicy) -> None:
        self.policy = policy
        self.failures = 0

    def next(self) -> float:
        """The pause before the next try (counts one more failure)."""
        self.failures += 1
        return self.policy.pause(self.failures)

    def reset(self) -> None:
        """A success: the next failure pauses `first_s` again."""
        self.failures = 0

    @property
    def exhausted(self) -> bool:
        """Whether the policy's tries are spent."""
        tries = self.policy.tries
        return tries is not None and self.failures >= tries


def call(
    operation: Callable[[], T],
    policy: RetryPolicy,
    retry_on: type[BaseException] | tuple[type[BaseException], ...],
    on_failure: Callable[[int, BaseException], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """`operation()` until it returns, pausing by `policy` after each failure that is one of
    `retry_on`; the last failure is raised. `on_failure(failures, exc)` sees each one first
    (it may raise to stop early)."""
    backoff = Backoff(policy)
    while True:
        try:
            return operation()
        except retry_on as exc:
            pause = backoff.next()
            if on_failure is not None:
                on_failure(backoff.failures, exc)
            if backoff.exhausted:
                raise
        sleep(pause)


async def call_async(
    operation: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    retry_on: type[BaseException] | tuple[type[BaseException], ...],
    on_failure: Callable[[int, BaseException], None] | None = None,
) -> T:
    """`call` for the event loop: `await operation()`, the pauses awaited."""
    backoff = Backoff(policy)
    while True:
        try:
            return await operation()
        except retry_on as exc:
            pause = backoff.next()
            if on_failure is not None:
                on_failure(backoff.failures, exc)
            if backoff.exhausted:
                raise
        await asyncio.sleep(pause)
