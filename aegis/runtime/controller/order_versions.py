"""Which order each pod must hold by now, and when the controller sends it again (no I/O).

Orders are published once (docs/operations.md). Every order carries the version of the
state it was made of (`Order.version`), and every heartbeat the versions the agent holds
(`Heartbeat.holds` for the newest order it received, `holds_pod` for the newest that carried
its pod's entries). A version published at least `grace_s` ago that a heartbeat does not
show was missed: the controller sends that pod its current order, at most once per
`grace_s` per pod. So a lost order is found within `grace_s` plus one heartbeat interval,
with no message beyond the heartbeats while nothing is lost (agents used to re-ask every
4 beats: 35,982 requests in a 12,500-agent job, docs/scale.md).

The grace is one heartbeat interval as `aegis run` sets it (a quarter of the heartbeat
timeout, 1 s to 5 s: `order_grace`), on the controller's clock only. An agent slower than
that to read an order (a simulated fleet of 12,500 in one process), or a heartbeat that
waited that long in a controller that is behind, brings one order too many per grace:
harmless (an agent ignores an order it is not behind on), and bounded.
"""

from __future__ import annotations

from collections import deque

MIN_GRACE_S, MAX_GRACE_S = 1.0, 5.0


def order_grace(heartbeat_timeout: float) -> float:
    """How long after its publication an order must show in a pod's heartbeat: one beat
    interval as the local launcher picks it (timeout / 4), at least 1 s, at most 5 s."""
    if heartbeat_timeout <= 0:
        return MAX_GRACE_S
    return min(MAX_GRACE_S, max(MIN_GRACE_S, heartbeat_timeout / 4))


class OrderVersions:
    """The versions published (when, which), per pod where its own order was sent, and when
    each pod was last sent its order again."""

    def __init__(self, grace_s: float) -> None:
        self.grace_s = grace_s
        self._broadcasts: deque[tuple[float, int]] = deque()  # (when, version), oldest first
        self._pods: dict[str, tuple[float, int]] = {}  # pod -> (when, version) of its order
        self._resent: dict[str, float] = {}  # pod -> when its order was last sent again

    def published(self, now: float, version: int, pods: tuple[str, ...] = ()) -> None:
        """The broadcast of `version` went out at `now`, after the own orders of `pods`."""
        for pod in pods:
            self._pods[pod] = (now, version)
        if not self._broadcasts or self._broadcasts[-1][1] < version:
            self._broadcasts.append((now, version))  # else the same state, published again

    def required(self, now: float) -> int:
        """The newest version published at least `grace_s` before `now` (-1: none)."""
        due = now - self.grace_s
        q = self._broadcasts
        while len(q) >= 2 and q[1][0] <= due:
            q.popleft()
        return q[0][1] if q and q[0][0] <= due else -1

    def missed(self, pod: str, holds: int | None, holds_pod: int | None, now: float) -> bool:
        """Whether `pod`, whose heartbeat shows these versions, must be sent its order now
        (None: the heartbeat does not say; never)."""
        if holds is None:
            return False
        behind = holds < self.required(now)
        if not behind and holds_pod is not None and pod in self._pods:
            when, version = self._pods[pod]
            behind = holds_pod < version and when <= now - self.grace_s
        if not behind:
            self._resent.pop(pod, None)
            return False
        last = self._resent.get(pod)
        if last is not None and now - last < self.grace_s:
            return False  # sent again lately: its answer may still be on the way
        self._resent[pod] = now
        return True
