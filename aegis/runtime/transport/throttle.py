"""How often the credential service answers, and whom it slows down.

Requests are admitted by one bucket for the whole service (its CPU: `Throttle.rate`), never
by the caller's address: in local mode every agent and the training processes share
127.0.0.1, and a training process's refused requests then locked out the replacement
agents. Refused requests are counted per identity they claim (namespace, job, pod,
incarnation) and caller: past `refused_burst`, a check that costs an API call (a
TokenReview, a pod GET) is not even made for that identity from that caller, and every
refusal of it says RESOURCE_EXHAUSTED. A request whose proof is right is never refused for
another's refusals: a cheap check (local mode) is always made, and a costly one is
counted against the caller that claimed the identity, not against the identity alone.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass

MAX_IDENTITIES = 10_000  # refusal buckets kept (the oldest forgotten first)


class TokenBucket:
    """`rate` events per second, bursts of `burst`; `take()` is False when empty."""

    def __init__(self, rate: float, burst: float) -> None:
        self.rate, self.burst = rate, burst
        self.tokens, self.stamp = burst, time.monotonic()

    def _refill(self) -> None:
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now

    def take(self) -> bool:
        """Spend one token if there is one."""
        self._refill()
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True

    def empty(self) -> bool:
        """Whether `take()` would be False now (nothing spent)."""
        self._refill()
        return self.tokens < 1


@dataclass(frozen=True)
class Throttle:
    """The service's limits: all requests (its CPU), and refused ones per identity."""

    rate: float = 2000.0
    burst: float = 20000.0
    refused_rate: float = 2.0
    refused_burst: float = 20.0


class RefusalCounts:
    """A refused-requests bucket per key (an identity and its caller), at most
    MAX_IDENTITIES of them."""

    def __init__(self, throttle: Throttle) -> None:
        self.throttle = throttle
        self._buckets: OrderedDict[Hashable, TokenBucket] = OrderedDict()

    def exhausted(self, key: Hashable) -> bool:
        """Whether `key` has been refused too often lately (nothing counted)."""
        bucket = self._buckets.get(key)
        return bucket is not None and bucket.empty()

    def refused(self, key: Hashable) -> bool:
        """Count one refusal of `key`; False once it has been refused too often."""
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = TokenBucket(self.throttle.refused_rate, self.throttle.refused_burst)
            self._buckets[key] = bucket
            while len(self._buckets) > MAX_IDENTITIES:
                self._buckets.popitem(last=False)
        self._buckets.move_to_end(key)
        return bucket.take()
